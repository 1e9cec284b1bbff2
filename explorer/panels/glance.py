"""The test set at a glance: every test sentence with its chrF, the model's log-probability,
the mean source share (ALTI+) and cross-attention coverage, from the checkpoint's ``glance.json``.

The file is computed once, offline, by ``python -m transformer.cli.glance`` (about a second a
sentence) and ships beside the model; this panel only reads it. Nothing of it travels with
the page: the browser view ``explorer/web/glance.js`` asks for the list when the visitor opens
the section, sorts and filters it itself, and a click opens the sentence in the viewer as an
example does (the page's Translate), with its reference in "Where did this word come from?".

Page requests: the block's submit event ``{"action": "list"}`` answers
``{"action": "list", "sentences": [{src, ref, hyp, chrf, logprob, src_share, coverage}], "mean",
"n"}``, or ``{"action": "list", "missing": true, "command"}`` for a checkpoint without the file;
its select event ``{"text"}`` translates the sentence (:meth:`explorer.page.App.translate`).
"""

from __future__ import annotations

import json
import logging
from functools import lru_cache
from pathlib import Path

import gradio as gr

from transformer.cli.glance import FILE_NAME

from ..blocks import message, view_host
from .base import Asked, Panel

log = logging.getLogger("app.glance")
FIELDS = ("src", "ref", "hyp", "chrf", "logprob", "src_share", "coverage")


@lru_cache(maxsize=8)
def load_glance(directory) -> dict | None:
    """The checkpoint folder's ``glance.json`` (only the fields the view shows), or None when it
    has none (or it cannot be read: logged). Read once per folder."""
    if directory is None:
        return None
    path = Path(directory) / FILE_NAME
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        rows = [{k: r[k] for k in FIELDS} for r in data["sentences"]]
    except (OSError, ValueError, KeyError, TypeError):
        log.exception("%s cannot be read", path)
        return None
    return {"n": len(rows), "mean": data.get("mean"), "data": data.get("data"), "sentences": rows}


def test_references(directory) -> dict[str, str]:
    """Source sentence -> its test-set reference, from ``glance.json`` ({} without it)."""
    g = load_glance(None if directory is None else str(directory))
    return {r["src"].strip(): r["ref"] for r in g["sentences"]} if g else {}


def command(directory) -> str:
    """The command that makes the file for this checkpoint."""
    return f"python -m transformer.cli.glance --checkpoint {directory or 'CHECKPOINT'}"


class GlancePanel(Panel):
    view = "glance"

    def build(self) -> None:
        # closed, and the list is sent when the section opens, not with the page (about 200 KB)
        with gr.Accordion("The test set at a glance", open=False, elem_id="glance-panel") as self.section:
            self.host = view_host(self.view, elem_id="glance")

    def wire(self) -> None:
        app = self.app
        self.host.submit(self.listing, None, [self.host], api_visibility="private")
        # a sentence clicked opens as an example does: traced through the batcher, in Translate's
        # queue (explorer/page.py says why), the box filled
        batched = dict(concurrency_limit=2 * app.batcher.max_batch, concurrency_id=app.api_name("translate"))
        app.then_download(
            self.host.select(self.open, None, [app.src_text, *app.outputs], api_visibility="private", **batched)
        )

    def listing(self, evt: Asked) -> str:
        """The list (see the module docstring), or what to run to make it."""
        if evt.fields.get("action") != "list":
            return message({"action": None, "error": "unknown request"})
        directory = self.app.tr.directory
        g = load_glance(None if directory is None else str(directory))
        if g is None:
            return message({"action": "list", "missing": True, "command": command(directory)})
        return message({"action": "list", **g})

    def open(self, evt: Asked) -> dict:
        """A sentence clicked: translate it in the viewer, its text in the sentence box."""
        text = evt.fields.get("text")
        text = text if isinstance(text, str) else ""
        return {self.app.src_text: text, **self.app.translate(text)}
