"""The arithmetic of one attention row: how a single row of attention weights is made.

For one attention kind, layer, head and query position of a recorded
:class:`~transformer.core.trace.Trace`, :func:`attention_arithmetic` reruns the model on the
trace's own tokens and returns every number between the layer's input and the head's
output::

    q       = (W_q x_q)[head]                       (d_k,)    x_q: the sublayer's input
    k_j, v_j = (W_k x_j)[head], (W_v x_j)[head]     (d_k,)    for every key position j
    dot_j   = q · k_j
    score_j = dot_j / sqrt(d_k)
    w       = softmax(score with masked keys at -inf)
    out     = sum_j w_j v_j                         (d_k,)    this head's slice of the
                                                              concatenation W_o reads

``x_q`` is whatever the model's forward pass hands its attention module: LayerNorm(x) of
the residual stream for ``norm_placement="pre"``, the stream itself for ``"post"``. It is
read, together with the K/V and the mask, from the attention module's own call in a real
forward pass (a forward pre-hook set and removed inside the call), so both placements, the
masks and any future change to the blocks are followed without restating them here. q is
then made by the module's own ``q_proj`` and head split.

Indices are 0-based throughout:

- ``kind``: ``"encoder"`` (encoder self-attention), ``"decoder_self"`` (decoder masked
  self-attention; ``"decoder"`` is accepted as a synonym) or ``"cross"``;
- ``layer``: 0 .. n_layers - 1 of that stack; ``head``: 0 .. h - 1;
- ``query``: for ``"encoder"`` a source position (``trace.src_tokens[query]``); for the
  decoder kinds a decoding step t (0 .. ``trace.steps`` - 1), whose query token is the
  decoder input ``trace.tgt_tokens[t]`` (``[SOS]`` at step 0) and whose output is
  ``trace.tgt_tokens[t + 1]``;
- key j: a source position (``"encoder"``, ``"cross"``) or a decoder input position,
  ``trace.tgt_tokens[:steps]`` (``"decoder_self"``). Decoder self-attention lists *all*
  ``steps`` inputs, so the keys right of the step show up as masked ("future").

The decoder kinds are rerun teacher-forced on the trace's target (forced prefix and
generated tokens alike): the causal mask makes row t of that pass the computation of
decoding step t, equal up to float rounding to the cached step the trace recorded
(``max_abs_diff_vs_trace`` says by how much). Pure function: no printing, no files, no
state left on the model.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import torch

from transformer.core import stepping
from transformer.core.model import HEAD_MASK_KINDS, MultiHeadAttention, Transformer
from transformer.core.recording import Recording, recording
from transformer.core.trace import Trace

# what the row's arithmetic reads of the attention call (transformer.core.recording)
CALL_POINTS = ("query_in", "k", "v", "mask", "head_mask")

KIND_ALIASES = {"decoder": "decoder_self"}
TOP_K = 5  # contributions listed in ``AttentionRow.top``
SCHEMA = "attention-row/1"


@dataclass
class AttentionRow:
    """Every number of one attention row; n = number of keys, d_k = d_model / h.

    ``masked[j]`` is True when key j is blocked (the opposite of the model's "may attend"
    mask), and ``mask_reasons[j]`` says why: ``"future"`` (decoder self-attention, key
    after the query step), ``"padding"`` (a [PAD] key), or ``"future+padding"``;
    ``None`` for a visible key. Masked keys keep their real ``dots``/``scores`` (the
    product is still defined); the softmax gives them exactly 0.
    """

    kind: str  # "encoder" | "decoder_self" | "cross"
    layer: int
    head: int
    query: int  # source position (encoder) or decoding step (decoder kinds)
    d_k: int
    query_token: str
    output_token: str | None  # decoder kinds: the token step `query` emitted; encoder: None
    key_tokens: list[str]  # (n,)
    q: np.ndarray  # (d_k,)
    k: np.ndarray  # (n, d_k)
    v: np.ndarray  # (n, d_k)
    dots: np.ndarray  # (n,) q · k_j
    scores: np.ndarray  # (n,) q · k_j / sqrt(d_k)
    masked: np.ndarray  # (n,) bool, True = blocked
    mask_reasons: list[str | None]  # (n,)
    max_score: float  # largest visible score, subtracted before exp (softmax is shift-invariant)
    exp_scores: np.ndarray  # (n,) exp(score_j - max_score), 0 for masked keys
    sum_exp: float  # sum of exp_scores: weights = exp_scores / sum_exp
    weights: np.ndarray  # (n,) the attention row, as the model's softmax computes it
    out: np.ndarray  # (d_k,) sum_j weights_j v_j
    contributions: np.ndarray  # (n,) |weights_j v_j|, the length of each key's term in out
    top: list[dict]  # the TOP_K largest contributions: {"key", "token", "weight", "score", "contribution"}
    head_scale: float  # head_mask value of this head (1 unless knocked out); W_o reads head_scale * out
    max_abs_diff_vs_trace: float  # max |weights - the trace's recorded row|

    @property
    def scale(self) -> float:
        """sqrt(d_k), the divisor of the scores."""
        return math.sqrt(self.d_k)

    def to_dict(self, digits: int = 6) -> dict:
        """JSON-ready dict, floats rounded to ``digits`` significant digits (about 14 KB
        for d_k = 32 and 20 keys at the default 6, most of it the n × d_k keys and values)."""

        def r(a):
            return _round_sig(a, digits)

        return {
            "schema": SCHEMA,
            "kind": self.kind,
            "layer": self.layer,
            "head": self.head,
            "query": self.query,
            "d_k": self.d_k,
            "scale": r(self.scale),
            "query_token": self.query_token,
            "output_token": self.output_token,
            "key_tokens": list(self.key_tokens),
            "q": r(self.q),
            "k": r(self.k),
            "v": r(self.v),
            "dots": r(self.dots),
            "scores": r(self.scores),
            "masked": [bool(m) for m in self.masked],
            "mask_reasons": list(self.mask_reasons),
            "max_score": r(self.max_score),
            "exp_scores": r(self.exp_scores),
            "sum_exp": r(self.sum_exp),
            "weights": r(self.weights),
            "out": r(self.out),
            "contributions": r(self.contributions),
            "top": [{**t, **{f: r(t[f]) for f in ("weight", "score", "contribution")}} for t in self.top],
            "head_scale": r(self.head_scale),
            "max_abs_diff_vs_trace": float(f"{self.max_abs_diff_vs_trace:.3g}"),
        }

    def to_json(self, digits: int = 6) -> str:
        """:meth:`to_dict` as compact JSON text."""
        return json.dumps(self.to_dict(digits), ensure_ascii=False, separators=(",", ":"))


def _round_sig(a, digits: int):
    """A float or array as (nested lists of) Python floats with ``digits`` significant digits."""
    if np.ndim(a) == 0:
        return float(f"{float(a):.{digits}g}")
    return [_round_sig(x, digits) for x in np.asarray(a)]


# --------------------------------------------------------------------------- checks
def _model_of(translator_or_model) -> Transformer:
    model = getattr(translator_or_model, "model", translator_or_model)
    if not isinstance(model, Transformer):
        raise TypeError(f"expected a Translator or a Transformer, got {type(translator_or_model).__name__}")
    return model


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _check(model: Transformer, trace, kind, layer, head, query) -> str:
    """Validate the arguments; returns the canonical kind. Raises ValueError saying what is wrong."""
    cfg = model.cfg
    if not isinstance(trace, Trace):
        raise TypeError(f"trace must be a transformer.core.trace.Trace, got {type(trace).__name__}")
    if model.training:
        # dropout would make every number random; switching modes here would change a
        # model other callers may be using at the same time
        raise ValueError("the model is in training mode (dropout on): call model.eval() first")
    kind = KIND_ALIASES.get(kind, kind) if isinstance(kind, str) else kind
    if kind not in HEAD_MASK_KINDS:
        raise ValueError(f"unknown attention kind {kind!r}; expected one of encoder, decoder_self (or decoder), cross")
    for name, value in (("layer", layer), ("head", head), ("query", query)):
        if not _is_int(value):
            raise ValueError(f"{name} must be an integer (0-based), got {value!r}")
    n_layers = cfg.n_encoder_layers if kind == "encoder" else cfg.n_decoder_layers
    if not 0 <= layer < n_layers:
        raise ValueError(f"layer {layer} out of range 0..{n_layers - 1} for {kind} attention (0-based)")
    if not 0 <= head < cfg.h:
        raise ValueError(f"head {head} out of range 0..{cfg.h - 1} (0-based)")

    S, steps = len(trace.src_ids), trace.steps
    # the trace must come from a model of this shape, or its rows mean something else
    expected = {
        "encoder_attn": (cfg.n_encoder_layers, cfg.h, S, S),
        "decoder_self_attn": (cfg.n_decoder_layers, cfg.h, steps, steps),
        "cross_attn": (cfg.n_decoder_layers, cfg.h, steps, S),
    }
    for name, shape in expected.items():
        got = tuple(np.shape(getattr(trace, name)))
        if got != shape:
            raise ValueError(
                f"trace.{name} has shape {got}, expected {shape} for this model and the trace's "
                f"{S} source tokens and {steps} steps: was the trace made by another model?"
            )
    vocabs = (("src_ids", trace.src_ids, cfg.src_vocab_size), ("tgt_ids", trace.tgt_ids, cfg.tgt_vocab_size))
    for name, ids, vocab in vocabs:
        bad = [i for i in ids if not 0 <= int(i) < vocab]
        if bad:
            raise ValueError(f"trace.{name} holds ids {bad[:5]} outside this model's vocabulary of {vocab}")

    if kind == "encoder":
        if not 0 <= query < S:
            raise ValueError(f"query {query} is beyond the source: positions are 0..{S - 1} (0-based)")
    elif steps == 0:
        raise ValueError("the trace has no decoding steps, so no decoder query")
    elif not 0 <= query < steps:
        raise ValueError(f"query {query} is beyond the trace: its decoding steps are 0..{steps - 1} (0-based)")
    return kind


# --------------------------------------------------------------------------- capture
def _attention_module(model: Transformer, kind: str, layer: int) -> MultiHeadAttention:
    if kind == "encoder":
        return model.encoder_layers[layer].self_attn
    dec = model.decoder_layers[layer]
    return dec.self_attn if kind == "decoder_self" else dec.cross_attn


def _run(model: Transformer, trace: Trace, kind: str, layer: int, head_mask) -> dict:
    """One forward pass on the trace's tokens, as ``Transformer.forward`` makes it; returns
    what the attention of ``kind`` at ``layer`` read (its points ``query_in``, ``k``, ``v``,
    ``mask``, ``head_mask``: ``transformer.core.recording``)."""
    src = torch.tensor([trace.src_ids])  # (1, S)
    name = f"{kind}.{layer}"
    rec = Recording(keep=[f"{name}.{what}" for what in CALL_POINTS])
    with recording(rec):
        # need_weights: the explicit softmax path, the one the trace was recorded with
        src_mask, memory, _ = stepping.encode(model, src, need_weights=True, head_mask=head_mask)
        if kind != "encoder":
            tgt_in = torch.tensor([trace.tgt_ids[: trace.steps]])  # (1, T): [SOS] y1 ... y(T-1)
            stepping.decode_all(model, tgt_in, memory, src_mask, need_weights=True, head_mask=head_mask)
    if f"{name}.query_in" not in rec:
        raise RuntimeError(f"the {kind} attention of layer {layer} was not called by the forward pass")
    return {what: rec[f"{name}.{what}"] for what in CALL_POINTS}


def _reasons(kind: str, query: int, masked: np.ndarray, key_ids: list[int], pad_id: int) -> list[str | None]:
    out = []
    for j, m in enumerate(masked):
        if not m:
            out.append(None)
            continue
        why = []
        if kind == "decoder_self" and j > query:
            why.append("future")
        if key_ids[j] == pad_id:
            why.append("padding")
        out.append("+".join(why) or "masked")  # "masked": blocked by a mask this module does not know
    return out


# --------------------------------------------------------------------------- the row
def _softmax_row(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, keep: torch.Tensor) -> dict:
    """The model's formula on one row, in its order: (q @ k^T) / sqrt(d_k), blocked keys filled
    with the dtype's minimum so they get exactly 0 after softmax; each step's numbers, as numpy."""
    dots = q @ k.transpose(0, 1)  # (n,)
    scores = dots / math.sqrt(q.shape[-1])
    weights = scores.masked_fill(~keep, torch.finfo(scores.dtype).min).softmax(dim=-1)  # (n,)
    max_score = scores[keep].max()
    exp_scores = torch.where(keep, (scores - max_score).exp(), torch.zeros_like(scores))
    return {
        "dots": dots.numpy(),
        "scores": scores.numpy(),
        "max_score": float(max_score),
        "exp_scores": exp_scores.numpy(),
        "sum_exp": float(exp_scores.sum()),
        "weights": weights.numpy(),
        "out": (weights @ v).numpy(),  # (d_k,)
        "contributions": (weights[:, None] * v).norm(dim=-1).numpy(),  # (n,)
    }


def _top_keys(key_tokens: list[str], w: np.ndarray, scores: np.ndarray, c: np.ndarray, masked: np.ndarray) -> list:
    """The ``TOP_K`` keys that contribute most (by the size of weight x value), unmasked ones only."""
    order = [int(j) for j in np.argsort(-c, kind="stable") if not masked[j]][:TOP_K]
    return [
        {
            "key": j,
            "token": key_tokens[j],
            "weight": float(w[j]),
            "score": float(scores[j]),
            "contribution": float(c[j]),
        }
        for j in order
    ]


def _row_of_trace(trace: Trace, kind: str, layer: int, head: int, query: int):
    """What the trace holds for this row: the query token, the token it led to (None in the
    encoder), the key tokens and ids, and the recorded attention weights."""
    if kind == "encoder":
        return (
            trace.src_tokens[query],
            None,
            list(trace.src_tokens),
            list(trace.src_ids),
            trace.encoder_attn[layer, head, query],
        )
    query_token, output_token = trace.tgt_tokens[query], trace.tgt_tokens[query + 1]
    if kind == "decoder_self":
        return (
            query_token,
            output_token,
            list(trace.tgt_tokens[: trace.steps]),
            list(trace.tgt_ids[: trace.steps]),
            trace.decoder_self_attn[layer, head, query],
        )
    return (
        query_token,
        output_token,
        list(trace.src_tokens),
        list(trace.src_ids),
        trace.cross_attn[layer, head, query],
    )


@torch.no_grad()
def attention_arithmetic(
    translator_or_model, trace: Trace, kind: str, layer: int, head: int, query: int, head_mask: dict | None = None
) -> AttentionRow:
    """How row ``query`` of head ``head`` in layer ``layer`` of ``kind`` attention is made,
    with the model's own numbers (indices 0-based, see the module docstring).

    ``translator_or_model``: a :class:`~transformer.core.translator.Translator` or a
    :class:`~transformer.core.model.Transformer`, in eval mode. ``trace``: a trace this model
    made (``Translator.trace``). ``head_mask``: the one the trace was decoded with, if any
    (a knock-out trace); ``head_scale`` then reports this head's factor.

    Raises ``ValueError`` for an unknown kind, a layer/head/query out of range, a model
    in training mode, or a trace whose shapes do not fit the model.
    """
    model = _model_of(translator_or_model)
    kind = _check(model, trace, kind, layer, head, query)
    cfg = model.cfg
    attn = _attention_module(model, kind, layer)
    call = _run(model, trace, kind, layer, head_mask)

    # the query, made as the module makes it: its q_proj and head split of its own input
    q_all = attn._split_heads(attn.q_proj(call["query_in"]))  # (1, H, T, d_k)
    q = q_all[0, head, query]  # (d_k,)
    k, v = call["k"][0, head], call["v"][0, head]  # (n, d_k) each
    n = k.shape[0]
    mask = call["mask"]  # (n,) True = may attend
    keep = torch.ones(n, dtype=torch.bool) if mask is None else mask.expand(1, cfg.h, q_all.shape[2], n)[0, head, query]

    row = _softmax_row(q, k, v, keep)

    hm = call["head_mask"]
    head_scale = 1.0 if hm is None else float(hm[0, head])

    query_token, output_token, key_tokens, key_ids, recorded = _row_of_trace(trace, kind, layer, head, query)
    pad_id = cfg.tgt_pad_id if kind == "decoder_self" else cfg.src_pad_id

    masked = (~keep).numpy()
    return AttentionRow(
        kind=kind,
        layer=int(layer),
        head=int(head),
        query=int(query),
        d_k=attn.d_k,
        query_token=query_token,
        output_token=output_token,
        key_tokens=key_tokens,
        # copies: views would keep the forward pass's (1, H, T, d_k) tensors alive
        q=q.numpy().copy(),
        k=k.numpy().copy(),
        v=v.numpy().copy(),
        masked=masked,
        mask_reasons=_reasons(kind, query, masked, key_ids, pad_id),
        top=_top_keys(key_tokens, row["weights"], row["scores"], row["contributions"], masked),
        head_scale=head_scale,
        max_abs_diff_vs_trace=float(np.abs(row["weights"] - np.asarray(recorded, dtype=np.float32)).max()),
        **row,
    )
