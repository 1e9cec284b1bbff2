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
``"cross:3:6"`` for "cross-attention layer 4, head 7"). Numbers are compared at the
precision the text prints them (2 decimals).
"""

from __future__ import annotations

import json
from pathlib import Path

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
    return analysis.knockout(tr, TOM, "cross:3:6")  # cross-attention layer 4, head 7


# ----------------------------------------------------------------------------- translations
TOM_IT = "Tom ha dato un bel regalo per il suo compleanno."


@pytest.mark.parametrize("text, expected", [
    (TOM, TOM_IT),
    (LAKE, "I miei genitori vivono in una piccola casa vicino alla ricerca."),
    (TWO_CARS, "Ho due macchine rossa."),
])
def test_readme_translations(trace_of, text, expected):
    """README "What to look for": the '→' translations of "One head carries agreement.",
    "A failure to study." and "A mistake to study."."""
    assert trace_of(text).translation == expected


def test_hint_red_car_reordering(trace_of):
    """app.EXAMPLES, "I have a red car.": "'red car' becomes 'macchina rossa'"."""
    assert "macchina rossa" in trace_of(RED_CAR).translation


def test_hint_coffee_negation(trace_of):
    """app.EXAMPLES, "I don't like coffee.": "'non' comes first, and 'I like' becomes 'mi piace'"."""
    translation = trace_of(COFFEE).translation
    assert translation.split()[0].lower() == "non"
    assert "mi piace" in translation


def test_hint_book_emits_e(trace_of):
    """app.EXAMPLES, the book sentence: "at the step that emits 'è'" (there is such a step)."""
    assert "è" in words(trace_of(BOOK).tgt_tokens[1:])


# ----------------------------------------------------------------------------- head diagnostics
def test_same_token_heads_over_the_test_set(test_set_stats):
    """README "Same-token heads": "decoder self-attention, layer 1, heads 7 and 6 put 0.91 and
    0.89 of their weight (over the 1,000 test sentences) on the token the step has just read"."""
    assert test_set_stats["n_sentences"] == 1000
    dec = test_set_stats["kinds"]["decoder_self"]
    assert [r2(dec["same"][0][6]), r2(dec["same"][0][5])] == [0.91, 0.89]
    assert dec["habit"][0][6] == dec["habit"][0][5] == "same-token head"


def test_same_token_heads_on_red_car(trace_of):
    """README "Same-token heads": "on 'I have a red car.' both are a perfect diagonal (share
    1.00)"; app.EXAMPLES red car: "layer 1, heads 6 and 7 look only at the token just read
    (same-token heads)"."""
    dec = trace_of(RED_CAR).head_stats["kinds"]["decoder_self"]
    assert [r2(dec["same"][0][5]), r2(dec["same"][0][6])] == [1.00, 1.00]
    assert dec["habit"][0][5] == dec["habit"][0][6] == "same-token head"


def test_previous_token_heads_sit_deeper(test_set_stats):
    """README "Same-token heads": "Previous-token heads sit deeper: layer 4, head 1 (0.57) and
    layer 3, head 2 (0.52)" (decoder self-attention; the only two, and no encoder head)."""
    kinds = test_set_stats["kinds"]
    prev = sorted(((r2(v), kind, l + 1, h + 1) for kind in ("encoder", "decoder_self")
                   for l, row in enumerate(kinds[kind]["prev"]) for h, v in enumerate(row) if v is not None),
                  reverse=True)
    assert prev[:2] == [(0.57, "decoder_self", 4, 1), (0.52, "decoder_self", 3, 2)]
    found = [(kind, l + 1, h + 1) for kind, k in kinds.items()
             for l, row in enumerate(k["habit"]) for h, habit in enumerate(row) if habit == "previous-token head"]
    assert sorted(found) == [("decoder_self", 3, 2), ("decoder_self", 4, 1)]


def test_encoder_layer1_heads_are_same_token_heads(test_set_stats):
    """README "Same-token heads": "In encoder self-attention every head of layer 1 is a
    same-token head"."""
    enc = test_set_stats["kinds"]["encoder"]
    assert enc["habit"][0] == ["same-token head"] * 8


