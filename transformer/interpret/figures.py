"""Plotly figures of a trace: the explorer's views for notebooks and papers, and the drawing
kit every analysis's figure is made with.

``figure(trace, view, layer, head, step, hide_specials)`` returns a
``plotly.graph_objects.Figure``. Why here and not in the explorer: people who work in
notebooks want a figure object to restyle, export (``write_html``, ``write_image``) and put
in a paper, without Gradio or a browser. Building one needs no network.

This module holds the trace's own views (attention, rollout, encoder rollout, positional
encoding, next-token candidates, and ``figure`` that picks one) and the shared kit: names and
colours (``ATTENTION_VIEWS``, ``AXES``, ``BAR``, ``HIGHLIGHT``, ``TEXT``, ...), ``frame``,
``quote``, ``head_name``, the rows and columns of a map (``Entry``, ``layout``), its numbers
(``attention_matrix``, ``analysis_matrix``), ``heatmap_figure`` and the argument checks
(``_whole``, ``_head``, ``_top``). Each analysis draws its own figure beside the analysis, from
this kit, importing plotly and this module only when a figure is asked for:
``contributions_figure``, ``shares_figure`` and ``value_norms_figure`` in
``transformer/interpret/contributions.py``, ``decoder_lens_figure`` in ``decoder_lens.py``,
``reference_figure`` in ``reference.py``, ``attribution_figure`` and ``patching_figure`` in
``attribution.py``, ``saliency_figure`` in ``saliency.py``, and value zeroing's ``figure`` in
``explorer/panels/value_zeroing.py``.

The views show what the explorer's browser viewer shows at the same settings, and each
function below names the browser code it mirrors (``explorer/web/attention.js``,
``heatmap.js``, ``charts.js``, ``viewer.js``): the same matrix, labels, masking and colour
scales. Rows are queries, columns keys. At step N (1-based, as in the app) the rows of
steps after N are "not generated yet" (their cells are gaps in the weights and painted
light grey by their own trace), decoder keys after a query are masked (grey), and decoder
keys after step N are labelled "(future)". Hiding specials drops their columns (and the
encoder's rows) without renormalising, as the app does. Counting is 1-based throughout:
layer 1..L, head ``"mean"``, ``"max"`` or 1..H, step 1..T.

Weights come from the trace at full precision (the browser reads the same numbers
quantised to one byte per weight; tests check the two agree within that step).

Each heatmap's traces are named: ``"weight"`` (the values; ``z`` has ``None`` wherever the
app shows no weight), ``"masked"`` and ``"not generated yet"`` (``z`` is 1 on those cells),
so ``fig.data`` can be read back as numbers. Axes are numeric (``x`` = 0..C-1, ``y`` =
0..R-1) with the token labels as tick text, because a sentence can repeat a token and
plotly merges equal category names. ``fig.layout.meta`` records the settings.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

# Names and colours as in explorer/web (attention.js VIEWS/AXES, canvas.js, viewer.js titles)
ATTENTION_VIEWS = {"cross": "Cross-attention", "decoder": "Decoder self-attention", "encoder": "Encoder self-attention"}
AXES = {  # (rows, columns)
    "encoder": ("query: source token", "key: source token"),
    "decoder": ("query: decoding step", "key: decoder input token"),
    "cross": ("query: decoding step", "key: source token"),
    "rollout": ("target step", "source token"),
    "encoder_rollout": ("top-layer source position", "flows from source token"),
}
ROLLOUT_TITLE = "Source relevance of each step: Chefer et al. 2021, attention-only rules (all layers, mean of heads)"
ENC_ROLLOUT_TITLE = "Encoder rollout: Abnar & Zuidema 2020 (0.5·A + 0.5·I, mean of heads, through all layers)"
VIEWS = (*ATTENTION_VIEWS, "positional", "candidates", "rollout", "encoder_rollout")
FUTURE_LABEL = "(future)"  # a decoder input not written yet (attention.js FUTURE_LABEL): a word, not a full stop

BLUES = [(247, 251, 255), (198, 219, 239), (107, 174, 214), (33, 113, 181), (8, 48, 107)]
RDBU = [(178, 24, 43), (239, 138, 98), (247, 247, 247), (103, 169, 207), (33, 102, 172)]
MASKED, FUTURE, HIGHLIGHT, TEXT, MUTED, BAR = "#d9d9d9", "#f1f1f1", "#e4572e", "#222", "#5f5f5f", "#4c78a8"
FONT = dict(family="DejaVu Sans, system-ui, sans-serif", size=11, color=TEXT)


def frame(title: str) -> dict:
    """The layout every analysis figure shares: its title, the project's font, white paper."""
    white = "#fff"
    return {"title": {"text": title, "font": {"size": 13}}, "font": FONT, "plot_bgcolor": white, "paper_bgcolor": white}


