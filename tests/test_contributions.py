"""ALTI+ and Kobayashi norms (``transformer/interpret/contributions.py``).

On tiny random models of both norm placements (pre- and post-LN) the module's vectorised
numbers are checked against an independent implementation written here from the papers'
equations: a forward pass by hand, token by token, that splits every attention block into one
vector per input token (Kobayashi et al. 2020), ALTI's L1 proximities (Ferrando et al. 2022)
and ALTI+'s composition as a product of (S + T) x (S + T) block matrices (Ferrando et al. 2022,
EMNLP) instead of the module's two-part rollout.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from tests.helpers import tiny_config
from transformer.core.model import build_model
from transformer.core.translator import Translator
from transformer.interpret.contributions import alti_contributions, value_norms

pytestmark = pytest.mark.usefixtures("one_thread")

TEXT = "the black cat sleeps."


@pytest.fixture(scope="module", params=["pre", "post"])
def tiny(request, tokenizers_pair):
    """A tiny random model of each norm placement, its norms' gains and biases and every bias
    moved away from their initial 1 and 0 so that none of them can hide a mistake."""
    src_tok, tgt_tok = tokenizers_pair
    torch.manual_seed(1)
    model = build_model(tiny_config(src_tok, tgt_tok, norm_placement=request.param))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(0.2 * torch.randn_like(p))
    return Translator(model, src_tok, tgt_tok)


# ----------------------------------------------------------------------------- by hand
def layer_norm(x: torch.Tensor, norm) -> torch.Tensor:
    """LN of one vector (D,) from its definition."""
    mu = x.mean()
    var = ((x - mu) ** 2).mean()
    return (x - mu) / math.sqrt(float(var) + norm.eps) * norm.gain + norm.bias


def attention_terms(attn, queries, keys, visible, residuals, self_attention):
    """One attention block split by hand. ``queries`` (Q, D) and ``keys`` (K, D) are what the
    attention module reads; returns the weights alpha (H, Q, K), the per-head transformed values
    f[h][j] = W_O^h (W_V^h x_j + b_V^h), and the terms T[i][j] (plus the residual term, in
    cross-attention a separate last term)."""
    H, d_k = attn.h, attn.d_k
    Q, K = len(queries), len(keys)
    alpha = torch.zeros(H, Q, K)
    f = [[None] * K for _ in range(H)]
    for h in range(H):
        sl = slice(h * d_k, (h + 1) * d_k)
        W_q, b_q = attn.q_proj.weight[sl], attn.q_proj.bias[sl]
        W_k, b_k = attn.k_proj.weight[sl], attn.k_proj.bias[sl]
        W_v, b_v = attn.v_proj.weight[sl], attn.v_proj.bias[sl]
        W_o = attn.o_proj.weight[:, sl]  # (D, d_k): head h's columns of o_proj
        for j in range(K):
            f[h][j] = W_o @ (W_v @ keys[j] + b_v)
        for i in range(Q):
            q = W_q @ queries[i] + b_q
            scores = [float(q @ (W_k @ keys[j] + b_k)) / math.sqrt(d_k) for j in range(K)]
            m = max(s for j, s in enumerate(scores) if visible(i, j))
            e = [math.exp(s - m) if visible(i, j) else 0.0 for j, s in enumerate(scores)]
            for j in range(K):
                alpha[h, i, j] = e[j] / sum(e)
    terms = []
    for i in range(Q):
        row = []
        for j in range(K):
            v = sum(alpha[h, i, j] * f[h][j] for h in range(H))
            if self_attention and i == j:
                v = v + residuals[i]
            row.append(v)
        if not self_attention:
            row.append(residuals[i].clone())
        terms.append(row)
    return alpha, f, terms


def block_by_hand(attn, norm, pre, x, keys_from, visible, self_attention):
    """A residual block around attention, by hand: returns the new stream (Q, D), the terms
    after the norm's split (post-LN) and their resultant y (Q, D), alpha and f."""
    Q = len(x)
    queries = [layer_norm(v, norm) for v in x] if pre else list(x)
    if self_attention:
        keys = queries
    else:
        keys = keys_from
    alpha, f, terms = attention_terms(attn, queries, keys, visible, x, self_attention)
    out, ys, split = [], [], []
    for i in range(Q):
        z = sum(terms[i]) + attn.o_proj.bias
        if pre:
            out.append(z)
            ys.append(z)
            split.append(terms[i])
        else:
            sigma = math.sqrt(float(((z - z.mean()) ** 2).mean()) + norm.eps)
            row = [(t - t.mean()) / sigma * norm.gain for t in terms[i]]
            b = attn.o_proj.bias
            y = sum(row) + (b - b.mean()) / sigma * norm.gain + norm.bias
            assert torch.allclose(y, layer_norm(z, norm), atol=1e-5)
            out.append(y)
            ys.append(y)
            split.append(row)
    return out, split, ys, alpha, f, keys


