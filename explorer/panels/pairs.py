"""Minimal pairs: the viewer's sentence (A) beside a second one (B) that differs in a word.

The browser view ``explorer/web/pairs.js`` asks for B only when the visitor presses
"Compare": this panel traces B once, through the app's :class:`~explorer.serving.TraceBatcher`
(so it shares the model with Translate), and sends it in the viewer's own payload format
(:func:`explorer.payload.encode_trace`), so the browser decodes it with the same code and
draws A and B at the store's step, view, layer and head without asking again. The
alignment of the two sentences and the difference map are computed in the browser.

A curated pair (:data:`PAIRS`) is one click: the panel opens A in the viewer (as Translate
would) and the view then compares B. Each pair's hint states what the shipped model does
with it; ``tests/test_claims.py`` measures every fact of the hints.

Nothing is kept on the server: B's trace lives in the browser's store, under its
sentence, and a new sentence in the viewer clears it there.
"""

from __future__ import annotations

import logging
import time

import gradio as gr

from ..errors import answer
from ..host import message, view_host
from ..payload import encode_trace
from .base import Panel

log = logging.getLogger("app.pairs")

# Layers, heads and steps count from 1 here, as on screen.
PAIRS = [
    {"a": "My brother is tall.", "b": "My sister is tall.",
     "hint": "Gender agreement: 'Mio fratello è alto.' against 'Mia sorella è alta.'. The article agrees at step 1 "
             "('Mio' 0.96, 'Mia' 0.96). The adjective is a closer call: at step 4 A says 'alto' (0.99), while B starts "
             "'al' (0.68, with 'alto' at 0.15) and ends it with 'ta'. At step 2, cross-attention (layer 3, mean of "
             "heads) looks at 'brother' (0.94) and at 'sister' (0.98)."},
    {"a": "I have a red car.", "b": "I have two red cars.",
     "hint": "One word changes the noun phrase: 'Ho un'auto rossa.' against 'Ho due macchine rosse.'. At step 2 "
             "A's article un' becomes 'due' (0.94), and the noun changes word as well as number ('auto', "
             "'macchine'). The adjective agrees: at step 6 cross-attention (layer 3, mean of heads) looks at 'red' "
             "(0.62), and at step 7 'osse' (0.69) beats 'ossi' (0.24)."},
    {"a": "The doctor said she was tired.", "b": "The doctor said he was tired.",
     "hint": "The pronoun changes nothing in the translation: both are 'Il dottore ha detto che era stanco.', though "
             "'she' needs 'stanca'. The model is less sure with 'she': at step 7 'stanco' has 0.77 against 0.91, and "
             "'st' (the start of 'stanca') 0.22 against 0.07, while cross-attention (layer 1, mean of heads) puts 0.20 "
             "on 'she' and 0.01 on 'he'. Force 'st' in A with What if? and it says 'stanca'. The difference map pairs "
             "'she' with 'he' in one column: the only word the two sentences do not share."},
]


class PairsPanel(Panel):
    view = "pairs"

    def build(self) -> None:
        with gr.Accordion("Minimal pairs: compare two sentences", open=False, elem_id="pairs-panel"):
            self.host = view_host(self.view, elem_id="pairs-view", data={"pairs": PAIRS})

    def wire(self) -> None:
        app = self.app
        # B is traced like a Translate: same queue and batcher
        batched = dict(concurrency_limit=2 * app.batcher.max_batch, concurrency_id="translate")
        self.host.submit(self.compare, None, [self.host], api_visibility="private", **batched)
        app.then_download(self.host.select(self.open_pair, None, [app.src_text, *app.outputs],
                                           api_visibility="private", **batched))

    # --- callbacks ------------------------------------------------------------------------
    def compare(self, evt: gr.EventData) -> dict:
        """The view's request ``{sentenceId, text}``: B's trace, for the sentence (A) it was
        asked beside, or one plain message when B cannot be read."""
        asked = getattr(evt, "_data", None) or {}
        return {self.host: message(self.traced(asked.get("text"), asked.get("sentenceId")))}

    def traced(self, text, sentence) -> dict:
        """``{"sentenceId", "text", "payload"}`` with B's trace in the viewer's payload format,
        or ``{"sentenceId", "text", "error"}``."""
        t0 = time.perf_counter()

        def made() -> dict:
            if not isinstance(text, str) or not text.strip():
                raise ValueError("Type a second sentence (B) to compare with the one in the viewer.")
            trace = self.app.batcher.trace(self.app.check_text(text))
            log.info("pair: %d src tokens, %d steps, %.0f ms", len(trace.src_tokens), trace.steps,
                     (time.perf_counter() - t0) * 1000)
            return {"sentenceId": sentence, "text": text, "payload": encode_trace(trace, origin="pair")}

        return answer(log, "tracing a minimal pair", made,
                      lambda msg: {"sentenceId": sentence, "text": text if isinstance(text, str) else "", "error": msg})

    def open_pair(self, evt: gr.EventData) -> dict:
        """A click on curated pair ``evt.pair`` (0-based): its first sentence goes into the
        viewer, as a Translate would put it; the view then compares the second."""
        index = (getattr(evt, "_data", None) or {}).get("pair")
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(PAIRS):
            return {self.app.notice: f"⚠️ There is no curated pair {index!r}."}
        text = PAIRS[index]["a"]
        return {self.app.src_text: text, **self.app.translate(text)}
