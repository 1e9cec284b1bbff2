"""Where did this word come from? Source or target prefix (ALTI+), DecoderLens, a reference of
your own, and what moved each attention output (Kobayashi norms), for the viewer's sentence.

Attention says where a head looks; ALTI+ (:mod:`transformer.interpret.contributions`) measures
how much of each step's output comes from each source token and from each token the decoder has
written so far, through every layer. Each analysis costs a model pass or a few, so nothing is
computed on Translate (its cost stays what it was): the browser view ``explorer/web/sources.js``
asks when the visitor opens the section (contributions, DecoderLens), presses "Score" (the
reference) or turns on "what moved the output" under the main map (the norms: asked by the hidden
view ``explorer/web/moved.js``, which is mounted with the page), always for the
translation the viewer shows (a What-if or beam version included: the trace in ``gr.State``).

Named endpoints (also usable with ``gradio_client``); steps count from 1, as on the page, and
each runs on the greedy translation of its text:

``/contributions``: ``(text: str, step: int = 0) -> dict``
    :func:`~transformer.interpret.contributions.alti_contributions`: ``Contributions.to_dict()``
    (every step; ``layers`` each decoder layer's own, ``rollout`` composed up to each), plus
    ``"text"``; with ``step`` 1..T also ``"at"``, ``Contributions.step(step - 1)`` (0 = all
    steps only).
``/decoder_lens``: ``(text: str) -> dict``
    :func:`~transformer.interpret.decoder_lens.decoder_lens`: one row per encoder layer, the last
    the model's own translation. ``DecoderLens.to_dict()``.
``/score_reference``: ``(text: str, reference: str) -> dict``
    :func:`~transformer.interpret.reference.score_reference`: the reference token by token, its
    probability, rank and the model's own choice. ``ReferenceScore.to_dict()``.

Bad input raises ``gr.Error`` with a message that says what is wrong (one log line), as
``/attribution`` does (:func:`explorer.serving.api_answer`); the page's own requests get
``{"error": ...}`` in their answer instead.

Page requests (the block's submit event)::

    {"action": "contributions" | "lens" | "score" | "norms", "sentenceId", "key", "reference"}

The answer is the analysis's dict plus ``action``, ``key`` and ``sentenceId`` as asked;
``contributions`` also carries ``testReference``, the test set's reference when the sentence
is one of the checkpoint's ``glance.json`` (the box is filled with it).
"""

# (no "from __future__ import annotations": gr.api reads each endpoint's output from the real
# return annotation)
import logging

import gradio as gr

from transformer.interpret.contributions import alti_contributions, value_norms
from transformer.interpret.decoder_lens import decoder_lens
from transformer.interpret.reference import score_reference

from ..blocks import view_host
from ..serving import api_answer
from .arithmetic import count
from .base import Asked, Panel
from .glance import test_references

log = logging.getLogger("app.sources")
ACTIONS = ("contributions", "lens", "score", "norms")
MAX_REFERENCE_CHARS = 2_000  # a reference is one sentence; more is refused before it is tokenised
NORM_DIGITS = 3  # the norms are drawn as colours (rows normalised): three decimals are plenty


class SourcesPanel(Panel):
    """The four analyses; callbacks are plain methods so the tests call them without a browser."""

    view = "sources"

    # --- checks in the page's words -----------------------------------------------------------
    def _text(self, text) -> str:
        if text is not None and not isinstance(text, str):
            raise ValueError("text must be a string")
        return self.app.check_text(text)  # empty / too long -> ValueError with the app's message

    def _reference(self, reference) -> str:
        if reference is not None and not isinstance(reference, str):
            raise ValueError("reference must be a string")
        if not reference or not reference.strip():
            raise ValueError(f"Type a reference translation ({self.app.names.tgt}) to score.")
        if len(reference) > MAX_REFERENCE_CHARS:
            raise ValueError(
                f"That reference has {len(reference):,} characters; score one sentence "
                f"(at most {MAX_REFERENCE_CHARS:,})."
            )
        return " ".join(reference.split())

    # --- the analyses (1-based requests, 0-based library calls) ----------------------------------
    def contributions_data(self, text, step=0, trace=None) -> dict:
        """ALTI+ of ``trace`` (the greedy trace of ``text`` when None); ``step`` 1-based, 0 = none."""
        if trace is None:
            trace = self.app.batcher.trace(self._text(text))
        c = alti_contributions(self.app.tr, trace)
        data = {"text": trace.src_text, **c.to_dict()}
        data.pop("encoder_layers")  # (L_enc, S, S): the view draws the decoder's side only
        if step not in (0, None, "", "0"):
            data["at"] = c.step(count(step, "step", c.steps) - 1)
        return data

    def lens_data(self, text, langs: dict | None = None) -> dict:
        """``langs``: the languages of the trace it is about (``App.trace_languages``)."""
        return decoder_lens(self.app.tr, self._text(text), **(langs or {})).to_dict()

    def score_data(self, text, reference, langs: dict | None = None) -> dict:
        return score_reference(self.app.tr, self._text(text), self._reference(reference), **(langs or {})).to_dict()

    def norms_data(self, trace) -> dict:
        return value_norms(self.app.tr, trace).to_dict(NORM_DIGITS)

    # --- the API ----------------------------------------------------------------------------------
    def contributions(self, text: str, step: int = 0) -> dict:
        """``/contributions``: see the module docstring."""
        return api_answer(log, "/contributions", lambda: self.contributions_data(text, step))

    def decoder_lens(self, text: str) -> dict:
        """``/decoder_lens``: see the module docstring."""
        return api_answer(log, "/decoder_lens", lambda: self.lens_data(text))

    def score_reference(self, text: str, reference: str) -> dict:
        """``/score_reference``: see the module docstring."""
        return api_answer(log, "/score_reference", lambda: self.score_data(text, reference))

    # --- the page ---------------------------------------------------------------------------------
    def request(self, trace, evt: Asked) -> str:
        """One analysis of the viewer's sentence, on the translation it shows (the module
        docstring gives the request); the answer names the action, key and sentence asked."""
        return self.analysis_request(trace, evt, ACTIONS, log)

    def run(self, trace, action: str, asked: dict) -> dict:
        if action == "contributions":
            refs = test_references(self.app.tr.directory)
            return {**self.contributions_data(None, 0, trace), "testReference": refs.get(trace.src_text.strip())}
        if action == "lens":  # what the encoder's layers say: always about the source, greedy
            return self.lens_data(trace.src_text, self.app.trace_languages(trace))
        if action == "score":
            return self.score_data(trace.src_text, asked.get("reference"), self.app.trace_languages(trace))
        return self.norms_data(trace)

    def build(self) -> None:
        # the norms' own block, hidden (sources.css) and outside the section, so that its view
        # (web/moved.js) is mounted with the page: the toggle under the main map works with the
        # section closed (a closed section's view mounts only when it first opens)
        self.moved_host = view_host("moved", elem_id="moved")
        # closed: the analyses are computed only for visitors who open it
        with gr.Accordion("Where did this word come from?", open=False, elem_id="sources-panel") as self.section:
            self.host = view_host(self.view, elem_id="sources")

    def wire(self) -> None:
        # "multiple": the norms asked under the map while the section's analyses compute are queued
        for host in (self.host, self.moved_host):
            host.submit(self.request, [self.app.trace_state], [host], api_visibility="private", trigger_mode="multiple")
        gr.api(self.contributions, api_name=self.app.api_name("contributions"))
        gr.api(self.decoder_lens, api_name=self.app.api_name("decoder_lens"))
        gr.api(self.score_reference, api_name=self.app.api_name("score_reference"))