def alti_by_hand(split, ys) -> np.ndarray:
    """c_ij = max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1), normalised over j, one cell at a time."""
    C = np.zeros((len(split), len(split[0])))
    for i, (row, y) in enumerate(zip(split, ys)):
        for j, t in enumerate(row):
            C[i, j] = max(0.0, float(y.abs().sum()) - float((y - t).abs().sum()))
        C[i] /= C[i].sum()
    return C


def ffn_block(layer, pre, x):
    """The FFN block (per position: it mixes no tokens), by its definition around the module."""
    n = layer.ffn_block.norm
    if pre:
        return [v + layer.ffn(layer_norm(v, n)[None])[0] for v in x]
    return [layer_norm(v + layer.ffn(v[None])[0], n) for v in x]


@torch.no_grad()
def by_hand(tr, trace):
    """Everything ALTI+ needs, from a forward pass written token by token."""
    model = tr.model
    pre = model.cfg.norm_placement == "pre"
    D = model.cfg.d_model
    pe = model.pos_encoding.pe
    S, T = len(trace.src_ids), trace.steps
    x = [model.src_embed.weight[i] * math.sqrt(D) + pe[p] for p, i in enumerate(trace.src_ids)]
    enc, norms = [], {"encoder": [], "decoder_self": [], "cross": []}
    for layer in model.encoder_layers:
        x, split, ys, alpha, f, _ = block_by_hand(
            layer.self_attn, layer.self_attn_block.norm, pre, x, None, lambda i, j: True, True
        )
        enc.append(alti_by_hand(split, ys))
        norms["encoder"].append(kobayashi_by_hand(alpha, f))
        x = ffn_block(layer, pre, x)
    memory = [model.encoder_norm(v[None])[0] for v in x] if pre else x
    y = [model.tgt_embed.weight[i] * math.sqrt(D) + pe[p] for p, i in enumerate(trace.tgt_ids[:T])]
    self_c, cross_c = [], []
    for layer in model.decoder_layers:
        y, split, ys, alpha, f, _ = block_by_hand(
            layer.self_attn, layer.self_attn_block.norm, pre, y, None, lambda i, j: j <= i, True
        )
        self_c.append(alti_by_hand(split, ys))
        norms["decoder_self"].append(kobayashi_by_hand(alpha, f))
        y, split, ys, alpha, f, _ = block_by_hand(
            layer.cross_attn, layer.cross_attn_block.norm, pre, y, memory, lambda i, j: True, False
        )
        cross_c.append(alti_by_hand(split, ys))
        norms["cross"].append(kobayashi_by_hand(alpha, f))
        y = ffn_block(layer, pre, y)
    # the hand-made pass is the model's: its last hidden state gives the trace's top token
    hidden = torch.stack([model.decoder_norm(v[None])[0] for v in y])
    assert model.project(hidden).argmax(-1).tolist()[: T - 1] == trace.tgt_ids[1:T]
    return enc, self_c, cross_c, {k: np.stack(v) for k, v in norms.items()}, S, T


def kobayashi_by_hand(alpha, f) -> np.ndarray:
    """||alpha^h_ij f^h(x_j)|| for every head, query and key, one at a time."""
    H, Q, K = alpha.shape
    out = np.zeros((H, Q, K))
    for h in range(H):
        for i in range(Q):
            for j in range(K):
                out[h, i, j] = float(torch.linalg.vector_norm(alpha[h, i, j] * f[h][j]))
    return out


def compose_by_hand(enc, self_c, cross_c, S, T) -> list[np.ndarray]:
    """ALTI+ as products of (S + T) x (S + T) matrices: source rows copy themselves through the
    decoder (identity), the encoder's rollout multiplies the source columns at the start."""
    R_enc = np.eye(S)
    for C in enc:
        R_enc = C @ R_enc
    start = np.zeros((S + T, S + T))
    start[:S, :S], start[S:, S:] = R_enc, np.eye(T)
    M_total = start
    out = []
    for Cs, Cx in zip(self_c, cross_c):
        M = np.eye(S + T)
        M[S:, :S] = Cx[:, :S]
        M[S:, S:] = Cx[:, S:] * Cs
        M_total = M @ M_total
        out.append(M_total[S:].copy())  # (T, S + T)
    return out


# ----------------------------------------------------------------------------- the checks
def test_alti_equals_the_papers_equations_by_hand(tiny):
    trace = tiny.trace(TEXT)
    c = alti_contributions(tiny, trace)
    enc, self_c, cross_c, _, S, T = by_hand(tiny, trace)
    assert c.reconstruction_error < 1e-4
    np.testing.assert_allclose(c.encoder_layers, np.stack(enc), atol=1e-5)
    np.testing.assert_allclose(c.self_layers, np.stack(self_c), atol=1e-5)
    np.testing.assert_allclose(c.cross_layers, np.stack(cross_c), atol=1e-5)
    composed = compose_by_hand(enc, self_c, cross_c, S, T)
    np.testing.assert_allclose(c.decoder_rollout, np.stack(composed), atol=1e-5)
    np.testing.assert_allclose(c.total, composed[-1], atol=1e-5)
    # a step sees no later decoder input
    assert np.all(np.triu(c.prefix, k=1) == 0)


