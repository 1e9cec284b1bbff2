"""Value zeroing (``transformer.interpret.value_zeroing``): the batched runs, one layer at a
time, equal a brute-force loop of whole forward passes that each zero one token's values;
rows are normalised, causal where they must be, and the rollouts are products of the layers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer.core import stepping
from transformer.core.recording import Recording, recording
from transformer.interpret.value_zeroing import KINDS, value_zeroing

TEXT = "The black cat sleeps on the sofa."


@pytest.fixture(scope="module")
def traced(translator):
    return translator.trace(TEXT)


def brute_force(model, trace, kind: str, layer: int, token: int) -> np.ndarray:
    """1 - cos of the layer's output at every position, the whole model run again with one
    token's values zeroed in that layer's attention of ``kind``."""
    src = torch.tensor([trace.src_ids])
    tgt_in = torch.tensor([trace.tgt_ids[: trace.steps]])
    out = f"{'encoder_ffn' if kind == 'encoder' else 'decoder_ffn'}.{layer}.output"

    def zero(v):
        v = v.clone()
        v[:, :, token] = 0.0
        return v

    outputs = []
    for replace in ({}, {f"{kind}.{layer}.v": zero}):
        rec = Recording(keep=[out], replace=replace)
        with recording(rec), torch.no_grad():
            stepping.teacher_forced(model, src, tgt_in)
        outputs.append(rec[out][0].double())  # (Q, D)
    cos = torch.nn.functional.cosine_similarity(outputs[0], outputs[1], dim=-1)
    return (1.0 - cos).clamp(min=0.0).numpy()


def test_the_batched_layers_equal_a_brute_force_loop(translator, traced):
    vz = value_zeroing(translator, traced)
    model = translator.model
    S, T = len(traced.src_ids), traced.steps
    for kind, keys in (("encoder", S), ("decoder_self", T), ("cross", S)):
        L = vz.raw[kind].shape[0]
        assert vz.raw[kind].max() > 1e-3  # taking a token out moves the layer's output: not float noise
        for layer in range(L):
            for token in range(keys):
                want = brute_force(model, traced, kind, layer, token)
                np.testing.assert_allclose(vz.raw[kind][layer][:, token], want, atol=1e-6)


def test_shapes_rows_and_causality(translator, traced):
    vz = value_zeroing(translator, traced)
    S, T = len(traced.src_ids), traced.steps
    cfg = translator.cfg
    assert vz.encoder.shape == (cfg.n_encoder_layers, S, S)
    assert vz.decoder_self.shape == (cfg.n_decoder_layers, T, T)
    assert vz.cross.shape == (cfg.n_decoder_layers, T, S)
    for kind in KINDS:
        assert np.allclose(getattr(vz, kind).sum(-1), 1.0, atol=1e-9)
    assert np.all(np.triu(vz.decoder_self, k=1) == 0.0)
    # rolled out: products of the normalised layers, rows still sum to 1
    assert np.allclose(vz.encoder_rollout, vz.encoder[1] @ vz.encoder[0]) if cfg.n_encoder_layers == 2 else True
    for rolled in (vz.encoder_rollout, vz.decoder_rollout, *vz.cross_rollout):
        assert np.allclose(rolled.sum(-1), 1.0, atol=1e-9)
    d = vz.to_dict()
    assert d["schema"] == "value-zeroing/1" and len(d["cross_rollout"]) == cfg.n_decoder_layers


def test_bad_input_says_so(translator, traced):
    translator.model.train()
    try:
        with pytest.raises(ValueError, match="training mode"):
            value_zeroing(translator, traced)
    finally:
        translator.model.eval()
    with pytest.raises(TypeError, match="Translator or a Transformer"):
        value_zeroing("model", traced)
