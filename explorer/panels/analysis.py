"""'Why did it say that?': head diagnostics, head knock-out and head importance.

The server computes, the browser draws. The sentence's head diagnostics, logit lens and
rollout already travel in the viewer's payload; this panel adds what needs the model
again, one server call per button, and the test-set diagnostics of the checkpoint
(``head_stats.json``, read once at start-up and sent once with the page). The browser side
is ``explorer/web/analysis.js`` (maps, selection chips, buttons, results); it asks for the
sentence in the viewer, with the heads picked on the page, and the answer is drawn there.

Named endpoints (also usable with ``gradio_client``)
----------------------------------------------------
``/knockout``: ``(text: str, heads: str) -> (translation: str, data: dict)``
    Decode ``text`` greedily again with ``heads`` silenced (their output zeroed before
    ``o_proj``). ``translation`` is the knocked-out model's translation; ``data`` is
    :func:`transformer.interpret.knockout.knockout`'s dict plus ``"text"``:
    ``{"text", "heads": [{"kind", "layer", "head"}], "original": {"translation", "tokens", "ids"},
    "knockout": {"translation", "tokens", "ids", "finished"}, "changed",
    "steps": {"token": [n], "p_original": [n], "p_knockout": [n], "top_knockout": [n],
    "logprob_original", "logprob_knockout"}}``: at each step of the original translation,
    the probability of the original token with every head and with ``heads`` silenced
    (teacher-forced on the original).
``/head_importance``: ``(text: str) -> data: dict``
    :func:`transformer.interpret.knockout.head_importance` plus ``"text"``: for every head of every
    kind, the drop in log-probability of the original greedy translation when that head
    alone is silenced: ``{"text", "translation", "tokens", "logprob", "heads", "layers": {kind: L},
    "importance": {kind: L x H}, "per_step": {kind: L x H x n}, "ranking": [10 largest]}``.

On bad input (empty or over-long text, bad heads) both raise ``gr.Error`` with a message
that says what is wrong, as every endpoint of the app does (:func:`explorer.serving.api_answer`):
``gradio_client`` raises it as ``AppError``. The page's own requests get ``{"error": ...}``
in their answer instead, which its view shows in place.

Heads format
------------
A head is ``kind:layer:head``, all 0-based, several separated by commas or spaces (the page
itself counts from 1 and never shows this format)::

    "cross:0:3"                      # cross-attention, layer 1, head 4 (as the UI says it)
    "encoder:2:1, decoder_self:0:5"

``kind`` is ``encoder`` (encoder self-attention), ``decoder_self`` (decoder masked
self-attention) or ``cross`` (decoder-encoder attention); layers run 0..L-1 for that
stack and heads 0..h-1. The UI shows them 1-based ("cross-attention, layer 1, head 4").
The same format (or a list of ``{"kind", "layer", "head"}`` dicts) is accepted by
``transformer.interpret.knockout.knockout`` and the ``Translator``'s head masks.
"""

# (no "from __future__ import annotations": gr.api reads the /knockout outputs, a
# translation and a dict, from the real return annotation)
import json
import logging
from pathlib import Path

import gradio as gr

from transformer.interpret import knockout

from ..errors import GENERIC_ERROR, answer
from ..blocks import message, view_host
from ..serving import api_answer
from .base import Asked, Panel

log = logging.getLogger("app.analysis")
HEADS_HELP = (
    "Heads are written kind:layer:head, 0-based, separated by commas, e.g. 'cross:0:3, encoder:2:1' "
    "(kinds: encoder, decoder_self, cross)."
)
NO_HEADS = (
    "No heads selected: shift-click heads in the all-heads mosaic, the diagnostics or the importance maps, "
    "then press Knock out."
)


def load_test_stats(directory) -> dict | None:
    """The checkpoint's ``head_stats.json`` (diagnostics averaged over the test set, written by
    ``python -m transformer.cli.head_stats``), or None when it is absent or unreadable (logged:
    the panel then offers only this sentence's diagnostics)."""
    if directory is None:
        return None
    path = Path(directory) / "head_stats.json"
    if not path.is_file():
        return None
    try:
        stats = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        log.warning("ignoring %s: %s", path, exc)
        return None
    if not isinstance(stats, dict) or not isinstance(stats.get("kinds"), dict):
        log.warning("ignoring %s: not a head-stats file (no 'kinds')", path)
        return None
    return stats


