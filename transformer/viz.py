"""Plotly figures for the viewer: pure functions from trace arrays to ``go.Figure``.

Conventions shared by every attention figure: rows are queries, columns are keys, the
colour scale is fixed to [0, 1] with a colour bar, axes are numeric with token tick
labels (so a token that occurs twice keeps two rows), hover shows query, key and weight.
Token text is HTML-escaped because plotly renders a subset of HTML in labels.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

COLORSCALE = "Blues"
MASK_COLOR = "#c8c8c8"
DIM_COLOR = "rgba(255,255,255,0.75)"
HIGHLIGHT = "#e4572e"
GRID_CELL_BUDGET = 20_000  # beyond this many cells the all-heads grid shows one layer


def token_label(i: int, tok: str) -> str:
    return f"{i}: {html.escape(tok)}"


def labels(tokens: list[str], idx: list[int]) -> list[str]:
    return [token_label(i, tokens[i]) for i in idx]


def reduce_heads(attn: np.ndarray, layer: int, head: int | str) -> np.ndarray:
    """(L, H, Q, K) -> (Q, K) for one head, or the mean/max over the heads of a layer."""
    per_layer = attn[layer]
    if head == "mean":
        return per_layer.mean(axis=0)
    if head == "max":
        return per_layer.max(axis=0)
    return per_layer[int(head)]


def _base_layout(title: str, x_title: str, y_title: str, n_rows: int, n_cols: int) -> dict:
    height = int(min(720, max(300, 120 + 26 * n_rows)))
    return dict(
        title=dict(text=title, x=0.01, font=dict(size=14)),
        xaxis=dict(title=dict(text=x_title), side="bottom", tickangle=-45, showgrid=False, zeroline=False),
        yaxis=dict(title=dict(text=y_title), autorange="reversed", showgrid=False, zeroline=False),
        height=height,
        margin=dict(l=10, r=10, t=50, b=10),
        plot_bgcolor="white",
    )


def attention_figure(
    weights: np.ndarray,
    q_tokens: list[str],
    k_tokens: list[str],
    *,
    title: str,
    q_title: str,
    k_title: str,
    causal: bool = False,
    current_row: int | None = None,
    q_keep: list[int] | None = None,
    k_keep: list[int] | None = None,
) -> go.Figure:
    """Heatmap of one (Q, K) attention matrix.

    ``causal``: cells with key index > query index are drawn as grey "masked" cells.
    ``current_row``: that query row is outlined and later rows are dimmed (not yet
    generated at this step). ``q_keep``/``k_keep``: original indices to show (hiding
    special tokens); labels keep the original positions.
    """
    Q, K = weights.shape
    q_keep = list(range(Q)) if q_keep is None else [i for i in q_keep if i < Q]
    k_keep = list(range(K)) if k_keep is None else [j for j in k_keep if j < K]
    z = weights[np.ix_(q_keep, k_keep)].astype(np.float64) if q_keep and k_keep else np.zeros((0, 0))
    qi, kj = np.array(q_keep)[:, None], np.array(k_keep)[None, :]
    masked = (kj > qi) if causal else np.zeros(z.shape, dtype=bool)
    z = np.where(masked, np.nan, np.round(z, 4))
    later = None
    if current_row is not None:
        later = np.array(q_keep) > current_row
        z[later, :] = np.nan
    q_lab, k_lab = labels(q_tokens, q_keep), labels(k_tokens, k_keep)
    custom = np.empty(z.shape + (2,), dtype=object)
    custom[..., 0] = np.array(q_lab, dtype=object)[:, None]
    custom[..., 1] = np.array(k_lab, dtype=object)[None, :]
    x, y = list(range(len(k_keep))), list(range(len(q_keep)))
    traces = [
        go.Heatmap(
            z=z, x=x, y=y, customdata=custom, zmin=0.0, zmax=1.0, colorscale=COLORSCALE,
            colorbar=dict(title=dict(text="weight"), thickness=12, len=0.9),
            hovertemplate=f"{q_title}: %{{customdata[0]}}<br>{k_title}: %{{customdata[1]}}"
            "<br>weight: %{z:.3f}<extra></extra>",
            xgap=1, ygap=1, hoverongaps=False,
        )
    ]
    if causal and masked.any():
        traces.append(
            go.Heatmap(
                z=np.where(masked, 1.0, np.nan), x=x, y=y, colorscale=[[0, MASK_COLOR], [1, MASK_COLOR]],
                showscale=False, text=np.where(masked, "×", ""), texttemplate="%{text}",
                textfont=dict(color="#777777", size=10), hovertemplate="masked: future position<extra></extra>",
                xgap=1, ygap=1, hoverongaps=False,
            )
        )
    fig = go.Figure(traces)
    layout = _base_layout(title, k_title, q_title, len(q_keep), len(k_keep))
    layout["xaxis"].update(tickmode="array", tickvals=x, ticktext=k_lab)
    layout["yaxis"].update(tickmode="array", tickvals=y, ticktext=q_lab)
    shapes, annotations = [], []
    if current_row is not None and current_row in q_keep:
        r = q_keep.index(current_row)
        shapes.append(dict(type="rect", x0=-0.5, x1=len(k_keep) - 0.5, y0=r - 0.5, y1=r + 0.5,
                           line=dict(color=HIGHLIGHT, width=2)))
    if later is not None and later.any():
        first = int(np.argmax(later))
        shapes.append(dict(type="rect", x0=-0.5, x1=len(k_keep) - 0.5, y0=first - 0.5, y1=len(q_keep) - 0.5,
                           fillcolor="rgba(230,230,230,0.6)", line=dict(width=0), layer="above"))
        annotations.append(dict(x=(len(k_keep) - 1) / 2, y=(first + len(q_keep) - 1) / 2, text="not generated yet",
                                showarrow=False, font=dict(color="#666666")))
    layout["shapes"], layout["annotations"] = shapes, annotations
    fig.update_layout(layout)
    return fig


def heads_grid_figure(
    attn: np.ndarray,
    q_tokens: list[str],
    k_tokens: list[str],
    *,
    title: str,
    causal: bool = False,
    current_row: int | None = None,
    layers: list[int] | None = None,
) -> go.Figure:
    """Every layer x head of one attention type as small maps in one mosaic heatmap.

    One trace (not L*H subplots) keeps the figure fast to build and small to send. Long
    inputs are capped to one layer so the payload stays small (``GRID_CELL_BUDGET``).
    """
    L, H, Q, K = attn.shape
    layers = list(range(L)) if layers is None else layers
    if len(layers) * H * Q * K > GRID_CELL_BUDGET and len(layers) > 1:
        layers = layers[:1]
    rows, cols = len(layers) * (Q + 1) - 1, H * (K + 1) - 1
    z = np.full((rows, cols), np.nan)
    mask = np.full((rows, cols), np.nan)
    custom = np.empty((rows, cols), dtype=object)
    q_lab, k_lab = labels(q_tokens, list(range(Q))), labels(k_tokens, list(range(K)))
    future = np.triu(np.ones((Q, K), dtype=bool), k=1) if causal else np.zeros((Q, K), dtype=bool)
    for a, layer in enumerate(layers):
        for h in range(H):
            r0, c0 = a * (Q + 1), h * (K + 1)
            block = np.round(attn[layer, h].astype(np.float64), 3)
            if current_row is not None:
                block[current_row + 1 :] = np.nan
            z[r0 : r0 + Q, c0 : c0 + K] = np.where(future, np.nan, block)
            mask[r0 : r0 + Q, c0 : c0 + K] = np.where(future, 1.0, np.nan)
            for i in range(Q):
                for j in range(K):
                    custom[r0 + i, c0 + j] = f"L{layer + 1} H{h + 1}<br>q {q_lab[i]}<br>k {k_lab[j]}"
    traces = [
        go.Heatmap(z=z, customdata=custom, zmin=0, zmax=1, colorscale=COLORSCALE, hoverongaps=False,
                   colorbar=dict(title=dict(text="weight"), thickness=12, len=0.9),
                   hovertemplate="%{customdata}<br>weight: %{z:.3f}<extra></extra>")
    ]
    if causal:
        traces.append(go.Heatmap(z=mask, colorscale=[[0, MASK_COLOR], [1, MASK_COLOR]], showscale=False,
                                 hoverinfo="skip", hoverongaps=False))
    fig = go.Figure(traces)
    shapes = []
    if current_row is not None:
        for a in range(len(layers)):
            y = a * (Q + 1) + current_row
            shapes.append(dict(type="rect", x0=-0.5, x1=cols - 0.5, y0=y - 0.5, y1=y + 0.5,
                               line=dict(color=HIGHLIGHT, width=1.5)))
    fig.update_layout(
        title=dict(text=title, x=0.01, font=dict(size=14)),
        xaxis=dict(tickmode="array", tickvals=[h * (K + 1) + (K - 1) / 2 for h in range(H)],
                   ticktext=[f"head {h + 1}" for h in range(H)], showgrid=False, zeroline=False),
        yaxis=dict(tickmode="array", tickvals=[a * (Q + 1) + (Q - 1) / 2 for a in range(len(layers))],
                   ticktext=[f"layer {layer + 1}" for layer in layers], autorange="reversed", showgrid=False,
                   zeroline=False, scaleanchor="x"),
        height=int(min(900, max(260, 80 + 12 * rows))),
        margin=dict(l=10, r=10, t=50, b=10),
        plot_bgcolor="white",
        shapes=shapes,
    )
    return fig


def topk_figure(tokens: list[str], probs: np.ndarray, chosen: str | None = None) -> go.Figure:
    """Horizontal bars of the top-k next-token candidates; the emitted one in orange."""
    lab = [html.escape(t) for t in tokens]
    colors = [HIGHLIGHT if t == chosen else "#4c78a8" for t in tokens]
    fig = go.Figure(
        go.Bar(x=[round(float(p), 4) for p in probs], y=list(range(len(lab))), orientation="h", marker_color=colors,
               customdata=lab, hovertemplate="%{customdata}: p=%{x:.3f}<extra></extra>",
               text=[f"{float(p):.2f}" for p in probs], textposition="outside")
    )
    fig.update_layout(
        title=dict(text="Next-token candidates (top-k probabilities)", x=0.01, font=dict(size=14)),
        xaxis=dict(range=[0, 1.08], title=dict(text="probability")),
        yaxis=dict(tickmode="array", tickvals=list(range(len(lab))), ticktext=lab, autorange="reversed"),
        height=max(260, 60 + 24 * len(lab)), margin=dict(l=10, r=10, t=50, b=10), plot_bgcolor="white",
    )
    return fig


def _position_labels(n: int, src_tokens: list[str]) -> list[str]:
    return [f"{i}: {html.escape(src_tokens[i])}" if i < len(src_tokens) else str(i) for i in range(n)]


def pe_heatmap_figure(pe: np.ndarray, src_tokens: list[str], selected: int | None = None) -> go.Figure:
    """The model's sinusoidal table, positions x dimensions, values in [-1, 1]."""
    n, d = pe.shape
    ylab = _position_labels(n, src_tokens)
    custom = np.repeat(np.array(ylab, dtype=object)[:, None], d, axis=1)
    fig = go.Figure(
        go.Heatmap(z=np.round(pe.astype(np.float64), 3), zmin=-1, zmax=1, colorscale="RdBu", zmid=0,
                   customdata=custom, colorbar=dict(title=dict(text="PE"), thickness=12),
                   hovertemplate="position %{customdata}<br>dimension %{x}<br>value %{z:.3f}<extra></extra>")
    )
    shapes = []
    if selected is not None and 0 <= selected < n:
        shapes.append(dict(type="rect", x0=-0.5, x1=d - 0.5, y0=selected - 0.5, y1=selected + 0.5,
                           line=dict(color=HIGHLIGHT, width=2)))
    fig.update_layout(
        title=dict(text=f"Positional encoding: the model's buffer, {n} positions × {d} dimensions", x=0.01,
                   font=dict(size=14)),
        xaxis=dict(title=dict(text="dimension (even: sin, odd: cos)")),
        yaxis=dict(title=dict(text="position: source token"), autorange="reversed", tickmode="array",
                   tickvals=list(range(n)), ticktext=ylab if n <= 40 else None),
        height=int(min(640, max(300, 100 + 14 * n))), margin=dict(l=10, r=10, t=50, b=10), shapes=shapes,
    )
    return fig


