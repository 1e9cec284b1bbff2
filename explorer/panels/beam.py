"""Beam search with a beam tree: what else the decoder considered.

``/beam`` runs :func:`transformer.interpret.beam_tree.beam_tree` once and sends the whole tree (schema
``"transformer-beam-tree/1"``, documented in ``transformer/interpret/beam_tree.py``) to the browser view
``explorer/web/beam-tree.js``, which draws it; zoom, hiding pruned branches and hover
never call the server. Choosing a finished hypothesis re-traces the sentence with that
hypothesis forced (``Translator.trace(text, forced_prefix=ids)``), so every attention view
of the viewer works for it. The tree belongs to the sentence: a new one in the viewer
(other than one of its own hypotheses) clears it, here and in the browser.
"""

from __future__ import annotations

import logging
import time

import gradio as gr

from transformer.interpret.beam_tree import MAX_TREE_BEAM, beam_tree

from ..errors import answer
from ..blocks import message, view_host
from ..serving import api_answer
from .base import Asked, Panel

log = logging.getLogger("app.beam")
APP_MAX_BEAM = MAX_TREE_BEAM  # the beam-size slider goes 1..8: every size the tree can draw
DEFAULT_BEAM = 4


def beam_size(k, clamp: bool) -> int:
    """The beam size as an int in 1..APP_MAX_BEAM. ``clamp``: the UI's slider value is pulled
    into range; otherwise (the API) an out-of-range value is refused with a clear message."""
    bad = ValueError(f"The beam size must be a whole number from 1 to {APP_MAX_BEAM}, got {k!r}.")
    if isinstance(k, bool) or k is None:
        raise bad
    try:
        value = float(k)
    except (TypeError, ValueError):
        raise bad from None
    if value != value or value in (float("inf"), float("-inf")):
        raise bad
    if clamp:
        return int(min(APP_MAX_BEAM, max(1, round(value))))
    if not value.is_integer() or not 1 <= value <= APP_MAX_BEAM:
        raise bad
    return int(value)


class BeamPanel(Panel):
    view = "beam"

    # --- beam tree -----------------------------------------------------------------------
    def run_beam(self, text, k, clamp: bool, langs: dict | None = None) -> tuple[str, dict]:
        text = self.app.check_text(text)  # empty / too long: ValueError with the app's message
        return beam_tree(self.app.tr, text, beam_size(k, clamp), **(langs or {}))

    def show_beam(self, text, k, trace=None) -> dict:
        """The Beam-search button: draw the tree in the browser, or say plainly what is wrong.
        A multilingual model searches in the languages of the sentence on screen (``trace``)."""
        t0 = time.perf_counter()
        langs = self.app.trace_languages(trace)

        def shown() -> dict:
            best, tree = self.run_beam(text, k, clamp=True, langs=langs)
            log.info(
                "beam: k=%d, %d nodes, %.0f ms",
                tree["beam_size"],
                len(tree["nodes"]),
                (time.perf_counter() - t0) * 1000,
            )
            note = "⚠️ The sentence was cut at the model's token limit." if tree.get("truncated") else ""
            return {
                self.beam_state: {
                    "text": tree["src_text"],
                    "k": tree["beam_size"],
                    "hyps": [list(h["ids"]) for h in tree["hypotheses"]],
                    "langs": langs,
                },
                self.beam_translation: best,
                self.host: message(tree),
                self.beam_notice: note,
            }

        return answer(log, "beam search", shown, self.beam_failed)

    def beam_failed(self, message_text: str) -> dict:
        return {self.beam_state: None, self.beam_translation: "", self.host: "", self.beam_notice: f"⚠️ {message_text}"}

    def api_beam(self, text: str, k: int = DEFAULT_BEAM, src_lang: str = "", tgt_lang: str = "") -> tuple[str, dict]:
        """Beam search on one sentence with beam size k (1-8), a multilingual model's languages
        by code ("": the config's); returns (best translation, beam tree as JSON, schema
        "transformer-beam-tree/1" documented in transformer/interpret/beam_tree.py). Bad input
        (text, k outside 1-8, a language): ``gr.Error`` (:func:`explorer.serving.api_answer`)."""
        return api_answer(
            log, "/beam", lambda: self.run_beam(text, k, clamp=False, langs=self.app.languages(src_lang, tgt_lang))
        )

    def open_hypothesis(self, state, evt: Asked) -> dict:
        """Open kept hypothesis ``evt.hyp`` (0 = best) in the viewer: the sentence is traced
        with the whole hypothesis forced, so its every step can be inspected."""
        return self.open_index(state, evt.fields.get("hyp"))

    def open_index(self, state, index) -> dict:
        app = self.app
        if not state or not state.get("hyps"):
            return {app.notice: "⚠️ Run beam search first, then click a finished hypothesis."}
        try:
            i = int(index)
        except (TypeError, ValueError):
            i = -1
        if not 0 <= i < len(state["hyps"]):
            return {app.notice: f"⚠️ There is no hypothesis {index!r} in this beam."}

        def shown() -> dict:
            trace = app.tr.trace(state["text"], forced_prefix=state["hyps"][i], **state.get("langs", {}))
            how = f"beam hypothesis {i + 1} of {len(state['hyps'])}, beam size {state['k']}"
            label = app.names_for(trace).translation(how)
            return {**app.show(trace, origin="beam", label=label), app.src_text: state["text"]}

        return answer(log, "opening a beam hypothesis", shown, lambda msg: {app.notice: f"⚠️ {msg}"})

    # --- layout ---------------------------------------------------------------------------------
    def build(self) -> None:
        """Called inside the page's ``gr.Blocks`` context, after the analysis panel."""
        with gr.Accordion("Beam search: what else the decoder considered", open=False, elem_id="beam-panel"):
            gr.Markdown(
                "Greedy decoding keeps only the most likely token at each step. Beam search keeps the *k* best "
                "partial translations and ranks the finished ones by log-probability divided by a length penalty. "
                "The tree shows every candidate it weighed: one column per output position, edges as thick as the "
                "token's probability. Click a finished hypothesis to step through it in the viewer above."
            )
            with gr.Row(equal_height=True):
                self.beam_size = gr.Slider(
                    1, APP_MAX_BEAM, value=DEFAULT_BEAM, step=1, label="Beam size (k)", elem_id="beam-size", scale=3
                )
                self.beam_btn = gr.Button("Beam search", variant="secondary", elem_id="beam-btn", scale=1)
            self.beam_notice = gr.Markdown(elem_id="beam-notice")
            self.beam_translation = gr.Textbox(
                label="Best beam translation", interactive=False, elem_id="beam-translation"
            )
            self.host = view_host(self.view, elem_id="beam-view")
            self.beam_state = gr.State(None)

    def wire(self) -> None:
        app = self.app
        self.beam_btn.click(
            self.show_beam,
            [app.src_text, self.beam_size, app.trace_state],
            [self.beam_state, self.beam_translation, self.host, self.beam_notice],
            api_name=self.app.api_name("beam_show"),
            api_visibility="private",
        )
        app.then_download(
            self.host.select(
                self.open_hypothesis, [self.beam_state], [app.src_text, *app.outputs], api_visibility="private"
            )
        )
        gr.api(self.api_beam, api_name=self.app.api_name("beam"))

    def sentence_outputs(self) -> list:
        return [self.beam_state, self.beam_translation, self.beam_notice]

    def sentence_changed(self, origin: str | None) -> dict:
        if origin == "beam":
            return {}  # one of this tree's own hypotheses: the tree stays
        return {self.beam_state: None, self.beam_translation: "", self.beam_notice: ""}
