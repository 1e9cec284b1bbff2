"""A model's banned ids hold in every loop that picks tokens, because every loop goes through
the decoding core. The model: the small OPUS-MT-style Marian model, whose <pad> is both its
decoder's start token and banned, with <pad>'s logit raised so that it tops every step.
Greedy decoding never emits it; neither may DecoderLens, reference scoring, beam search, the
beam tree, the knock-out, What if? or sampling."""

from __future__ import annotations

import pytest
import torch

from transformer.core.beam import beam_search
from transformer.core.decoding import greedy_decode
from transformer import load_translator
from transformer.interpret.beam_tree import beam_tree
from transformer.interpret.decoder_lens import decoder_lens
from transformer.interpret.knockout import knockout
from transformer.interpret.reference import score_reference
from transformer.training.synthetic import sample_decode

TEXTS = ["The cat sleeps.", "I like red apples."]


@pytest.fixture(scope="module")
def plain(opus_mt_like):
    return load_translator(opus_mt_like)


@pytest.fixture(scope="module")
def pad_first(opus_mt_like):
    """The same model with <pad>'s logit raised by 100 at every step."""
    tr = load_translator(opus_mt_like)
    pad = tr.cfg.tgt_pad_id
    assert pad == tr.cfg.tgt_sos_id and pad in tr.cfg.tgt_banned_ids
    with torch.no_grad():
        tr.model.logits_bias[pad] += 100.0
    return tr


def greedy_ids(tr, text: str) -> list[int]:
    return greedy_decode(tr.model, torch.tensor([tr.encode_source(text).ids])).ids[0]


def test_pad_is_the_model_s_first_choice_yet_greedy_is_unchanged(plain, pad_first):
    trace = pad_first.trace(TEXTS[0])
    assert all(int(row[0]) == pad_first.cfg.tgt_pad_id for row in trace.topk_ids)  # the raw scores say <pad>
    assert pad_first.translate(TEXTS) == plain.translate(TEXTS)
    assert pad_first.cfg.tgt_pad_id not in trace.tgt_ids[1:]


def test_decoder_lens_never_emits_pad_and_its_last_row_is_greedy(pad_first):
    for text in TEXTS:
        lens = decoder_lens(pad_first, text)
        assert all(pad_first.cfg.tgt_pad_id not in row.ids for row in lens.rows)
        assert lens.rows[-1].ids == greedy_ids(pad_first, text)


def test_scoring_the_greedy_translation_ranks_it_first_at_every_step(pad_first):
    for text in TEXTS:
        score = score_reference(pad_first, text, pad_first.translate([text])[0])
        assert score.ranks.tolist() == [1] * len(score.ids)
        assert pad_first.cfg.tgt_pad_id not in score.top_ids
        assert score.first_divergence is None


def test_beam_search_and_its_tree_never_propose_pad(pad_first):
    pad = pad_first.cfg.tgt_pad_id
    src = torch.tensor([pad_first.encode_source(TEXTS[1]).ids])
    res = beam_search(pad_first.model, src, 3, return_records=True)
    assert all(pad not in h.ids for h in res.hypotheses[0])
    assert all(c.token_id != pad for c in res.records[0].candidates)
    _, tree = beam_tree(pad_first, TEXTS[1], 3)
    assert all(n["token_id"] != pad for n in tree["nodes"][1:])


def test_the_knockout_s_choices_and_what_if_never_emit_pad(pad_first):
    pad_tok = pad_first.tgt_tok.id_to_token(pad_first.cfg.tgt_pad_id)
    res = knockout(pad_first, TEXTS[0], "cross:0:0")
    assert pad_tok not in res["steps"]["top_knockout"]
    first = greedy_ids(pad_first, TEXTS[0])
    alt = pad_first.trace(TEXTS[0], forced_prefix=first[:1])
    assert pad_first.cfg.tgt_pad_id not in alt.tgt_ids[1:]


def test_sampling_for_back_translation_never_draws_pad(pad_first):
    src = torch.tensor([pad_first.encode_source(TEXTS[0]).ids])
    out = sample_decode(pad_first.model, src, torch.Generator().manual_seed(0))
    assert pad_first.cfg.tgt_pad_id not in out[0]
