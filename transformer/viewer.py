"""What the app shows for a trace at step t: token chips, texts and figures.

Pure functions of (trace, step, view settings), so ``app.py`` only wires widgets to them
and every number on screen can be traced to ``decoding.Trace`` through this file.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from . import viz
from .decoding import Trace

ENCODER, DECODER, CROSS = "Encoder self-attention", "Decoder self-attention", "Cross-attention"
VIEWS = [ENCODER, DECODER, CROSS]


def head_choices(n_heads: int) -> list[tuple[str, str]]:
    return [("mean over heads", "mean"), ("max over heads", "max")] + [
        (f"head {h + 1}", str(h)) for h in range(n_heads)
    ]


def layer_choices(n_layers: int) -> list[tuple[str, int]]:
    return [(f"layer {i + 1}", i) for i in range(n_layers)]


def token_chips(tokens: list[str], special: list[str], current: int | None = None) -> list[tuple[str, str | None]]:
    """(text, category) pairs for ``gr.HighlightedText``: specials and the current token marked."""
    chips = []
    for i, tok in enumerate(tokens):
        if i == current:
            chips.append((tok, "current"))
        elif tok in special:
            chips.append((tok, "special"))
        else:
            chips.append((tok, None))
    return chips


@dataclass
class AttentionData:
    attn: np.ndarray  # (L, H, Q, K)
    q_tokens: list[str]
    k_tokens: list[str]
    q_title: str
    k_title: str
    causal: bool
    current_row: int | None
    q_special: list[bool]
    k_special: list[bool]


def step_query_labels(trace: Trace) -> list[str]:
    """Decoder query rows read input token t and emit token t+1: label both."""
    return [f"{trace.tgt_tokens[t]} → {trace.tgt_tokens[t + 1]}" for t in range(trace.steps)]


def attention_data(trace: Trace, view: str, t: int | None) -> AttentionData:
    src_special = trace.src_special_mask()
    tgt_special = trace.tgt_special_mask()
    if view == ENCODER:
        return AttentionData(trace.encoder_attn, trace.src_tokens, trace.src_tokens, "query: source token",
                             "key: source token", False, None, src_special, src_special)
    q_tokens = step_query_labels(trace)
    q_special = tgt_special[: trace.steps]
    if view == DECODER:
        return AttentionData(trace.decoder_self_attn, q_tokens, trace.tgt_tokens[: trace.steps],
                             "query: generated token (step)", "key: earlier generated token", True, t,
                             q_special, q_special)
    if view == CROSS:
        return AttentionData(trace.cross_attn, q_tokens, trace.src_tokens, "query: generated token (step)",
                             "key: source token", False, t, q_special, src_special)
    raise ValueError(f"unknown view {view!r}; pick one of {VIEWS}")


def _keep(special: list[bool], hide: bool) -> list[int]:
    return [i for i, s in enumerate(special) if not (hide and s)]


def attention_figure(trace: Trace, view: str, t: int, layer: int, head: str | int, hide_special: bool) -> go.Figure:
    d = attention_data(trace, view, t)
    layer = min(layer, d.attn.shape[0] - 1)
    head_name = {"mean": "mean over heads", "max": "max over heads"}.get(str(head)) or f"head {int(head) + 1}"
    title = f"{view}: layer {layer + 1}, {head_name}" + ("" if view == ENCODER else f" (step {t})")
    return viz.attention_figure(
        viz.reduce_heads(d.attn, layer, head if head in ("mean", "max") else int(head)),
        d.q_tokens, d.k_tokens, title=title, q_title=d.q_title, k_title=d.k_title, causal=d.causal,
        current_row=d.current_row, q_keep=_keep(d.q_special, hide_special), k_keep=_keep(d.k_special, hide_special),
    )


def grid_figure(trace: Trace, view: str, t: int, layer: int) -> go.Figure:
    """All layers x heads of ``view``; very long inputs fall back to the selected layer."""
    d = attention_data(trace, view, t)
    L = d.attn.shape[0]
    layer = min(layer, L - 1)
    layers = list(range(L)) if d.attn.size <= viz.GRID_CELL_BUDGET else [layer]
    return viz.heads_grid_figure(d.attn, d.q_tokens, d.k_tokens, title=f"All heads: {view}", causal=d.causal,
                                 current_row=d.current_row, layers=layers)


def step_text(trace: Trace, t: int) -> str:
    s = trace.step(t)
    p = float(s.topk_probs[0]) if s.topk_tokens and s.topk_tokens[0] == s.output_token else None
    forced = t < len(trace.forced_prefix)
    how = "forced (what-if)" if forced else (f"top candidate, p={p:.2f}" if p is not None else "chosen")
    return (f"**Step {t + 1} of {trace.steps}.** The decoder reads `{s.query_token}` at position {t} "
            f"and emits `{s.output_token}` ({how}).")


def topk_figure(trace: Trace, t: int) -> go.Figure:
    s = trace.step(t)
    return viz.topk_figure(s.topk_tokens, s.topk_probs, chosen=s.output_token)


def candidate_choices(trace: Trace, t: int) -> list[tuple[str, int]]:
    s = trace.step(t)
    return [(f"{tok}  (p={float(p):.2f})", k) for k, (tok, p) in enumerate(zip(s.topk_tokens, s.topk_probs))]


def whatif_prefix(trace: Trace, t: int, rank: int) -> list[int]:
    """The outputs of steps 0..t-1 as decoded, then candidate ``rank`` at step t."""
    return [*trace.tgt_ids[1 : t + 1], int(trace.topk_ids[t][rank])]


def pe_figures(trace: Trace, length: int, position: int | None) -> tuple[go.Figure, go.Figure, go.Figure]:
    pe = trace.positional_encoding[: max(1, length)]
    return (viz.pe_heatmap_figure(pe, trace.src_tokens, position),
            viz.pe_similarity_figure(pe, trace.src_tokens, position),
            viz.pe_curves_figure(pe, trace.src_tokens, selected=position))


def position_text(trace: Trace, position: int) -> str:
    if position < len(trace.src_tokens):
        return f"Position {position} holds source token `{trace.src_tokens[position]}`."
    return f"Position {position} is past the end of this sentence ({len(trace.src_tokens)} source tokens)."
