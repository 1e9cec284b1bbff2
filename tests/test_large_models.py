"""What lets a published model of 600M parameters serve on 2 cores (benchmarks/published_sizes.py):

- ``load_weights`` reads the file tensor by tensor into the model (no memory map whose pages
  would count twice the weights), with the same values ``safetensors.load_file`` gives;
- ``load_translator`` lays the output matrix out by columns, so ``Transformer.project``'s (D, V)
  matrix is the weight itself, not a copy (1 GB at NLLB-200's size), with bit-identical logits;
- a model with a large vocabulary traces without the logit lens (``Trace.logit_lens_left_out``)
  and ``Translator.logit_lens`` / ``explorer.lens_api.lens_payload`` compute it on demand, equal
  to the lens the trace records.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from tests.helpers import SHIPPED, short_test_sources
from transformer.core import checkpoint, translator
from transformer.core.checkpoint import CheckpointError, assign_weights, load_checkpoint, load_weights
from transformer.core.model import build_model
from transformer.core.translator import Translator
from transformer import load_translator
from transformer.core.wire import decode_array

SENTENCE = "My sister bought a beautiful red dress for the party."


# ----------------------------------------------------------------------------- loading
def test_streamed_weights_equal_safetensors_own(tiny_checkpoint):
    """The shipped checkpoint (float16 on disk, cast) and a float32 one (read in place)."""
    for folder in (SHIPPED, tiny_checkpoint):
        cfg = checkpoint.read_config(folder)
        streamed, reference = build_model(cfg), build_model(cfg)
        load_weights(streamed, folder / "model.safetensors")
        assign_weights(reference, load_file(str(folder / "model.safetensors")), folder)
        a, b = streamed.state_dict(), reference.state_dict()
        assert all(torch.equal(a[k], b[k]) for k in a), folder


def test_a_weights_file_cut_short_is_corrupt(tmp_path, tiny_checkpoint):
    import shutil

    folder = shutil.copytree(tiny_checkpoint, tmp_path / "cut")
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) - 100])
    with pytest.raises(CheckpointError, match=r"model\.safetensors: corrupt"):
        load_checkpoint(folder)


@pytest.mark.parametrize("which", ["shipped", "nllb"])
def test_a_translators_output_matrix_is_laid_out_for_decoding(which, nllb_like):
    folder = SHIPPED if which == "shipped" else nllb_like
    tr = load_translator(folder)
    plain, *_ = load_checkpoint(folder)
    weight = tr.model.proj.weight if tr.model.proj is not None else tr.model.tgt_embed.weight
    assert weight.t().is_contiguous() and not weight.is_contiguous()
    assert tr.model._projection_t(weight).data_ptr() == weight.data_ptr()  # no (D, V) copy
    src, tgt = torch.tensor([[5, 17, 30, 41, 3]]), torch.tensor([[tr.cfg.tgt_sos_id, 12, 25, 7]])
    with torch.no_grad():
        a, b = tr.model(src, tgt, need_weights=True), plain(src, tgt, need_weights=True)
        assert torch.equal(a.logits, b.logits)  # bit-identical: the same (D, V) matrix, the same sums
        assert all(torch.equal(x, y) for x, y in zip(a.cross_attn, b.cross_attn))
    ours = Translator(plain, tr.src_tok, tr.tgt_tok).trace(SENTENCE)
    theirs = tr.trace(SENTENCE)
    assert ours.tgt_ids == theirs.tgt_ids and np.array_equal(ours.logit_lens_probs, theirs.logit_lens_probs)


# ----------------------------------------------------------------------------- the logit lens on demand
def assert_same_lens(eager, lazy):
    assert lazy.logit_lens_tokens == eager.logit_lens_tokens
    assert np.array_equal(lazy.logit_lens_ids, eager.logit_lens_ids)
    np.testing.assert_allclose(lazy.logit_lens_probs, eager.logit_lens_probs, atol=1e-5, rtol=0)
    assert lazy.logit_lens_probs.dtype == np.float32 and not lazy.logit_lens_left_out


def test_a_trace_without_the_lens_says_so_and_is_otherwise_the_same(shipped):
    assert shipped.lens_in_trace  # ours, 4k tokens: in the trace
    eager, lazy = shipped.trace(SENTENCE), shipped.trace(SENTENCE, logit_lens=False)
    assert lazy.logit_lens_left_out and lazy.logit_lens_ids is None and lazy.logit_lens_tokens is None
    assert not eager.logit_lens_left_out
    assert lazy.tgt_ids == eager.tgt_ids and lazy.topk_tokens == eager.topk_tokens
    for name in ("topk_probs", "encoder_attn", "decoder_self_attn", "cross_attn", "rollout", "encoder_rollout"):
        assert np.array_equal(getattr(lazy, name), getattr(eager, name)), name
    assert lazy.head_stats == eager.head_stats
    d = lazy.to_dict()
    assert d["logit_lens_left_out"] is True and "logit_lens" not in d
    assert "logit_lens_left_out" not in eager.to_dict()
    assert_same_lens(eager, shipped.logit_lens(lazy))
    assert shipped.logit_lens(eager) is eager  # a trace with its lens is returned as it is


def test_a_large_vocabulary_leaves_the_lens_out_and_it_comes_on_demand(nllb_like, mbart50_like, monkeypatch):
    """NLLB-style (a forced language token first, fairseq positions) and mBART-50-style (learned
    positions, embedding norms, logits bias) models, as if their vocabulary were large; also a
    What if? (a forced prefix) and a knock-out (a head mask) trace."""
    monkeypatch.setattr(translator, "LENS_IN_TRACE_MAX_VOCAB", 100)
    text = short_test_sources(1)[0]
    for folder in (nllb_like, mbart50_like):
        tr = load_translator(folder)
        assert not tr.lens_in_trace
        lazy = tr.trace(text)
        assert lazy.logit_lens_left_out and lazy.logit_lens_ids is None
        assert_same_lens(tr.trace(text, logit_lens=True), tr.logit_lens(lazy))
        forced = lazy.tgt_ids[1:3]
        assert_same_lens(
            tr.trace(text, forced_prefix=forced, logit_lens=True), tr.logit_lens(tr.trace(text, forced_prefix=forced))
        )
        mask = {"decoder_self": torch.ones(tr.cfg.n_decoder_layers, tr.cfg.h)}
        mask["decoder_self"][0, :2] = 0
        knocked = tr.trace(text, head_mask=mask)
        assert_same_lens(tr.trace(text, head_mask=mask, logit_lens=True), tr.logit_lens(knocked, head_mask=mask))
        batch = tr.trace_batch([text, "Good morning."])  # every row forced to the language token first
        assert all(t.logit_lens_left_out for t in batch) and batch[0].tgt_ids == lazy.tgt_ids
        assert all(t.logit_lens_ids is not None for t in tr.trace_batch([text], logit_lens=True))


def test_the_lens_payload_is_the_traces_lens_in_the_payloads_encoding(nllb_like):
    from explorer.panels.lens import lens_payload

    tr = load_translator(nllb_like)
    trace = tr.trace(short_test_sources(1)[0])
    answer = lens_payload(tr, trace.src_ids, trace.tgt_ids)
    ids, probs = decode_array(answer["logit_lens"]["ids"]), decode_array(answer["logit_lens"]["probs"])
    assert np.array_equal(ids, trace.logit_lens_ids)
    np.testing.assert_allclose(probs, trace.logit_lens_probs, atol=1e-5, rtol=0)
    tokens = [[[answer["vocab"][str(i)] for i in rank] for rank in layer] for layer in ids.tolist()]
    assert tokens == trace.logit_lens_tokens
    bad = [
        ("not a list", trace.tgt_ids, "src_ids must be a list of token ids"),
        (trace.src_ids, [tr.cfg.tgt_sos_id], "tgt_ids must be the decoder's start token"),
        (trace.src_ids, [7, 8], "tgt_ids must be the decoder's start token"),
        ([tr.cfg.src_vocab_size], trace.tgt_ids, "outside the vocabulary"),
        ([], trace.tgt_ids, "src_ids must hold 1 to"),
        ([True, 5], trace.tgt_ids, "src_ids must be a list of token ids"),
    ]
    for src, tgt, message in bad:
        with pytest.raises(ValueError, match=message):
            lens_payload(tr, src, tgt)


# ----------------------------------------------------------------------------- in the app
def test_the_page_asks_for_a_left_out_lens_and_gets_the_traces_own(nllb_like):
    """An app whose model traces without the lens (as ``--lens-on-demand always`` or a large
    vocabulary makes it): the viewer's payload says so, the lens panel answers the page's request
    for the session's trace with the lens a full trace records, and ``/logit_lens`` the same."""
    import json

    import gradio as gr

    from explorer.page import App
    from explorer.panels.base import Asked
    from explorer.panels.lens import LensPanel

    tr = load_translator(nllb_like)
    tr.lens_in_trace = False
    app = App(tr)
    app.build()
    shown = app.translate(short_test_sources(1)[0])
    payload, trace = json.loads(shown[app.viewer]), shown[app.trace_state]
    assert payload["logit_lens_left_out"] is True and "logit_lens" not in payload
    panel = app.panel("lens")
    assert isinstance(panel, LensPanel)
    answer = json.loads(panel.request(trace, Asked(None, {"action": "logit_lens", "sentenceId": 3, "key": "k"})))
    assert answer["action"] == "logit_lens" and answer["sentenceId"] == 3
    full = tr.trace(trace.src_text, logit_lens=True)
    assert np.array_equal(decode_array(answer["logit_lens"]["ids"]), full.logit_lens_ids)
    tokens = [[[answer["vocab"][str(i)] for i in k] for k in layer] for layer in full.logit_lens_ids.tolist()]
    assert tokens == full.logit_lens_tokens
    api = panel.logit_lens(trace.src_ids, trace.tgt_ids)
    assert np.array_equal(decode_array(api["logit_lens"]["ids"]), full.logit_lens_ids)
    with pytest.raises(gr.Error, match="tgt_ids must be the decoder's start token"):
        panel.logit_lens(trace.src_ids, [7, 8])
    refused = json.loads(panel.request(None, Asked(None, {"action": "logit_lens"})))
    assert refused["error"] == "Translate a sentence first."
