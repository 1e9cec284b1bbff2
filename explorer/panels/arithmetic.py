"""The arithmetic of one attention row: how the weights of one row of the heatmap are made.

For the attention view, layer, head and row the viewer shows, the browser view
``explorer/web/arithmetic.js`` asks for the model's own numbers (the query, each key's
q·k_j and q·k_j/√d_k, the mask, the softmax, the weighted sum of the values) and draws
them. This panel answers one small request per row with
:func:`transformer.interpret.arithmetic.attention_arithmetic`, on the trace of the sentence in the
viewer (the visitor's ``gr.State``). The view asks only while its section is open and
keeps every answer for the sentence, so stepping back to a row makes no request.

Request (the page counts from 1, like every number it shows)::

    {"sentenceId", "key", "view": "encoder" | "decoder" | "cross", "layer", "head",
     "step", "query"}

``query`` is the row: a source position for ``encoder``, a decoding step for the decoder
views (``step`` when it is missing). Answer: ``AttentionRow.to_dict()`` (0-based, as the
library gives it) plus the ``sentenceId`` and ``key`` it was asked with, or
``{"sentenceId", "key", "error"}`` with one plain sentence.
"""

from __future__ import annotations

import logging

import gradio as gr

from transformer.interpret.arithmetic import attention_arithmetic

from ..errors import answer
from ..blocks import message, view_host
from .base import Asked, Panel

log = logging.getLogger("app.arithmetic")
# the viewer's view names (web/attention.js VIEW_KIND) and the library's kinds
KINDS = {"encoder": "encoder", "decoder": "decoder_self", "cross": "cross"}
PICK_HEAD = "Mean and max over heads have no single row: pick one head to see its arithmetic."


def count(value, name: str, top: int) -> int:
    """A 1-based number of the page (an int, or its digits as text) in 1..top, else ValueError
    in the page's words."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"The {name} must be a number from 1 to {top}.")
    if not 1 <= value <= top:
        raise ValueError(f"There is no {name} {value} here: pick one from 1 to {top}.")
    return value


class ArithmeticPanel(Panel):
    view = "arithmetic"

    def build(self) -> None:
        # closed: the rows are computed only for visitors who open it
        with gr.Accordion(
            "The arithmetic of attention: how one row is made", open=False, elem_id="arithmetic-panel"
        ) as self.section:
            self.host = view_host(self.view, elem_id="arithmetic")

    def wire(self) -> None:
        # "multiple": a row asked while another is computing is queued, not dropped (each
        # request is its own row, and the page waits for every answer it asked for)
        self.host.submit(
            self.request, [self.app.trace_state], [self.host], api_visibility="private", trigger_mode="multiple"
        )

    # --- callbacks ------------------------------------------------------------------------
    def request(self, trace, evt: Asked) -> str:
        """One row of the sentence in the viewer (the module docstring gives the request);
        the answer names the sentence and the key it was asked with."""
        asked = evt.fields
        key = asked.get("key")
        head = {"sentenceId": asked.get("sentenceId"), "key": key if isinstance(key, str) and len(key) <= 64 else None}
        if trace is None:
            return message({**head, "error": "Translate a sentence first."})
        data = answer(log, "attention arithmetic", lambda: self.row(trace, asked), lambda msg: {"error": msg})
        return message({**head, **data})

    def row(self, trace, asked: dict) -> dict:
        """The arithmetic of the asked row (1-based request), as the library's dict (0-based)."""
        cfg = self.app.tr.cfg
        view = asked.get("view")
        if view not in KINDS:
            raise ValueError(
                "Pick an attention view (encoder, decoder self-attention or cross-attention): "
                "rollout combines every layer and has no single row."
            )
        kind = KINDS[view]
        if asked.get("head") in ("mean", "max"):
            raise ValueError(PICK_HEAD)
        layers = cfg.n_encoder_layers if kind == "encoder" else cfg.n_decoder_layers
        layer = count(asked.get("layer"), "layer", layers)
        head = count(asked.get("head"), "head", cfg.h)
        query = asked.get("query", asked.get("step"))
        if kind == "encoder":
            query = count(query, "source token", len(trace.src_tokens))
        else:
            query = count(query, "step", trace.steps)
        return attention_arithmetic(self.app.tr, trace, kind, layer - 1, head - 1, query - 1).to_dict()
