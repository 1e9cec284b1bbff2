"""The Gradio block each browser view mounts in, and the messages a panel sends to it.

Every view's block is a ``gr.HTML`` running the same bootstrap (``web/gradio-on-load.js``),
which loads ``web/gradio.js`` and mounts the view named by the block's ``view`` prop
(``web/views.js``). The block's value is how its panel answers (JSON, one
:func:`message` per answer); its ``submit`` and ``select`` events are how the view asks
(``gradio.js`` says which is which), with the request in the event's data.
"""

from __future__ import annotations

import itertools
from urllib.parse import quote

import gradio as gr

from .assets import WEB, html_json, module_sources, web_file

BOOTSTRAP = web_file("gradio-on-load.js")
MODULE_URL = "gradio_api/file=" + quote(str(WEB / "gradio.js"))  # served by the app (gr.set_static_paths)
_serial = itertools.count(1)


def view_host(view: str, elem_id: str, value: str = "", data=None, **kwargs) -> gr.HTML:
    """The block of browser view ``view``; ``data`` (JSON-ready) travels once, with the page."""
    return gr.HTML(
        value,
        html_template='<div class="ex-host"></div>',
        js_on_load=BOOTSTRAP,
        apply_default_css=False,
        elem_id=elem_id,
        module_url=MODULE_URL,
        view=view,
        data=html_json(data) if data is not None else "",
        **kwargs,
    )


def page_head() -> str:
    """What the page's ``<head>`` gets: its icon and the module preloads."""
    return icon_link() + "\n" + module_preloads()


def icon_link() -> str:
    """The page's icon (``web/icon.svg``) inline, as a ``data:`` URL. A page with no icon link
    makes Chromium ask the server for ``/favicon.ico`` again whenever the address changes, and
    the viewer writes its step into the address on every click."""
    return f'<link rel="icon" type="image/svg+xml" href="data:image/svg+xml,{quote(web_file("icon.svg").strip())}">'


def module_preloads() -> str:
    """A ``<link rel="modulepreload">`` for ``gradio.js`` and every module it imports, for the
    page's head: the browser then fetches them all at once, with the page, instead of finding
    them one import level at a time after the bootstrap runs (the viewer alone is six levels deep)."""
    return "\n".join(
        f'<link rel="modulepreload" href="gradio_api/file={quote(str(WEB / name))}">'
        for name in sorted(module_sources("gradio.js"))
    )


def message(obj: dict) -> str:
    """A panel's answer to its view: ``obj`` as page-safe JSON, numbered, so that the view
    hears every answer, even one equal to the last."""
    return html_json({**obj, "seq": next(_serial)})
