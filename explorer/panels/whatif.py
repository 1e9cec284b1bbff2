"""What if? Force another candidate at the viewer's step and decode the rest greedily.

The browser side is ``explorer/web/whatif.js``: it lists the candidates of the current
step (from the payload) and asks for one; this panel decodes the sentence again with that
candidate forced and keeps the result (per visitor, in ``gr.State``) until the visitor
opens it in the viewer or the sentence changes.
"""

from __future__ import annotations

import logging

import gradio as gr

from .. import texts
from ..errors import answer
from ..blocks import message, view_host
from .base import Asked, Panel

log = logging.getLogger("app.whatif")


class WhatIfPanel(Panel):
    view = "whatif"

    def build(self) -> None:
        with gr.Accordion("What if? Force another candidate at this step", open=False, elem_id="whatif-panel"):
            self.host = view_host(self.view, elem_id="whatif")
        self.alt_state = gr.State(None)

    def wire(self) -> None:
        app = self.app
        self.host.submit(self.decode, [app.trace_state], [self.alt_state, self.host], api_visibility="private")
        app.then_download(self.host.select(self.explore, [self.alt_state], app.outputs, api_visibility="private"))

    def sentence_outputs(self) -> list:
        return [self.alt_state]

    def sentence_changed(self, origin: str | None) -> dict:
        return {self.alt_state: None}  # a What-if of the old sentence cannot be explored any more

    # --- callbacks ------------------------------------------------------------------------
    def decode(self, trace, evt: Asked) -> dict:
        """Decode again with candidate ``evt.rank`` (0 = most likely) forced at ``evt.step``
        (1-based); the answer names the sentence it belongs to (``evt.sentenceId``)."""
        asked = evt.fields
        sentence = asked.get("sentenceId")

        def failed(msg: str) -> dict:
            return {self.alt_state: None, self.host: message({"sentenceId": sentence, "error": msg})}

        if trace is None:
            return failed("Translate a sentence first, then pick a candidate.")
        return answer(
            log, "what-if", lambda: self.forced(trace, asked.get("step"), asked.get("rank"), sentence), failed
        )

    def forced(self, trace, step, rank, sentence) -> dict:
        try:
            step = min(max(1, int(step)), trace.steps)
            rank = min(max(0, int(rank)), len(trace.topk_tokens[step - 1]) - 1)
        except (TypeError, ValueError):
            raise ValueError("Pick a step and a candidate first.") from None
        alt = self.app.tr.trace(trace.src_text, forced_prefix=texts.whatif_prefix(trace, step, rank))
        return {
            self.alt_state: alt,
            self.host: message(
                {
                    "sentenceId": sentence,
                    "step": step,
                    "rank": rank,
                    "token": texts.display_token(trace.topk_tokens[step - 1][rank]),
                    "original": trace.translation,
                    "translation": alt.translation,
                }
            ),
        }

    def explore(self, alt) -> dict:
        """Open the What-if version in the viewer."""
        if alt is None:
            return {self.app.notice: "⚠️ Compute a What-if translation first."}
        return self.app.show(alt, origin="whatif")