def test_kobayashi_norms_equal_an_explicit_computation(tiny):
    trace = tiny.trace(TEXT)
    n = value_norms(tiny, trace)
    *_, norms, S, T = by_hand(tiny, trace)
    for kind in ("encoder", "decoder_self", "cross"):
        assert n.get(kind).shape == np.shape(
            getattr(trace, {"decoder_self": "decoder_self_attn"}.get(kind, kind + "_attn"))
        )
        np.testing.assert_allclose(n.get(kind), norms[kind], atol=1e-5, rtol=1e-5)
    rows = n.normalised("cross").sum(-1)
    np.testing.assert_allclose(rows, 1.0, atol=1e-5)
    json.dumps(n.to_dict())


def test_shares_lie_in_0_1_and_sum_to_1(tiny):
    for text in (TEXT, "where is the station?", "i do not like tea."):
        c = alti_contributions(tiny, tiny.trace(text))
        src, pre = c.source_share, c.prefix_share
        assert src.shape == pre.shape == (c.steps,)
        assert np.all((src >= 0) & (src <= 1)) and np.all((pre >= 0) & (pre <= 1))
        np.testing.assert_allclose(src + pre, 1.0, atol=1e-5)
        np.testing.assert_allclose(c.decoder_rollout.sum(-1), 1.0, atol=1e-5)
        np.testing.assert_allclose(c.decoder_layers.sum(-1), 1.0, atol=1e-5)


def test_result_is_plain_data(translator):
    trace = translator.trace(TEXT)
    c = alti_contributions(translator, trace)
    d = json.loads(json.dumps(c.to_dict()))
    T, S = trace.steps, len(trace.src_tokens)
    assert np.shape(d["source"]) == (T, S) and np.shape(d["prefix"]) == (T, T)
    assert np.shape(d["layers"]["source"]) == (translator.cfg.n_decoder_layers, T, S)
    step = c.step(1)
    assert len(step["source"]) == S and len(step["prefix"]) == 2
    assert abs(step["source_share"] + step["prefix_share"] - 1) < 1e-5
    with pytest.raises(IndexError):
        c.step(T)


def test_bad_input_raises(translator):
    with pytest.raises(TypeError):
        alti_contributions(translator, "not a trace")
    with pytest.raises(TypeError):
        value_norms(object(), translator.trace(TEXT))


def test_figures(translator):
    trace = translator.trace(TEXT)
    c = alti_contributions(translator, trace)
    fig = c.figure(step=2)
    z = np.array([[np.nan if v is None else v for v in row] for row in fig.data[0].z], dtype=float)
    assert z.shape == (c.steps, c.S + c.steps)
    np.testing.assert_allclose(np.nansum(z[:2], axis=1), 1.0, atol=1e-5)  # rows shown sum to 1
    bars = c.share_figure()
    np.testing.assert_allclose(np.add(bars.data[0].y, bars.data[1].y), 1.0, atol=1e-5)
    n = value_norms(translator, trace)
    f = n.figure("decoder_self", layer=2, head=1)
    assert f.layout.meta["kind"] == "decoder_self"
    assert n.figure("encoder", normalise=True, head="max").layout.meta["normalise"] is True
    with pytest.raises(ValueError):
        n.figure("cross", layer=9)


def test_a_knocked_out_trace_splits_exactly_with_its_head_mask(tiny):
    H, L = tiny.cfg.h, tiny.cfg.n_decoder_layers
    mask = {"cross": torch.ones(L, H), "encoder": torch.ones(tiny.cfg.n_encoder_layers, H)}
    mask["cross"][0, 1] = 0
    mask["encoder"][1, 0] = 0
    trace = tiny.trace(TEXT, head_mask=mask)
    c = alti_contributions(tiny, trace, head_mask=mask)
    assert c.reconstruction_error < 1e-4
    n = value_norms(tiny, trace, head_mask=mask)
    assert np.all(n.cross[0, 1] == 0) and np.all(n.encoder[1, 0] == 0)
    assert not np.allclose(alti_contributions(tiny, trace).total, c.total)  # without it: another model's split


def test_shipped_model_splits_exactly_and_reads_mostly_the_source(shipped):
    trace = shipped.trace("My brother bought a new red car for his wife yesterday.")
    c = alti_contributions(shipped, trace)
    assert c.reconstruction_error < 1e-3  # float32 rounding over d_model = 256
    np.testing.assert_allclose(c.source_share + c.prefix_share, 1.0, atol=1e-5)
    assert 0.4 < c.source_share.mean() < 0.95  # measured 0.75: the source leads, the prefix matters
    n = value_norms(shipped, trace)
    assert n.cross.shape == trace.cross_attn.shape and np.all(n.cross >= 0)