def colorscale(stops) -> list:
    """Evenly spaced RGB stops -> a plotly colorscale (the browser's lookup tables use the same)."""
    return [[i / (len(stops) - 1), f"rgb{tuple(s)}"] for i, s in enumerate(stops)]


def quote(tok: str) -> str:
    return f"“{tok}”"


def head_name(head) -> str:
    return "mean over heads" if head == "mean" else "max over heads" if head == "max" else f"head {head}"


# --- rows and columns (attention.js layout) ------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One row or column of a map: ``index`` into the trace's array, its ``label`` and
    hover ``tip``; a ``current`` row is the step shown, a ``future`` row not generated yet."""

    index: int
    label: str
    tip: str
    current: bool = False
    future: bool = False


def layout(
    view: str,
    step: int,
    src_tokens: list[str],
    tgt_tokens: list[str],
    special_tokens: list[str],
    hide_specials: bool = False,
) -> tuple[list[Entry], list[Entry], bool]:
    """Rows, columns and whether the view is causal, as ``layout()`` in attention.js (its
    full labels, not the mosaic's compact ones). ``view`` is an attention view or
    ``"rollout"`` (laid out as cross); ``step`` is 1-based."""
    t, steps = step - 1, len(tgt_tokens) - 1
    specials = set(special_tokens)

    def keep(tokens):
        return [i for i, tok in enumerate(tokens) if not (hide_specials and tok in specials)]

    def src_col(i):
        return Entry(i, src_tokens[i], f"source token {i + 1} {quote(src_tokens[i])}")

    if view in ("encoder", "encoder_rollout"):
        idx = keep(src_tokens)
        return [src_col(i) for i in idx], [src_col(i) for i in idx], False
    tgt = tgt_tokens
    rows = [
        Entry(
            i,
            f"{i + 1}: {tgt[i]} → {tgt[i + 1]}",
            f"step {i + 1} (reads {quote(tgt[i])}, emits {quote(tgt[i + 1])})",
            current=i == t,
        )
        if i <= t
        else Entry(i, f"{i + 1}: not generated yet", f"step {i + 1}", future=True)
        for i in range(steps)
    ]
    if view != "decoder":
        return rows, [src_col(i) for i in keep(src_tokens)], False
    # decoder self-attention: keys are the decoder inputs; later inputs are not known yet at this step
    cols = [
        Entry(j, tgt[j], f"decoder input {j + 1} {quote(tgt[j])}")
        if j <= t
        else Entry(j, FUTURE_LABEL, f"decoder input {j + 1} (not generated yet)")
        for j in keep(tgt[:steps])
    ]
    return rows, cols, True


# --- the numbers (attention.js attentionMatrix / analysisMatrix) ----------------------------


def attention_matrix(
    weights: np.ndarray, layer: int, head, rows: list[Entry], cols: list[Entry], causal: bool
) -> np.ndarray:
    """The shown rows x cols of ``weights`` (L, H, Q, K) at ``layer`` (0-based) and ``head``
    (0-based index, ``"mean"`` or ``"max"``), float64. NaN marks masked cells (a causal key
    after its query), -inf rows not generated yet: the browser's sentinels."""
    a = np.asarray(weights[layer], dtype=np.float64)  # (H, Q, K)
    a = a.mean(axis=0) if head == "mean" else a.max(axis=0) if head == "max" else a[head]  # (Q, K)
    return _select(a, rows, cols, causal)


def analysis_matrix(values: np.ndarray, rows: list[Entry], cols: list[Entry]) -> np.ndarray:
    """Rows x cols of a (Q, K) analysis matrix (rollout), rows not generated yet -inf."""
    return _select(np.asarray(values, dtype=np.float64), rows, cols, False)


def _select(a: np.ndarray, rows: list[Entry], cols: list[Entry], causal: bool) -> np.ndarray:
    r = np.array([e.index for e in rows], dtype=np.int64)
    c = np.array([e.index for e in cols], dtype=np.int64)
    out = a[np.ix_(r, c)] if len(r) and len(c) else np.zeros((len(r), len(c)))
    if causal:
        out[c[None, :] > r[:, None]] = np.nan
    out[[i for i, e in enumerate(rows) if e.future]] = -np.inf
    return out


# --- figures ---------------------------------------------------------------------------------


def _cell_size(n: int) -> int:
    """heatmap.js cellSize: big cells for short sentences, small for long ones."""
    return 26 if n <= 16 else 20 if n <= 32 else 14 if n <= 64 else 9


def _gaps(m: np.ndarray, where: np.ndarray | None = None) -> list[list]:
    """A matrix as nested lists for plotly, ``None`` where nothing is drawn (plotly leaves
    those cells as gaps); with ``where``, 1 on those cells and ``None`` elsewhere."""
    if where is not None:
        return [[1 if w else None for w in row] for row in where.tolist()]
    return [[v if np.isfinite(v) else None for v in row] for row in m.tolist()]


def _mark_rows(fig: go.Figure, rows: list[Entry], R: int, C: int) -> None:
    """Frame the current row, and say where the rows not generated yet begin."""
    cur = next((i for i, e in enumerate(rows) if e.current), None)
    if cur is not None:
        fig.add_shape(type="rect", x0=-0.5, x1=C - 0.5, y0=cur - 0.5, y1=cur + 0.5, line=dict(color=HIGHLIGHT, width=2))
    first = next((i for i, e in enumerate(rows) if e.future), None)
    if first is not None and C:
        fig.add_annotation(
            x=(C - 1) / 2, y=(first + R - 1) / 2, text="not generated yet", showarrow=False, font=dict(color=MUTED)
        )


def _lay_out(
    fig: go.Figure, rows: list[Entry], cols: list[Entry], *, title: str, x_title: str, y_title: str, meta: dict | None
) -> None:
    """Title, size (cells scale with the sentence) and the token labels on both axes."""
    R, C = len(rows), len(cols)
    x, y = list(range(C)), list(range(R))
    cell = _cell_size(max(R, C))
    fig.update_layout(
        title=dict(text=title, font=dict(size=13)),
        font=FONT,
        plot_bgcolor="#fff",
        paper_bgcolor="#fff",
        meta=meta or {},
        width=max(420, C * cell + 320),
        height=max(320, R * cell + 260),
        xaxis=dict(
            title=dict(text=x_title),
            tickmode="array",
            tickvals=x,
            ticktext=[e.label for e in cols],
            tickangle=-90,
            showgrid=False,
            zeroline=False,
            constrain="domain",
        ),
        yaxis=dict(
            title=dict(text=y_title),
            tickmode="array",
            tickvals=y,
            ticktext=[e.label for e in rows],
            autorange="reversed",
            showgrid=False,
            zeroline=False,
            scaleanchor="x",
            constrain="domain",
        ),
    )


def heatmap_figure(
    matrix: np.ndarray,
    rows: list[Entry],
    cols: list[Entry],
    *,
    title: str,
    x_title: str,
    y_title: str,
    tips: list[list[str]],
    hi: float = 1.0,
    scale_title: str = "weight",
    meta: dict | None = None,
) -> go.Figure:
    """A (rows x cols) map as heatmap.js draws it: Blues over [0, hi], masked cells (NaN)
    grey, rows not generated yet (-inf) light grey with a note, the current row framed.
    ``title`` is the app's caption cut into lines (``<br>``): plotly titles do not wrap."""
    R, C = matrix.shape
    masked, future = np.isnan(matrix), np.isneginf(matrix)
    x, y = list(range(C)), list(range(R))
    common = dict(x=x, y=y, xgap=1, ygap=1)
    fig = go.Figure(
        go.Heatmap(
            z=_gaps(matrix),
            name="weight",
            zmin=0.0,
            zmax=hi,
            colorscale=colorscale(BLUES),
            colorbar=dict(title=dict(text=scale_title)),
            text=tips,
            hovertemplate="%{text}<extra></extra>",
            **common,
        )
    )
    for name, where, colour in (("masked", masked, MASKED), ("not generated yet", future, FUTURE)):
        if where.any():
            fig.add_trace(
                go.Heatmap(
                    z=_gaps(matrix, where),
                    name=name,
                    zmin=0,
                    zmax=1,
                    showscale=False,
                    colorscale=[[0, colour], [1, colour]],
                    hoverinfo="skip",
                    **common,
                )
            )
    _mark_rows(fig, rows, R, C)
    _lay_out(fig, rows, cols, title=title, x_title=x_title, y_title=y_title, meta=meta)
    return fig


def _cell_tips(matrix: np.ndarray, rows: list[Entry], cols: list[Entry], step: int, where: str) -> list[list[str]]:
    """Hover text of each cell, as viewer.js cellTip."""
    out = []
    for r, row in enumerate(rows):
        if row.future:
            out.append([f"{row.tip} is not generated yet (now at step {step})"] * len(cols))
            continue
        line = []
        for c, col in enumerate(cols):
            v = matrix[r, c]
            what = "masked: a decoder position cannot attend to later ones" if np.isnan(v) else f"weight: {v:.3f}"
            line.append("<br>".join([f"query: {row.tip}", f"key: {col.tip}", what, where]))
        out.append(line)
    return out


def attention_figure(
    weights: np.ndarray,
    view: str,
    layer: int,
    head,
    step: int,
    src_tokens: list[str],
    tgt_tokens: list[str],
    special_tokens: list[str],
    hide_specials: bool = False,
) -> go.Figure:
    """One attention view (viewer.js drawAttention). ``weights`` is the view's (L, H, Q, K)
    array; ``layer``, ``head`` (or ``"mean"``/``"max"``) and ``step`` are 1-based."""
    rows, cols, causal = layout(view, step, src_tokens, tgt_tokens, special_tokens, hide_specials)
    index = head if head in ("mean", "max") else head - 1
    matrix = attention_matrix(weights, layer - 1, index, rows, cols, causal)
    where = f"layer {layer}, {head_name(head)}"
    steps = len(tgt_tokens) - 1
    step_part = f" (the same at every step; now step {step})" if view == "encoder" else f" · step {step} of {steps}"
    return heatmap_figure(
        matrix,
        rows,
        cols,
        title=f"{ATTENTION_VIEWS[view]}<br>{where}{step_part}",
        x_title=AXES[view][1],
        y_title=AXES[view][0],
        tips=_cell_tips(matrix, rows, cols, step, where),
        meta=dict(view=view, layer=layer, head=head, step=step, hide_specials=hide_specials),
    )


def rollout_figure(
    rollout: np.ndarray,
    step: int,
    src_tokens: list[str],
    tgt_tokens: list[str],
    special_tokens: list[str],
    hide_specials: bool = False,
) -> go.Figure:
    """Source relevance of each generated step, (T, S) (viewer.js drawRollout); the colour
    scale tops at the sentence's maximum so stepping never rescales it."""
    rows, cols, _ = layout("rollout", step, src_tokens, tgt_tokens, special_tokens, hide_specials)
    matrix = analysis_matrix(rollout, rows, cols)
    tips = [
        [
            f"{r.tip} is not generated yet (now at step {step})"
            if r.future
            else f"{r.tip}<br>source: {c.tip}<br>relevance: {matrix[i, j]:.3f} (row sums to 1)<br>"
            "Chefer et al. 2021, attention-only rules"
            for j, c in enumerate(cols)
        ]
        for i, r in enumerate(rows)
    ]
    title = "<br>".join([*ROLLOUT_TITLE.split(": ", 1), f"step {step} of {len(tgt_tokens) - 1}"])
    return heatmap_figure(
        matrix,
        rows,
        cols,
        title=title,
        x_title=AXES["rollout"][1],
        y_title=AXES["rollout"][0],
        tips=tips,
        hi=_top(rollout),
        scale_title="relevance",
        meta=dict(view="rollout", step=step, hide_specials=hide_specials),
    )


def encoder_rollout_figure(
    encoder_rollout: np.ndarray, src_tokens: list[str], special_tokens: list[str], hide_specials: bool = False
) -> go.Figure:
    """Encoder rollout, (S, S) (viewer.js drawEncoderRollout)."""
    rows, cols, _ = layout("encoder_rollout", 1, src_tokens, [], special_tokens, hide_specials)
    matrix = analysis_matrix(encoder_rollout, rows, cols)
    tips = [
        [f"position: {r.tip}<br>from: {c.tip}<br>share: {matrix[i, j]:.3f} (row sums to 1)" for j, c in enumerate(cols)]
        for i, r in enumerate(rows)
    ]
    return heatmap_figure(
        matrix,
        rows,
        cols,
        title="<br>".join(ENC_ROLLOUT_TITLE.split(": ", 1)),
        x_title=AXES["encoder_rollout"][1],
        y_title=AXES["encoder_rollout"][0],
        tips=tips,
        hi=_top(encoder_rollout),
        scale_title="share",
        meta=dict(view="encoder_rollout", hide_specials=hide_specials),
    )


def _top(a: np.ndarray) -> float:
    """attention.js maxOf: the array's maximum, 1 if there is none above 0."""
    hi = float(np.max(a)) if np.size(a) else 0.0
    return hi if hi > 0 else 1.0


def position_label(i: int, src_tokens: list[str]) -> str:
    """charts.js posLabel: positions count from 0, as in the formula."""
    return f"{i}: {src_tokens[i]}" if i < len(src_tokens) else str(i)


def positional_figure(pe: np.ndarray, src_tokens: list[str], positions: int) -> go.Figure:
    """The model's positional-encoding table, first ``positions`` rows x d_model
    (charts.js drawPeHeat): red-white-blue over [-1, 1], even dimensions sin, odd cos."""
    z = np.asarray(pe[:positions], dtype=np.float64)  # (positions, d_model)
    n, d = z.shape
    labels = [position_label(i, src_tokens) for i in range(n)]
    tips = [
        [
            f"position {labels[r]}<br>dimension {c} ({'cos' if c % 2 else 'sin'})<br>value {z[r, c]:.3f}"
            for c in range(d)
        ]
        for r in range(n)
    ]
    fig = go.Figure(
        go.Heatmap(
            z=z.tolist(),
            x=list(range(d)),
            y=list(range(n)),
            name="positional encoding",
            zmin=-1.0,
            zmax=1.0,
            colorscale=colorscale(RDBU),
            text=tips,
            colorbar=dict(title=dict(text="value")),
            hovertemplate="%{text}<extra></extra>",
        )
    )
    fig.update_layout(
        title=dict(text=f"Positional encoding: the model's buffer, {n} positions × {d} dimensions", font=dict(size=13)),
        font=FONT,
        plot_bgcolor="#fff",
        paper_bgcolor="#fff",
        meta=dict(view="positional", positions=n),
        width=max(520, min(1200, 3 * d + 300)),
        height=max(300, min(16, max(3, 320 // n)) * n + 180),
        xaxis=dict(title=dict(text="dimension (even: sin, odd: cos)"), showgrid=False, zeroline=False),
        yaxis=dict(
            title=dict(text="position: source token"),
            tickmode="array",
            tickvals=list(range(n)),
            ticktext=labels,
            autorange="reversed",
            showgrid=False,
            zeroline=False,
        ),
    )
    return fig


def candidates_figure(tokens: list[str], probs: np.ndarray, emitted: str, step: int, steps: int) -> go.Figure:
    """The top-k next-token candidates at one step as horizontal bars, most likely on top,
    the emitted token orange (charts.js drawTopk)."""
    p = np.asarray(probs, dtype=np.float64)  # (k,)
    k = len(tokens)
    tips = [
        f"candidate {i + 1}: {tok}<br>p = {p[i]:.4f}" + ("<br>emitted at this step" if tok == emitted else "")
        for i, tok in enumerate(tokens)
    ]
    fig = go.Figure(
        go.Bar(
            x=p.tolist(),
            y=list(range(k)),
            orientation="h",
            name="probability",
            marker_color=[HIGHLIGHT if tok == emitted else BAR for tok in tokens],
            text=[f"{v:.2f}" for v in p],
            textposition="outside",
            cliponaxis=False,
            hovertext=tips,
            hovertemplate="%{hovertext}<extra></extra>",
        )
    )
    fig.update_layout(
        title=dict(
            text=f"Next-token candidates (top-k probabilities)<br>step {step} of {steps}, emitted {quote(emitted)}",
            font=dict(size=13),
        ),
        font=FONT,
        plot_bgcolor="#fff",
        paper_bgcolor="#fff",
        meta=dict(view="candidates", step=step),
        width=560,
        height=22 * k + 160,
        showlegend=False,
        xaxis=dict(title=dict(text="probability"), range=[0, 1.08], showgrid=True, gridcolor="#eee", zeroline=False),
        yaxis=dict(tickmode="array", tickvals=list(range(k)), ticktext=list(tokens), autorange="reversed"),
    )
    return fig


# --- the one entry point -------------------------------------------------------------------------


def _whole(name: str, value, lo: int, hi: int) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be {lo}..{hi}, got {value!r}")
    try:
        n = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be {lo}..{hi}, got {value!r}") from None
    if not lo <= n <= hi:
        raise ValueError(f"{name} must be {lo}..{hi}, got {n}")
    return n


def _head(head, H: int):
    if head in ("mean", "max"):
        return head
    if isinstance(head, str) and head.strip().isdigit():
        head = int(head)  # the app's links spell heads as "1".."H"
    if isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not 1 <= head <= H:
        raise ValueError(f"head must be 'mean', 'max' or 1..{H}, got {head!r}")
    return int(head)


def figure(
    trace,
    view: str = "cross",
    layer: int = 1,
    head="mean",
    step: int | None = None,
    hide_specials: bool = False,
    positions: int | None = None,
) -> go.Figure:
    """One view of ``trace`` (a :class:`~transformer.core.trace.Trace`) as a
    ``plotly.graph_objects.Figure``: the matrix, labels and masking the explorer shows at the
    same settings.

    Counting is 1-based as in the app. ``view``: ``"cross"`` (steps x source),
    ``"decoder"`` (steps x decoder inputs, keys after their query masked),
    ``"encoder"`` (source x source), ``"positional"`` (the model's positional
    encoding, ``positions`` rows x d_model; default: one per source token),
    ``"candidates"`` (top-k next tokens at ``step``), and when the trace has them
    ``"rollout"`` and ``"encoder_rollout"``. ``layer`` 1..L and ``head`` (``"mean"``,
    ``"max"`` or 1..H) apply to the attention views; ``step`` 1..T (default: the last,
    the whole translation): rows of later steps show as not generated yet.
    ``hide_specials`` drops the columns (and the encoder's rows) of special tokens
    such as [SOS] and [EOS], weights not renormalised. Bad settings raise ``ValueError``."""
    if view not in VIEWS:
        raise ValueError(f"view must be one of {', '.join(VIEWS)}; got {view!r}")
    steps = trace.steps
    step = steps if step is None else _whole("step", step, 1, steps)
    hide = bool(hide_specials)
    if view in ATTENTION_VIEWS:
        weights = {"encoder": trace.encoder_attn, "decoder": trace.decoder_self_attn, "cross": trace.cross_attn}[view]
        L, H = weights.shape[:2]  # (L, H, Q, K); encoder and decoder stacks may differ
        layer = _whole("layer", layer, 1, L)
        return attention_figure(
            weights, view, layer, _head(head, H), step, trace.src_tokens, trace.tgt_tokens, trace.special_tokens, hide
        )
    if view in ("rollout", "encoder_rollout"):
        value = getattr(trace, view, None)
        if value is None:
            raise ValueError(f"this trace has no {view} (it was built without the analyses)")
        if view == "rollout":
            return rollout_figure(value, step, trace.src_tokens, trace.tgt_tokens, trace.special_tokens, hide)
        return encoder_rollout_figure(value, trace.src_tokens, trace.special_tokens, hide)
    if view == "positional":
        pe = trace.positional_encoding
        n = len(trace.src_tokens) if positions is None else _whole("positions", positions, 1, pe.shape[0])
        return positional_figure(pe, trace.src_tokens, min(n, pe.shape[0]))
    t = step - 1
    return candidates_figure(list(trace.topk_tokens[t]), trace.topk_probs[t], trace.tgt_tokens[t + 1], step, steps)