def pe_similarity_figure(pe: np.ndarray, src_tokens: list[str], selected: int | None = None) -> go.Figure:
    """PE·PEᵀ divided by d_model/2 (each row has squared norm d_model/2), i.e. the cosine
    similarity of positions: near positions look alike, far ones less."""
    n, d = pe.shape
    sim = np.round(pe.astype(np.float64) @ pe.T.astype(np.float64) / (d / 2), 3)
    lab = _position_labels(n, src_tokens)
    custom = np.empty((n, n, 2), dtype=object)
    custom[..., 0] = np.array(lab, dtype=object)[:, None]
    custom[..., 1] = np.array(lab, dtype=object)[None, :]
    fig = go.Figure(
        go.Heatmap(z=sim, zmin=-1, zmax=1, colorscale="RdBu", zmid=0, customdata=custom,
                   colorbar=dict(title=dict(text="cos"), thickness=12),
                   hovertemplate="position %{customdata[0]}<br>position %{customdata[1]}<br>"
                   "similarity %{z:.3f}<extra></extra>")
    )
    shapes = []
    if selected is not None and 0 <= selected < n:
        shapes.append(dict(type="rect", x0=-0.5, x1=n - 0.5, y0=selected - 0.5, y1=selected + 0.5,
                           line=dict(color=HIGHLIGHT, width=2)))
    ticks = dict(tickmode="array", tickvals=list(range(n)), ticktext=lab) if n <= 40 else {}
    fig.update_layout(
        title=dict(text="PE·PEᵀ / (d_model/2): how positions relate", x=0.01, font=dict(size=14)),
        xaxis=dict(title=dict(text="position"), **ticks),
        yaxis=dict(title=dict(text="position"), autorange="reversed", scaleanchor="x", **ticks),
        height=int(min(640, max(320, 120 + 14 * n))), margin=dict(l=10, r=10, t=50, b=10), shapes=shapes,
    )
    return fig


