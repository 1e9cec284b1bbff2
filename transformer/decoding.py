"""Greedy decoding with an explicit KV cache, and the trace of one sentence for the viewer.

Vocabulary of the trace. The decoder input is ``[SOS] y1 y2 ... y(n-1)`` and its outputs
are ``y1 ... yn`` (``yn`` is usually ``[EOS]``). *Step t* (0-based) reads input token t,
attends to inputs 0..t and to the whole source, and emits ``y(t+1)``. So with n steps:

- ``tgt_tokens`` is ``[SOS] y1 ... yn`` (n + 1 tokens); step t's query is ``tgt_tokens[t]``
  and its output is ``tgt_tokens[t + 1]``;
- ``decoder_self_attn`` is (layers, heads, n, n): row t is what step t attended to,
  columns are ``tgt_tokens[:n]``; entries right of the diagonal are exactly 0;
- ``cross_attn`` is (layers, heads, n, S), ``encoder_attn`` (layers, heads, S, S);
- ``topk_*`` row t are the candidates for the token emitted at step t.

Everything is computed in one call, so the app steps through it by slicing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .model import Transformer, causal_mask
from .trace import StepView, Trace  # noqa: F401  (re-exported: older imports)


@dataclass
class GreedyResult:
    """Raw output of :func:`greedy_decode`; ids exclude the leading [SOS]."""

    ids: list[list[int]]
    # only filled when need_trace (batch of one): per step arrays
    self_attn: np.ndarray | None = None  # (L, H, T, T)
    cross_attn: np.ndarray | None = None  # (L, H, T, S)
    encoder_attn: np.ndarray | None = None  # (L, H, S, S)
    topk_ids: np.ndarray | None = None  # (T, k)
    topk_probs: np.ndarray | None = None  # (T, k)
    lens_ids: np.ndarray | None = None  # (T, L_dec, LENS_K): logit lens, see greedy_decode
    lens_probs: np.ndarray | None = None  # (T, L_dec, LENS_K)


LENS_K = 5  # candidates the logit lens keeps per layer and step


def max_new_tokens(model: Transformer, src_len: int | torch.Tensor):
    """Target steps allowed for a source of ``src_len`` ids: generous (Italian runs longer
    than English) but never past the decoder's positional table. Works per row on a tensor
    of lengths too, so a sentence gets the same limit alone or in a padded batch."""
    if isinstance(src_len, torch.Tensor):
        return (2 * src_len + 10).clamp(max=model.cfg.max_positions)
    return min(model.cfg.max_positions, 2 * src_len + 10)


@torch.no_grad()
def greedy_decode(
    model: Transformer,
    src: torch.Tensor,
    max_steps: int | None = None,
    forced_prefix: list[int] | None = None,
    need_trace: bool = False,
    top_k: int = 10,
    head_mask: dict | None = None,
) -> GreedyResult:
    """Greedy decoding of a padded batch ``src`` (B, S) with a KV cache.

    The encoder runs once; each decoder layer projects the encoder memory into
    cross-attention K/V once (on the first step) and its self-attention K/V grow by one
    position per step, passed explicitly through ``LayerCache``.

    ``forced_prefix`` (batch of one): output ids to emit at steps 0..m-1 instead of the
    argmax, after which decoding goes on greedily ("what if the model had said X?").
    ``need_trace`` (batch of one) records attention and top-k candidates at every step,
    and the logit lens (nostalgebraist 2020): what each decoder layer's output would
    predict if it were the last, i.e. final norm then output projection, top ``LENS_K``.
    The recorded arrays are trimmed to the emitted ids: T = len(ids[0]) steps.
    ``head_mask`` silences heads (see ``Transformer.layer_head_masks``), e.g. a knock-out.
    """
    cfg = model.cfg
    B, S = src.shape
    if (need_trace or forced_prefix) and B != 1:
        raise ValueError("need_trace and forced_prefix work on one sentence at a time")
    forced_prefix = list(forced_prefix or [])
    if cfg.tgt_pad_id in forced_prefix:
        raise ValueError("a forced prefix cannot contain the [PAD] token")
    if len(forced_prefix) > cfg.max_positions:
        raise ValueError(f"forced prefix of {len(forced_prefix)} tokens exceeds max_positions={cfg.max_positions}")
    if max_steps is None:
        limits = max_new_tokens(model, (src != cfg.src_pad_id).sum(dim=1))  # (B,)
    else:
        limits = torch.full((B,), min(max_steps, cfg.max_positions), device=src.device)
    limits = limits.clamp(min=len(forced_prefix))
    max_steps = int(limits.max())

    src_mask = model.src_mask(src)
    memory, enc_w = model.encode(src, src_mask, need_weights=need_trace, head_mask=head_mask)
    ys = torch.full((B, 1), cfg.tgt_sos_id, dtype=torch.long, device=src.device)
    finished = torch.zeros(B, dtype=torch.bool, device=src.device)
    cache = None
    out_ids: list[torch.Tensor] = []
    self_rows, cross_rows, tk_ids, tk_probs, lens_ids, lens_probs, lens_hidden = [], [], [], [], [], [], []
    for t in range(max_steps):
        dec = model.decode(ys[:, -1:], memory, src_mask, cache=cache, need_weights=need_trace,
                           head_mask=head_mask, need_hidden_states=need_trace)
        cache = dec.cache
        logits = model.project(dec.hidden[:, -1])  # (B, V)
        if t < len(forced_prefix):
            nxt = torch.full((B,), forced_prefix[t], dtype=torch.long, device=src.device)
        else:
            nxt = logits.argmax(dim=-1)
        if need_trace:
            probs = logits.float().softmax(dim=-1)
            p, i = probs.topk(min(top_k, probs.shape[-1]), dim=-1)
            tk_ids.append(i[0])
            tk_probs.append(p[0])
            self_rows.append(torch.stack([w[0, :, 0] for w in dec.self_attn]))  # (L, H, t+1)
            cross_rows.append(torch.stack([w[0, :, 0] for w in dec.cross_attn]))  # (L, H, S)
            # logit lens: the last layer's row is exactly the logits above; the earlier
            # layers' outputs are kept and projected after the loop in one matmul, which reads
            # the (V, D) projection once instead of once per step and layer
            lp, li = probs.topk(min(LENS_K, probs.shape[-1]), dim=-1)
            lens_ids.append(li[0])
            lens_probs.append(lp[0])
            lens_hidden.append(torch.stack([h[0, -1] for h in dec.layer_hidden[:-1]]))  # (L - 1, D)
        nxt = torch.where(finished, torch.full_like(nxt, cfg.tgt_pad_id), nxt)
        out_ids.append(nxt)
        finished = finished | (nxt == cfg.tgt_eos_id) | (t + 1 >= limits)
        ys = torch.cat([ys, nxt[:, None]], dim=1)
        if bool(finished.all()):
            break

    gen = torch.stack(out_ids, dim=1).tolist()  # (B, T)
    ids = []
    for row in gen:
        seq = []
        for tok in row:
            if tok == cfg.tgt_pad_id:
                break
            seq.append(tok)
            if tok == cfg.tgt_eos_id:
                break
        ids.append(seq)
    result = GreedyResult(ids=ids)
    if need_trace:
        # a forced [EOS] or [PAD] can end the ids before the recorded steps do: keep only
        # the steps whose output is in ids, so every array has T = len(ids[0]) rows
        T = len(ids[0])
        L, H = self_rows[0].shape[:2]
        self_attn = torch.zeros(L, H, T, T)
        for t, row in enumerate(self_rows[:T]):
            self_attn[:, :, t, : t + 1] = row
        result.self_attn = self_attn.numpy()
        result.cross_attn = torch.stack(cross_rows[:T], dim=2).float().numpy()  # (L, H, T, S)
        result.encoder_attn = torch.stack([w[0] for w in enc_w]).float().numpy()  # (L, H, S, S)
        result.topk_ids = torch.stack(tk_ids[:T]).numpy()
        result.topk_probs = torch.stack(tk_probs[:T]).numpy()
        last_ids, last_probs = torch.stack(lens_ids[:T]), torch.stack(lens_probs[:T])  # (T, K): the output layer
        if L > 1 and T > 0:
            hidden = torch.stack(lens_hidden[:T])  # (T, L - 1, D)
            early = model.project(model.decoder_norm(hidden)).float().softmax(dim=-1)  # (T, L - 1, V)
            ep, ei = early.topk(last_ids.shape[-1], dim=-1)  # (T, L - 1, K)
            last_ids = torch.cat([ei, last_ids[:, None]], dim=1)  # (T, L, K)
            last_probs = torch.cat([ep, last_probs[:, None]], dim=1)
        else:
            last_ids, last_probs = last_ids[:, None], last_probs[:, None]  # (T, 1, K)
        result.lens_ids = last_ids.numpy()  # (T, L, LENS_K)
        result.lens_probs = last_probs.float().numpy()
    return result


@torch.no_grad()
def naive_greedy_decode(model: Transformer, src: torch.Tensor, max_steps: int) -> list[int]:
    """The seed tutorial's decoder loop, kept as the baseline for the benchmark and tests:
    no cache, the whole prefix goes through the decoder again at every step, with explicit
    attention. ``src`` is (1, S), usually padded to a fixed length."""
    cfg = model.cfg
    src_mask = model.src_mask(src)
    memory, _ = model.encode(src, src_mask, need_weights=True)
    ys = torch.full((1, 1), cfg.tgt_sos_id, dtype=torch.long, device=src.device)
    out = []
    for _ in range(max_steps):
        dec = model.decode(ys, memory, src_mask, causal_mask(ys.shape[1], device=src.device)[None, None], need_weights=True)
        nxt = int(model.project(dec.hidden[:, -1]).argmax(dim=-1))
        out.append(nxt)
        if nxt == cfg.tgt_eos_id:
            break
        ys = torch.cat([ys, torch.tensor([[nxt]], device=src.device)], dim=1)
    return out
