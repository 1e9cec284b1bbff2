"""What every panel of the explorer is: the server side of one browser view."""

from __future__ import annotations

import logging

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

    def __init__(self, app) -> None:
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
