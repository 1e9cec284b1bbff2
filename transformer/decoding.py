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

from dataclasses import dataclass, field

import numpy as np
import torch

from .model import Transformer, causal_mask


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
) -> GreedyResult:
    """Greedy decoding of a padded batch ``src`` (B, S) with a KV cache.

    The encoder runs once; each decoder layer projects the encoder memory into
    cross-attention K/V once (on the first step) and its self-attention K/V grow by one
    position per step, passed explicitly through ``LayerCache``.

    ``forced_prefix`` (batch of one): output ids to emit at steps 0..m-1 instead of the
    argmax, after which decoding goes on greedily ("what if the model had said X?").
    ``need_trace`` (batch of one) records attention and top-k candidates at every step.
    """
    cfg = model.cfg
    B, S = src.shape
    if (need_trace or forced_prefix) and B != 1:
        raise ValueError("need_trace and forced_prefix work on one sentence at a time")
    forced_prefix = list(forced_prefix or [])
    if len(forced_prefix) > cfg.max_positions:
        raise ValueError(f"forced prefix of {len(forced_prefix)} tokens exceeds max_positions={cfg.max_positions}")
    if max_steps is None:
        limits = max_new_tokens(model, (src != cfg.src_pad_id).sum(dim=1))  # (B,)
    else:
        limits = torch.full((B,), min(max_steps, cfg.max_positions), device=src.device)
    limits = limits.clamp(min=len(forced_prefix))
    max_steps = int(limits.max())

    src_mask = model.src_mask(src)
    memory, enc_w = model.encode(src, src_mask, need_weights=need_trace)
    ys = torch.full((B, 1), cfg.tgt_sos_id, dtype=torch.long, device=src.device)
    finished = torch.zeros(B, dtype=torch.bool, device=src.device)
    cache = None
    out_ids: list[torch.Tensor] = []
    self_rows, cross_rows, tk_ids, tk_probs = [], [], [], []
    for t in range(max_steps):
        dec = model.decode(ys[:, -1:], memory, src_mask, cache=cache, need_weights=need_trace)
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
        T = len(self_rows)
        L, H = self_rows[0].shape[:2]
        self_attn = torch.zeros(L, H, T, T)
        for t, row in enumerate(self_rows):
            self_attn[:, :, t, : t + 1] = row
        result.self_attn = self_attn.numpy()
        result.cross_attn = torch.stack(cross_rows, dim=2).float().numpy()  # (L, H, T, S)
        result.encoder_attn = torch.stack([w[0] for w in enc_w]).float().numpy()  # (L, H, S, S)
        result.topk_ids = torch.stack(tk_ids).numpy()
        result.topk_probs = torch.stack(tk_probs).numpy()
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


@dataclass
class StepView:
    """Everything the viewer shows at step t: cheap slices of a :class:`Trace`."""

    t: int
    prefix_tokens: list[str]  # tgt_tokens[: t + 1], the decoder inputs so far
    query_token: str  # tgt_tokens[t]
    output_token: str  # tgt_tokens[t + 1]
    decoder_self_attn: np.ndarray  # (L, H, t + 1): row t over the prefix
    cross_attn: np.ndarray  # (L, H, S): row t over the source
    topk_tokens: list[str]
    topk_probs: np.ndarray  # (k,)


@dataclass
class Trace:
    """One sentence, fully decoded and recorded. See the module docstring for the layout."""

    src_text: str
    translation: str
    src_tokens: list[str]
    src_ids: list[int]
    tgt_tokens: list[str]
    tgt_ids: list[int]
    special_tokens: list[str]
    encoder_attn: np.ndarray
    decoder_self_attn: np.ndarray
    cross_attn: np.ndarray
    topk_ids: np.ndarray
    topk_tokens: list[list[str]]
    topk_probs: np.ndarray
    positional_encoding: np.ndarray  # (max_positions, d_model): the model's own buffer
    truncated: bool = False
    n_src_tokens_dropped: int = 0
    finished: bool = True  # ended on [EOS] (False: hit the step limit)
    forced_prefix: list[int] = field(default_factory=list)

    @property
    def steps(self) -> int:
        return len(self.tgt_tokens) - 1

    @property
    def n_layers(self) -> int:
        return int(self.encoder_attn.shape[0])

    @property
    def n_heads(self) -> int:
        return int(self.encoder_attn.shape[1])

    def src_special_mask(self) -> list[bool]:
        return [t in self.special_tokens for t in self.src_tokens]

    def tgt_special_mask(self) -> list[bool]:
        return [t in self.special_tokens for t in self.tgt_tokens]

    def step(self, t: int) -> StepView:
        if not 0 <= t < self.steps:
            raise IndexError(f"step {t} out of range 0..{self.steps - 1}")
        return StepView(
            t=t,
            prefix_tokens=self.tgt_tokens[: t + 1],
            query_token=self.tgt_tokens[t],
            output_token=self.tgt_tokens[t + 1],
            decoder_self_attn=self.decoder_self_attn[:, :, t, : t + 1],
            cross_attn=self.cross_attn[:, :, t, :],
            topk_tokens=self.topk_tokens[t],
            topk_probs=self.topk_probs[t],
        )

    def to_dict(self, pe_positions: int | None = None) -> dict:
        """JSON-ready dict (schema in README, "Trace JSON"). The PE table is cut to
        ``pe_positions`` rows (default: the source length) to keep downloads small."""
        n = len(self.src_tokens) if pe_positions is None else pe_positions

        def r(a: np.ndarray) -> list:
            return np.round(a.astype(np.float64), 5).tolist()

        return {
            "schema": "transformer-trace/1",
            "src_text": self.src_text,
            "translation": self.translation,
            "src_tokens": self.src_tokens,
            "src_ids": self.src_ids,
            "tgt_tokens": self.tgt_tokens,
            "tgt_ids": self.tgt_ids,
            "special_tokens": self.special_tokens,
            "truncated": self.truncated,
            "n_src_tokens_dropped": self.n_src_tokens_dropped,
            "finished": self.finished,
            "forced_prefix": self.forced_prefix,
            "layers": self.n_layers,
            "heads": self.n_heads,
            "encoder_attn": r(self.encoder_attn),
            "decoder_self_attn": r(self.decoder_self_attn),
            "cross_attn": r(self.cross_attn),
            "topk": [
                [{"token": tok, "id": int(i), "prob": round(float(p), 5)} for tok, i, p in zip(toks, ids, probs)]
                for toks, ids, probs in zip(self.topk_tokens, self.topk_ids, self.topk_probs)
            ],
            "positional_encoding": r(self.positional_encoding[:n]),
        }
