"""Every analysis on a converted model of each family (OPUS-MT's Marian, M2M100, NLLB-200,
mBART-50), through the decoding core: DecoderLens ends on the greedy translation, scoring the
greedy translation ranks it first at every step, contributions sum to 1, direct logit
attribution sums to the logit on the pre-norm families, and no analysis emits a banned id."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer.core import stepping
from transformer.core.decoding import greedy_decode
from transformer import load_translator
from transformer.interpret.attribution import direct_logit_attribution
from transformer.interpret.beam_tree import beam_tree
from transformer.interpret.contributions import alti_contributions
from transformer.interpret.decoder_lens import decoder_lens
from transformer.interpret.knockout import knockout
from transformer.interpret.reference import score_reference

FAMILIES = ["opus_mt_like", "m2m100_like", "nllb_like", "mbart50_like"]
TEXT = "The cat sleeps."


@pytest.fixture(scope="module", params=FAMILIES)
def family(request):
    return load_translator(request.getfixturevalue(request.param))


def greedy_ids(tr, text: str, tgt_lang=None) -> list[int]:
    return greedy_decode(tr.model, torch.tensor([tr.encode_source(text).ids]), tgt_lang=tgt_lang).ids[0]


def test_the_trace_begins_with_the_forced_start_and_never_emits_a_banned_id(family):
    trace = family.trace(TEXT)
    out = trace.tgt_ids[1:]
    assert out[: len(stepping.forced_start(family.cfg))] == stepping.forced_start(family.cfg)
    assert not set(out) & set(family.cfg.tgt_banned_ids)
    assert trace.tgt_ids[0] == stepping.start_id(family.cfg)


def test_a_batch_traces_each_sentence_as_alone(family):
    """What the server does with sentences that arrive together: a multilingual batch forces
    its language token on every row, and each trace equals the sentence's own."""
    texts = [TEXT, "Good morning, how are you today?"]
    for alone, batched in zip([family.trace(t) for t in texts], family.trace_batch(texts)):
        assert batched.tgt_ids == alone.tgt_ids and batched.forced_prefix == alone.forced_prefix
        np.testing.assert_allclose(batched.topk_probs, alone.topk_probs, atol=1e-5, rtol=0)


def test_decoder_lens_ends_on_the_greedy_translation(family):
    lens = decoder_lens(family, TEXT)
    assert lens.rows[-1].ids == greedy_ids(family, TEXT)
    assert all(not set(row.ids) & set(family.cfg.tgt_banned_ids) for row in lens.rows)


def test_scoring_the_greedy_ids_ranks_them_first(family, monkeypatch):
    """The reference is the greedy ids themselves (a random model's text need not tokenise back
    to them: that is the tokenizer's business, not the decoding core's)."""
    import transformer.interpret.reference as reference

    ids = greedy_ids(family, TEXT)
    # what follows the forced start, without the end: a random model may emit any token there
    body = ids[len(stepping.forced_start(family.cfg)) :]
    body = body[:-1] if body and body[-1] == family.cfg.tgt_eos_id else body
    monkeypatch.setattr(reference, "encode", lambda tok, text: list(body))
    score = score_reference(family, TEXT, "the greedy translation")
    assert score.ids[: len(ids)] == ids
    # every step greedy took ranks first (an end greedy never reached by its step limit has no such claim)
    assert score.ranks[: len(ids)].tolist() == [1] * len(ids)


def test_contribution_rows_sum_to_one(family):
    res = alti_contributions(family, family.trace(TEXT))
    assert np.allclose(res.total.sum(axis=-1), 1.0, atol=1e-4)


def test_beam_tree_and_knockout_emit_no_banned_id(family):
    banned = set(stepping.never_emitted(family.cfg))
    _, tree = beam_tree(family, TEXT, 2)
    assert all(n["token_id"] not in banned for n in tree["nodes"][1:])
    res = knockout(family, TEXT, "cross:0:0")
    banned_tokens = {family.tgt_tok.id_to_token(i) for i in family.cfg.tgt_banned_ids}
    assert not banned_tokens & set(res["steps"]["top_knockout"])


def test_direct_logit_attribution_sums_to_the_logit_on_pre_norm_families(family):
    if family.cfg.norm_placement != "pre":
        with pytest.raises(ValueError, match="pre-norm"):
            direct_logit_attribution(family, TEXT, 0)
        return
    last = len(greedy_ids(family, TEXT)) - 1
    res = direct_logit_attribution(family, TEXT, last)
    assert res.total() == pytest.approx(res.value, abs=1e-3)


@pytest.mark.parametrize("fixture", ["m2m100_like", "nllb_like", "mbart50_like"])
def test_a_multilingual_model_translates_into_another_language_it_knows(request, fixture):
    tr = load_translator(request.getfixturevalue(fixture))
    other = next(code for code in stepping.language_codes(tr.cfg) if code != tr.cfg.tgt_lang)
    trace = tr.trace(TEXT, tgt_lang=other)
    assert trace.tgt_ids[1] == tr.cfg.lang_ids[other] and trace.tgt_lang == other
    assert greedy_ids(tr, TEXT, other)[0] == tr.cfg.lang_ids[other]
    with pytest.raises(ValueError, match="unknown language"):
        tr.translate([TEXT], tgt_lang="xx_Nope")
