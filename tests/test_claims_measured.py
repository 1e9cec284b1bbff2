"""``checkpoints/en-it/claims.json``, pinned to the shipped model.

The claims file is where the README's "What to look for", the app's example hints and the
minimal pairs' hints get every figure they state (:mod:`explorer.claims`). Each value is
measured by :mod:`explorer.measure` (:data:`~explorer.measure.MEASURES`: through the functions
the app itself calls, compared as the texts print them); a value without a measure fails, so
every figure in the file is checked. The translations the texts quote are checked in the
rendered texts themselves, and the rest (which token a head looks at, which step two versions
part at, which heads have a habit) by the tests below.

When a new checkpoint ships, these tests fail exactly where its claims file has gone stale:
``python -m explorer.measure --update`` writes the figures that are still measured where the
texts say, the texts whose sentence, step or head no longer fits are rewritten by hand (and
the tests below with them), then ``python -m explorer.claims --write README.md``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from explorer import texts as viewer
from explorer.claims import FILE, load
from explorer.measure import (
    BOOK,
    BROTHER,
    COFFEE,
    DOCTOR_HE,
    DOCTOR_SHE,
    JOHN,
    MEASURES,
    MILK,
    RED_CAR,
    SISTER,
    TOM,
    TWO_CARS,
    LAKE,
    Measured,
    exact_cross,
    first_difference,
    head_row,
    heads_with,
    measured_and_stated,
    misquoted,
    on,
    prob,
    shown_cross,
    texts_of,
    top,
    words,
)
from transformer import load_translator
from transformer.core import readings

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "checkpoints" / "en-it"
CLAIMS = load(SHIPPED / FILE)


# ----------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """The same kernels, and so the same last digits, every time."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tr(one_thread):
    return load_translator(SHIPPED)


@pytest.fixture(scope="module")
def m(tr):
    return Measured(tr, SHIPPED)


# ----------------------------------------------------------------------------- every value, every quote
def test_every_value_has_a_measure():
    """A figure added to claims.json without a way to measure it fails here (and a measure of a
    figure the file no longer states, too)."""
    assert set(CLAIMS.values) == set(MEASURES)


@pytest.mark.parametrize("name", list(CLAIMS.values))
def test_value_is_the_models(m, name):
    """Each figure claims.json states, measured where its ``where`` says, at its precision."""
    measured, stated = measured_and_stated(CLAIMS, name, m)
    assert measured == stated, f"{name}: the model gives {measured}, claims.json says {stated}"


def test_quoted_translations_are_the_models(m):
    """The README's '→' translations, the knock-out's and What if?'s, and the pairs' hints."""
    assert misquoted(CLAIMS, m) == []


def test_a_wrong_figure_or_quote_in_a_copy_of_claims_json_fails(m, tmp_path):
    """The checks above compare with the file, not with themselves: a copy with one probability,
    the sentence count and one translation changed is caught on each."""
    data = json.loads((SHIPPED / FILE).read_text(encoding="utf-8"))
    data["values"]["tom_step4_a"]["value"] = 0.53
    data["values"]["test_sentences"]["value"] = 999
    lines = data["readme"]["items"][1]["lines"]
    lines[1] = lines[1].replace("a Mary un bel", "a Mary il bel")
    copy = tmp_path / FILE
    copy.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    wrong = load(copy)
    for name in ("tom_step4_a", "test_sentences"):
        measured, stated = measured_and_stated(wrong, name, m)
        assert measured != stated and measured == measured_and_stated(CLAIMS, name, m)[1]
    assert misquoted(wrong, m) == [f'readme: "{TOM}" → "{m.trace(TOM).translation}"']


