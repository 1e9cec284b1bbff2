"""The explorer's browser files (``explorer/web/``) and how data goes into a page safely.

No Gradio here: the notebook viewer (:mod:`explorer.notebook`) uses the same files.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

WEB = Path(__file__).resolve().parent / "web"
FIRST_CSS = ("app.css", "viewer.css")  # page-wide rules first, each view's own stylesheet after
IMPORT = re.compile(r'from\s+"\./([\w.-]+\.js)"')


def web_file(name: str) -> str:
    return (WEB / name).read_text(encoding="utf-8")


def html_json(obj) -> str:
    """``obj`` as JSON with every '<' escaped (``\\u003c``), so no text in it can close a
    <script> element or look like markup wherever the JSON is put in a page."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def page_css() -> str:
    """Every stylesheet of the explorer, in one string for the page."""
    rest = sorted(p.name for p in WEB.glob("*.css") if p.name not in FIRST_CSS)
    return "\n".join(web_file(name) for name in (*FIRST_CSS, *rest))


def module_sources(entry: str) -> dict[str, str]:
    """The text of ``entry`` and of every module it imports, directly or not, by file name."""
    out: dict[str, str] = {}
    todo = [entry]
    while todo:
        name = todo.pop()
        if name not in out:
            out[name] = web_file(name)
            todo.extend(IMPORT.findall(out[name]))
    return out
