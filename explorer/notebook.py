"""The explorer's viewer in Jupyter: ``show_trace(trace)``.

Why: one viewer implementation for the Space and for notebooks. The output embeds the
same ES modules as the Space (``explorer/web/viewer.js`` and what it imports, read from
the package) and the same compact payload (:mod:`explorer.payload`), so it works offline
with no server and no extension. The modules travel as text and are turned into ``blob:``
modules by ``web/notebook-loader.js``; every token is inserted as text by the viewer.
"""

from __future__ import annotations

from .assets import html_json, module_sources, web_file
from .payload import encode_trace

ENTRIES = ("viewer.js", "store.js")  # what the loader imports; module_sources adds their imports


def modules() -> dict[str, str]:
    """The text of every module the notebook viewer needs, by file name."""
    out: dict[str, str] = {}
    for entry in ENTRIES:
        out.update(module_sources(entry))
    return out


def viewer_html(payload: dict) -> str:
    """A self-contained HTML fragment: a host element, the styles, the data and the loader."""
    data = {"payload": payload, "modules": modules()}
    return (
        '<div class="attention-explorer-notebook"></div>'
        f'<script type="application/json" data-attention-explorer>{html_json(data)}</script>'
        f"<style>{web_file('theme.css')}{web_file('viewer.css')}</style>"
        f'<script type="module">{web_file("notebook-loader.js")}</script>'
    )


class ViewerHTML:
    """Fallback when IPython is not installed: anything that knows ``_repr_html_`` shows it."""

    def __init__(self, html: str) -> None:
        self.data = html

    def _repr_html_(self) -> str:
        return self.data


def show_trace(trace, names=None):
    """An IPython-displayable viewer for ``trace`` (an ``IPython.display.HTML`` when available).
    ``names``: its model's (``explorer.names.of_translator(tr)``), so a Marian model's labels say
    </s>; without them the labels name the shipped model's languages and tokens."""
    html = viewer_html(encode_trace(trace, names=names))
    try:
        from IPython.display import HTML
    except ImportError:
        return ViewerHTML(html)
    return HTML(html)
