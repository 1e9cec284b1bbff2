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
``"cross:1:2"`` for "cross-attention layer 2, head 3"). Numbers are compared at the
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
BEACH = "We will go to the beach tomorrow if it doesn't rain."
SISTER = "My sister is tall."


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
    return analysis.knockout(tr, TOM, "cross:1:2")  # cross-attention layer 2, head 3


# ----------------------------------------------------------------------------- translations
@pytest.mark.parametrize("text, expected", [
    (TOM, "Tom ha dato a Mary un bel regalo per il suo compleanno."),
    (BEACH, "Andremo in spiaggia se la spiaggia, se pioggia non lo domani non lo piogge."),
    (SISTER, "Mia sorella è alto."),
])
def test_readme_translations(trace_of, text, expected):
    """README "What to look for": the '→' translations of "One head carries a name.",
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


def test_hint_names_are_copied_with_sharp_cross_attention(trace_of):
    """app.EXAMPLES, Tom/Mary: "Names are copied: cross-attention is sharp on 'Tom' and 'Mary'".
    'Sharp' is taken as: at the step that emits the name, some cross-attention head puts
    at least 0.9 of its weight on that name in the source."""
    trace = trace_of(TOM)
    emitted = trace.tgt_tokens[1:]
    for name in ("▁Tom", "▁Mary"):
        assert name in emitted, f"{name} is not copied"
        step, src = emitted.index(name), trace.src_tokens.index(name)
        assert trace.cross_attn[:, :, step, src].max() >= 0.9, name


# ----------------------------------------------------------------------------- head diagnostics
def test_same_token_heads_over_the_test_set(test_set_stats):
    """README "Same-token heads": "decoder self-attention, layer 1, heads 2 and 7 put 0.95 and
    0.75 of their weight (over the 1,000 test sentences) on the token the step has just read"."""
    assert test_set_stats["n_sentences"] == 1000
    dec = test_set_stats["kinds"]["decoder_self"]
    assert [r2(dec["same"][0][1]), r2(dec["same"][0][6])] == [0.95, 0.75]
    assert dec["habit"][0][1] == dec["habit"][0][6] == "same-token head"


def test_same_token_heads_on_red_car(trace_of):
    """README "Same-token heads": "on 'I have a red car.' both are a near-perfect diagonal
    (share 1.00 and 0.99)"; app.EXAMPLES red car: "layer 1, heads 2 and 7 look only at the
    token just read (same-token heads)"."""
    dec = trace_of(RED_CAR).head_stats["kinds"]["decoder_self"]
    assert [r2(dec["same"][0][1]), r2(dec["same"][0][6])] == [1.00, 0.99]
    assert dec["habit"][0][1] == dec["habit"][0][6] == "same-token head"


def test_no_previous_token_head(test_set_stats):
    """README "Same-token heads": "No head reaches 0.5 on the previous token; the closest is
    decoder self-attention layer 3, head 7 (0.42)"."""
    kinds = test_set_stats["kinds"]
    best = max((v, kind, l, h) for kind in ("encoder", "decoder_self")
               for l, row in enumerate(kinds[kind]["prev"]) for h, v in enumerate(row) if v is not None)
    value, kind, layer, head = best
    assert value < 0.5
    assert (kind, layer + 1, head + 1, r2(value)) == ("decoder_self", 3, 7, 0.42)
    assert not any("previous-token head" in row for k in kinds.values() for row in k["habit"])


def test_sos_sink_head(test_set_stats):
    """README "Same-token heads": "Head 4 of layer 1 is a [SOS] sink (0.51)" (decoder self-attention)."""
    dec = test_set_stats["kinds"]["decoder_self"]
    assert dec["habit"][0][3] == "[SOS] sink"
    assert r2(dec["sink_sos"][0][3]) == 0.51


def test_encoder_layer1_heads_are_local(test_set_stats):
    """README "Same-token heads": "All 8 encoder heads of layer 1 are local (most weight within ±1 token)"."""
    enc = test_set_stats["kinds"]["encoder"]
    assert len(enc["habit"][0]) == 8
    assert enc["habit"][0] == ["local head"] * 8
    within_one = [enc["prev"][0][h] + enc["same"][0][h] + enc["next"][0][h] for h in range(8)]
    assert min(within_one) >= 0.5, within_one


# ----------------------------------------------------------------------------- importance and knock-out
def test_head_importance_ranks_cross_l2_h3_first(tom_importance):
    """README "One head carries a name." and app.EXAMPLES Tom/Mary: "Head importance ranks
    cross-attention layer 2, head 3 first (drop 0.70 nats)"."""
    top = tom_importance["ranking"][0]
    assert (top["kind"], top["layer"] + 1, top["head"] + 1) == ("cross", 2, 3)
    assert r2(top["drop"]) == 0.70
    assert tom_importance["translation"] == "Tom ha dato a Mary un bel regalo per il suo compleanno."