class AnalysisPanel(Panel):
    """Knock-out, head importance and head diagnostics; callbacks are plain methods so the
    tests can call them without a browser."""

    view = "analysis"

    def __init__(self, app) -> None:
        super().__init__(app)
        self.test_stats = getattr(app, "test_stats", None)  # loaded once, by the page (explorer/page.py)

    # --- the API (also what the page's requests run) ------------------------------------------
    def _text(self, text) -> str:
        if text is not None and not isinstance(text, str):
            raise ValueError("text must be a string")
        return self.app.check_text(text)  # empty / too long -> ValueError with the app's message

    def knockout(self, text: str | None, heads: str | None) -> tuple[str, dict]:
        """``/knockout``: see the module docstring."""
        return api_answer(log, "/knockout", lambda: self.knockout_data(text, heads))

    def head_importance(self, text: str | None) -> dict:
        """``/head_importance``: see the module docstring."""
        return api_answer(log, "/head_importance", lambda: self.importance_data(text))

    def knockout_data(self, text, heads) -> tuple[str, dict]:
        """(knocked-out translation, data) of ``/knockout``; bad input raises ``ValueError``."""
        checked = self._text(text)
        try:
            parsed = knockout.parse_heads(heads if heads is not None else "", self.app.tr.cfg)
        except ValueError as exc:
            raise ValueError(f"{exc}. {HEADS_HELP}") from None
        if not parsed:
            raise ValueError(f"{NO_HEADS} {HEADS_HELP}")
        data = knockout.knockout(self.app.tr, checked, parsed)
        return data["knockout"]["translation"], {"text": checked, **data}

    def importance_data(self, text, langs: dict | None = None) -> dict:
        """The data of ``/head_importance``; bad input raises ``ValueError``. ``langs``: the
        languages of the trace it is about (``App.trace_languages``)."""
        return {"text": self._text(text), **knockout.head_importance(self.app.tr, text, **(langs or {}))}

    # --- the page -------------------------------------------------------------------------------
    def request(self, trace, evt: Asked) -> str:
        """A request of the browser view, for the sentence in the viewer: ``{"action":
        "knockout", "heads": [{kind, layer, head}] (0-based)}`` or ``{"action": "importance"}``.
        The answer names the action and the sentence it belongs to (``sentenceId``)."""
        asked = evt.fields
        action = asked.get("action")
        head = {"action": action, "sentenceId": asked.get("sentenceId")}
        if trace is None:
            return message({**head, "error": "Translate a sentence first."})
        if action == "knockout":
            data = answer(
                log,
                "knockout",
                lambda: self.knock_out_selected(trace.src_text, asked.get("heads"), self.app.trace_languages(trace)),
                lambda msg: {"error": msg},
            )
        elif action == "importance":
            data = answer(
                log,
                "head importance",
                lambda: self.importance_data(trace.src_text, self.app.trace_languages(trace)),
                lambda msg: {"error": msg},
            )
        else:
            data = {"error": GENERIC_ERROR}
            log.warning("unknown analysis request %r", action)
        return message({**head, **data})

    def knock_out_selected(self, text: str, heads, langs: dict | None = None) -> dict:
        """Knock out the heads picked on the page; a bad selection is said in the page's words."""
        if not heads:
            raise ValueError(NO_HEADS)
        try:
            parsed = knockout.parse_heads(list(heads), self.app.tr.cfg)
        except (TypeError, ValueError, KeyError):
            raise ValueError(
                "The selected heads do not fit this model; clear the selection and pick them again."
            ) from None
        return {"text": text, **knockout.knockout(self.app.tr, text, parsed, **(langs or {}))}

    def build(self) -> None:
        """Called inside the page's ``gr.Blocks`` context, after the viewer and What-if."""
        with gr.Accordion("Head diagnostics, knock-out and importance", open=False, elem_id="analysis-panel"):
            gr.Markdown(
                "Which heads matter for this translation? **Knock out** silences the selected heads (their output "
                "is zeroed) and decodes again; **Head importance** silences each head alone and measures how much "
                'less likely the original translation becomes. The logit lens ("Logit lens: what each layer would '
                'say") and the *Rollout* view (in "More views: encoder, decoder, rollout, heads") are sections of the '
                "viewer above."
            )
            self.host = view_host(self.view, elem_id="analysis", data=self.test_stats)

    def wire(self) -> None:
        self.host.submit(self.request, [self.app.trace_state], [self.host], api_visibility="private")
        gr.api(self.knockout, api_name=self.app.api_name("knockout"))
        gr.api(self.head_importance, api_name=self.app.api_name("head_importance"))