def test_measure_update_writes_the_measured_figures_and_nothing_else(tmp_path, capsys):
    """``python -m explorer.measure --update`` on a copy of the checkpoint whose claims file has
    two stale figures: it reports them, writes the model's, and leaves every other byte alone."""
    from explorer import measure

    for item in SHIPPED.iterdir():
        if item.name != FILE:
            (tmp_path / item.name).symlink_to(item)
    original = (SHIPPED / FILE).read_text(encoding="utf-8")
    stale = original.replace('"tom_step4_a": {"value": 0.52,', '"tom_step4_a": {"value": 0.53,', 1)
    stale = stale.replace('"test_sentences": {"value": 1000,', '"test_sentences": {"value": 999,', 1)
    assert stale.count("0.53,") == 1 and '"value": 999,' in stale
    (tmp_path / FILE).write_text(stale, encoding="utf-8")
    assert measure.main(["--checkpoint", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines() if line.endswith("stale")] == ["test_sentences", "tom_step4_a"]
    assert measure.main(["--checkpoint", str(tmp_path), "--update"]) == 0
    assert (tmp_path / FILE).read_text(encoding="utf-8") == original
    assert measure.main(["--checkpoint", str(tmp_path)]) == 0


# ----------------------------------------------------------------------------- example hints
def example_hint(sentence: str) -> str:
    return next(hint for text, hint in CLAIMS.examples() if text == sentence)


def test_hint_red_car_reordering(m):
    """Example "I have a red car.": "'red car' becomes 'auto rossa'"."""
    assert "'red car' becomes 'auto rossa'" in example_hint(RED_CAR)
    assert "auto rossa" in m.trace(RED_CAR).translation


def test_hint_coffee_negation(m):
    """Example "I don't like coffee.": "'non' comes first, and 'I like' becomes 'mi piace'"."""
    translation = m.trace(COFFEE).translation
    assert translation.split()[0].lower() == "non"
    assert "mi piace" in translation and "'mi piace'" in example_hint(COFFEE)


def test_hint_book_emits_e(m):
    """Example, the book sentence: "at the step that emits 'è'" (there is such a step)."""
    assert "è" in words(m.trace(BOOK).tgt_tokens[1:]) and "emits 'è'" in example_hint(BOOK)


# ----------------------------------------------------------------------------- head diagnostics
def test_same_token_heads_over_the_test_set(m):
    """README "Same-token heads first": "five of the eight heads of layer 1 (2, 5, 6, 7 and 8) are
    same-token heads: head 6 puts [the most] of its weight [...] on the token the step has just read"."""
    dec = m.test_set["kinds"]["decoder_self"]
    assert [h + 1 for h, habit in enumerate(dec["habit"][0]) if habit == "same-token head"] == [2, 5, 6, 7, 8]
    assert max(v for row in dec["same"] for v in row if v is not None) == dec["same"][0][5]  # the strongest


def test_same_token_heads_on_red_car(m):
    """Example red car: "layer 1, heads 2, 6, 7 and 8 look mostly at the token just read (same-token heads)"."""
    dec = m.trace(RED_CAR).head_stats["kinds"]["decoder_self"]
    assert [h + 1 for h, habit in enumerate(dec["habit"][0]) if habit == "same-token head"] == [2, 6, 7, 8]
    assert "layer 1, heads 2, 6, 7 and 8" in example_hint(RED_CAR)


def test_no_previous_token_head(m):
    """README "Same-token heads first": "No head of this model is a previous-token head"."""
    assert heads_with(m.test_set["kinds"], "previous-token head") == []


def test_encoder_layer1_local_heads(m):
    """README "Same-token heads first": "In encoder self-attention, heads 1, 2, 5 and 6 of layer 1
    are local heads"."""
    habits = m.test_set["kinds"]["encoder"]["habit"][0]
    assert [h + 1 for h, habit in enumerate(habits) if habit == "local head"] == [1, 2, 5, 6]


def test_sinks_and_aligners(m):
    """README "Same-token heads first": "The sinks are all on [SOS]: decoder self-attention layer 2
    head 2, layer 3 head 8, layer 4 head 7, and encoder layer 2 head 6. In cross-attention every
    head of layer 2 is a monotonic aligner"."""
    kinds = m.test_set["kinds"]
    assert heads_with(kinds, "[SOS] sink") == [
        ("encoder", 2, 6),
        ("decoder_self", 2, 2),
        ("decoder_self", 3, 8),
        ("decoder_self", 4, 7),
    ]
    assert heads_with(kinds, "[EOS] sink") == []
    assert kinds["cross"]["habit"][1] == ["monotonic aligner"] * 8


# ----------------------------------------------------------------------------- importance and knock-out
def test_head_importance_ranks_cross_l1_h1_first(m):
    """README "One head brings Mary in." and the Tom example: "Head importance ranks cross-attention
    layer 1, head 1 first"."""
    first = m.importance["ranking"][0]
    assert (first["kind"], first["layer"] + 1, first["head"] + 1) == ("cross", 1, 1)
    assert m.importance["translation"] == m.trace(TOM).translation


def test_cross_l1_h1_looks_at_mary(m):
    """README "One head brings Mary in." and the Tom example: "at step 4 it looks at 'Mary'"."""
    trace = m.trace(TOM)
    assert top(trace, head_row(trace, 1, 1, 4)) == "Mary"
    assert words(trace.tgt_tokens[4:6]) == ["a", "Mary"]


def test_knockout_of_cross_l1_h1(m):
    """README "One head brings Mary in.": knocking the head out loses Mary; the Tom example:
    "knocking it out drops 'a Mary'"."""
    ko = m.tom_knockout
    assert ko["heads"] == [{"kind": "cross", "layer": 0, "head": 0}]
    assert ko["original"]["translation"] == m.trace(TOM).translation
    assert ko["knockout"]["translation"] == m.trace(TOM).translation.replace("a Mary ", "")
    assert "knocking it out drops 'a Mary'" in example_hint(TOM)


def test_knockout_versions_part_at_step_4(m):
    """README "One head brings Mary in.": "the per-step chart shows the two versions part at step 4
    ('a' against 'un')"."""
    steps = m.tom_knockout["steps"]  # the per-step chart: original token vs knocked-out top-1, step t+1
    step = first_difference(steps["token"], steps["top_knockout"])
    assert step == 4
    assert words([steps["token"][step - 1], steps["top_knockout"][step - 1]]) == ["a", "un"]
    orig, ko = m.tom_knockout["original"]["tokens"][1:], m.tom_knockout["knockout"]["tokens"][1:]
    step = first_difference(orig, ko)
    assert step == 4
    assert words([orig[step - 1], ko[step - 1]]) == ["a", "un"]


def test_tom_whatif_force_un_at_step4(m):
    """README "One head brings Mary in." and the Tom example: "Step 4 is a close call even with
    every head: 'a' [first], 'un' [second]; force 'un' with What if? and Mary is never mentioned"."""
    trace = m.trace(TOM)
    assert words(trace.topk_tokens[4 - 1][:2]) == ["a", "un"]
    alt = m.tr.trace(TOM, forced_prefix=viewer.whatif_prefix(trace, 4, 1))
    assert viewer.forced_label(alt) == "step 4 forced to 'un'"
    assert "Mary" not in alt.translation and alt.translation == m.tom_knockout["knockout"]["translation"]


# ----------------------------------------------------------------------------- logit lens
def test_logit_lens_which_steps_are_decided_where(m):
    """README "Where the final word appears.": "'.' and [EOS] are top-1 already in layer 1; 'ha',
    'dato', 'Mary', 'bel', 'per', 'il', 'suo' and 'compleanno' from layer 2; 'Tom', 'un' and
    'regalo' from layer 3; and 'a' only in layer 4, where layers 2 and 3 still say 'una'"; the Tom
    example: "'a' appears only in layer 4"."""
    trace = m.trace(TOM)
    first = readings.logit_lens_first_layer(trace)  # 0-based; the viewer's note uses the same rule
    emitted = words(trace.tgt_tokens[1:])
    by_layer = {layer + 1: [w for w, f in zip(emitted, first) if f == layer] for layer in set(first)}
    assert by_layer == {
        1: [".", "[EOS]"],
        2: ["ha", "dato", "Mary", "bel", "per", "il", "suo", "compleanno"],
        3: ["Tom", "un", "regalo"],
        4: ["a"],
    }
    assert words([trace.logit_lens_tokens[4 - 1][layer][0] for layer in (1, 2)]) == ["una", "una"]


# ----------------------------------------------------------------------------- the lake and milk sentences
def assert_mean_cross_looks_at(trace, layer, step, word, value: str):
    """Cross-attention of ``layer`` (mean of the heads) weighs ``word`` most at ``step``, in the
    model's weights and in the viewer's (quantised) copy, which agree at the precision shown."""
    exact, shown = exact_cross(trace, layer, step), shown_cross(trace, layer, step, "translate")
    assert top(trace, exact) == top(trace, shown) == word
    assert CLAIMS.values[value].shown(on(trace, exact, word)) == CLAIMS.values[value].shown(on(trace, shown, word))


def test_lake_step10_is_a_guess_looking_at_near(m):
    """README "A failure to study." and the lake example: "At step 10 no candidate has more than
    [that of] 'nel', then 'al' [...], while cross-attention (layer 4, mean of the heads) looks at 'near'"."""
    trace = m.trace(LAKE)
    assert words(trace.topk_tokens[10 - 1][:2]) == ["nel", "al"]
    assert words(trace.tgt_tokens[10:11]) == ["nel"]  # the top candidate is the one emitted
    assert_mean_cross_looks_at(trace, 4, 10, "near", "lake_step10_near")


def test_lake_reaches_the_model_in_two_pieces(m):
    """README "A failure to study." and the lake example: "'lake' reaches the model as two pieces,
    'la' + 'ke', and still comes out right, as 'la' + 'go': at step 12 cross-attention (layer 3,
    mean of the heads) looks at 'ke'"."""
    trace = m.trace(LAKE)
    i = trace.src_tokens.index("▁la")
    assert trace.src_tokens[i + 1] == "ke"
    assert trace.tgt_tokens[11:13] == ["▁la", "go"] and "lago" in trace.translation
    assert_mean_cross_looks_at(trace, 3, 12, "ke", "lake_step12_ke")


def test_milk_step6_candidates(m):
    """README "A mistake to study." and the milk example: "At step 6 the model chose 'e' over
    'latte', while cross-attention (layer 3, mean of the heads) looks at 'milk'"."""
    trace = m.trace(MILK)
    assert "latte" not in trace.translation
    assert words(trace.topk_tokens[6 - 1][:2]) == ["e", "latte"]
    assert words(trace.tgt_tokens[6:7]) == ["e"]  # the top candidate is the one emitted
    assert_mean_cross_looks_at(trace, 3, 6, "milk", "milk_step6_milk")


def test_milk_whatif_force_latte_at_step6(m):
    """README "A mistake to study." and the milk example: "Use What if? at step 6 to force 'latte'"
    (its translation is checked among the quotes)."""
    trace, alt = m.trace(MILK), m.milk_latte
    assert viewer.forced_label(alt) == "step 6 forced to 'latte'"
    assert "latte" in alt.translation
    assert np.array_equal(alt.tgt_ids[:6], trace.tgt_ids[:6])  # steps 1-5 as decoded before


# ----------------------------------------------------------------------------- minimal pairs
def test_pair_brother_sister(m):
    """Pair brother / sister: "The article agrees at step 1 ('Mio' [...], 'Mia' [...]). [...] at
    step 4 A says 'alto', while B starts 'al' [...] and ends it with 'ta'. At step 2,
    cross-attention (layer 3, mean of heads) looks at 'brother' and at 'sister'"."""
    a, b = m.trace(BROTHER), m.trace(SISTER)
    assert words([a.tgt_tokens[1], b.tgt_tokens[1]]) == ["Mio", "Mia"]
    assert words([a.tgt_tokens[4], b.tgt_tokens[4], b.tgt_tokens[5]]) == ["alto", "al", "ta"]
    assert (top(a, shown_cross(a, 3, 2)), top(b, shown_cross(b, 3, 2))) == ("brother", "sister")


def test_pair_red_car_two_red_cars(m):
    """Pair red car / two red cars: "At step 2 A's article un' becomes 'due', and the noun changes
    word as well as number ('auto', 'macchine'). The adjective agrees: at step 6 cross-attention
    (layer 3, mean of heads) looks at 'red', and at step 7 'osse' beats 'ossi'"."""
    a, b = m.trace(RED_CAR), m.trace(TWO_CARS)
    assert words([a.tgt_tokens[2], b.tgt_tokens[2]]) == ["un'", "due"]
    assert "auto" in words(a.tgt_tokens) and "macchine" in b.translation
    assert top(b, shown_cross(b, 3, 6)) == "red"
    assert b.tgt_tokens[7] == "osse" and prob(b, 7, "osse") > prob(b, 7, "ossi")


def test_pair_doctor_she_he(m):
    """Pair doctor she / he: "both are [the same translation], though 'she' needs 'stanca'. [...]
    at step 7 'stanco' [is emitted in both], and 'st' (the start of 'stanca') [is a candidate].
    Force 'st' in A with What if? and it says 'stanca'. The difference map pairs 'she' with 'he' in
    one column: the only word the two sentences do not share"."""
    a, b = m.trace(DOCTOR_SHE), m.trace(DOCTOR_HE)
    assert a.translation == b.translation and "stanco" in a.translation.split()[-1]
    assert a.tgt_tokens[7] == b.tgt_tokens[7] == "▁stanco"
    alt = m.tr.trace(DOCTOR_SHE, forced_prefix=viewer.whatif_prefix(a, 7, a.topk_tokens[7 - 1].index("▁st")))
    assert alt.translation == a.translation.replace("stanco", "stanca")
    # the only source tokens not shared (the view's alignment: tests/test_panel_pairs.py)
    assert [t for t in a.src_tokens if t not in b.src_tokens] == ["▁she"]
    assert [t for t in b.src_tokens if t not in a.src_tokens] == ["▁he"]
    assert "pairs 'she' with 'he' in one column" in texts_of(CLAIMS)[f"pair {DOCTOR_SHE}"]


# ----------------------------------------------------------------------------- why this word?
def test_direct_logit_attribution_of_a_against_un(m):
    """README "What a head adds to a word": ""a" beats "un" [...]. Split against the runner-up,
    cross-attention layer 4 head 3 adds [...] and head 4 adds [...], while layer 4 head 5 takes
    [...] away": those three are the largest parts, and the parts add up to the difference."""
    d = m.why.dla
    assert words([d.token, d.versus]) == ["a", "un"]
    assert abs(d.total() - d.value) < 1e-3
    assert {(x["kind"], x["layer"] + 1, x["head"] + 1) for x in d.ranking(3)} == {
        ("cross", 4, 3),
        ("cross", 4, 4),
        ("cross", 4, 5),
    }


def test_patching_john_moves_little_through_the_knockout_head(m):
    """README "Patching does not always find the knock-out head": "Every component together turns
    "a" into "un" (the patch of all is exact). One at a time, cross-attention layer 4 head 3 moves
    [the most] [...]: at step 4 [layer 1 head 1] looks at the name in both sentences"."""
    p = m.why.patch
    assert words([p.token_a, p.token_b]) == ["a", "un"]
    assert p.fraction("all") == pytest.approx(1.0, abs=1e-3)
    best = p.ranking(1)[0]
    assert (best["kind"], best["layer"], best["head"]) == ("cross", 3, 2)
    for text, name in ((TOM, "Mary"), (JOHN, "John")):
        assert top(m.trace(text), head_row(m.trace(text), 1, 1, 4)) == name


def test_gradients_and_attention_disagree_on_beautiful(m):
    """README "Where attention and gradients disagree": "integrated gradients put the most weight,
    in size, on "beautiful" [...], then on "Mary"", at 64 steps, beside cross-attention (layer 4,
    mean of the heads)."""
    g = m.why.grad
    assert words([g.token]) == ["a"] and g.attention == {"layer": 3, "head": "mean"}
    src = words(g.src_tokens)
    assert [src[i] for i in np.argsort(-np.abs(g.ig_src))[:2]] == ["beautiful", "Mary"]
    assert abs(g.completeness_gap) < 0.05  # at 64 steps the scores add up to f(x) - f(baseline) closely


# ----------------------------------------------------------------------------- the model's scores
def test_readme_scores_are_the_checkpoints_own():
    """README "The model": the test scores, and those of the long sentences the app warns about,
    are the ones ``python -m transformer.cli.evaluate --save`` recorded in ``metrics.json``."""
    test = json.loads((SHIPPED / "metrics.json").read_text(encoding="utf-8"))["test"]
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"BLEU {test['bleu']} / chrF {test['chrf']} greedy" in readme
    long = test["long"]
    assert (
        f"on the {long['n']} test sentences of {long['min_words']} words or more it scores "
        f"{long['bleu']} / {long['chrf']}"
    ) in readme
