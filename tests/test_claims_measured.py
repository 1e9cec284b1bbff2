"""``checkpoints/en-it/claims.json``, pinned to the shipped model.

The claims file is where the README's "What to look for", the app's example hints and the
minimal pairs' hints get every figure they state (:mod:`explorer.claims`). These tests
measure each of its values through the functions the app itself calls (``Translator.trace``,
``transformer.interpret``, ``explorer.texts``, the viewer payload and the checkpoint's
``head_stats.json``), so the numbers are the ones a visitor sees on screen, and compare them
as the texts print them (each value's ``digits``). :data:`MEASURES` says how each value is
measured; a value without a measure fails, so every figure in the file is checked. The
translations the texts quote are checked in the rendered texts themselves, and the rest
(which token a head looks at, which step two versions part at, which heads have a habit)
by the tests below.

When a new checkpoint ships, these tests fail exactly where its claims file has gone stale:
re-measure in the app, update the values (or the texts) in ``claims.json``, then
``python -m explorer.claims --write README.md``.

Conventions: the texts count layers, heads and steps from 1, as the app does; the code
counts from 0 (``trace.cross_attn[layer - 1, head - 1, step - 1]``, heads written
``"cross:0:0"`` for "cross-attention layer 1, head 1").
"""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from explorer import texts as viewer
from explorer.claims import FILE, Claims, load, render_section
from explorer.payload import decode_payload, encode_trace
from transformer import load_translator
from transformer.core import readings
from transformer.interpret import knockout

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "checkpoints" / "en-it"
CLAIMS = load(SHIPPED / FILE)

RED_CAR = "I have a red car."
COFFEE = "I don't like coffee."
BOOK = "The book that I bought yesterday is very interesting."
TOM = "Tom gave Mary a beautiful present for her birthday."
LAKE = "My parents live in a small house near the lake."
TWO_CARS = "I have two red cars."
MILK = "We need to buy bread, milk and eggs."
JOHN = "Tom gave John a beautiful present for his birthday."
BROTHER, SISTER = "My brother is tall.", "My sister is tall."
DOCTOR_SHE, DOCTOR_HE = "The doctor said she was tired.", "The doctor said he was tired."


def words(tokens) -> list[str]:
    """Subwords as the app shows them (the word-start marker dropped)."""
    return [viewer.display_token(t) for t in tokens]


def first_difference(a, b) -> int | None:
    """The first 1-based step where two token lists differ (None if they never do)."""
    return next((t + 1 for t, (x, y) in enumerate(zip(a, b)) if x != y), None)


def prob(trace, step, token) -> float:
    """Probability of ``token`` among the candidates (top-k) at 1-based ``step``."""
    return float(trace.topk_probs[step - 1][trace.topk_tokens[step - 1].index(token)])


def on(trace, row, word) -> float:
    """The weight of attention row ``row`` (over the source) on the source token ``word``."""
    return float(row[words(trace.src_tokens).index(word)])


def top(trace, row) -> str:
    """The source token attention row ``row`` weighs most."""
    return words(trace.src_tokens)[int(np.argmax(row))]


def head_row(trace, layer, head, step):
    """Cross-attention of one head (1-based ``layer``, ``head``, ``step``), from the model."""
    return trace.cross_attn[layer - 1, head - 1, step - 1]


def shown_cross(trace, layer, step, origin="pair"):
    """Cross-attention of ``layer`` (mean of the heads) at 1-based ``step`` as the viewer draws
    it: from its payload (a Translate and both sentences of a pair travel in that format)."""
    return decode_payload(encode_trace(trace, origin=origin))["cross_attn"][layer - 1, :, step - 1].mean(axis=0)


def exact_cross(trace, layer, step):
    """The same mean, from the model's own weights."""
    return trace.cross_attn[layer - 1, :, step - 1].mean(axis=0)


def head_drop(importance, kind, layer, head) -> float:
    """The drop head importance gives one head (1-based ``layer``, ``head``)."""
    wanted = (kind, layer - 1, head - 1)
    return next(x["drop"] for x in importance["ranking"] if (x["kind"], x["layer"], x["head"]) == wanted)


