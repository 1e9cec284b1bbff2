"""The explorer's viewer in Jupyter: ``show_trace(trace)`` (also ``trace.show()``).

Why: one viewer implementation for the Space and for notebooks. The output embeds the
same ES modules as the Space (``transformer/web/*.js``, read from the package) and the
same compact payload (:mod:`transformer.payload`), so it works offline with no server
and no extension. The modules travel as text and are turned into ``blob:`` modules by
``web/notebook-loader.js``; every token is inserted as text by the viewer.
"""

from __future__ import annotations

import json
from pathlib import Path

from .payload import encode_trace

WEB = Path(__file__).resolve().parent / "web"
MODULES = ("payload.js", "draw.js", "heatmap.js", "charts.js", "viewer.js")


def _script_json(obj) -> str:
    """JSON that is safe inside a <script> element: no '<' can close it or open a comment."""
    return json.dumps(obj, ensure_ascii=False).replace("<", "\\u003c")


def viewer_html(payload: dict) -> str:
    """A self-contained HTML fragment: a host element, the styles, the data and the loader."""
    data = {"payload": payload, "modules": {name: (WEB / name).read_text(encoding="utf-8") for name in MODULES}}
    return (
        '<div class="attention-explorer-notebook"></div>'
        f'<script type="application/json" data-attention-explorer>{_script_json(data)}</script>'
        f"<style>{(WEB / 'viewer.css').read_text(encoding='utf-8')}</style>"
        f'<script type="module">{(WEB / "notebook-loader.js").read_text(encoding="utf-8")}</script>'
    )


class ViewerHTML:
    """Fallback when IPython is not installed: anything that knows ``_repr_html_`` shows it."""

    def __init__(self, html: str) -> None:
        self.data = html

    def _repr_html_(self) -> str:
        return self.data


def show_trace(trace):
    """An IPython-displayable viewer for ``trace`` (an ``IPython.display.HTML`` when available)."""
    html = viewer_html(encode_trace(trace))
    try:
        from IPython.display import HTML
    except ImportError:
        return ViewerHTML(html)
    return HTML(html)
