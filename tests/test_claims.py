"""The README's "What to look for" and the hints of ``app.EXAMPLES``, pinned to the shipped model.

Both texts state concrete results of ``checkpoints/en-it``: translations, head
diagnostics, the head-importance ranking, a knock-out, the logit lens, cross-attention
weights at given steps, candidate probabilities and a What-if result. These tests
measure each one through the functions the app itself calls (``Translator.trace``,
``transformer.analysis``, ``explorer.texts``, the viewer payload and the checkpoint's
``head_stats.json``), so the numbers are the ones a visitor sees on screen.

When a new checkpoint ships, these tests fail exactly where the text has gone stale:
re-measure in the app, then update the README section, ``app.EXAMPLES`` and the expected
values here together (never one without the others).

Conventions: the texts count layers, heads and steps from 1, as the app does; the code
counts from 0 (``trace.cross_attn[layer - 1, head - 1, step - 1]``, heads written
``"cross:0:0"`` for "cross-attention layer 1, head 1"). Numbers are compared at the
precision the text prints them (2 decimals).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from explorer import texts as viewer
from explorer.payload import decode_payload, encode_trace
from transformer import analysis, load_translator

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "checkpoints" / "en-it"

RED_CAR = "I have a red car."
COFFEE = "I don't like coffee."
BOOK = "The book that I bought yesterday is very interesting."
TOM = "Tom gave Mary a beautiful present for her birthday."
LAKE = "My parents live in a small house near the lake."
TWO_CARS = "I have two red cars."
MILK = "We need to buy bread, milk and eggs."
JOHN = "Tom gave John a beautiful present for his birthday."


def r2(x) -> float:
    """A number as the text prints it."""
    return round(float(x), 2)


def words(tokens) -> list[str]:
    """Subwords as the app shows them (the word-start marker dropped)."""
    return [viewer.display_token(t) for t in tokens]


def first_difference(a, b) -> int | None:
    """The first 1-based step where two token lists differ (None if they never do)."""
    return next((t + 1 for t, (x, y) in enumerate(zip(a, b)) if x != y), None)


# ----------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """The same kernels every time (and the machine is shared)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tr(one_thread):
    return load_translator(SHIPPED)


@pytest.fixture(scope="module")
def trace_of(tr):
    """``trace_of(text)``: the greedy trace the app shows after Translate, made once per sentence."""
    cache = {}

    def get(text):
        if text not in cache:
            cache[text] = tr.trace(text)
        return cache[text]

    return get