def test_cross_attention_sinks_and_aligners(test_set_stats):
    """README "Same-token heads": "In cross-attention, layer 1 holds the sinks (head 2 on [SOS],
    heads 3 and 5 on [EOS]) and 7 of the 8 heads of layer 3 are monotonic aligners"."""
    habits = test_set_stats["kinds"]["cross"]["habit"]
    assert [habits[0][1], habits[0][2], habits[0][4]] == ["[SOS] sink", "[EOS] sink", "[EOS] sink"]
    sinks = [(l + 1, h + 1) for l, row in enumerate(habits) for h, habit in enumerate(row) if "sink" in habit]
    assert sinks == [(1, 2), (1, 3), (1, 5)]
    assert habits[2].count("monotonic aligner") == 7


# ----------------------------------------------------------------------------- importance and knock-out
def test_head_importance_ranks_cross_l4_h7_first(tom_importance):
    """README "One head carries agreement." and app.EXAMPLES Tom/Mary: "Head importance ranks
    cross-attention layer 4, head 7 first (drop 1.17 nats)"."""
    top = tom_importance["ranking"][0]
    assert (top["kind"], top["layer"] + 1, top["head"] + 1) == ("cross", 4, 7)
    assert r2(top["drop"]) == 1.17
    assert tom_importance["translation"] == TOM_IT


def test_cross_l4_h7_looks_at_present(trace_of):
    """README "One head carries agreement.": "at steps 4 to 6 ('un bel regalo') it looks at
    'present' (0.99)"; app.EXAMPLES Tom/Mary: "it looks at 'present'"."""
    trace = trace_of(TOM)
    for step in (4, 5, 6):
        row = trace.cross_attn[4 - 1, 7 - 1, step - 1]  # (S,)
        assert (words([trace.src_tokens[int(row.argmax())]]), r2(row.max())) == (["present"], 0.99)
    assert words(trace.tgt_tokens[4:7]) == ["un", "bel", "regalo"]


def test_knockout_of_cross_l4_h7(tom_knockout):
    """README "One head carries agreement.": "Knock it out and the model says 'Tom ha dato una bella
    regalo per il suo compleanno.'"; app.EXAMPLES: "knocking it out turns 'un bel regalo' into
    'una bella regalo'"."""
    assert tom_knockout["heads"] == [{"kind": "cross", "layer": 3, "head": 6}]
    assert tom_knockout["original"]["translation"] == TOM_IT
    assert tom_knockout["knockout"]["translation"] == "Tom ha dato una bella regalo per il suo compleanno."


def test_knockout_versions_part_at_step_4(tom_knockout):
    """README "One head carries agreement.": "the per-step chart shows the two versions part at
    step 4 ('un' against 'una')"."""
    steps = tom_knockout["steps"]  # the per-step chart: original token vs knocked-out top-1, step t+1
    step = first_difference(steps["token"], steps["top_knockout"])
    assert step == 4
    assert words([steps["token"][step - 1], steps["top_knockout"][step - 1]]) == ["un", "una"]
    orig, ko = tom_knockout["original"]["tokens"][1:], tom_knockout["knockout"]["tokens"][1:]
    step = first_difference(orig, ko)
    assert step == 4
    assert words([orig[step - 1], ko[step - 1]]) == ["un", "una"]


def test_tom_whatif_force_a_at_step4(tr, trace_of):
    """README "One head carries agreement." and app.EXAMPLES Tom/Mary: "'a Mary' is missing: at
    step 4 'a' has 0.05 (after 'un' 0.55 and 'una' 0.27); force it with What if? and the model goes
    on to 'Tom ha dato a Mary un bel regalo per il suo compleanno.'"."""
    trace = trace_of(TOM)
    assert "Mary" not in trace.translation
    top = words(trace.topk_tokens[4 - 1][:3])
    assert top == ["un", "una", "a"]
    assert [r2(p) for p in trace.topk_probs[4 - 1][:3]] == [0.55, 0.27, 0.05]
    alt = tr.trace(TOM, forced_prefix=viewer.whatif_prefix(trace, 4, 2))
    assert viewer.forced_label(alt) == "step 4 forced to 'a'"
    assert alt.translation == "Tom ha dato a Mary un bel regalo per il suo compleanno."


