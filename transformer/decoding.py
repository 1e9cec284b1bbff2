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

from .model import Transformer, causal_mask, select_cache_rows
from .trace import StepView, Trace  # noqa: F401  (re-exported: older imports)


@dataclass
class SentenceRecord:
    """What :func:`greedy_decode` recorded for one sentence of the batch (``need_trace``),
    cut to its own T emitted steps and S real source tokens (padding dropped)."""

    self_attn: np.ndarray  # (L, H, T, T)
    cross_attn: np.ndarray  # (L, H, T, S)
    encoder_attn: np.ndarray  # (L, H, S, S)
    topk_ids: np.ndarray  # (T, k)
    topk_probs: np.ndarray  # (T, k)
    lens_ids: np.ndarray  # (T, L_dec, LENS_K): logit lens, see greedy_decode
    lens_probs: np.ndarray  # (T, L_dec, LENS_K)


@dataclass
class GreedyResult:
    """Raw output of :func:`greedy_decode`; ids exclude the leading [SOS]."""

    ids: list[list[int]]
    records: list[SentenceRecord] | None = None  # need_trace: one per sentence


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
    ``need_trace`` records, for every sentence, attention and top-k candidates at every
    step, and the logit lens (nostalgebraist 2020): what each decoder layer's output would
    predict if it were the last, i.e. final norm then output projection, top ``LENS_K``.
    Each sentence's record is cut to its emitted ids (T = len(ids[b]) steps) and its real
    source tokens, so a sentence traced in a padded batch reads like one traced alone
    (equal up to float rounding: padded matmuls sum in another order). Batching is what
    lets a server trace many visitors' sentences for the price of a few.
    ``head_mask`` silences heads (see ``Transformer.layer_head_masks``), e.g. a knock-out.
    """
    cfg = model.cfg
    B, S = src.shape
    if forced_prefix and B != 1:
        raise ValueError("forced_prefix works on one sentence at a time")
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
    # Without a trace, a sentence that has finished leaves the batch (its rows of the KV
    # cache, memory and mask are dropped), so a batch costs its longest sentence's steps
    # at the width of the sentences still running, not at full width. A trace keeps every
    # row, since its per-step arrays are indexed by batch position (traced batches hold
    # sentences of similar length anyway), and so does a head mask, which may be per row.
    shrink = not need_trace and head_mask is None
    rows = torch.arange(B, device=src.device)  # batch position of each running row
    out = torch.full((B, max_steps), cfg.tgt_pad_id, dtype=torch.long, device=src.device)  # (B, T)
    n_steps = 0
    self_rows, cross_rows, tk_ids, tk_probs, lens_ids, lens_probs, lens_hidden = [], [], [], [], [], [], []
    for t in range(max_steps):
        dec = model.decode(ys[:, -1:], memory, src_mask, cache=cache, need_weights=need_trace,
                           head_mask=head_mask, need_hidden_states=need_trace)
        cache = dec.cache
        logits = model.project(dec.hidden[:, -1])  # (B, V)
        if t < len(forced_prefix):
            nxt = torch.full((len(rows),), forced_prefix[t], dtype=torch.long, device=src.device)
        else:
            nxt = logits.argmax(dim=-1)
        if need_trace:
            # one sorted top-k serves both the candidates (top_k) and the last layer's lens (LENS_K)
            p, i = logits.float().softmax(dim=-1).topk(min(max(top_k, LENS_K), logits.shape[-1]), dim=-1)
            tk_ids.append(i[:, :top_k])  # (B, k)
            tk_probs.append(p[:, :top_k])
            self_rows.append(torch.stack([w[:, :, 0] for w in dec.self_attn], dim=1))  # (B, L, H, t+1)
            cross_rows.append(torch.stack([w[:, :, 0] for w in dec.cross_attn], dim=1))  # (B, L, H, S)
            # logit lens: the last layer's row is exactly the logits above; the earlier
            # layers' outputs are kept and projected after the loop in one matmul, which reads
            # the (V, D) projection once instead of once per step and layer
            lens_ids.append(i[:, :LENS_K])  # (B, LENS_K)
            lens_probs.append(p[:, :LENS_K])
            if len(dec.layer_hidden) > 1:
                lens_hidden.append(torch.stack([h[:, -1] for h in dec.layer_hidden[:-1]], dim=1))  # (B, L - 1, D)
        nxt = torch.where(finished, torch.full_like(nxt, cfg.tgt_pad_id), nxt)
        out[rows, t] = nxt
        n_steps = t + 1
        finished = finished | (nxt == cfg.tgt_eos_id) | (t + 1 >= limits)
        ys = torch.cat([ys, nxt[:, None]], dim=1)
        if bool(finished.all()):
            break
        if shrink and bool(finished.any()):
            keep = (~finished).nonzero().squeeze(1)  # (B',) running rows
            rows, ys, limits, finished = rows[keep], ys[keep], limits[keep], finished[keep]
            memory, src_mask = memory.index_select(0, keep), src_mask.index_select(0, keep)
            cache = select_cache_rows(cache, keep)

    gen = out[:, :n_steps].tolist()  # (B, T)
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
        result.records = _records(model, ids, (src != cfg.src_pad_id).sum(dim=1).tolist(), enc_w, self_rows,
                                  cross_rows, tk_ids, tk_probs, lens_ids, lens_probs, lens_hidden)
    return result


def _records(model, ids, src_lens, enc_w, self_rows, cross_rows, tk_ids, tk_probs, lens_ids, lens_probs,
             lens_hidden) -> list[SentenceRecord]:
    """Per-sentence arrays from the per-step batch rows :func:`greedy_decode` kept. A
    forced [EOS] or [PAD] can end the ids before the recorded steps do: only the steps
    whose output is in ids are kept, so every array has T = len(ids[b]) rows."""
    n_steps = len(self_rows)
    L, H = self_rows[0].shape[1:3]
    encoder = torch.stack(enc_w, dim=1).float()  # (B, L, H, S, S)
    top_ids, top_probs = torch.stack(tk_ids, dim=1), torch.stack(tk_probs, dim=1)  # (B, steps, k)
    last_ids, last_probs = torch.stack(lens_ids, dim=1), torch.stack(lens_probs, dim=1)  # (B, steps, K)
    if lens_hidden:
        # the earlier layers' logit lens for every sentence and step in one matmul
        hidden = torch.stack(lens_hidden, dim=1)  # (B, steps, L - 1, D)
        early = model.project(model.decoder_norm(hidden)).float().softmax(dim=-1)  # (B, steps, L - 1, V)
        ep, ei = early.topk(last_ids.shape[-1], dim=-1)  # (B, steps, L - 1, K)
        all_ids = torch.cat([ei, last_ids[:, :, None]], dim=2)  # (B, steps, L, K)
        all_probs = torch.cat([ep, last_probs[:, :, None]], dim=2)
    else:
        all_ids, all_probs = last_ids[:, :, None], last_probs[:, :, None]  # (B, steps, 1, K)
    records = []
    for b, (row_ids, S) in enumerate(zip(ids, src_lens)):
        T = min(len(row_ids), n_steps)
        self_attn = torch.zeros(L, H, T, T)
        for t in range(T):
            self_attn[:, :, t, : t + 1] = self_rows[t][b]
        cross = torch.stack([cross_rows[t][b, :, :, :S] for t in range(T)], dim=2) if T else torch.zeros(L, H, 0, S)
        records.append(SentenceRecord(
            self_attn=self_attn.numpy(),
            cross_attn=cross.float().numpy(),  # (L, H, T, S)
            encoder_attn=encoder[b, :, :, :S, :S].contiguous().numpy(),  # (L, H, S, S)
            topk_ids=top_ids[b, :T].numpy(),
            topk_probs=top_probs[b, :T].float().numpy(),
            lens_ids=all_ids[b, :T].numpy(),  # (T, L, LENS_K)
            lens_probs=all_probs[b, :T].float().numpy(),
        ))
    return records


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
