"""Minimal pairs: the viewer's sentence (A) beside a second one (B) that differs in a word.

The browser view ``explorer/web/pairs.js`` asks for B only when the visitor presses
"Compare": this panel traces B once, through the app's :class:`~explorer.serving.TraceBatcher`
(so it shares the model with Translate), and sends it in the viewer's own payload format
(:func:`explorer.payload.encode_trace`), so the browser decodes it with the same code and
draws A and B at the store's step, view, layer and head without asking again. The
alignment of the two sentences and the difference map are computed in the browser.

A curated pair is one click: the panel opens A in the viewer (as Translate would) and the
view then compares B. The pairs and their hints come from the checkpoint's ``claims.json``
(:mod:`explorer.claims`), so each hint states what that model does with its pair, in figures
``tests/test_claims_measured.py`` measures; a checkpoint without the file gets generic hints.

Nothing is kept on the server: B's trace lives in the browser's store, under its
sentence, and a new sentence in the viewer clears it there.
"""

from __future__ import annotations

import logging
import time

import gradio as gr

from ..claims import default as default_claims
from ..errors import answer
from ..blocks import message, view_host
from ..payload import encode_trace
from .base import Asked, Panel

log = logging.getLogger("app.pairs")

# the curated pairs of the default checkpoint (what `python app.py` shows); a panel shows
# those of its app's checkpoint (App.claims)
PAIRS = default_claims().pairs()


class PairsPanel(Panel):
    view = "pairs"

    def __init__(self, app) -> None:
        super().__init__(app)
        self.pairs = app.claims.pairs()  # [{"a", "b", "hint"}], as web/pairs.js takes them

    def build(self) -> None:
        with gr.Accordion("Minimal pairs: compare two sentences", open=False, elem_id="pairs-panel"):
            self.host = view_host(self.view, elem_id="pairs-view", data={"pairs": self.pairs})

    def wire(self) -> None:
        app = self.app
        # B is traced like a Translate: same queue and batcher
        batched = dict(concurrency_limit=2 * app.batcher.max_batch, concurrency_id=app.api_name("translate"))
        self.host.submit(self.compare, [app.trace_state], [self.host], api_visibility="private", **batched)
        app.then_download(
            self.host.select(self.open_pair, None, [app.src_text, *app.outputs], api_visibility="private", **batched)
        )

    # --- callbacks ------------------------------------------------------------------------
    def compare(self, evt: Asked, a_trace=None) -> dict:
        """The view's request ``{sentenceId, text}``: B's trace, for the sentence (A) it was
        asked beside, or one plain message when B cannot be read."""
        asked = evt.fields
        return {self.host: message(self.traced(asked.get("text"), asked.get("sentenceId"), a_trace))}

    def traced(self, text, sentence, a_trace=None) -> dict:
        """``{"sentenceId", "text", "payload"}`` with B's trace in the viewer's payload format,
        or ``{"sentenceId", "text", "error"}``."""
        t0 = time.perf_counter()

        def made() -> dict:
            if not isinstance(text, str) or not text.strip():
                raise ValueError("Type a second sentence (B) to compare with the one in the viewer.")
            # B in A's languages: a pair differs in its sentences only
            trace = self.app.batcher.trace(self.app.check_text(text), **self.app.trace_languages(a_trace))
            log.info(
                "pair: %d src tokens, %d steps, %.0f ms",
                len(trace.src_tokens),
                trace.steps,
                (time.perf_counter() - t0) * 1000,
            )
            return {"sentenceId": sentence, "text": text, "payload": encode_trace(trace, origin="pair")}

        return answer(
            log,
            "tracing a minimal pair",
            made,
            lambda msg: {"sentenceId": sentence, "text": text if isinstance(text, str) else "", "error": msg},
        )

    def open_pair(self, evt: Asked) -> dict:
        """A click on curated pair ``evt.pair`` (0-based): its first sentence goes into the
        viewer, as a Translate would put it; the view then compares the second."""
        index = evt.fields.get("pair")
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(self.pairs):
            return {self.app.notice: f"⚠️ There is no curated pair {index!r}."}
        text = self.pairs[index]["a"]
        return {self.app.src_text: text, **self.app.translate(text)}