# ----------------------------------------------------------------------------- logit lens
def test_logit_lens_which_steps_are_decided_where(trace_of):
    """README "Where the final word appears.": "'ha', 'suo', '.' and [EOS] are top-1 already in
    layer 1, 'il' from layer 2, the content words ('Tom', 'dato', 'un', 'regalo', 'per',
    'compleanno') only from layer 3, and 'bel' only in layer 4"; app.EXAMPLES Tom/Mary: "'bel'
    appears only in layer 4"."""
    trace = trace_of(TOM)
    first = analysis.logit_lens_first_layer(trace)  # 0-based; the viewer's note uses the same rule
    emitted = words(trace.tgt_tokens[1:])
    by_layer = {layer + 1: [w for w, f in zip(emitted, first) if f == layer] for layer in set(first)}
    assert by_layer == {
        1: ["ha", "suo", ".", "[EOS]"],
        2: ["il"],
        3: ["Tom", "dato", "un", "regalo", "per", "compleanno"],
        4: ["bel"],
    }


# ----------------------------------------------------------------------------- the lake sentence
def test_lake_reaches_the_model_in_two_pieces(trace_of):
    """README "A failure to study." and app.EXAMPLES lake: "'lake' reaches the model as two
    pieces, 'la' + 'ke', and comes out as 'ricerca'"."""
    trace = trace_of(LAKE)
    i = trace.src_tokens.index("▁la")
    assert trace.src_tokens[i + 1] == "ke"
    assert "ricerca" in trace.translation and "lago" not in trace.translation


def test_lake_step12_is_a_guess_looking_at_la(trace_of):
    """README "A failure to study." and app.EXAMPLES lake: "at step 12 no candidate has more than
    0.08 ('ric'), and cross-attention (layer 4, mean of the heads) looks at 'la' (0.46)"."""
    trace = trace_of(LAKE)
    assert trace.tgt_tokens[12] == "▁ric"
    assert r2(max(trace.topk_probs[12 - 1])) == 0.08
    exact = trace.cross_attn[4 - 1, :, 12 - 1].mean(axis=0)  # layer 4, mean of heads, step 12: (S,)
    shown = decode_payload(encode_trace(trace, origin="translate"))["cross_attn"][4 - 1, :, 12 - 1].mean(axis=0)
    for row in (exact, shown):  # the model's weights and the viewer's (quantised) copy of them
        i = int(row.argmax())
        assert (trace.src_tokens[i], r2(row[i])) == ("▁la", 0.46)


# ----------------------------------------------------------------------------- two red cars
def test_two_cars_step7_candidates(trace_of):
    """README "A mistake to study." and app.EXAMPLES two red cars: "at step 7 the model chose 'ossa'
    over 'osse' (0.63 against 0.17)"."""
    trace = trace_of(TWO_CARS)
    t = 7 - 1
    assert trace.tgt_tokens[t + 1] == "ossa"
    assert trace.topk_tokens[t][:2] == ["ossa", "osse"]
    assert [r2(p) for p in trace.topk_probs[t][:2]] == [0.63, 0.17]


def test_two_cars_whatif_force_osse_at_step7(tr, trace_of):
    """README "A mistake to study." and app.EXAMPLES two red cars: "Use What if? at step 7 to force
    'osse' and it goes on to 'Ho due macchine rosse.'" (the same calls as ``App.whatif``)."""
    trace = trace_of(TWO_CARS)
    rank = trace.topk_tokens[7 - 1].index("osse")
    alt = tr.trace(trace.src_text, forced_prefix=viewer.whatif_prefix(trace, 7, rank))
    assert viewer.forced_label(alt) == "step 7 forced to 'osse'"
    assert alt.translation == "Ho due macchine rosse."
    assert np.array_equal(alt.tgt_ids[:7], trace.tgt_ids[:7])  # steps 1-6 as decoded before


# ----------------------------------------------------------------------------- minimal pairs
BROTHER, SISTER = "My brother is tall.", "My sister is tall."
DOCTOR_SHE, DOCTOR_HE = "The doctor said she was tired.", "The doctor said he was tired."


