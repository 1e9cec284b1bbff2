"""Value zeroing (Mohebbi et al., EACL 2023), the view: which tokens a step cannot do without.

The analysis is ``transformer.interpret.value_zeroing``: in one layer and one attention, token j's
value vectors are zeroed, the layer runs again, and the change of its output at each position is
token j's share there (rows sum to 1; rolled out through the layers). This module is the rest of
the view: the data the page draws, the figure a notebook shows, the endpoint and the panel. The
browser side is ``explorer/web/value-zeroing.js``.

- Page: the block's submit event ``{"action": "value_zeroing", "sentenceId", "key"}`` answers the
  sentence on screen once, every step and layer (:func:`view_data`); the page draws any step,
  kind and layer from it without asking again.
- API ``/value_zeroing`` (text, step): the greedy translation's value zeroing; ``step`` 1..T adds
  ``at`` (that step alone: its source and prefix shares per layer and rolled out), 0 leaves it out.
- Notebook: ``figure(value_zeroing(tr, trace), step, kind, layer)`` (plotly).
"""

from __future__ import annotations

import logging

import gradio as gr
import numpy as np

from transformer.interpret.value_zeroing import ValueZeroing, value_zeroing

from ..blocks import view_host
from ..serving import api_answer
from .arithmetic import count
from .base import Asked, Panel

log = logging.getLogger("app.value_zeroing")
DIGITS = 4  # shares drawn as colours and percentages: four decimals are plenty
KIND_TITLES = {
    "cross": ("cross-attention", "step (query)", "source token (zeroed)"),
    "decoder_self": ("decoder self-attention", "step (query)", "decoder input (zeroed)"),
    "encoder": ("encoder self-attention", "source token (query)", "source token (zeroed)"),
}


def view_data(vz: ValueZeroing) -> dict:
    """Everything the page draws: every kind per layer and rolled out (``cross_rollout``: each
    decoder layer's cross measurement carried back through the encoder's rollout)."""
    return vz.to_dict(DIGITS)


def at_step(vz: ValueZeroing, t: int) -> dict:
    """Step ``t`` (0-based) alone: its source and prefix shares, per layer and rolled out."""

    def r(a) -> list:
        return np.round(np.asarray(a, dtype=np.float64), DIGITS).tolist()

    return {
        "step": t + 1,
        "source": r(vz.cross[:, t]),  # (L_dec, S)
        "source_rollout": r(vz.cross_rollout[-1, t]),  # (S,)
        "prefix": r(vz.decoder_self[:, t, : t + 1]),  # (L_dec, t + 1)
        "prefix_rollout": r(vz.decoder_rollout[t, : t + 1]),
    }


def figure(vz: ValueZeroing, step: int = 1, kind: str = "cross", layer: int | None = None):
    """The view's map as a plotly figure: ``kind`` (cross, decoder_self, encoder) at ``layer``
    (1-based; None: rolled out), rows queries and columns the zeroed tokens, ``step`` (1-based)
    marked."""
    from transformer.interpret import figures as F

    if kind not in KIND_TITLES:
        raise ValueError(f"kind must be one of {', '.join(KIND_TITLES)}, got {kind!r}")
    rolled = {"cross": vz.cross_rollout[-1], "decoder_self": vz.decoder_rollout, "encoder": vz.encoder_rollout}
    m = rolled[kind] if layer is None else getattr(vz, kind)[count(layer, "layer", getattr(vz, kind).shape[0]) - 1]
    queries = vz.src_tokens if kind == "encoder" else vz.tgt_tokens
    keys = vz.tgt_tokens if kind == "decoder_self" else vz.src_tokens
    t = count(step, "step", len(vz.tgt_tokens)) - 1
    rows = [F.Entry(i, q, f"{q}", current=kind != "encoder" and i == t) for i, q in enumerate(queries)]
    cols = [F.Entry(j, k, f"{k}") for j, k in enumerate(keys)]
    tips = [
        [f"zeroing {k}: {m[i, j]:.1%} of the change at {q}" for j, k in enumerate(keys)] for i, q in enumerate(queries)
    ]
    name, y_title, x_title = KIND_TITLES[kind]
    where = "rolled out" if layer is None else f"layer {layer}"
    return F.heatmap_figure(
        np.asarray(m, dtype=np.float64),
        rows,
        cols,
        title=f"Value zeroing · {name}, {where}: each row's change shared among the zeroed tokens",
        x_title=x_title,
        y_title=y_title,
        tips=tips,
        hi=float(max(m.max(), 1e-9)),
        scale_title="share",
    )


class ValueZeroingPanel(Panel):
    """The section "Which tokens can the step not do without?" and ``/value_zeroing``."""

    view = "value_zeroing"

    def build(self) -> None:
        # closed: computed only for visitors who open it (a few layer runs per token)
        with gr.Accordion("Which tokens can it not do without? Value zeroing", open=False, elem_id="vz-panel"):
            self.host = view_host(self.view, elem_id="value-zeroing")

    def wire(self) -> None:
        self.host.submit(self.request, [self.app.trace_state], [self.host], api_visibility="private")
        gr.api(self.value_zeroing, api_name=self.app.api_name("value_zeroing"))

    def request(self, trace, evt: Asked) -> str:
        """The sentence on screen, every step and layer."""
        return self.analysis_request(trace, evt, ("value_zeroing",), log)

    def run(self, trace, action: str, asked: dict) -> dict:
        return view_data(value_zeroing(self.app.tr, trace))

    def data(self, text, step=0) -> dict:
        """The greedy translation of ``text``; ``step`` 1..T adds ``at``, 0 (or empty) leaves it out."""
        if text is not None and not isinstance(text, str):
            raise ValueError("text must be a string")
        trace = self.app.batcher.trace(self.app.check_text(text))
        vz = value_zeroing(self.app.tr, trace)
        out = {"text": trace.src_text, "translation": trace.translation, **view_data(vz)}
        if step not in (0, None, "", "0"):
            out["at"] = at_step(vz, count(step, "step", trace.steps) - 1)
        return out

    def value_zeroing(self, text: str, step: int = 0) -> dict:
        """``/value_zeroing``: see the module docstring."""
        return api_answer(log, "/value_zeroing", lambda: self.data(text, step))
