"""Why this word? Direct logit attribution, activation patching and gradient attribution of one step.

Attention shows where a head looks; these three analyses measure what the decoder's
components add to the choice of the word the viewer's step emits
(:mod:`transformer.interpret.attribution`, :mod:`transformer.interpret.saliency`). Each costs a model pass or a
few, so nothing is computed on Translate: the browser view ``explorer/web/attribution.js``
asks for one analysis of the viewer's step when the visitor presses its button, on the
translation the viewer shows (a What-if or beam version included: its token ids are the
trace's, in the visitor's ``gr.State``).

Named endpoints (also usable with ``gradio_client``); steps count from 1, as on the page,
and each runs on the greedy translation of its text(s):

``/attribution``: ``(text: str, step: int, versus: str = "") -> dict``
    :func:`~transformer.interpret.attribution.direct_logit_attribution` of the token emitted at
    ``step``: the logit (``versus`` ""), its difference with the runner-up (``"runner-up"``)
    or with a candidate token (its text, e.g. ``"un"``). ``LogitAttribution.to_dict()``
    (layers, heads and its ``step`` 0-based) plus ``"text"``.
``/patching``: ``(text_a: str, text_b: str, step: int) -> dict``
    :func:`~transformer.interpret.attribution.activation_patching` of A with B at ``step``.
    Where the two translations emit different tokens (``"metric": "difference"``), the
    fraction of logit(A's token) - logit(B's token) each component moves; where they emit the
    same token (``"metric": "runner-up"``), the share of A's lead of that token over its
    runner-up (``"runner_up"``) each component's output from B takes away. ``"summary"`` says
    which in one sentence. ``PatchingResult.to_dict()``.
``/saliency``: ``(text: str, step: int, n_steps: int = 16) -> dict``
    :func:`~transformer.interpret.saliency.saliency`: input x gradient and integrated gradients with
    ``n_steps`` trapezoid panels (1..:data:`MAX_N_STEPS`). ``Saliency.to_dict()`` plus ``"text"``.

Bad input raises ``gr.Error`` with a message that says what is wrong (one log line), as
``/knockout`` does (:func:`explorer.serving.api_answer`); the page's own requests get
``{"error": ...}`` in their answer instead.

Page requests (the block's submit event)::

    {"action": "attribution" | "patching" | "saliency", "sentenceId", "key", "step",
     "versus", "textB", "nSteps", "layer", "head"}

``layer``/``head`` (1-based, or "mean") pick the attention row saliency is compared with.
The answer is the analysis's dict plus ``action``, ``key`` and ``sentenceId`` as asked.
"""

# (no "from __future__ import annotations": gr.api reads each endpoint's output from the real
# return annotation)
import logging

import gradio as gr

from transformer.interpret.attribution import activation_patching, direct_logit_attribution, greedy_targets
from transformer.interpret.saliency import saliency

from ..blocks import view_host
from ..serving import api_answer
from .arithmetic import count
from .base import Asked, Panel

log = logging.getLogger("app.attribution")
ACTIONS = ("attribution", "patching", "saliency")
MAX_N_STEPS = 128  # integration panels one request may ask for: about 8 times the default's time
RUNNER_UP = "runner-up"