# ----------------------------------------------------------------------------- the model, measured once
class Measured:
    """The shipped model's answers to everything the claims quote, each computed on first use
    and kept for the module (one test can then be run alone, in any order)."""

    def __init__(self, tr):
        self.tr = tr
        self.traces = {}

    def trace(self, text):
        """The greedy trace the app shows after Translate."""
        if text not in self.traces:
            self.traces[text] = self.tr.trace(text)
        return self.traces[text]

    @cached_property
    def test_set(self) -> dict:
        """The "whole test set" diagnostics maps: ``head_stats.json`` as the analysis panel loads it
        (``explorer.panels.analysis.load_test_stats`` is a plain JSON read; not imported, to keep
        Gradio out of this module)."""
        return json.loads((SHIPPED / "head_stats.json").read_text(encoding="utf-8"))

    @cached_property
    def importance(self) -> dict:
        return knockout.head_importance(self.tr, TOM)

    @cached_property
    def tom_knockout(self) -> dict:
        return knockout.knockout(self.tr, TOM, "cross:0:0")  # cross-attention layer 1, head 1

    @cached_property
    def milk_latte(self):
        """What if? at step 6 of the milk sentence, forcing the runner-up (the calls of ``App.whatif``)."""
        trace = self.trace(MILK)
        return self.tr.trace(trace.src_text, forced_prefix=viewer.whatif_prefix(trace, 6, 1))

    @cached_property
    def why(self):
        """The three analyses of "Why this word?" at step 4 of the Tom sentence, as the app asks
        for them (explorer/panels/attribution.py; steps 0-based here): direct logit attribution
        against the runner-up, patching with the John sentence, and gradient attribution at 64
        integration steps beside cross-attention at the last layer, mean of the heads."""
        from transformer.interpret.attribution import activation_patching, direct_logit_attribution
        from transformer.interpret.saliency import saliency

        return SimpleNamespace(
            dla=direct_logit_attribution(self.tr, TOM, 3, versus="runner-up"),
            patch=activation_patching(self.tr, TOM, JOHN, 3),
            grad=saliency(self.tr, TOM, 3, n_steps=64),
        )


def ig(m, word) -> float:
    g = m.why.grad
    return float(g.ig_src[words(g.src_tokens).index(word)])


# How each value of claims.json is measured: name -> function of the Measured model.
MEASURES = {
    "test_sentences": lambda m: m.test_set["n_sentences"],
    "same_l1h6_test_set": lambda m: m.test_set["kinds"]["decoder_self"]["same"][0][5],
    "same_l1h6_red_car": lambda m: m.trace(RED_CAR).head_stats["kinds"]["decoder_self"]["same"][0][5],
    "tom_drop_cross_l1h1": lambda m: head_drop(m.importance, "cross", 1, 1),
    "tom_cross_l1h1_mary": lambda m: on(m.trace(TOM), head_row(m.trace(TOM), 1, 1, 4), "Mary"),
    "tom_step4_a": lambda m: prob(m.trace(TOM), 4, "▁a"),
    "tom_step4_un": lambda m: prob(m.trace(TOM), 4, "▁un"),
    "lake_step10_nel": lambda m: prob(m.trace(LAKE), 10, "▁nel"),
    "lake_step10_al": lambda m: prob(m.trace(LAKE), 10, "▁al"),
    "lake_step10_near": lambda m: on(m.trace(LAKE), shown_cross(m.trace(LAKE), 4, 10, "translate"), "near"),
    "lake_step12_ke": lambda m: on(m.trace(LAKE), shown_cross(m.trace(LAKE), 3, 12, "translate"), "ke"),
    "milk_step6_e": lambda m: prob(m.trace(MILK), 6, "▁e"),
    "milk_step6_latte": lambda m: prob(m.trace(MILK), 6, "▁latte"),
    "milk_step6_milk": lambda m: on(m.trace(MILK), shown_cross(m.trace(MILK), 3, 6, "translate"), "milk"),
    "dla_a_over_un": lambda m: m.why.dla.value,
    "dla_cross_l4h3": lambda m: m.why.dla.cross[3, 2],
    "dla_cross_l4h4": lambda m: m.why.dla.cross[3, 3],
    "dla_cross_l4h5_against": lambda m: -m.why.dla.cross[3, 4],
    "dla_cross_l1h1": lambda m: m.why.dla.cross[0, 0],
    "patch_cross_l4h3": lambda m: m.why.patch.fraction("cross")[3, 2],
    "patch_cross_l3h4": lambda m: m.why.patch.fraction("cross")[2, 3],
    "patch_cross_l1h1": lambda m: m.why.patch.fraction("cross")[0, 0],
    "john_cross_l1h1_john": lambda m: on(m.trace(JOHN), head_row(m.trace(JOHN), 1, 1, 4), "John"),
    "ig_beautiful": lambda m: ig(m, "beautiful"),
    "ig_mary": lambda m: ig(m, "Mary"),
    "grad_attn_beautiful": lambda m: m.why.grad.cross_attn[words(m.why.grad.src_tokens).index("beautiful")],
    "grad_rank_correlation": lambda m: m.why.grad.spearman()["src"]["integrated_gradients"],
    "brother_step1_mio": lambda m: prob(m.trace(BROTHER), 1, "▁Mio"),
    "sister_step1_mia": lambda m: prob(m.trace(SISTER), 1, "▁Mia"),
    "brother_step4_alto": lambda m: prob(m.trace(BROTHER), 4, "▁alto"),
    "sister_step4_al": lambda m: prob(m.trace(SISTER), 4, "▁al"),
    "sister_step4_alto": lambda m: prob(m.trace(SISTER), 4, "▁alto"),
    "brother_step2_brother": lambda m: on(m.trace(BROTHER), shown_cross(m.trace(BROTHER), 3, 2), "brother"),
    "sister_step2_sister": lambda m: on(m.trace(SISTER), shown_cross(m.trace(SISTER), 3, 2), "sister"),
    "two_cars_step2_due": lambda m: prob(m.trace(TWO_CARS), 2, "▁due"),
    "two_cars_step6_red": lambda m: on(m.trace(TWO_CARS), shown_cross(m.trace(TWO_CARS), 3, 6), "red"),
    "two_cars_step7_osse": lambda m: prob(m.trace(TWO_CARS), 7, "osse"),
    "two_cars_step7_ossi": lambda m: prob(m.trace(TWO_CARS), 7, "ossi"),
    "doctor_she_step7_stanco": lambda m: prob(m.trace(DOCTOR_SHE), 7, "▁stanco"),
    "doctor_he_step7_stanco": lambda m: prob(m.trace(DOCTOR_HE), 7, "▁stanco"),
    "doctor_she_step7_st": lambda m: prob(m.trace(DOCTOR_SHE), 7, "▁st"),
    "doctor_he_step7_st": lambda m: prob(m.trace(DOCTOR_HE), 7, "▁st"),
    "doctor_she_weight": lambda m: on(m.trace(DOCTOR_SHE), shown_cross(m.trace(DOCTOR_SHE), 1, 7), "she"),
    "doctor_he_weight": lambda m: on(m.trace(DOCTOR_HE), shown_cross(m.trace(DOCTOR_HE), 1, 7), "he"),
}


