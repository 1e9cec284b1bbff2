"""Labels a person reads on the page, each saying what its control or picture really is: the
whole view's PNG button, the caption over "What moved", the viewer sections the analysis panel
names, the trace's download on the opening example, the names of the main view's PNG files,
and the head of each weight in Lines. The app is a real `python app.py` (tests/browser/conftest.py)
in headless Chromium. Run alone with `python -m pytest -m browser tests/browser/test_labels.py`.
"""

import json
import re
from pathlib import Path

import pytest
from PIL import Image

from tests.helpers import open_panel, painted, press

pytestmark = pytest.mark.browser

PNG_NAME = "Download this view as a PNG image"
# the buttons over the map, left to right; a hidden one (no panel to explain with) is left out
MAP_BUTTONS = ("#explain-btn", "#moved-btn", "#picture-picker", "#present-btn", "#download-view-png")


def settings(page) -> dict:
    return page.evaluate(
        "() => { const s = window.__explorer.getState();"
        " return {view: s.view, layer: s.layer, head: s.head, step: s.step, picture: s.picture}; }"
    )


def test_the_view_png_button_reads_png_at_every_width_and_the_map_buttons_keep_one_row(desktop, phone):
    for page in (desktop, phone):
        button = page.locator("#download-view-png")
        assert button.inner_text().strip() == "PNG", page.device  # not "(PNG)": a label, at any width
        assert button.get_attribute("title") == PNG_NAME
        assert page.get_by_role("button", name=PNG_NAME, exact=True).count() == 1
    # at 1366 the buttons over the map stand in one row
    rows = desktop.evaluate(
        """(sels) => sels.map((s) => document.querySelector(s)).filter((e) => e && e.offsetParent)
          .map((e) => { const r = e.getBoundingClientRect(); return [e.id, r.top + r.height / 2, r.height]; })""",
        list(MAP_BUTTONS),
    )
    assert len(rows) >= 3, rows
    middle = rows[0][1]
    assert all(abs(m - middle) < h / 2 for _, m, h in rows), rows


def test_what_moved_says_so_in_the_caption_over_the_map(desktop):
    page = desktop
    weights = page.inner_text("#attn-caption")
    press(page, "#moved-btn")
    page.wait_for_selector("#attn-plot[data-moved='1']", state="attached", timeout=90_000)
    caption = page.inner_text("#attn-caption")
    assert caption != weights and "moved" in caption and "‖α·f(x)‖" in caption, caption
    press(page, "#moved-btn")  # back to the weights, and their caption
    page.wait_for_selector("#attn-plot[data-moved='']", state="attached")
    assert page.inner_text("#attn-caption") == weights


def test_the_analysis_panel_names_the_viewer_sections_as_they_are_titled(desktop):
    page = desktop
    open_panel(page, "analysis-panel")
    text = page.locator("#analysis-panel").get_by_text("sections of the viewer above").inner_text()
    named = [a or b for a, b in re.findall(r"“([^”]+)”|\"([^\"]+)\"", text)]
    assert named, text
    # each section's title as it stands on the page (without the glossary's "?" button)
    titles = page.eval_on_selector_all(
        "#viewer details[data-section] > summary",
        """ss => ss.map((s) => { const c = s.cloneNode(true); c.querySelectorAll('button').forEach((b) => b.remove());
          return c.textContent.trim(); })""",
    )
    assert set(named) <= set(titles), (named, titles)


def test_the_opening_examples_trace_downloads_at_once(desktop):
    page = desktop
    assert not page.is_disabled("#download-trace")  # the opening example is a trace like any other
    with page.expect_download() as download:
        page.click("#download-trace")
    trace = json.loads(Path(download.value.path()).read_text(encoding="utf-8"))
    assert trace["src_text"] == page.evaluate("() => window.__explorer.getState().sentence")


def test_the_main_view_png_names_its_picture_view_layer_head_and_step(desktop):
    page = desktop
    names = {}
    for picture in ("map", "lines"):
        press(page, f"#picture-{picture}")
        page.wait_for_selector(f"#main-view[data-picture='{picture}']", state="attached")
        s = settings(page)
        with page.expect_download() as download:
            press(page, "#download-view-png")
        name = names[picture] = download.value.suggested_filename
        head = f"head{s['head']}" if s["head"].isdigit() else s["head"]  # "head4", or "mean" of the heads
        for part in (picture, s["view"], f"layer{s['layer']}", head, f"step{s['step']}"):
            assert part in name, (part, name)
        if picture == "lines":  # the picture itself is in the file, under the heading lines
            height = float(page.get_attribute("#attn-lines svg.ln-svg", "height"))
            assert Image.open(download.value.path()).height > height
    assert names["map"] != names["lines"]


def test_hovering_a_token_in_lines_with_every_head_names_the_head_of_each_weight(desktop):
    page = desktop
    press(page, "#picture-lines")
    press(page, "#line-heads button[data-head='all']")
    page.wait_for_selector("#attn-lines[data-head='mean'][data-lines]", state="attached")
    painted(page)
    page.hover("#attn-lines g.ln-tok.current")
    page.wait_for_selector("#attn-lines[data-isolated^='q'] .ln-weights text", state="attached")
    shown = page.eval_on_selector_all("#attn-lines .ln-weights text", "ts => ts.map((t) => t.textContent)")
    weight = r"h(\d+) (?:\d\.\d+|< 0\.001)"
    for text in shown:
        assert re.fullmatch(rf"{weight}(?: · {weight})*", text), shown
    assert any(len(re.findall(weight, t)) > 1 for t in shown), shown  # several heads at one token