def test_knockout_of_cross_l2_h3(tom_knockout):
    """README "One head carries a name.": "Knock it out and the model says 'Tom ha dato una bella
    per il suo regalo per il suo compleanno.': 'a Mary' is gone"; app.EXAMPLES Tom/Mary:
    "knock it out and 'a Mary' disappears"."""
    assert tom_knockout["heads"] == [{"kind": "cross", "layer": 1, "head": 2}]
    assert tom_knockout["original"]["translation"] == "Tom ha dato a Mary un bel regalo per il suo compleanno."
    assert tom_knockout["knockout"]["translation"] == "Tom ha dato una bella per il suo regalo per il suo compleanno."
    assert "a Mary" not in tom_knockout["knockout"]["translation"]


def test_knockout_versions_part_at_step_4(tom_knockout):
    """README "One head carries a name.": "the per-step chart shows the two versions part at
    step 4 ('a' against 'una')"."""
    steps = tom_knockout["steps"]  # the per-step chart: original token vs knocked-out top-1, step t+1
    step = first_difference(steps["token"], steps["top_knockout"])
    assert step == 4
    assert words([steps["token"][step - 1], steps["top_knockout"][step - 1]]) == ["a", "una"]
    # and the two greedy translations part at the same step
    orig, ko = tom_knockout["original"]["tokens"][1:], tom_knockout["knockout"]["tokens"][1:]
    step = first_difference(orig, ko)
    assert step == 4
    assert words([orig[step - 1], ko[step - 1]]) == ["a", "una"]


# ----------------------------------------------------------------------------- logit lens
def test_logit_lens_layer1_echoes_the_token_read(trace_of):
    """README "Where the final word appears.": "step 4 reads 'dato' and layer 1 says 'dato'; step 7
    reads 'un' and layer 1 says 'un'"; app.EXAMPLES Tom/Mary: "at step 7 layer 1 still says 'un'
    (the token just read); 'bel' appears from layer 2"."""
    trace = trace_of(TOM)
    for step, word in ((4, "dato"), (7, "un")):
        reads = viewer.display_token(trace.tgt_tokens[step - 1])
        layer1_top = viewer.display_token(trace.logit_lens_tokens[step - 1][0][0])
        assert (step, reads, layer1_top) == (step, word, word)
    first = analysis.logit_lens_first_layer(trace)
    assert (viewer.display_token(trace.tgt_tokens[7]), first[6] + 1) == ("bel", 2)


def test_logit_lens_which_steps_are_decided_where(trace_of):
    """README "Where the final word appears.": top-1 "only from layer 2 on ('Tom', 'a', 'un', 'bel',
    'regalo', 'compleanno.'). The other steps ('ha', 'dato', 'Mary', 'per', 'il', 'suo', [EOS])
    are decided already in layer 1"."""
    trace = trace_of(TOM)
    first = analysis.logit_lens_first_layer(trace)  # 0-based; the viewer's note uses the same rule
    emitted = words(trace.tgt_tokens[1:])
    by_layer = {layer + 1: [w for w, f in zip(emitted, first) if f == layer] for layer in set(first)}
    assert by_layer == {
        1: ["ha", "dato", "Mary", "per", "il", "suo", "[EOS]"],
        2: ["Tom", "a", "un", "bel", "regalo", "compleanno."],
    }


# ----------------------------------------------------------------------------- the beach sentence
def test_beach_step8_cross_attention_goes_back_to_beach(trace_of):
    """README "A failure to study." and app.EXAMPLES beach: "at step 8 cross-attention of layer 2
    (mean of the heads) goes back to 'beach' (0.88)"."""
    trace = trace_of(BEACH)
    exact = trace.cross_attn[2 - 1, :, 8 - 1].mean(axis=0)  # layer 2, mean of heads, step 8: (S,)
    shown = decode_payload(encode_trace(trace, origin="translate"))["cross_attn"][2 - 1, :, 8 - 1].mean(axis=0)
    for row in (exact, shown):  # the model's weights and the viewer's (quantised) copy of them
        i = int(row.argmax())
        assert (trace.src_tokens[i], r2(row[i])) == ("▁bea", 0.88)  # 'beach' is '▁bea' + 'ch'
    assert trace.src_tokens[int(exact.argmax()) + 1] == "ch"


def test_beach_spiaggia_comes_a_second_time_at_step8(trace_of):
    """README "A failure to study." and app.EXAMPLES beach: "'spiaggia' comes a second time"
    (at step 8)."""
    trace = trace_of(BEACH)
    assert trace.translation.count("spiaggia") == 2
    emitted = trace.tgt_tokens[1:]
    starts = [t + 1 for t, tok in enumerate(emitted) if tok == "▁spia" and emitted[t + 1] == "ggia"]
    assert starts[1] == 8


# ----------------------------------------------------------------------------- my sister is tall
def test_sister_step5_candidates(trace_of):
    """README "A mistake to study." and app.EXAMPLES sister: "at step 5 the model chose 'to.' over
    'ta.' (0.57 against 0.37)"."""
    trace = trace_of(SISTER)
    t = 5 - 1
    assert trace.tgt_tokens[t + 1] == "to."
    assert trace.topk_tokens[t][:2] == ["to.", "ta."]
    assert [r2(p) for p in trace.topk_probs[t][:2]] == [0.57, 0.37]


