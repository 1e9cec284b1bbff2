"""Panels use the page only through ``explorer.panels.base.PanelHost``: every ``self.app.X`` (or
``app.X`` after ``app = self.app``) in a panel module names a member of that interface, and the
page (``explorer.page.App``) has every member."""

from __future__ import annotations

import ast
from pathlib import Path

from explorer.panels.base import PanelHost
from tests.helpers import ROOT

PANELS = sorted((ROOT / "explorer" / "panels").glob("*.py"))


def members() -> set[str]:
    return {n for n in PanelHost.__annotations__} | {
        n for n, v in vars(PanelHost).items() if callable(v) and not n.startswith("_")
    }


def reached(source: str) -> set[str]:
    """The attributes read of ``self.app`` and of a local ``app`` bound to it."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        base = node.value
        if isinstance(base, ast.Attribute) and base.attr == "app" and isinstance(base.value, ast.Name):
            found.add(node.attr)  # self.app.X
        elif isinstance(base, ast.Name) and base.id == "app":
            found.add(node.attr)  # app.X
    return found


def test_panels_reach_the_page_only_through_its_interface():
    outside = {p.name: sorted(reached(p.read_text(encoding="utf-8")) - members()) for p in PANELS}
    assert {k: v for k, v in outside.items() if v} == {}


def test_a_panel_reaching_past_the_interface_is_caught():
    planted = "class P:\n    def f(self):\n        app = self.app\n        return self.app.viewer, app.tr\n"
    assert reached(planted) - members() == {"viewer"}


def test_the_page_has_every_member(app):
    assert all(hasattr(app, name) for name in members())
    assert Path(ROOT / "explorer" / "page.py").is_file()