def measured_and_stated(claims: Claims, name: str, m: Measured) -> tuple[str, str]:
    """Value ``name`` as the model gives it and as the claims state it, both printed as the texts print it."""
    value = claims.values[name]
    return value.shown(MEASURES[name](m)), value.shown()


def texts_of(claims: Claims) -> dict[str, str]:
    """Every text of the claims, rendered, with its line breaks and runs of spaces made single spaces."""
    flat = {"readme": render_section(claims)}
    flat.update({f"example {sentence}": hint for sentence, hint in claims.examples()})
    flat.update({f"pair {p['a']}": p["hint"] for p in claims.pairs()})
    return {name: " ".join(text.split()) for name, text in flat.items()}


def quotes(m: Measured) -> list[tuple[str, str]]:
    """(text, passage): each translation a text quotes, with the model's own translation in it."""
    out = {
        text: m.trace(text).translation
        for text in (TOM, LAKE, MILK, JOHN, BROTHER, SISTER, RED_CAR, TWO_CARS, DOCTOR_SHE)
    }
    return [
        ("readme", f'"{TOM}" → "{out[TOM]}"'),
        ("readme", f'Knock it out and the model says "{m.tom_knockout["knockout"]["translation"]}"'),
        ("readme", f'"{LAKE}" → "{out[LAKE]}"'),
        ("readme", f'"{MILK}" → "{out[MILK]}"'),
        ("readme", f'it goes on to "{m.milk_latte.translation}"'),
        ("readme", f'(→ "{out[JOHN]}")'),
        (f"pair {BROTHER}", f"'{out[BROTHER]}' against '{out[SISTER]}'"),
        (f"pair {RED_CAR}", f"'{out[RED_CAR]}' against '{out[TWO_CARS]}'"),
        (f"pair {DOCTOR_SHE}", f"both are '{out[DOCTOR_SHE]}'"),
    ]


def misquoted(claims: Claims, m: Measured) -> list[str]:
    """The passages the claims' texts should hold, given the model, and do not."""
    texts = texts_of(claims)
    return [f"{text}: {passage}" for text, passage in quotes(m) if passage not in texts[text]]


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
    return Measured(tr)


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
def heads_with(kinds, habit) -> list[tuple[str, int, int]]:
    """(kind, layer, head), 1-based, of every head whose habit is ``habit``."""
    return [
        (kind, l + 1, h + 1)
        for kind, k in kinds.items()
        for l, row in enumerate(k["habit"])
        for h, found in enumerate(row)
        if found == habit
    ]


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