def test_sister_whatif_force_ta_at_step5(tr, trace_of):
    """README "A mistake to study." and app.EXAMPLES sister: "Use What if? at step 5 to force 'ta.'
    and it goes on to 'Mia sorella è alta.'" (the same calls as ``App.whatif``)."""
    trace = trace_of(SISTER)
    rank = trace.topk_tokens[5 - 1].index("ta.")
    alt = tr.trace(trace.src_text, forced_prefix=viewer.whatif_prefix(trace, 5, rank))
    assert viewer.forced_label(alt) == "step 5 forced to 'ta.'"
    assert alt.translation == "Mia sorella è alta."
    assert np.array_equal(alt.tgt_ids[:5], trace.tgt_ids[:5])  # steps 1-4 as decoded before


# ----------------------------------------------------------------------------- minimal pairs
BROTHER, TWO_CARS = "My brother is tall.", "I have two red cars."
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
    è alto.'. The article agrees (step 1 says 'Mio' and 'Mia', 0.94 each), the adjective does not:
    at step 5 both say 'to.', though 'ta.' rises from 0.05 to 0.37. At step 2, cross-attention
    (layer 2, mean of heads) looks at 'brother' (0.94) and at 'sister' (0.99)"."""
    a, b = trace_of(BROTHER), trace_of(SISTER)
    assert (a.translation, b.translation) == ("Mio fratello è alto.", "Mia sorella è alto.")
    assert words([a.tgt_tokens[1], b.tgt_tokens[1]]) == ["Mio", "Mia"]
    assert (prob(a, 1, "▁Mio"), prob(b, 1, "▁Mia")) == (0.94, 0.94)
    assert a.tgt_tokens[5] == b.tgt_tokens[5] == "to."
    assert (prob(a, 5, "ta."), prob(b, 5, "ta.")) == (0.05, 0.37)
    assert (looks_at(a, 2, 2), looks_at(b, 2, 2)) == (("brother", 0.94), ("sister", 0.99))
    hint = pair_hint(BROTHER)
    assert all(x in hint for x in ("Mio fratello è alto.", "Mia sorella è alto.", "0.94", "0.05 to 0.37", "0.99"))


def test_pair_red_car_two_red_cars(trace_of):
    """PAIRS, red car / two red cars: "'Ho una macchina rossa.' against 'Ho due automobili.'. At
    step 2 'una' becomes 'due' (0.97); at step 3 B starts another noun ('a' 0.50 over 'macch' 0.36)
    and 'red' is lost: at step 4, cross-attention (layer 2, mean of heads) looks at 'red' in A
    (0.80) but at 'cars.' in B (0.70)"."""
    a, b = trace_of(RED_CAR), trace_of(TWO_CARS)
    assert (a.translation, b.translation) == ("Ho una macchina rossa.", "Ho due automobili.")
    assert words([a.tgt_tokens[2], b.tgt_tokens[2]]) == ["una", "due"] and prob(b, 2, "▁due") == 0.97
    assert b.topk_tokens[2][:2] == ["▁a", "▁macch"] and (prob(b, 3, "▁a"), prob(b, 3, "▁macch")) == (0.50, 0.36)
    assert "ross" not in b.translation
    assert (looks_at(a, 2, 4), looks_at(b, 2, 4)) == (("red", 0.80), ("cars.", 0.70))
    hint = pair_hint(RED_CAR)
    assert all(x in hint for x in ("Ho una macchina rossa.", "Ho due automobili.", "0.97", "0.50", "0.36", "0.80", "0.70"))


def test_pair_doctor_she_he(trace_of):
    """PAIRS, doctor she / he: "both are 'Il dottore ha detto che era stanco.'. The model does read
    it: at step 7 ('era') cross-attention (layer 1, mean of heads) looks most at 'she' (0.58) and at
    'he' (0.42); yet at step 8 'stanco.' wins in both (0.68 and 0.73). The difference map shows
    'she' and 'he' as gaps: they are the tokens the two sentences do not share"."""
    a, b = trace_of(DOCTOR_SHE), trace_of(DOCTOR_HE)
    assert a.translation == b.translation == "Il dottore ha detto che era stanco."
    assert a.tgt_tokens[7] == b.tgt_tokens[7] == "▁era"
    assert (looks_at(a, 1, 7), looks_at(b, 1, 7)) == (("she", 0.58), ("he", 0.42))
    assert a.tgt_tokens[8] == b.tgt_tokens[8] == "▁stanco."
    assert (prob(a, 8, "▁stanco."), prob(b, 8, "▁stanco.")) == (0.68, 0.73)
    # the only source tokens not shared (the view's alignment: tests/test_panel_pairs.py)
    assert [t for t in a.src_tokens if t not in b.src_tokens] == ["▁she"]
    assert [t for t in b.src_tokens if t not in a.src_tokens] == ["▁he"]
    hint = pair_hint(DOCTOR_SHE)
    assert all(x in hint for x in ("Il dottore ha detto che era stanco.", "0.58", "0.42", "0.68 and 0.73"))