class AttributionPanel(Panel):
    """The three analyses; callbacks are plain methods so the tests call them without a browser."""

    view = "attribution"

    # --- checks in the page's words -----------------------------------------------------------
    def _text(self, text, name: str = "text") -> str:
        if text is not None and not isinstance(text, str):
            raise ValueError(f"{name} must be a string")
        return self.app.check_text(text)  # empty / too long -> ValueError with the app's message

    def _versus(self, versus):
        """None, "runner-up" or a target token id, from the page's words ("" = the logit itself)."""
        if versus is None or versus == "":
            return None
        if versus == RUNNER_UP:
            return RUNNER_UP
        vid = self.app.tr.tgt_tok.token_to_id(versus) if isinstance(versus, str) else None
        if vid is None:
            raise ValueError(
                f"versus must be '', 'runner-up' or a candidate token of the model's {self.app.names.tgt} "
                f"vocabulary (its text, as the viewer lists it), got {versus!r}"
            )
        return vid

    def _n_steps(self, n_steps) -> int:
        try:
            return count(n_steps, "number of integration steps", MAX_N_STEPS)
        except ValueError:
            raise ValueError(f"n_steps must be a whole number from 1 to {MAX_N_STEPS}, got {n_steps!r}") from None

    # --- the analyses (0-based library calls from 1-based requests) ------------------------------
    def attribution_data(self, text, step, versus="", target=None, langs: dict | None = None) -> dict:
        """DLA of the token emitted at ``step`` (1-based) of ``target`` (greedy when None);
        ``langs``: the languages of the trace it is about (``App.trace_languages``)."""
        langs = langs or {}
        checked = self._text(text)
        other = self._versus(versus)
        target = greedy_targets(self.app.tr, [checked], **langs)[0] if target is None else target
        t = count(step, "step", len(target)) - 1
        if isinstance(other, int) and other == target[t]:
            raise ValueError(f"{versus!r} is the token step {t + 1} emits: compare it with another candidate")
        res = direct_logit_attribution(self.app.tr, checked, t, target_ids=target, versus=other, **langs)
        return {"text": checked, **res.to_dict()}

    def patching_data(self, text_a, text_b, step, target_a=None, langs: dict | None = None) -> dict:
        """Patching of A (``target_a``, greedy when None) with B (greedy, in A's languages) at
        ``step`` (1-based); the same word in both is patched against A's runner-up."""
        langs = langs or {}
        a = self._text(text_a, "text_a")
        if not isinstance(text_b, str) or not text_b.strip():
            raise ValueError("Type a second sentence (B) to patch into the one in the viewer (A).")
        b = self._text(text_b, "text_b")
        if target_a is None:  # both greedy: one batched decode
            target_a, target_b = greedy_targets(self.app.tr, [a, b], **langs)
        else:
            target_b = greedy_targets(self.app.tr, [b], **langs)[0]
        t = count(step, "step", min(len(target_a), len(target_b))) - 1
        # where both emit the same token, the library measures A's lead over its runner-up
        res = activation_patching(self.app.tr, a, b, t, target_a=target_a, target_b=target_b, **langs)
        return res.to_dict()

    def saliency_data(self, text, step, n_steps=16, target=None, layer=None, head="mean", langs=None) -> dict:
        """Gradient attribution at ``step`` (1-based); ``layer``/``head`` 1-based (or "mean")."""
        langs = langs or {}
        checked = self._text(text)
        n = self._n_steps(n_steps)
        target = greedy_targets(self.app.tr, [checked], **langs)[0] if target is None else target
        t = count(step, "step", len(target)) - 1
        cfg = self.app.tr.cfg
        layer = None if layer is None else count(layer, "layer", cfg.n_decoder_layers) - 1
        head = "mean" if head in (None, "mean", "max") else count(head, "head", cfg.h) - 1
        res = saliency(self.app.tr, checked, t, target_ids=target, n_steps=n, layer=layer, head=head, **langs)
        return {"text": checked, **res.to_dict()}

    # --- the API ----------------------------------------------------------------------------------
    def attribution(self, text: str, step: int, versus: str = "") -> dict:
        """``/attribution``: see the module docstring."""
        return api_answer(log, "/attribution", lambda: self.attribution_data(text, step, versus))

    def patching(self, text_a: str, text_b: str, step: int) -> dict:
        """``/patching``: see the module docstring."""
        return api_answer(log, "/patching", lambda: self.patching_data(text_a, text_b, step))

    def saliency(self, text: str, step: int, n_steps: int = 16) -> dict:
        """``/saliency``: see the module docstring."""
        return api_answer(log, "/saliency", lambda: self.saliency_data(text, step, n_steps))

    # --- the page ---------------------------------------------------------------------------------
    def request(self, trace, evt: Asked) -> str:
        """One analysis of the viewer's sentence, on the translation it shows (the module
        docstring gives the request); the answer names the action, key and sentence asked."""
        return self.analysis_request(trace, evt, ACTIONS, log)

    def run(self, trace, action: str, asked: dict) -> dict:
        target = list(trace.tgt_ids[1:])  # the translation on screen, forced tokens included
        step, langs = asked.get("step"), self.app.trace_languages(trace)
        if action == "attribution":
            return self.attribution_data(trace.src_text, step, asked.get("versus") or "", target, langs)
        if action == "patching":
            return self.patching_data(trace.src_text, asked.get("textB"), step, target, langs)
        return self.saliency_data(
            trace.src_text, step, asked.get("nSteps", 16), target, asked.get("layer"), asked.get("head", "mean"), langs
        )

    def build(self) -> None:
        # closed: the analyses are computed only for visitors who open it and ask
        with gr.Accordion(
            "Why this word? What each head adds", open=False, elem_id="attribution-panel"
        ) as self.section:
            self.host = view_host(self.view, elem_id="attribution")

    def wire(self) -> None:
        # "multiple": an analysis asked while another computes is queued, not dropped
        self.host.submit(
            self.request, [self.app.trace_state], [self.host], api_visibility="private", trigger_mode="multiple"
        )
        gr.api(self.attribution, api_name=self.app.api_name("attribution"))
        gr.api(self.patching, api_name=self.app.api_name("patching"))
        gr.api(self.saliency, api_name=self.app.api_name("saliency"))