@pytest.fixture(scope="module")
def test_set_stats():
    """The "whole test set" diagnostics maps: ``head_stats.json`` as the analysis panel loads it
    (``explorer.panels.analysis.load_test_stats`` is a plain JSON read; not imported here to keep
    Gradio out of this module)."""
    return json.loads((SHIPPED / "head_stats.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def tom_importance(tr):
    return analysis.head_importance(tr, TOM)


@pytest.fixture(scope="module")
def tom_knockout(tr):
    return analysis.knockout(tr, TOM, "cross:0:0")  # cross-attention layer 1, head 1


# ----------------------------------------------------------------------------- translations
TOM_IT = "Tom ha dato a Mary un bel regalo per il suo compleanno."
TOM_WITHOUT_MARY = "Tom ha dato un bel regalo per il suo compleanno."


@pytest.mark.parametrize("text, expected", [
    (TOM, TOM_IT),
    (LAKE, "I miei genitori vivono in una piccola casa nel lago."),
    (MILK, "Dobbiamo comprare del pane, e le uova."),
])
def test_readme_translations(trace_of, text, expected):
    """README "What to look for": the '→' translations of "One head brings Mary in.",
    "A failure to study." and "A mistake to study."."""
    assert trace_of(text).translation == expected


def test_hint_red_car_reordering(trace_of):
    """app.EXAMPLES, "I have a red car.": "'red car' becomes 'auto rossa'"."""
    assert "auto rossa" in trace_of(RED_CAR).translation


def test_hint_coffee_negation(trace_of):
    """app.EXAMPLES, "I don't like coffee.": "'non' comes first, and 'I like' becomes 'mi piace'"."""
    translation = trace_of(COFFEE).translation
    assert translation.split()[0].lower() == "non"
    assert "mi piace" in translation


def test_hint_book_emits_e(trace_of):
    """app.EXAMPLES, the book sentence: "at the step that emits 'è'" (there is such a step)."""
    assert "è" in words(trace_of(BOOK).tgt_tokens[1:])


# ----------------------------------------------------------------------------- head diagnostics
def heads_with(kinds, habit) -> list[tuple[str, int, int]]:
    """(kind, layer, head), 1-based, of every head whose habit is ``habit``."""
    return [(kind, l + 1, h + 1) for kind, k in kinds.items()
            for l, row in enumerate(k["habit"]) for h, found in enumerate(row) if found == habit]


def test_same_token_heads_over_the_test_set(test_set_stats):
    """README "Same-token heads first": "five of the eight heads of layer 1 (2, 5, 6, 7 and 8) are
    same-token heads: head 6 puts 0.70 of its weight (over the 1,000 test sentences) on the token
    the step has just read"."""
    assert test_set_stats["n_sentences"] == 1000
    dec = test_set_stats["kinds"]["decoder_self"]
    assert [h + 1 for h, habit in enumerate(dec["habit"][0]) if habit == "same-token head"] == [2, 5, 6, 7, 8]
    assert r2(dec["same"][0][5]) == 0.70
    assert max(v for row in dec["same"] for v in row if v is not None) == dec["same"][0][5]  # the strongest


def test_same_token_heads_on_red_car(trace_of):
    """README "Same-token heads first": "and 0.87 on 'I have a red car.'"; app.EXAMPLES red car:
    "layer 1, heads 2, 6, 7 and 8 look mostly at the token just read (same-token heads)"."""
    dec = trace_of(RED_CAR).head_stats["kinds"]["decoder_self"]
    assert r2(dec["same"][0][5]) == 0.87
    assert [h + 1 for h, habit in enumerate(dec["habit"][0]) if habit == "same-token head"] == [2, 6, 7, 8]


def test_no_previous_token_head(test_set_stats):
    """README "Same-token heads first": "No head of this model is a previous-token head"."""
    assert heads_with(test_set_stats["kinds"], "previous-token head") == []


def test_encoder_layer1_local_heads(test_set_stats):
    """README "Same-token heads first": "In encoder self-attention, heads 1, 2, 5 and 6 of layer 1
    are local heads"."""
    habits = test_set_stats["kinds"]["encoder"]["habit"][0]
    assert [h + 1 for h, habit in enumerate(habits) if habit == "local head"] == [1, 2, 5, 6]


def test_sinks_and_aligners(test_set_stats):
    """README "Same-token heads first": "The sinks are all on [SOS]: decoder self-attention layer 2
    head 2, layer 3 head 8, layer 4 head 7, and encoder layer 2 head 6. In cross-attention every
    head of layer 2 is a monotonic aligner"."""
    kinds = test_set_stats["kinds"]
    assert heads_with(kinds, "[SOS] sink") == [("encoder", 2, 6), ("decoder_self", 2, 2), ("decoder_self", 3, 8),
                                               ("decoder_self", 4, 7)]
    assert heads_with(kinds, "[EOS] sink") == []
    assert kinds["cross"]["habit"][1] == ["monotonic aligner"] * 8


# ----------------------------------------------------------------------------- importance and knock-out
def test_head_importance_ranks_cross_l1_h1_first(tom_importance):
    """README "One head brings Mary in." and app.EXAMPLES Tom/Mary: "Head importance ranks
    cross-attention layer 1, head 1 first (drop 0.66 nats)"."""
    top = tom_importance["ranking"][0]
    assert (top["kind"], top["layer"] + 1, top["head"] + 1) == ("cross", 1, 1)
    assert r2(top["drop"]) == 0.66
    assert tom_importance["translation"] == TOM_IT


def test_cross_l1_h1_looks_at_mary(trace_of):
    """README "One head brings Mary in." and app.EXAMPLES Tom/Mary: "at step 4 it looks at 'Mary'
    (0.82)"."""
    trace = trace_of(TOM)
    row = trace.cross_attn[1 - 1, 1 - 1, 4 - 1]  # (S,)
    assert (words([trace.src_tokens[int(row.argmax())]]), r2(row.max())) == (["Mary"], 0.82)
    assert words(trace.tgt_tokens[4:6]) == ["a", "Mary"]


def test_knockout_of_cross_l1_h1(tom_knockout):
    """README "One head brings Mary in.": "Knock it out and the model says 'Tom ha dato un bel regalo
    per il suo compleanno.'"; app.EXAMPLES: "knocking it out drops 'a Mary'"."""
    assert tom_knockout["heads"] == [{"kind": "cross", "layer": 0, "head": 0}]
    assert tom_knockout["original"]["translation"] == TOM_IT
    assert tom_knockout["knockout"]["translation"] == TOM_WITHOUT_MARY


def test_knockout_versions_part_at_step_4(tom_knockout):
    """README "One head brings Mary in.": "the per-step chart shows the two versions part at step 4
    ('a' against 'un')"."""
    steps = tom_knockout["steps"]  # the per-step chart: original token vs knocked-out top-1, step t+1
    step = first_difference(steps["token"], steps["top_knockout"])
    assert step == 4
    assert words([steps["token"][step - 1], steps["top_knockout"][step - 1]]) == ["a", "un"]
    orig, ko = tom_knockout["original"]["tokens"][1:], tom_knockout["knockout"]["tokens"][1:]
    step = first_difference(orig, ko)
    assert step == 4
    assert words([orig[step - 1], ko[step - 1]]) == ["a", "un"]


def test_tom_whatif_force_un_at_step4(tr, trace_of):
    """README "One head brings Mary in." and app.EXAMPLES Tom/Mary: "Step 4 is a close call even with
    every head: 'a' 0.52, 'un' 0.22; force 'un' with What if? and Mary is never mentioned"."""
    trace = trace_of(TOM)
    assert words(trace.topk_tokens[4 - 1][:2]) == ["a", "un"]
    assert [r2(p) for p in trace.topk_probs[4 - 1][:2]] == [0.52, 0.22]
    alt = tr.trace(TOM, forced_prefix=viewer.whatif_prefix(trace, 4, 1))
    assert viewer.forced_label(alt) == "step 4 forced to 'un'"
    assert alt.translation == TOM_WITHOUT_MARY


# ----------------------------------------------------------------------------- logit lens
def test_logit_lens_which_steps_are_decided_where(trace_of):
    """README "Where the final word appears.": "'.' and [EOS] are top-1 already in layer 1; 'ha',
    'dato', 'Mary', 'bel', 'per', 'il', 'suo' and 'compleanno' from layer 2; 'Tom', 'un' and
    'regalo' from layer 3; and 'a' only in layer 4, where layers 2 and 3 still say 'una'";
    app.EXAMPLES Tom/Mary: "'a' appears only in layer 4"."""
    trace = trace_of(TOM)
    first = analysis.logit_lens_first_layer(trace)  # 0-based; the viewer's note uses the same rule
    emitted = words(trace.tgt_tokens[1:])
    by_layer = {layer + 1: [w for w, f in zip(emitted, first) if f == layer] for layer in set(first)}
    assert by_layer == {
        1: [".", "[EOS]"],
        2: ["ha", "dato", "Mary", "bel", "per", "il", "suo", "compleanno"],
        3: ["Tom", "un", "regalo"],
        4: ["a"],
    }
    assert words([trace.logit_lens_tokens[4 - 1][layer][0] for layer in (1, 2)]) == ["una", "una"]


# ----------------------------------------------------------------------------- the lake sentence
def shown_cross(trace, layer, step, origin="pair"):
    """Cross-attention of ``layer`` (mean of the heads) at 1-based ``step`` as the viewer draws
    it: from its payload (a Translate and both sentences of a pair travel in that format)."""
    return decode_payload(encode_trace(trace, origin=origin))["cross_attn"][layer - 1, :, step - 1].mean(axis=0)


def mean_cross_looks_at(trace, layer, step, origin="translate"):
    """(source token, weight) that cross-attention of ``layer`` (mean of the heads) weighs most at
    1-based ``step``, from the model's weights and from the viewer's (quantised) copy of them,
    which must agree at 2 decimals."""
    exact = trace.cross_attn[layer - 1, :, step - 1].mean(axis=0)  # (S,)
    shown = shown_cross(trace, layer, step, origin)
    found = {(viewer.display_token(trace.src_tokens[int(row.argmax())]), r2(row.max())) for row in (exact, shown)}
    assert len(found) == 1, found
    return found.pop()


def test_lake_step10_is_a_guess_looking_at_near(trace_of):
    """README "A failure to study." and app.EXAMPLES lake: "At step 10 no candidate has more than
    0.34 ('nel', then 'al' 0.13), while cross-attention (layer 4, mean of the heads) looks at
    'near' (0.43)"."""
    trace = trace_of(LAKE)
    assert words(trace.topk_tokens[10 - 1][:2]) == ["nel", "al"]
    assert words(trace.tgt_tokens[10:11]) == ["nel"]  # the top candidate is the one emitted
    assert [r2(p) for p in trace.topk_probs[10 - 1][:2]] == [0.34, 0.13]
    assert mean_cross_looks_at(trace, 4, 10) == ("near", 0.43)


def test_lake_reaches_the_model_in_two_pieces(trace_of):
    """README "A failure to study." and app.EXAMPLES lake: "'lake' reaches the model as two pieces,
    'la' + 'ke', and still comes out right, as 'la' + 'go': at step 12 cross-attention (layer 3,
    mean of the heads) looks at 'ke' (0.62)"."""
    trace = trace_of(LAKE)
    i = trace.src_tokens.index("▁la")
    assert trace.src_tokens[i + 1] == "ke"
    assert trace.tgt_tokens[11:13] == ["▁la", "go"] and "lago" in trace.translation
    assert mean_cross_looks_at(trace, 3, 12) == ("ke", 0.62)


# ----------------------------------------------------------------------------- the milk sentence
def test_milk_step6_candidates(trace_of):
    """README "A mistake to study." and app.EXAMPLES milk: "At step 6 the model chose 'e' over
    'latte' (0.47 against 0.21), while cross-attention (layer 3, mean of the heads) looks at
    'milk' (0.64)"."""
    trace = trace_of(MILK)
    assert "latte" not in trace.translation
    assert words(trace.topk_tokens[6 - 1][:2]) == ["e", "latte"]
    assert words(trace.tgt_tokens[6:7]) == ["e"]  # the top candidate is the one emitted
    assert [r2(p) for p in trace.topk_probs[6 - 1][:2]] == [0.47, 0.21]
    assert mean_cross_looks_at(trace, 3, 6) == ("milk", 0.64)


def test_milk_whatif_force_latte_at_step6(tr, trace_of):
    """README "A mistake to study." and app.EXAMPLES milk: "Use What if? at step 6 to force 'latte'
    and it goes on to 'Dobbiamo comprare del pane, latte e le uova.'" (the same calls as
    ``App.whatif``)."""
    trace = trace_of(MILK)
    alt = tr.trace(trace.src_text, forced_prefix=viewer.whatif_prefix(trace, 6, 1))
    assert viewer.forced_label(alt) == "step 6 forced to 'latte'"
    assert alt.translation == "Dobbiamo comprare del pane, latte e le uova."
    assert np.array_equal(alt.tgt_ids[:6], trace.tgt_ids[:6])  # steps 1-5 as decoded before


# ----------------------------------------------------------------------------- minimal pairs
BROTHER, SISTER = "My brother is tall.", "My sister is tall."
DOCTOR_SHE, DOCTOR_HE = "The doctor said she was tired.", "The doctor said he was tired."


def looks_at(trace, layer, step) -> tuple[str, float]:
    """The source token that cross-attention (``layer``, mean of heads) weighs most at ``step``."""
    row = shown_cross(trace, layer, step)
    return viewer.display_token(trace.src_tokens[int(row.argmax())]), r2(row.max())


def prob(trace, step, token) -> float:
    """Probability of ``token`` among the candidates (top-k) at 1-based ``step``."""
    return r2(trace.topk_probs[step - 1][trace.topk_tokens[step - 1].index(token)])


def pair_hint(a: str) -> str:
    from explorer.panels.pairs import PAIRS  # imports Gradio: only here

    return next(p["hint"] for p in PAIRS if p["a"] == a)


def test_pair_brother_sister(trace_of):
    """explorer.panels.pairs.PAIRS, brother / sister: "'Mio fratello è alto.' against 'Mia sorella
    è alta.'. The article agrees at step 1 ('Mio' 0.96, 'Mia' 0.96). The adjective is a closer call:
    at step 4 A says 'alto' (0.99), while B starts 'al' (0.68, with 'alto' at 0.15) and ends it with
    'ta'. At step 2, cross-attention (layer 3, mean of heads) looks at 'brother' (0.94) and at
    'sister' (0.98)"."""
    a, b = trace_of(BROTHER), trace_of(SISTER)
    assert (a.translation, b.translation) == ("Mio fratello è alto.", "Mia sorella è alta.")
    assert (prob(a, 1, "▁Mio"), prob(b, 1, "▁Mia")) == (0.96, 0.96)
    assert words([a.tgt_tokens[4], b.tgt_tokens[4], b.tgt_tokens[5]]) == ["alto", "al", "ta"]
    assert (prob(a, 4, "▁alto"), prob(b, 4, "▁al"), prob(b, 4, "▁alto")) == (0.99, 0.68, 0.15)
    assert (looks_at(a, 3, 2), looks_at(b, 3, 2)) == (("brother", 0.94), ("sister", 0.98))
    hint = pair_hint(BROTHER)
    assert all(x in hint for x in ("Mio fratello è alto.", "Mia sorella è alta.", "'Mio' 0.96, 'Mia' 0.96", "0.99",
                                   "0.68", "0.15", "0.94", "0.98"))


def test_pair_red_car_two_red_cars(trace_of):
    """PAIRS, red car / two red cars: "'Ho un'auto rossa.' against 'Ho due macchine rosse.'. At
    step 2 A's article un' becomes 'due' (0.94), and the noun changes word as well as number
    ('auto', 'macchine'). The adjective agrees: at step 6 cross-attention (layer 3, mean of heads) looks at
    'red' (0.62), and at step 7 'osse' (0.69) beats 'ossi' (0.24)"."""
    a, b = trace_of(RED_CAR), trace_of(TWO_CARS)
    assert (a.translation, b.translation) == ("Ho un'auto rossa.", "Ho due macchine rosse.")
    assert words([a.tgt_tokens[2], b.tgt_tokens[2]]) == ["un'", "due"] and prob(b, 2, "▁due") == 0.94
    assert "auto" in words(a.tgt_tokens) and "macchine" in b.translation
    assert looks_at(b, 3, 6) == ("red", 0.62)
    assert b.tgt_tokens[7] == "osse" and (prob(b, 7, "osse"), prob(b, 7, "ossi")) == (0.69, 0.24)
    hint = pair_hint(RED_CAR)
    assert all(x in hint for x in ("Ho un'auto rossa.", "Ho due macchine rosse.", "0.94", "0.62", "0.69", "0.24"))


def test_pair_doctor_she_he(tr, trace_of):
    """PAIRS, doctor she / he: "both are 'Il dottore ha detto che era stanco.', though 'she' needs
    'stanca'. The model is less sure with 'she': at step 7 'stanco' has 0.77 against 0.91, and 'st'
    (the start of 'stanca') 0.22 against 0.07, while cross-attention (layer 1, mean of heads) puts
    0.20 on 'she' and 0.01 on 'he'. Force 'st' in A with What if? and it says 'stanca'. The
    difference map pairs 'she' with 'he' in one column: the only word the two sentences do
    not share"."""
    a, b = trace_of(DOCTOR_SHE), trace_of(DOCTOR_HE)
    assert a.translation == b.translation == "Il dottore ha detto che era stanco."
    assert a.tgt_tokens[7] == b.tgt_tokens[7] == "▁stanco"
    assert (prob(a, 7, "▁stanco"), prob(b, 7, "▁stanco")) == (0.77, 0.91)
    assert (prob(a, 7, "▁st"), prob(b, 7, "▁st")) == (0.22, 0.07)
    weights = [r2(shown_cross(t, 1, 7)[t.src_tokens.index(who)]) for t, who in ((a, "▁she"), (b, "▁he"))]
    assert weights == [0.20, 0.01]
    alt = tr.trace(DOCTOR_SHE, forced_prefix=viewer.whatif_prefix(a, 7, a.topk_tokens[7 - 1].index("▁st")))
    assert alt.translation == "Il dottore ha detto che era stanca."
    # the only source tokens not shared (the view's alignment: tests/test_panel_pairs.py)
    assert [t for t in a.src_tokens if t not in b.src_tokens] == ["▁she"]
    assert [t for t in b.src_tokens if t not in a.src_tokens] == ["▁he"]
    hint = pair_hint(DOCTOR_SHE)
    assert all(x in hint for x in ("Il dottore ha detto che era stanco.", "0.77 against 0.91", "0.22 against 0.07",
                                   "0.20", "0.01", "stanca", "'she' with 'he'"))


# ----------------------------------------------------------------------------- why this word?
@pytest.fixture(scope="module")
def tom_why(tr):
    """The three analyses of "Why this word?" at step 4 of the Tom sentence, as the app asks
    for them (explorer/panels/attribution.py; steps 0-based here): direct logit attribution
    against the runner-up, patching with the John sentence, and gradient attribution at 64
    integration steps beside cross-attention at the last layer, mean of the heads."""
    from transformer.attribution import activation_patching, direct_logit_attribution
    from transformer.saliency import saliency
    return SimpleNamespace(dla=direct_logit_attribution(tr, TOM, 3, versus="runner-up"),
                           patch=activation_patching(tr, TOM, JOHN, 3),
                           grad=saliency(tr, TOM, 3, n_steps=64))


def test_direct_logit_attribution_of_a_against_un(tom_why):
    """README "What a head adds to a word": ""a" beats "un" by 0.85 in the logits. Split against the
    runner-up, cross-attention layer 4 head 3 adds 0.79 and head 4 adds 0.62, while layer 4 head 5
    takes 0.83 away. Layer 1 head 1 [...] adds only 0.16 directly"."""
    d = tom_why.dla
    assert words([d.token, d.versus]) == ["a", "un"] and r2(d.value) == 0.85
    assert abs(d.total() - d.value) < 1e-3
    assert [r2(d.cross[3, h]) for h in (2, 3, 4)] == [0.79, 0.62, -0.83]
    top = d.ranking(3)
    assert {(x["kind"], x["layer"] + 1, x["head"] + 1) for x in top} == {("cross", 4, 3), ("cross", 4, 4),
                                                                          ("cross", 4, 5)}
    assert r2(d.cross[0, 0]) == 0.16


def test_patching_john_moves_little_through_the_knockout_head(trace_of, tom_why):
    """README "Patching does not always find the knock-out head": the John sentence's translation;
    "Every component together turns "a" into "un" [...]. cross-attention layer 4 head 3 moves 0.58
    of the way and layer 3 head 4 0.55, while layer 1 head 1 moves −0.10: at step 4 it looks at the
    name in both sentences ("Mary" 0.82, "John" 0.79)"."""
    p = tom_why.patch
    assert trace_of(JOHN).translation == "Tom ha dato un bel regalo per il suo compleanno."
    assert words([p.token_a, p.token_b]) == ["a", "un"]
    assert p.fraction("all") == pytest.approx(1.0, abs=1e-3)
    cross = p.fraction("cross")
    assert (r2(cross[3, 2]), r2(cross[2, 3]), r2(cross[0, 0])) == (0.58, 0.55, -0.10)
    best = p.ranking(1)[0]
    assert (best["kind"], best["layer"], best["head"]) == ("cross", 3, 2)
    for text, name in ((TOM, "Mary"), (JOHN, "John")):
        t = trace_of(text)
        row = t.cross_attn[0, 0, 3]  # layer 1, head 1, step 4
        assert words(t.src_tokens)[int(row.argmax())] == name
    assert [r2(trace_of(x).cross_attn[0, 0, 3].max()) for x in (TOM, JOHN)] == [0.82, 0.79]


def test_gradients_and_attention_disagree_on_beautiful(tom_why):
    """README "Where attention and gradients disagree": "integrated gradients put the most weight,
    in size, on "beautiful" (−2.52 [...]), then on "Mary" (1.95); cross-attention (layer 4, mean
    of the heads) gives "beautiful" 0.02. Their rank correlation over the words is 0.54"."""
    g = tom_why.grad
    assert words([g.token]) == ["a"] and g.attention == {"layer": 3, "head": "mean"}
    src = words(g.src_tokens)
    order = np.argsort(-np.abs(g.ig_src))
    assert [src[i] for i in order[:2]] == ["beautiful", "Mary"]
    assert (r2(g.ig_src[src.index("beautiful")]), r2(g.ig_src[src.index("Mary")])) == (-2.52, 1.95)
    assert r2(g.cross_attn[src.index("beautiful")]) == 0.02
    assert r2(g.spearman()["src"]["integrated_gradients"]) == 0.54
    assert abs(g.completeness_gap) < 0.05  # at 64 steps the scores add up to f(x) - f(baseline) closely


# ----------------------------------------------------------------------------- the model's scores
def test_readme_scores_are_the_checkpoints_own():
    """README "The model": the test scores, and those of the long sentences the app warns about,
    are the ones ``python -m transformer.evaluate --save`` recorded in ``metrics.json``."""
    test = json.loads((SHIPPED / "metrics.json").read_text(encoding="utf-8"))["test"]
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"BLEU {test['bleu']} / chrF {test['chrf']} greedy" in readme
    long = test["long"]
    assert (f"on the {long['n']} test sentences of {long['min_words']} words or more it scores "
            f"{long['bleu']} / {long['chrf']}") in readme
