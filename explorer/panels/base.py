"""What every panel of the explorer is: the server side of one browser view."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

import gradio as gr

from ..blocks import message
from ..errors import GENERIC_ERROR, answer


class Asked(gr.EventData):
    """What a browser view asked for: the dict its module passed with the event (``fields``).

    Type a callback's argument as ``evt: Asked`` and Gradio builds one per event, as it builds
    ``gr.SelectData``; the fields are whatever the view sent (a non-dict request reads as
    empty), so each panel still checks the ones it uses."""

    def __init__(self, target, data) -> None:
        super().__init__(target, data)
        self.fields: dict = data if isinstance(data, dict) else {}


if TYPE_CHECKING:
    from transformer.core.translator import Translator

    from ..claims import Claims
    from ..names import Names
    from ..serving import TraceBatcher


class PanelHost(Protocol):
    """All a panel may use of the page it is on (``explorer.page.App`` is one):
    ``tests/test_panel_host.py`` fails on a panel that reaches for anything else.

    The model and its words: ``tr``, ``batcher`` (Translate's batched traces), ``names`` /
    ``names_for`` (what labels call the languages and special tokens), ``claims`` (the checkpoint's
    claims: the hints of its examples and minimal pairs), ``check_text`` (a typed
    sentence as Translate takes it, or ValueError), ``languages`` / ``trace_languages``. The page:
    ``trace_state`` (the session's trace), ``src_text`` and ``notice`` (the sentence box and the
    line under it), ``outputs`` / ``show`` / ``translate`` (what a new trace in the viewer
    updates, and the answers that update it), ``then_download`` (the trace file after an event
    that shows one) and ``api_name`` (an endpoint's name on this model's page)."""

    tr: Translator
    batcher: TraceBatcher
    names: Names
    claims: Claims
    trace_state: gr.State
    src_text: gr.Textbox
    notice: gr.Markdown
    outputs: list

    def names_for(self, trace=None) -> Names: ...

    def check_text(self, text: str | None) -> str: ...

    def languages(self, src_lang=None, tgt_lang=None) -> dict: ...

    def trace_languages(self, trace) -> dict: ...

    def translate(self, text: str | None, src_lang: str | None = None, tgt_lang: str | None = None) -> dict: ...

    def show(self, trace, origin: str, label: str | None = None, notes: tuple[str, ...] = ()) -> dict: ...

    def then_download(self, event) -> None: ...

    def api_name(self, name: str) -> str: ...


class Panel:
    """The server side of one browser view (``view``, a name in ``web/views.js``).

    ``build`` runs inside the page's ``gr.Blocks`` and makes the view's block
    (:func:`explorer.blocks.view_host`) and any Gradio components the panel needs;
    ``wire`` then connects their events, once every panel is built and ``app.outputs``
    (what a new trace in the viewer updates) is known. Callbacks are plain methods, so
    tests call them without a browser.

    Panels follow the sentence: whenever the viewer gets a new trace (or loses it to an
    error), the app merges every panel's :meth:`sentence_changed` into its answer, so no
    panel keeps server state that belongs to the old sentence.
    """

    view = ""

    def __init__(self, app: PanelHost) -> None:
        self.app = app

    def build(self) -> None:
        raise NotImplementedError

    def wire(self) -> None:
        """Connect the events of what ``build`` made (``app.outputs`` is known by now)."""

    def sentence_outputs(self) -> list:
        """The components :meth:`sentence_changed` updates."""
        return []

    def analysis_request(self, trace, evt: Asked, actions: tuple[str, ...], log: logging.Logger) -> str:
        """A view's request for one of ``actions`` on the viewer's sentence (``trace``), run by
        ``self.run(trace, action, fields)``: the answer names the action, its key and the
        sentence asked, so the view drops an answer for a sentence that has gone."""
        asked = evt.fields
        action, key = asked.get("action"), asked.get("key")
        head = {
            "action": action,
            "sentenceId": asked.get("sentenceId"),
            "key": key if isinstance(key, str) and len(key) <= 300 else None,
        }
        if action not in actions:
            log.warning("unknown %s request %r", self.view, action)
            return message({**head, "error": GENERIC_ERROR})
        if trace is None:
            return message({**head, "error": "Translate a sentence first."})
        data = answer(log, action, lambda: self.run(trace, action, asked), lambda msg: {"error": msg})
        return message({**head, **data})

    def sentence_changed(self, origin: str | None) -> dict:
        """Updates for a new trace in the viewer (``origin``: what brought it) or, with
        ``origin`` None, for its removal."""
        return {}
