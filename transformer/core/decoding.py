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

from transformer.core import stepping
from transformer.core.model import Transformer, causal_mask, select_cache_rows
from transformer.core.stepping import never_emitted  # noqa: F401  (re-exported: older imports)
from transformer.core.trace import StepView, Trace  # noqa: F401  (re-exported: older imports)


@dataclass
class SentenceRecord:
    """What :func:`greedy_decode` recorded for one sentence of the batch (``need_trace``),
    cut to its own T emitted steps and S real source tokens (padding dropped)."""

    self_attn: np.ndarray  # (L, H, T, T)
    cross_attn: np.ndarray  # (L, H, T, S)
    encoder_attn: np.ndarray  # (L, H, S, S)
    topk_ids: np.ndarray  # (T, k)
    topk_probs: np.ndarray  # (T, k)
    lens_ids: np.ndarray | None  # (T, L_dec, LENS_K): logit lens, see greedy_decode (None: left out)
    lens_probs: np.ndarray | None  # (T, L_dec, LENS_K)


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
    tgt_lang: str | None = None,
    logit_lens: bool = True,
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
    ``tgt_lang``: a multilingual model's target language (default the config's); its token
    is forced at step 0 (``stepping.forced_start``) before ``forced_prefix`` goes on.
    ``logit_lens=False`` leaves the lens out of the trace (its records' lens arrays are None):
    over a large vocabulary it is a third of the trace's time (every layer's output at every
    step projected onto 256k tokens at NLLB-200's size); :func:`logit_lens_of` computes it later.
    """
    cfg = model.cfg
    forced_prefix = _check_forced_prefix(cfg, forced_prefix, src.shape[0])
    forced_prefix = stepping.with_forced_start(cfg, forced_prefix, tgt_lang)
    limits = _step_limits(model, src, max_steps, len(forced_prefix))
    src_mask, memory, enc_w = stepping.encode(model, src, need_weights=need_trace, head_mask=head_mask)
    recorder = _StepRecorder(top_k, logit_lens) if need_trace else None
    out = _decode_steps(model, _Rows.start(cfg, memory, src_mask, limits), forced_prefix, head_mask, recorder)
    result = GreedyResult(ids=_emitted_ids(out, cfg))
    if recorder is not None:
        src_lens = (src != cfg.src_pad_id).sum(dim=1).tolist()
        result.records = recorder.sentence_records(model, result.ids, src_lens, enc_w)
    return result


def _check_forced_prefix(cfg, forced_prefix: list[int] | None, batch: int) -> list[int]:
    """The forced prefix as a list (empty for none); a bad one raises ``ValueError``."""
    if forced_prefix and batch != 1:
        raise ValueError("forced_prefix works on one sentence at a time")
    forced_prefix = list(forced_prefix or [])
    if cfg.tgt_pad_id in forced_prefix:
        raise ValueError("a forced prefix cannot contain the [PAD] token")
    if len(forced_prefix) > cfg.max_positions:
        raise ValueError(f"forced prefix of {len(forced_prefix)} tokens exceeds max_positions={cfg.max_positions}")
    return forced_prefix


def _step_limits(model: Transformer, src: torch.Tensor, max_steps: int | None, n_forced: int) -> torch.Tensor:
    """Steps allowed per row (B,): ``max_steps`` or the row's own :func:`max_new_tokens`,
    and never fewer than the forced prefix needs."""
    cfg = model.cfg
    if max_steps is None:
        limits = max_new_tokens(model, (src != cfg.src_pad_id).sum(dim=1))  # (B,)
    else:
        limits = torch.full((src.shape[0],), min(max_steps, cfg.max_positions), device=src.device)
    return limits.clamp(min=n_forced)


@dataclass
class _Rows:
    """The rows still decoding, with everything indexed by row: the batch position each row
    belongs to, its last output token, step limit and finished flag, and its slices of the
    encoder memory, source mask and KV cache."""

    position: torch.Tensor  # (R,) batch position of each row
    last: torch.Tensor  # (R, 1) the token each row reads next
    limits: torch.Tensor  # (R,)
    finished: torch.Tensor  # (R,) bool
    memory: torch.Tensor  # (R, S, D)
    src_mask: torch.Tensor  # (R, 1, 1, S)
    cache: list | None = None

    @classmethod
    def start(cls, cfg, memory, src_mask, limits) -> _Rows:
        """Every sentence of the batch, about to read the start token."""
        B, device = memory.shape[0], memory.device
        return cls(
            torch.arange(B, device=device),
            stepping.start_tokens(cfg, B, device),
            limits,
            torch.zeros(B, dtype=torch.bool, device=device),
            memory,
            src_mask,
        )

    def without_finished(self) -> _Rows:
        """The running rows only: a finished sentence leaves the batch."""
        keep = (~self.finished).nonzero().squeeze(1)  # (R',) running rows
        return _Rows(
            self.position[keep],
            self.last[keep],
            self.limits[keep],
            self.finished[keep],
            self.memory.index_select(0, keep),
            self.src_mask.index_select(0, keep),
            select_cache_rows(self.cache, keep),
        )


def _decode_steps(
    model: Transformer, rows: _Rows, forced_prefix: list[int], head_mask: dict | None, recorder: _StepRecorder | None
) -> torch.Tensor:
    """Decode step by step until every row has finished; returns (B, steps) output ids,
    [PAD] after a row's end.

    Without a trace, a sentence that has finished leaves the batch (its rows of the KV
    cache, memory and mask are dropped), so a batch costs its longest sentence's steps at
    the width of the sentences still running, not at full width. A trace keeps every row,
    since its per-step arrays are indexed by batch position (traced batches hold sentences
    of similar length anyway), and so does a head mask, which may be per row.
    """
    cfg = model.cfg
    tracing = recorder is not None
    shrink = not tracing and head_mask is None
    max_steps = int(rows.limits.max())
    out = torch.full((len(rows.position), max_steps), cfg.tgt_pad_id, dtype=torch.long, device=rows.last.device)
    for t in range(max_steps):
        dec, logits = stepping.step(
            model,
            rows.last,
            rows.memory,
            rows.src_mask,
            rows.cache,
            need_weights=tracing,
            head_mask=head_mask,
            need_hidden_states=tracing and recorder.lens,
        )  # logits: (R, V)
        rows.cache = dec.cache
        nxt = stepping.pick_at(cfg, logits, forced_prefix, t)
        if tracing:
            recorder.add(dec, logits)
        nxt = torch.where(rows.finished, torch.full_like(nxt, cfg.tgt_pad_id), nxt)
        out[rows.position, t] = nxt
        rows.finished = rows.finished | (nxt == cfg.tgt_eos_id) | (t + 1 >= rows.limits)
        rows.last = nxt[:, None]
        if bool(rows.finished.all()):
            return out[:, : t + 1]
        if shrink and bool(rows.finished.any()):
            rows = rows.without_finished()
    return out


def _emitted_ids(out: torch.Tensor, cfg) -> list[list[int]]:
    """Each row's ids up to and including its [EOS], without the [PAD] after its end."""
    ids = []
    for row in out.tolist():
        seq = []
        for tok in row:
            if tok == cfg.tgt_pad_id:
                break
            seq.append(tok)
            if tok == cfg.tgt_eos_id:
                break
        ids.append(seq)
    return ids


class _StepRecorder:
    """What a trace keeps of every decoding step, as batch rows (B, ...) per step."""

    def __init__(self, top_k: int, lens: bool = True) -> None:
        self.top_k = top_k
        self.lens = lens  # keep what the logit lens needs
        self.self_rows: list[torch.Tensor] = []  # per step (B, L, H, t+1)
        self.cross_rows: list[torch.Tensor] = []  # per step (B, L, H, S)
        self.top_ids: list[torch.Tensor] = []  # per step (B, top_k)
        self.top_probs: list[torch.Tensor] = []
        self.lens_ids: list[torch.Tensor] = []  # per step (B, LENS_K): the last layer's lens
        self.lens_probs: list[torch.Tensor] = []
        self.lens_hidden: list[torch.Tensor] = []  # per step (B, L - 1, D): the earlier layers' outputs

    def add(self, dec, logits: torch.Tensor) -> None:
        """Record one step from the decoder output ``dec`` and its logits (B, V)."""
        # one sorted top-k serves both the candidates (top_k) and the last layer's lens (LENS_K)
        p, i = logits.float().softmax(dim=-1).topk(min(max(self.top_k, LENS_K), logits.shape[-1]), dim=-1)
        self.top_ids.append(i[:, : self.top_k])  # (B, k)
        self.top_probs.append(p[:, : self.top_k])
        self.self_rows.append(torch.stack([w[:, :, 0] for w in dec.self_attn], dim=1))  # (B, L, H, t+1)
        self.cross_rows.append(torch.stack([w[:, :, 0] for w in dec.cross_attn], dim=1))  # (B, L, H, S)
        # logit lens: the last layer's row is exactly the logits above; the earlier layers'
        # outputs are kept and projected once all steps are done (see logit_lens), which reads
        # the (V, D) projection once instead of once per step and layer
        self.lens_ids.append(i[:, :LENS_K])  # (B, LENS_K)
        self.lens_probs.append(p[:, :LENS_K])
        if self.lens and len(dec.layer_hidden) > 1:
            self.lens_hidden.append(torch.stack([h[:, -1] for h in dec.layer_hidden[:-1]], dim=1))  # (B, L - 1, D)

    def logit_lens(self, model: Transformer) -> tuple[torch.Tensor, torch.Tensor] | tuple[None, None]:
        """Top ``LENS_K`` (ids, probs) of every decoder layer at every step, (B, steps, L, K):
        the earlier layers' outputs go through the final norm and the output projection in
        one matmul for every sentence and step; the last layer's are the recorded logits'.
        (None, None) when the lens is left out."""
        if not self.lens:
            return None, None
        last_ids, last_probs = torch.stack(self.lens_ids, dim=1), torch.stack(self.lens_probs, dim=1)  # (B, steps, K)
        if not self.lens_hidden:
            return last_ids[:, :, None], last_probs[:, :, None]  # (B, steps, 1, K)
        ei, ep = lens_top(model, torch.stack(self.lens_hidden, dim=1))  # (B, steps, L - 1, K)
        return torch.cat([ei, last_ids[:, :, None]], dim=2), torch.cat([ep, last_probs[:, :, None]], dim=2)

    def sentence_records(
        self, model: Transformer, ids: list[list[int]], src_lens: list[int], enc_w: list[torch.Tensor]
    ) -> list[SentenceRecord]:
        """Per-sentence arrays from the recorded batch rows. A forced [EOS] or [PAD] can end
        the ids before the recorded steps do: only the steps whose output is in ids are
        kept, so every array has T = len(ids[b]) rows."""
        n_steps = len(self.self_rows)
        L, H = self.self_rows[0].shape[1:3]
        encoder = torch.stack(enc_w, dim=1).float()  # (B, L, H, S, S)
        top_ids, top_probs = torch.stack(self.top_ids, dim=1), torch.stack(self.top_probs, dim=1)  # (B, steps, k)
        lens_ids, lens_probs = self.logit_lens(model)  # (B, steps, L, K)
        records = []
        for b, (row_ids, S) in enumerate(zip(ids, src_lens)):
            T = min(len(row_ids), n_steps)
            self_attn = torch.zeros(L, H, T, T)
            for t in range(T):
                self_attn[:, :, t, : t + 1] = self.self_rows[t][b]
            cross = (
                torch.stack([self.cross_rows[t][b, :, :, :S] for t in range(T)], dim=2)
                if T
                else torch.zeros(L, H, 0, S)
            )
            records.append(
                SentenceRecord(
                    self_attn=self_attn.numpy(),
                    cross_attn=cross.float().numpy(),  # (L, H, T, S)
                    encoder_attn=encoder[b, :, :, :S, :S].contiguous().numpy(),  # (L, H, S, S)
                    topk_ids=top_ids[b, :T].numpy(),
                    topk_probs=top_probs[b, :T].float().numpy(),
                    lens_ids=None if lens_ids is None else lens_ids[b, :T].numpy(),  # (T, L, LENS_K)
                    lens_probs=None if lens_probs is None else lens_probs[b, :T].float().numpy(),
                )
            )
        return records


def lens_top(model: Transformer, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The logit lens of decoder-layer outputs ``hidden`` (..., D): the top ``LENS_K`` (ids,
    probabilities) (..., K) of each, read through the final norm and the output projection."""
    logits = model.project(model.decoder_norm(hidden)).float()  # (..., V)
    # the top K of the softmax without writing it out: the top logits, normalised by the
    # log-sum-exp of all of them (the same probabilities, one pass over V fewer)
    top, ids = logits.topk(min(LENS_K, logits.shape[-1]), dim=-1)  # (..., K)
    return ids, (top - logits.logsumexp(dim=-1, keepdim=True)).exp()


@torch.no_grad()
def logit_lens_of(
    model: Transformer, src_ids: list[int], tgt_ids: list[int], head_mask: dict | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The logit lens of a decoded sentence, computed afterwards: (ids int64, probs float32),
    each (T, L_dec, LENS_K), what a trace made with ``logit_lens=True`` records. ``src_ids``:
    the framed source; ``tgt_ids``: the decoder inputs and the last output, ``start y1 ... yT``
    (a trace's ``tgt_ids``). One teacher-forced pass over the T steps gives every layer's output
    at each step (equal to the cached steps' up to float rounding), then :func:`lens_top` in one
    matmul, the last layer included. ``head_mask``: the one the sentence was decoded with."""
    cfg = model.cfg
    if len(tgt_ids) < 2 or tgt_ids[0] != stepping.start_id(cfg):
        raise ValueError("tgt_ids must be the decoder's start token and at least one output")
    src = stepping.source_batch(cfg, [list(src_ids)])  # (1, S)
    tgt_in = torch.tensor([list(tgt_ids)[:-1]], dtype=torch.long)  # (1, T)
    src_mask, memory, _ = stepping.encode(model, src, head_mask=head_mask)
    kw = dict(tgt_mask=model.tgt_mask(tgt_in), head_mask=head_mask, need_hidden_states=True)
    dec = stepping.run_decoder(model, tgt_in, memory, src_mask, **kw)
    ids, probs = lens_top(model, torch.stack(dec.layer_hidden, dim=2))  # (1, T, L, K)
    return ids[0].numpy(), probs[0].float().numpy()


@torch.no_grad()
def naive_greedy_decode(model: Transformer, src: torch.Tensor, max_steps: int) -> list[int]:
    """The textbook decoder loop, kept as the baseline for the benchmark and tests:
    no cache, the whole prefix goes through the decoder again at every step, with explicit
    attention. ``src`` is (1, S), usually padded to a fixed length."""
    cfg = model.cfg
    src_mask, memory, _ = stepping.encode(model, src, need_weights=True)
    ys = stepping.start_tokens(cfg, 1, src.device)
    forced = stepping.forced_start(cfg)
    out = []
    for t in range(max_steps):
        _, logits = stepping.step(
            model,
            ys,
            memory,
            src_mask,
            tgt_mask=causal_mask(ys.shape[1], device=src.device)[None, None],
            need_weights=True,
        )
        nxt = int(stepping.pick_at(cfg, logits, forced, t)[0])
        out.append(nxt)
        if nxt == cfg.tgt_eos_id:
            break
        ys = torch.cat([ys, torch.tensor([[nxt]], device=src.device)], dim=1)
    return out
