"""``checkpoints/en-it/claims.json``, pinned to the shipped model.

The claims file is where "What to look for" (README.md, docs/what-to-look-for.md), the app's example hints and the
minimal pairs' hints get every figure they state (:mod:`explorer.claims`). Each value is
measured by :mod:`explorer.measure` (:data:`~explorer.measure.MEASURES`: through the functions
the app itself calls, compared as the texts print them); a value without a measure fails, so
every figure in the file is checked. The translations the texts quote are checked in the
rendered texts themselves, and the rest (which token a head looks at, which step two versions
part at, which heads have a habit) by the tests below.

When a new checkpoint ships, these tests fail exactly where its claims file has gone stale:
``python -m explorer.measure --update`` writes the figures that are still measured where the
texts say, the texts whose sentence, step or head no longer fits are rewritten by hand (and
the tests below with them), then ``python -m explorer.claims --write README.md docs/what-to-look-for.md``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from explorer import texts as viewer
from transformer.interpret.habits import with_habits
from explorer.claims import FILE, load
from explorer.measure import (
    BLEEDING,
    BLEEDING_REF,
    BOOK,
    BROTHER,
    COFFEE,
    DOCTOR_HE,
    DOCTOR_SHE,
    GRANDPARENTS,
    GRANDPARENTS_STEP,
    LAKE,
    MEASURES,
    MILK,
    NICE,
    RED_CAR,
    SISTER,
    TOM,
    TOM_CLOSE,
    TOM_PART,
    TOM_UN_STEP,
    TWO_CARS,
    TWO_CARS_PIECE,
    YOUNG_DOCTOR,
    YOUNG_NOUN,
    Measured,
    exact_cross,
    first_difference,
    heads_with,
    lowest_source_share,
    measured_and_stated,
    misquoted,
    on,
    prob,
    ranked_first,
    shown_cross,
    texts_of,
    top,
    words,
)
from transformer.core import readings
from tests.helpers import ROOT, SHIPPED

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
def m(one_thread, shipped):
    return Measured(shipped, SHIPPED)


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
    data["values"]["tom_close_a"]["value"] = round(data["values"]["tom_close_a"]["value"] + 0.01, 2)
    data["values"]["test_sentences"]["value"] = 999
    lines = data["readme"]["items"][1]["lines"]
    first = next(i for i, line in enumerate(lines) if "dato a Mary" in line)  # the first quote only
    lines[first] = lines[first].replace("dato a Mary", "dato a Maria", 1)
    copy = tmp_path / FILE
    copy.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    wrong = load(copy)
    for name in ("tom_close_a", "test_sentences"):
        measured, stated = measured_and_stated(wrong, name, m)
        assert measured != stated and measured == measured_and_stated(CLAIMS, name, m)[1]
    assert misquoted(wrong, m) == [f'readme: "{TOM}" → "{m.trace(TOM).translation}"']


@pytest.mark.slow  # measures every claim of the shipped model again (explorer.measure)
def test_measure_update_writes_the_measured_figures_and_nothing_else(tmp_path, capsys):
    """``python -m explorer.measure --update`` on a copy of the checkpoint whose claims file has
    two stale figures: it reports them, writes the model's, and leaves every other byte alone."""
    from explorer import measure

    for item in SHIPPED.iterdir():
        if item.name != FILE:
            (tmp_path / item.name).symlink_to(item)
    original = (SHIPPED / FILE).read_text(encoding="utf-8")
    shown = CLAIMS.values["tom_close_a"].shown()
    stale = original.replace(f'"tom_close_a": {{"value": {shown},', '"tom_close_a": {"value": 0.01,', 1)
    stale = stale.replace('"test_sentences": {"value": 1000,', '"test_sentences": {"value": 999,', 1)
    assert stale != original and '"value": 999,' in stale
    (tmp_path / FILE).write_text(stale, encoding="utf-8")
    assert measure.main(["--checkpoint", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines() if line.endswith("stale")] == ["test_sentences", "tom_close_a"]
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
    """README "Heads with habits": "four heads are same-token heads: layer 1 heads 6 and 8, layer 2
    head 6 and layer 4 head 8. Layer 2 head 6 is the strongest"."""
    dec = m.test_set["kinds"]["decoder_self"]
    assert [(layer, head) for _, layer, head in heads_with({"decoder_self": dec}, "same-token head")] == [
        (1, 6),
        (1, 8),
        (2, 6),
        (4, 8),
    ]
    assert max(v for row in dec["same"] for v in row if v is not None) == dec["same"][1][5]


def test_same_token_heads_on_red_car(m):
    """Example red car: "layer 1, heads 6 and 8 look mostly at the token just read (same-token
    heads)"; README: "on 'I have a red car.' layer 1 head 8 puts [the most of layer 1] there"."""
    dec = with_habits(m.trace(RED_CAR).head_stats)["kinds"]["decoder_self"]
    assert [h + 1 for h, habit in enumerate(dec["habit"][0]) if habit == "same-token head"] == [6, 8]
    assert max(dec["same"][0]) == dec["same"][0][7]
    assert "layer 1, heads 6 and 8" in example_hint(RED_CAR)
    assert "layer 1 head 8 puts" in texts_of(CLAIMS)["readme"]


def test_previous_and_next_token_heads(m):
    """README "Heads with habits": two previous-token heads and one next-token head, all in the encoder."""
    kinds = m.test_set["kinds"]
    assert heads_with(kinds, "previous-token head") == [("encoder", 1, 7), ("encoder", 4, 5)]
    assert heads_with(kinds, "next-token head") == [("encoder", 2, 3)]


def test_sinks_and_aligners(m):
    """README "Heads with habits": "The sinks of decoder self-attention are all on [SOS]: layer 1
    heads 1, 4, 5 and 7, layer 2 heads 2 and 8, layer 3 heads 1 and 5; the encoder's layer 3 head 7
    sinks on [EOS]. In cross-attention every head of layer 2 is a monotonic aligner, and so is every
    head of layer 3 but head 8"."""
    kinds = m.test_set["kinds"]
    assert [(layer, head) for kind, layer, head in heads_with(kinds, "[SOS] sink") if kind == "decoder_self"] == [
        (1, 1),
        (1, 4),
        (1, 5),
        (1, 7),
        (2, 2),
        (2, 8),
        (3, 1),
        (3, 5),
    ]
    assert heads_with(kinds, "[EOS] sink") == [("encoder", 3, 7)]
    assert kinds["cross"]["habit"][1] == ["monotonic aligner"] * 8
    assert [h + 1 for h, habit in enumerate(kinds["cross"]["habit"][2]) if habit != "monotonic aligner"] == [8]


# ----------------------------------------------------------------------------- importance and knock-out
def test_head_importance_ranks_cross_l1_h4_first(m):
    """README "Knock out one head and Mary is gone." and the Tom example: "Head importance ranks
    cross-attention layer 1, head 4 first"."""
    assert ranked_first(m.importance) == ("cross", 1, 4)
    assert m.importance["translation"] == m.trace(TOM).translation
    assert "ranks cross-attention layer 1, head 4 first" in example_hint(TOM)


@pytest.mark.slow  # 96 knock-outs of the shipped model
def test_three_single_head_knockouts_lose_mary_and_nine_move_her(m):
    """README "Knock out one head and Mary is gone.": knocking out the first head loses 'a Mary'
    (the translation is checked among the quotes); "Two more of the 96 heads lose her the same way
    (encoder self-attention layer 4 head 4, cross-attention layer 1 head 6), nine more move her to
    the end, and the other 84 leave the translation as it is"."""
    from transformer.interpret import knockout

    assert m.tom_knockout["heads"] == [{"kind": "cross", "layer": 0, "head": 3}]
    gone = m.tom_knockout["knockout"]["translation"]
    assert m.tom_knockout["changed"] and "Mary" not in gone
    by_translation = {}
    for h in m.tom_knockouts:
        by_translation.setdefault(knockout.knockout(m.tr, TOM, h)["knockout"]["translation"], []).append(h)
    moved = gone[: -len(".")] + " a Mary."  # the same words, Mary at the end
    assert by_translation == {
        gone: ["encoder:3:3", "cross:0:3", "cross:0:5"],
        moved: [
            "encoder:0:7",
            "encoder:2:0",
            "encoder:2:4",
            "encoder:3:6",
            "encoder:3:7",
            "decoder_self:1:7",
            "cross:0:1",
            "cross:1:6",
            "cross:2:6",
        ],
    }
    cfg = m.tr.cfg
    assert cfg.h * (cfg.n_encoder_layers + 2 * cfg.n_decoder_layers) == 96
    readme = texts_of(CLAIMS)["readme"]
    assert "96 heads" in readme and "nine more move her to the end" in readme and "the other 84" in readme


def test_tom_whatif_at_the_closest_call_and_in_the_forced_version(m):
    """README and the Tom example: "The closest call is step 4: 'a', 'un'; force 'un' with What
    if?" (Mary moves to the end), and "Explore that version: at its step 7 'a' is the runner-up of
    'per'; force it there" (the translations are checked among the quotes)."""
    trace = m.trace(TOM)
    margins = [trace.topk_probs[t][0] - trace.topk_probs[t][1] for t in range(len(trace.tgt_tokens) - 1)]
    assert int(np.argmin(margins)) + 1 == TOM_CLOSE
    assert words(trace.topk_tokens[TOM_CLOSE - 1][:2]) == ["a", "un"]
    assert words(trace.tgt_tokens[TOM_CLOSE : TOM_CLOSE + 2]) == ["a", "Mary"]
    assert viewer.forced_label(m.tom_close) == "step 4 forced to 'un'"
    assert m.tom_close.translation.endswith(" a Mary.")
    assert words(m.tom_close.topk_tokens[TOM_UN_STEP - 1][:2]) == ["per", "a"]
    assert viewer.forced_label(m.tom_un_a) == "step 7 forced to 'a'"
    # three word orders of the same words
    versions = [trace.translation, m.tom_close.translation, m.tom_un_a.translation]
    assert len(set(versions)) == 3 and len({tuple(sorted(v.rstrip(".").split())) for v in versions}) == 1


# ----------------------------------------------------------------------------- logit lens
def test_logit_lens_which_steps_are_decided_where(m):
    """README "Where the final word appears." and the Tom example: "'a' appears in layer 2, 'un'
    only in layer 3"."""
    trace = m.trace(TOM)
    first = readings.logit_lens_first_layer(trace)  # 0-based; the viewer's note uses the same rule
    emitted = words(trace.tgt_tokens[1:])
    by_layer = {layer + 1: [w for w, f in zip(emitted, first) if f == layer] for layer in set(first)}
    assert by_layer == {
        1: ["[EOS]"],
        2: ["ha", "dato", "a", "Mary", "bel", "per", "il", "suo", "."],
        3: ["Tom", "un", "regalo", "compleanno"],
    }
    assert "'a' appears in layer 2, 'un' only in layer 3" in example_hint(TOM)


# ----------------------------------------------------------------------------- the lake and milk sentences
def assert_mean_cross_looks_at(trace, layer, step, word, value: str):
    """Cross-attention of ``layer`` (mean of the heads) weighs ``word`` most at ``step``, in the
    model's weights and in the viewer's (quantised) copy, which agree at the precision shown."""
    exact, shown = exact_cross(trace, layer, step), shown_cross(trace, layer, step, "translate")
    assert top(trace, exact) == top(trace, shown) == word
    assert CLAIMS.values[value].shown(on(trace, exact, word)) == CLAIMS.values[value].shown(on(trace, shown, word))


def test_lake_comes_out_right_looking_at_near(m):
    """The lake example: "'near the lake' comes out right, 'vicino al lago'. At step 11 'vicino' [...]
    while cross-attention (layer 3, mean of the heads) looks at 'near'"."""
    trace = m.trace(LAKE)
    assert "vicino al lago" in trace.translation
    assert words(trace.tgt_tokens[11:12]) == ["vicino"]
    assert_mean_cross_looks_at(trace, 3, 11, "near", "lake_step11_near")


def test_lake_reaches_the_model_in_two_pieces(m):
    """The lake example: "'lake' reaches the model as 'la' + 'ke' and still comes out as 'lago':
    at step 13 cross-attention looks at 'la'"."""
    trace = m.trace(LAKE)
    i = trace.src_tokens.index("▁la")
    assert trace.src_tokens[i + 1] == "ke"
    assert words(trace.tgt_tokens[13:14]) == ["lago"]
    assert_mean_cross_looks_at(trace, 3, 13, "la", "lake_step13_la")


def test_milk_every_item_comes_out(m):
    """The milk example: "every item comes out: at step 6 'latte' [...] while cross-attention
    (layer 3, mean of the heads) looks at 'milk'"."""
    trace = m.trace(MILK)
    assert all(item in trace.translation for item in ("pane", "latte", "uova"))
    assert words(trace.tgt_tokens[6:7]) == ["latte"]
    assert_mean_cross_looks_at(trace, 3, 6, "milk", "milk_step6_milk")


# ----------------------------------------------------------------------------- failures to study
def test_grandparents_become_one_grandfather(m):
    """README "A failure to study.": "one grandfather [...] 'grandparents' reaches the model in four
    pieces [...] and the plural is lost before the noun: at step 5 'nostro' [...], 'i' [...] and
    'nostra' [...]. At step 6 it writes 'non' while cross-attention (layer 3, mean of the heads)
    looks at 'grand'. Force 'nostra' [...]; force 'i' [...]: grandchildren" (the translations are
    checked among the quotes)."""
    trace = m.trace(GRANDPARENTS)
    assert "nonno" in trace.translation and "nonni" not in trace.translation
    assert words(trace.src_tokens[6:10]) == ["grand", "p", "aren", "ts"]
    assert words(trace.topk_tokens[GRANDPARENTS_STEP - 1][:3]) == ["nostro", "i", "nostra"]
    assert words(trace.tgt_tokens[GRANDPARENTS_STEP : GRANDPARENTS_STEP + 2]) == ["nostro", "non"]
    assert_mean_cross_looks_at(trace, 3, GRANDPARENTS_STEP + 1, "grand", "grand_step6_grand")
    assert viewer.forced_label(m.grandparents_nostra) == "step 5 forced to 'nostra'"
    assert viewer.forced_label(m.grandparents_i) == "step 5 forced to 'i'"
    assert "nonn" not in m.grandparents_i.translation and "nipoti" in m.grandparents_i.translation


def test_young_doctor_gender_is_settled_at_step_1(m):
    """README "A mistake to study.": "The gender is settled at step 1, 'Il' against 'La'. Force 'La'
    with What if? [...]: right, word for word. The article decides the noun: at step 3 'dottore' has
    [...] after 'Il giovane' and [...] after 'La giovane', where 'dotto' [...] starts 'dottoressa'"
    (the translations are checked among the quotes)."""
    trace = m.trace(YOUNG_DOCTOR)
    assert trace.translation.startswith("Il giovane dottore")
    assert words([trace.tgt_tokens[1]]) == ["Il"] and "▁La" in trace.topk_tokens[0]
    assert words(trace.tgt_tokens[1 : YOUNG_NOUN + 1]) == ["Il", "giovane", "dottore"]
    forced = m.young_doctor_la
    assert viewer.forced_label(forced) == "step 1 forced to 'La'"
    assert forced.translation.startswith("La giovane dottoressa")
    assert words(forced.tgt_tokens[1:YOUNG_NOUN]) == ["La", "giovane"]
    assert words(forced.tgt_tokens[YOUNG_NOUN : YOUNG_NOUN + 3]) == ["dotto", "res", "sa"]
    assert (
        words(forced.topk_tokens[YOUNG_NOUN - 1][:1]) == ["dotto"] and "▁dottore" in forced.topk_tokens[YOUNG_NOUN - 1]
    )


# ----------------------------------------------------------------------------- minimal pairs
def test_pair_brother_sister(m):
    """Pair brother / sister: "The article agrees at step 1 ('Mio' [...], 'Mia' [...]), and so does
    the adjective at step 4: A says 'alto' [...], B 'alta' [...]. At step 2, cross-attention (layer
    3, mean of heads) looks at 'brother' and at 'sister'"."""
    a, b = m.trace(BROTHER), m.trace(SISTER)
    assert words([a.tgt_tokens[1], b.tgt_tokens[1]]) == ["Mio", "Mia"]
    assert words([a.tgt_tokens[4], b.tgt_tokens[4]]) == ["alto", "alta"]
    assert (top(a, shown_cross(a, 3, 2)), top(b, shown_cross(b, 3, 2))) == ("brother", "sister")


def test_pair_red_car_two_red_cars(m):
    """Pair red car / two red cars: "At step 2 A's 'un'' becomes 'due', and the noun changes with it:
    A writes 'auto' ('a' + 'uto'), B 'macchine', in two pieces, 'macch' + 'ine'. [...] at step 5
    cross-attention (layer 3, mean of heads) looks at 'red', and at step 6 'osse' [...] beats
    'ossi'. Force 'ossi'" (its translation is among the quotes)."""
    a, b = m.trace(RED_CAR), m.trace(TWO_CARS)
    assert words([a.tgt_tokens[2], b.tgt_tokens[2]]) == ["un'", "due"]
    assert words(a.tgt_tokens[3:5]) == ["a", "uto"]
    assert words(b.tgt_tokens[3:5]) == ["macch", "ine"]
    assert top(b, shown_cross(b, 3, 5)) == "red"
    assert words(b.tgt_tokens[5:7]) == ["r", "osse"] and prob(b, 6, "osse") > prob(b, 6, "ossi")
    assert viewer.forced_label(m.two_cars_ossi) == "step 6 forced to 'ossi'"


def test_pair_doctor_she_he(m):
    """Pair doctor she / he: "The pronoun changes one word, the adjective [...] at step 5
    cross-attention (layer 2, mean of heads) puts [its most] on 'she' and on 'he' [...] at step 7 A
    writes 'st' (the start of 'stanca') over 'stanco', while B writes 'stanco' over 'st'. Force
    'stanco' in A with What if? [...] The difference map pairs 'she' with 'he' in one column: the
    only word the two sentences do not share" (the translations are checked among the quotes)."""
    a, b = m.trace(DOCTOR_SHE), m.trace(DOCTOR_HE)
    assert a.translation.endswith("stanca.") and b.translation == a.translation.replace("stanca", "stanco")
    assert words(a.topk_tokens[6][:2]) == ["st", "stanco"] and words(b.topk_tokens[6][:2]) == ["stanco", "st"]
    assert words(a.tgt_tokens[7:9]) == ["st", "anca"] and words([b.tgt_tokens[7]]) == ["stanco"]
    assert a.topk_probs[6][0] < b.topk_probs[6][0]  # "less sure with 'she'"
    assert (top(a, shown_cross(a, 2, 5)), top(b, shown_cross(b, 2, 5))) == ("she", "he")
    assert viewer.forced_label(m.doctor_she_stanco) == "step 7 forced to 'stanco'"
    assert m.doctor_she_stanco.translation == b.translation
    # the only source tokens not shared (the view's alignment: tests/test_panel_pairs.py)
    assert [t for t in a.src_tokens if t not in b.src_tokens] == ["▁she"]
    assert [t for t in b.src_tokens if t not in a.src_tokens] == ["▁he"]
    assert "pairs 'she' with 'he' in one column" in texts_of(CLAIMS)[f"pair {DOCTOR_SHE}"]


# ----------------------------------------------------------------------------- why this word?
def test_tom_and_the_nice_present_part_at_step_4(m):
    """README "What a head adds to a word" and "Patching finds no single head for word order": at
    step 4 the Tom sentence says 'a' ('un' the runner-up); the nice-present sentence parts from it
    there, 'a' against 'un' (Mary kept for the end), "though 'beautiful' and 'nice' both become
    'bel'"."""
    tom, nice = m.trace(TOM), m.trace(NICE)
    assert first_difference(tom.tgt_tokens[1:], nice.tgt_tokens[1:]) == TOM_PART
    assert words([tom.tgt_tokens[TOM_PART], nice.tgt_tokens[TOM_PART]]) == ["a", "un"]
    assert words(tom.tgt_tokens[TOM_PART + 1 : TOM_PART + 2]) == ["Mary"]
    assert (
        nice.translation.endswith(" a Mary.") and "bel" in tom.translation.split() and "bel" in nice.translation.split()
    )
    assert words(tom.topk_tokens[TOM_CLOSE - 1][:2]) == ["a", "un"] and words([tom.tgt_tokens[TOM_CLOSE]]) == ["a"]


def test_direct_logit_attribution_of_a_against_un(m):
    """README "What a head adds to a word": ""a" beats "un" [...]. Split against the runner-up,
    cross-attention layer 2 head 7 adds [...], while layer 3 head 3 takes [...] away and layer 4
    head 4 [...]: each of them is larger than the whole difference, and they pull both ways": those
    three are the largest head parts, with those signs, and all the parts add up to the difference."""
    d = m.why.dla
    assert words([d.token, d.versus]) == ["a", "un"]
    assert abs(d.total() - d.value) < 1e-3
    ranked = d.ranking(3)
    assert [(x["kind"], x["layer"] + 1, x["head"] + 1) for x in ranked] == [
        ("cross", 3, 3),
        ("cross", 2, 7),
        ("cross", 4, 4),
    ]
    assert [x["value"] > 0 for x in ranked] == [False, True, False]
    assert 0 < d.value < min(abs(x["value"]) for x in ranked)


def test_patching_the_nice_present_finds_no_single_head(m):
    """README "Patching finds no single head for word order": "Every component together turns "a"
    into "un" (the patch of all is exact). One at a time, the head that moves it furthest,
    cross-attention layer 4 head 1, [...] and the next, layer 1 head 4, [...] none of them moves it
    even half-way"."""
    p = m.why.patch
    assert words([p.token_a, p.token_b]) == ["a", "un"]
    assert p.fraction("all") == pytest.approx(1.0, abs=1e-3)
    ranked = p.ranking(2)
    assert [(x["kind"], x["layer"] + 1, x["head"] + 1) for x in ranked] == [("cross", 4, 1), ("cross", 1, 4)]
    assert all(abs(x["fraction"]) < 0.5 for x in p.ranking(100))


def test_gradients_and_attention_disagree_on_mary(m):
    """README "Where attention and gradients disagree": "integrated gradients put the most weight on
    "Mary", then on "beautiful"", at 64 steps, beside cross-attention (layer 4, mean of the heads),
    which "looks most at "a""."""
    g = m.why.grad
    assert words([g.token]) == ["a"] and g.attention == {"layer": 3, "head": "mean"}
    src = words(g.src_tokens)
    assert [src[i] for i in np.argsort(-np.abs(g.ig_src))[:2]] == ["Mary", "beautiful"]
    assert src[int(np.argmax(g.cross_attn))] == "a"
    # at 64 steps the scores add up to f(x) - f(baseline) within 5 %
    assert abs(g.completeness_gap) < 0.05 * abs(g.logprob - g.baseline_logprob)


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


# ----------------------------------------------------------------------------- where did this word come from?
def test_ine_comes_mostly_from_the_prefix(m):
    """ "'ine', the end of 'macchine', takes {two_cars_ine_prefix} of what it is made of from the Italian
    prefix [...] 'macch' alone gives {two_cars_ine_macch}": step 4 writes 'ine' after 'macch'."""
    c = m.contributions(TWO_CARS)
    t = TWO_CARS_PIECE - 1
    assert words(c.output_tokens[t - 1 : t + 1]) == ["macch", "ine"]
    assert c.prefix_share[t] > 0.5 and int(np.argmax(c.total[t])) == c.S + t  # "macch" is its largest part
    assert "Ho due macchine rosse." == m.trace(TWO_CARS).translation


def test_lake_decoder_lens_is_done_after_layer_2(m):
    """ "read after encoder layer 1, the decoder writes 'I miei genitori vivono in una piccola casa
    vicino al lago.': every word is there, but 'piccola' still comes before 'casa'", and every later
    row is the translation (the row itself is checked among the quotes)."""
    rows, final = m.lake_lens.rows, m.trace(LAKE).translation
    assert rows[0].text != final and sorted(rows[0].text.split()) == sorted(final.split())
    assert "piccola casa" in rows[0].text and "casa piccola" in final
    assert all(r.text == final for r in rows[1:])


def test_bleeding_reference_parts_at_step_7_on_cop(m):
    """ "rank 1 up to step 7, where 'cop' is the model's choice number {bleeding_cop_rank} and the model
    would write 'prof' [...] for 'Tom sta sanguinando profondamente.'"; its source and reference are a
    pair of the test set."""
    s = m.bleeding_score
    assert s.first_divergence == 6 and list(s.ranks[:6]) == [1] * 6
    assert words([s.tokens[6], s.top_tokens[6]]) == ["cop", "prof"]
    assert m.trace(BLEEDING).translation == "Tom sta sanguinando profondamente."
    assert any(r["src"] == BLEEDING and r["ref"] == BLEEDING_REF for r in m.glance)


def test_the_lowest_source_share_of_the_test_set_is_the_towel(m):
    """ "Sort the test set by source share: first comes 'Don't throw in the towel.' [...] translated
    'Non buttate nel asciugamano.' [...] against 'Non gettare la spugna.'" (the file the app ships,
    as the list shows it), and that is the model's translation today."""
    first = lowest_source_share(m)
    shown = (first["src"], first["hyp"], first["ref"])
    assert shown == ("Don't throw in the towel.", "Non buttate nel asciugamano.", "Non gettare la spugna.")
    assert m.trace(first["src"]).translation == first["hyp"]
    assert len(m.glance) == 1000