def pe_curves_figure(pe: np.ndarray, src_tokens: list[str], dims: list[int] | None = None,
                     selected: int | None = None) -> go.Figure:
    """A few dimensions as curves over position: sinusoids whose wavelength grows with
    the dimension index, from 2π up to 10000·2π."""
    n, d = pe.shape
    dims = dims or sorted({0, 1, 4, 10, d // 8, d // 4, d // 2} & set(range(d)))
    pos = list(range(n))
    lab = _position_labels(n, src_tokens)
    fig = go.Figure()
    for k in dims:
        fig.add_trace(go.Scatter(x=pos, y=np.round(pe[:, k].astype(np.float64), 4), mode="lines+markers",
                                 name=f"dim {k} ({'sin' if k % 2 == 0 else 'cos'})", customdata=lab,
                                 marker=dict(size=4),
                                 hovertemplate=f"dim {k}<br>position %{{customdata}}<br>%{{y:.3f}}<extra></extra>"))
    if selected is not None and 0 <= selected < n:
        fig.add_vline(x=selected, line_color=HIGHLIGHT, line_width=2,
                      annotation_text=lab[selected], annotation_position="top")
    fig.update_layout(
        title=dict(text="Dimensions of the encoding as curves over position", x=0.01, font=dict(size=14)),
        xaxis=dict(title=dict(text="position")), yaxis=dict(title=dict(text="value"), range=[-1.15, 1.15]),
        height=340, margin=dict(l=10, r=10, t=50, b=10), legend=dict(orientation="h"),
    )
    return fig
