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
    JOHN,
    LAKE,
    MEASURES,
    MILK,
    RED_CAR,
    SISTER,
    TOM,
    TOM_CLOSE,
    TOM_PART,
    TWO_CARS,
    TWO_CARS_PIECE,
    YOUNG_DOCTOR,
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
    data["values"]["tom_close_per"]["value"] = round(data["values"]["tom_close_per"]["value"] + 0.01, 2)
    data["values"]["test_sentences"]["value"] = 999
    lines = data["readme"]["items"][1]["lines"]
    first = next(i for i, line in enumerate(lines) if "compleanno a Mary" in line)  # the first quote only
    lines[first] = lines[first].replace("compleanno a Mary", "compleanno a Maria", 1)
    copy = tmp_path / FILE
    copy.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    wrong = load(copy)
    for name in ("tom_close_per", "test_sentences"):
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
    shown = CLAIMS.values["tom_close_per"].shown()
    stale = original.replace(f'"tom_close_per": {{"value": {shown},', '"tom_close_per": {"value": 0.01,', 1)
    stale = stale.replace('"test_sentences": {"value": 1000,', '"test_sentences": {"value": 999,', 1)
    assert stale != original and '"value": 999,' in stale
    (tmp_path / FILE).write_text(stale, encoding="utf-8")
    assert measure.main(["--checkpoint", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines() if line.endswith("stale")] == [
        "test_sentences",
        "tom_close_per",
    ]
    assert measure.main(["--checkpoint", str(tmp_path), "--update"]) == 0
    assert (tmp_path / FILE).read_text(encoding="utf-8") == original
    assert measure.main(["--checkpoint", str(tmp_path)]) == 0


# ----------------------------------------------------------------------------- example hints
def example_hint(sentence: str) -> str:
    return next(hint for text, hint in CLAIMS.examples() if text == sentence)


def test_hint_red_car_reordering(m):
    """Example "I have a red car.": "'red car' becomes 'macchina rossa'"."""
    assert "'red car' becomes 'macchina rossa'" in example_hint(RED_CAR)
    assert "macchina rossa" in m.trace(RED_CAR).translation


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
    """Example red car: "layer 1, heads 2, 6 and 8 look mostly at the token just read (same-token
    heads)"; README: "on 'I have a red car.' layer 1 head 6 puts [its most] there"."""
    dec = with_habits(m.trace(RED_CAR).head_stats)["kinds"]["decoder_self"]
    assert [h + 1 for h, habit in enumerate(dec["habit"][0]) if habit == "same-token head"] == [2, 6, 8]
    assert max(dec["same"][0]) == dec["same"][0][5]
    assert "layer 1, heads 2, 6 and 8" in example_hint(RED_CAR)


def test_previous_and_next_token_heads(m):
    """README "Heads with habits": two previous-token heads and one next-token head, all in the encoder."""
    kinds = m.test_set["kinds"]
    assert heads_with(kinds, "previous-token head") == [("encoder", 1, 7), ("encoder", 4, 5)]
    assert heads_with(kinds, "next-token head") == [("encoder", 2, 3)]


def test_sinks_and_aligners(m):
    """README "Heads with habits": "The sinks of decoder self-attention are all on [SOS]: layer 1
    heads 1, 4 and 7, layer 2 heads 1, 4 and 8, layer 3 head 1; the encoder's layer 3 head 7 sinks
    on [EOS]. In cross-attention every head of layers 2 and 3 is a monotonic aligner"."""
    kinds = m.test_set["kinds"]
    assert [(layer, head) for kind, layer, head in heads_with(kinds, "[SOS] sink") if kind == "decoder_self"] == [
        (1, 1),
        (1, 4),
        (1, 7),
        (2, 1),
        (2, 4),
        (2, 8),
        (3, 1),
    ]
    assert heads_with(kinds, "[EOS] sink") == [("encoder", 3, 7)]
    assert kinds["cross"]["habit"][1] == kinds["cross"]["habit"][2] == ["monotonic aligner"] * 8


# ----------------------------------------------------------------------------- importance and knock-out
def test_head_importance_ranks_cross_l1_h6_first(m):
    """README "Knock out one head and Mary is gone." and the Tom example: "Head importance ranks
    cross-attention layer 1, head 6 first"."""
    assert ranked_first(m.importance) == ("cross", 1, 6)
    assert m.importance["translation"] == m.trace(TOM).translation
    assert "ranks cross-attention layer 1, head 6 first" in example_hint(TOM)


@pytest.mark.slow  # 96 knock-outs of the shipped model
def test_three_single_head_knockouts_lose_mary(m):
    """README "Knock out one head and Mary is gone.": knocking out the first head loses 'a Mary'
    (the translation is checked among the quotes); "Two more of the 96 heads lose her the same way
    (encoder self-attention layer 3 head 3, decoder self-attention layer 1 head 7); the other 93
    leave the translation as it is"."""
    from transformer.interpret import knockout

    assert m.tom_knockout["heads"] == [{"kind": "cross", "layer": 0, "head": 5}]
    assert m.tom_knockout["changed"] and "Mary" not in m.tom_knockout["knockout"]["translation"]
    assert m.tom_knockouts == ["encoder:2:2", "decoder_self:0:6", "cross:0:5"]
    lost = [knockout.knockout(m.tr, TOM, h)["knockout"]["translation"] for h in m.tom_knockouts]
    assert lost == [m.tom_knockout["knockout"]["translation"]] * 3
    cfg = m.tr.cfg
    assert cfg.h * (cfg.n_encoder_layers + 2 * cfg.n_decoder_layers) == 96
    assert "96 heads" in texts_of(CLAIMS)["readme"] and "the other 93" in texts_of(CLAIMS)["readme"]


def test_tom_whatif_at_the_closest_call_and_at_step_4(m):
    """README and the Tom example: "The closest call is step 7: 'per', 'a'; force 'a' with What
    if?", and "At step 4 'a' is the runner-up too" (the translations are checked among the quotes)."""
    trace = m.trace(TOM)
    margins = [trace.topk_probs[t][0] - trace.topk_probs[t][1] for t in range(len(trace.tgt_tokens) - 1)]
    assert int(np.argmin(margins)) + 1 == TOM_CLOSE
    assert words(trace.topk_tokens[TOM_CLOSE - 1][:2]) == ["per", "a"]
    assert words(trace.topk_tokens[3][:2]) == ["un", "a"]
    assert viewer.forced_label(m.tom_close) == "step 7 forced to 'a'"
    assert viewer.forced_label(m.tom_step4_a) == "step 4 forced to 'a'"
    assert "Mary" in m.tom_close.translation and "Mary" in m.tom_step4_a.translation


# ----------------------------------------------------------------------------- logit lens
def test_logit_lens_which_steps_are_decided_where(m):
    """README "Where the final word appears." and the Tom example: "'a' appears in layer 3"."""
    trace = m.trace(TOM)
    first = readings.logit_lens_first_layer(trace)  # 0-based; the viewer's note uses the same rule
    emitted = words(trace.tgt_tokens[1:])
    by_layer = {layer + 1: [w for w, f in zip(emitted, first) if f == layer] for layer in set(first)}
    assert by_layer == {
        1: ["[EOS]"],
        2: ["ha", "dato", "bel", "per", "il", "suo", "Mary", "."],
        3: ["Tom", "un", "regalo", "compleanno", "a"],
    }
    assert "'a' appears in layer 3" in example_hint(TOM)


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
def test_grandparents_become_one_grandmother(m):
    """README "A failure to study.": "'grandparents' reaches the model in four pieces [...] and the
    plural is lost before the noun: at step 5 'nostra' [...], 'nostro' [...] and 'i' [...]. At step 6
    it writes 'non' while cross-attention (layer 3, mean of the heads) looks at 'grand'. Force
    'nostro' [...]; force 'i'" (the translations are checked among the quotes)."""
    trace = m.trace(GRANDPARENTS)
    assert "nonna" in trace.translation
    assert words(trace.src_tokens[6:10]) == ["grand", "p", "aren", "ts"]
    assert words(trace.topk_tokens[GRANDPARENTS_STEP - 1][:3]) == ["nostra", "nostro", "i"]
    assert words(trace.tgt_tokens[GRANDPARENTS_STEP : GRANDPARENTS_STEP + 2]) == ["nostra", "non"]
    assert_mean_cross_looks_at(trace, 3, GRANDPARENTS_STEP + 1, "grand", "grand_step6_grand")
    assert viewer.forced_label(m.grandparents_nostro) == "step 5 forced to 'nostro'"
    assert viewer.forced_label(m.grandparents_i) == "step 5 forced to 'i'"
    assert "nipoti" in m.grandparents_i.translation


def test_young_doctor_gender_is_settled_at_step_1(m):
    """README "A mistake to study.": "The gender is settled at step 1, 'Il' against 'La'. Force 'La'
    with What if? [...] At step 4 of that version 'ia' beats 'ica', which would have made 'medica'"
    (the translations are checked among the quotes)."""
    trace = m.trace(YOUNG_DOCTOR)
    assert trace.translation.startswith("Il giovane dottore")
    assert words([trace.tgt_tokens[1]]) == ["Il"] and "▁La" in trace.topk_tokens[0]
    forced = m.young_doctor_la
    assert viewer.forced_label(forced) == "step 1 forced to 'La'"
    assert words(forced.tgt_tokens[3:5]) == ["med", "ia"] and words(forced.topk_tokens[3][:2]) == ["ia", "ica"]


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
    """Pair red car / two red cars: "At step 2 A's 'una' becomes 'due', and B writes its noun in two
    pieces, 'macch' + 'ine'. [...] at step 5 cross-attention (layer 3, mean of heads) looks at 'red',
    and at step 6 'osse' [...] beats 'ossi'. Force 'ossi'" (its translation is among the quotes)."""
    a, b = m.trace(RED_CAR), m.trace(TWO_CARS)
    assert words([a.tgt_tokens[2], b.tgt_tokens[2]]) == ["una", "due"]
    assert words(b.tgt_tokens[3:5]) == ["macch", "ine"]
    assert top(b, shown_cross(b, 3, 5)) == "red"
    assert words(b.tgt_tokens[5:7]) == ["r", "osse"] and prob(b, 6, "osse") > prob(b, 6, "ossi")
    assert viewer.forced_label(m.two_cars_ossi) == "step 6 forced to 'ossi'"


def test_pair_doctor_she_he(m):
    """Pair doctor she / he: "both are [the same translation], though 'she' needs 'stanca'. [...] at
    step 5 cross-attention (layer 2, mean of heads) puts [its most] on 'she' and on 'he' [...] at
    step 7 'stanco' [is emitted in both], and 'st' (the start of 'stanca') [is a candidate].
    Force 'st' in A with What if? [...] The difference map pairs 'she' with 'he' in one column:
    the only word the two sentences do not share"."""
    a, b = m.trace(DOCTOR_SHE), m.trace(DOCTOR_HE)
    assert a.translation == b.translation and "stanco" in a.translation.split()[-1]
    assert a.tgt_tokens[7] == b.tgt_tokens[7] == "▁stanco"
    assert (top(a, shown_cross(a, 2, 5)), top(b, shown_cross(b, 2, 5))) == ("she", "he")
    assert m.doctor_she_st.translation == a.translation.replace("stanco", "stanca")
    # the only source tokens not shared (the view's alignment: tests/test_panel_pairs.py)
    assert [t for t in a.src_tokens if t not in b.src_tokens] == ["▁she"]
    assert [t for t in b.src_tokens if t not in a.src_tokens] == ["▁he"]
    assert "pairs 'she' with 'he' in one column" in texts_of(CLAIMS)[f"pair {DOCTOR_SHE}"]


# ----------------------------------------------------------------------------- why this word?
def test_tom_and_john_part_at_step_4(m):
    """README "What a head adds to a word" and "Patching finds no single head for word order": at
    step 7 the Tom sentence says 'per' ('a' the runner-up); the John sentence parts from it at step
    4, 'un' against 'a' (John named first)."""
    tom, john = m.trace(TOM), m.trace(JOHN)
    assert first_difference(tom.tgt_tokens[1:], john.tgt_tokens[1:]) == TOM_PART
    assert words([tom.tgt_tokens[TOM_PART], john.tgt_tokens[TOM_PART]]) == ["un", "a"]
    assert words(john.tgt_tokens[TOM_PART + 1 : TOM_PART + 2]) == ["John"]
    assert words(tom.topk_tokens[TOM_CLOSE - 1][:2]) == ["per", "a"] and words([tom.tgt_tokens[TOM_CLOSE]]) == ["per"]


def test_direct_logit_attribution_of_per_against_a(m):
    """README "What a head adds to a word": ""per" beats "a" [...]. Split against the runner-up,
    cross-attention layer 3 head 3 adds [...] and layer 2 head 1 adds [...], while layer 3 head 2
    takes [...] away": those three are the largest head parts, and the parts add up to the difference."""
    d = m.why.dla
    assert words([d.token, d.versus]) == ["per", "a"]
    assert abs(d.total() - d.value) < 1e-3
    assert [(x["kind"], x["layer"] + 1, x["head"] + 1) for x in d.ranking(3)] == [
        ("cross", 3, 3),
        ("cross", 2, 1),
        ("cross", 3, 2),
    ]


def test_patching_john_finds_no_single_head(m):
    """README "Patching finds no single head for word order": "Every component together turns "un"
    into "a" (the patch of all is exact). One at a time, the head that moves it furthest,
    cross-attention layer 2 head 2, [...] and the next, layer 2 head 6"."""
    p = m.why.patch
    assert words([p.token_a, p.token_b]) == ["un", "a"]
    assert p.fraction("all") == pytest.approx(1.0, abs=1e-3)
    assert [(x["kind"], x["layer"] + 1, x["head"] + 1) for x in p.ranking(2)] == [("cross", 2, 2), ("cross", 2, 6)]


def test_gradients_and_attention_disagree_on_her(m):
    """README "Where attention and gradients disagree": "integrated gradients put the most weight on
    "her", then on "for"", at 64 steps, beside cross-attention (layer 4, mean of the heads), which
    "looks most at [SOS]"."""
    g = m.why.grad
    assert words([g.token]) == ["per"] and g.attention == {"layer": 3, "head": "mean"}
    src = words(g.src_tokens)
    assert [src[i] for i in np.argsort(-np.abs(g.ig_src))[:2]] == ["her", "for"]
    assert src[int(np.argmax(g.cross_attn))] == "[SOS]"
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
    """ "read after encoder layer 1, the decoder writes 'I miei genitori vivono in una casa piccola.'":
    "near the lake" is missing there, and every later row is the translation."""
    rows = m.lake_lens.rows
    assert rows[0].text == "I miei genitori vivono in una casa piccola."
    assert all(r.text == m.trace(LAKE).translation for r in rows[1:])


def test_bleeding_reference_parts_at_step_7_on_cop(m):
    """ "rank 1 up to step 7, where 'cop' is the model's choice number {bleeding_cop_rank} and the model
    would write 'prof' [...] for 'Tom sta sanguinando profondamente.'"; its source and reference are a
    pair of the test set."""
    s = m.bleeding_score
    assert s.first_divergence == 6 and list(s.ranks[:6]) == [1] * 6
    assert words([s.tokens[6], s.top_tokens[6]]) == ["cop", "prof"]
    assert m.trace(BLEEDING).translation == "Tom sta sanguinando profondamente."
    assert any(r["src"] == BLEEDING and r["ref"] == BLEEDING_REF for r in m.glance)


def test_the_lowest_source_share_of_the_test_set_is_misinformed(m):
    """ "Sort the test set by source share: first comes 'I was misinformed.' [...] translated 'Ero
    meraviglioso.' [...] against 'Ero disinformata.'" (the file the app ships, as the list shows it)."""
    first = lowest_source_share(m)
    shown = (first["src"], first["hyp"], first["ref"])
    assert shown == ("I was misinformed.", "Ero meraviglioso.", "Ero disinformata.")
    assert len(m.glance) == 1000