def shown_cross(trace, layer, step):
    """Cross-attention of ``layer`` (mean of the heads) at ``step`` as the minimal-pairs view
    draws it: from the viewer's payload (both sentences travel in that format), 1-based."""
    return decode_payload(encode_trace(trace, origin="pair"))["cross_attn"][layer - 1, :, step - 1].mean(axis=0)


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
    è alta.'. The article agrees at step 1 ('Mio' 0.93, 'Mia' 0.90). The adjective is a closer call:
    at step 4 A says 'alto' (0.94), while B starts 'al' (0.53, with 'alto' at 0.38) and ends it with
    'ta'. At step 2, cross-attention (layer 3, mean of heads) looks at 'brother' (1.00) and at
    'sister' (0.95)"."""
    a, b = trace_of(BROTHER), trace_of(SISTER)
    assert (a.translation, b.translation) == ("Mio fratello è alto.", "Mia sorella è alta.")
    assert (prob(a, 1, "▁Mio"), prob(b, 1, "▁Mia")) == (0.93, 0.90)
    assert words([a.tgt_tokens[4], b.tgt_tokens[4], b.tgt_tokens[5]]) == ["alto", "al", "ta"]
    assert (prob(a, 4, "▁alto"), prob(b, 4, "▁al"), prob(b, 4, "▁alto")) == (0.94, 0.53, 0.38)
    assert (looks_at(a, 3, 2), looks_at(b, 3, 2)) == (("brother", 1.00), ("sister", 0.95))
    hint = pair_hint(BROTHER)
    assert all(x in hint for x in ("Mio fratello è alto.", "Mia sorella è alta.", "0.93", "0.90", "0.94", "0.53",
                                   "0.38", "1.00", "0.95"))


def test_pair_red_car_two_red_cars(trace_of):
    """PAIRS, red car / two red cars: "'Ho una macchina rossa.' against 'Ho due macchine rossa.'.
    At step 2 'una' becomes 'due' (0.98); the noun turns plural, the adjective does not: at step 7
    'ossa' (0.63) beats 'osse' (0.17), while cross-attention (layer 3, mean of heads) looks at
    'red' (0.67)"."""
    a, b = trace_of(RED_CAR), trace_of(TWO_CARS)
    assert (a.translation, b.translation) == ("Ho una macchina rossa.", "Ho due macchine rossa.")
    assert words([a.tgt_tokens[2], b.tgt_tokens[2]]) == ["una", "due"] and prob(b, 2, "▁due") == 0.98
    assert (prob(b, 7, "ossa"), prob(b, 7, "osse")) == (0.63, 0.17)
    assert looks_at(b, 3, 7) == ("red", 0.67)
    hint = pair_hint(RED_CAR)
    assert all(x in hint for x in ("Ho una macchina rossa.", "Ho due macchine rossa.", "0.98", "0.63", "0.17",
                                   "0.67"))


def test_pair_doctor_she_he(trace_of):
    """PAIRS, doctor she / he: "both are 'Il dottore ha detto che era stanco.'. The model does read
    it: at step 6 ('era') cross-attention (layer 3, mean of heads) looks most at 'she' (0.38) and at
    'he' (0.48); yet at step 7 'stanco' wins in both (0.93 and 0.95). The difference map shows
    'she' and 'he' as gaps: they are the tokens the two sentences do not share"."""
    a, b = trace_of(DOCTOR_SHE), trace_of(DOCTOR_HE)
    assert a.translation == b.translation == "Il dottore ha detto che era stanco."
    assert a.tgt_tokens[6] == b.tgt_tokens[6] == "▁era"
    assert (looks_at(a, 3, 6), looks_at(b, 3, 6)) == (("she", 0.38), ("he", 0.48))
    assert a.tgt_tokens[7] == b.tgt_tokens[7] == "▁stanco"
    assert (prob(a, 7, "▁stanco"), prob(b, 7, "▁stanco")) == (0.93, 0.95)
    # the only source tokens not shared (the view's alignment: tests/test_panel_pairs.py)
    assert [t for t in a.src_tokens if t not in b.src_tokens] == ["▁she"]
    assert [t for t in b.src_tokens if t not in a.src_tokens] == ["▁he"]
    hint = pair_hint(DOCTOR_SHE)
    assert all(x in hint for x in ("Il dottore ha detto che era stanco.", "0.38", "0.48", "0.93 and 0.95"))
