"""Scoring your own reference (``transformer/interpret/reference.py``)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from transformer.core.decoding import greedy_decode
from transformer.core.tokenizer import encode
from transformer.interpret.reference import score_reference

pytestmark = pytest.mark.usefixtures("one_thread")

SENTENCES = [
    "My brother bought a new red car for his wife yesterday.",
    "I'll leave her alone.",
    "Is there anything wrong with you?",
]


def test_the_models_own_greedy_output_has_rank_1_everywhere(shipped):
    for text in SENTENCES:
        hyp = shipped.translate([text])[0]
        src = torch.tensor([shipped.encode_source(text).ids])
        ids = greedy_decode(shipped.model, src).ids[0]
        # the hypothesis re-tokenises to the ids the model emitted
        assert [*encode(shipped.tgt_tok, hyp), shipped.cfg.tgt_eos_id] == ids
        s = score_reference(shipped, text, hyp)
        assert s.ids == ids
        assert s.ranks.tolist() == [1] * len(ids)
        assert s.top_ids == ids and s.first_divergence is None
        np.testing.assert_allclose(s.probs, s.top_probs)


def test_a_reference_that_parts_from_the_model(shipped):
    text = SENTENCES[0]
    hyp = shipped.translate([text])[0]
    other = "Mio fratello ha comprato una macchina nuova e rossa per sua moglie ieri."
    assert other != hyp
    s = score_reference(shipped, text, other)
    t = s.first_divergence
    assert t is not None and s.ranks[t] > 1 and (s.ranks[:t] == 1).all()
    assert s.tokens[-1] == "[EOS]" and s.log_prob < 0 and -20 < s.mean_log_prob < 0
    d = json.loads(s.to_json())
    assert d["first_divergence"] == t and len(d["steps"]) == len(s.ids)


def test_probabilities_equal_the_teacher_forced_pass(translator):
    text, ref = "the black cat sleeps.", "il gatto nero dorme."
    s = score_reference(translator, text, ref)
    src = torch.tensor([translator.encode_source(text).ids])
    tgt_in = torch.tensor([[translator.cfg.tgt_sos_id, *s.ids[:-1]]])
    with torch.no_grad():
        p = translator.model(src, tgt_in).logits[0].softmax(-1)  # (T, V)
    np.testing.assert_allclose(s.probs, p[torch.arange(len(s.ids)), s.ids].numpy(), atol=1e-5)
    ranks = 1 + (p > p[torch.arange(len(s.ids)), s.ids][:, None]).sum(-1)
    assert np.abs(s.ranks - ranks.numpy()).max() <= 1  # float rounding may break a near tie


def test_bad_references(translator):
    with pytest.raises(ValueError):
        score_reference(translator, "the cat.", "   ")
    with pytest.raises(TypeError):
        score_reference(translator, "the cat.", None)


def test_figure(translator):
    s = score_reference(translator, "the black cat sleeps.", "il gatto nero dorme.")
    fig = s.figure()
    np.testing.assert_allclose(fig.data[0].y, s.probs, atol=1e-6)
    assert fig.layout.meta["first_divergence"] == s.first_divergence
