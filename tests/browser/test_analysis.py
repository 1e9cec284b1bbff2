"""The analysis features as a person uses them: a real `python app.py` in headless Chromium.
Rollout view, logit lens, head diagnostics, knock-out and head importance.

Run alone with `python -m pytest -m browser tests/browser/test_analysis.py`; the app and the
browser are started once for every browser test (tests/browser/conftest.py). Checks are structural (ids, data-*
attributes, the store through the page's test handle), so a retrained checkpoint still passes.
"""

import json

import pytest

from tests.helpers import grid, open_panel, open_section, painted, row_labels, state, steps, translate

# the slow set: a long walk through the page (python -m pytest -m slow)
pytestmark = [pytest.mark.browser, pytest.mark.slow]

SENTENCE = "The black cat is sleeping on the red chair."


def test_rollout_view_and_logit_lens_step_in_the_browser(server, page):
    url, _ = server
    page.goto(url)
    translate(page, SENTENCE)
    T, L = steps(page), state(page)["trace"]["layers"]["decoder"]
    open_section(page, "lens")
    open_section(page, "views")
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    for step in (1, 2, T):
        page.eval_on_selector(
            "#step-slider", "(s, v) => { s.value = v; s.dispatchEvent(new Event('input')); }", str(step)
        )
        page.wait_for_selector(f"#logit-lens[data-step='{step}']", state="attached")
        assert page.locator("#logit-lens tbody tr").count() == L  # one row per decoder layer
        assert page.locator("#logit-lens thead th").count() == 1 + 5
        emitted = state(page)["trace"]["tgt"][step]
        last = page.locator("#logit-lens tbody tr").nth(L - 1).locator("td").first
        assert "ax-emitted" in last.get_attribute("class")  # greedy: the last layer's top-1 is the output
        assert last.locator(".ax-lens-tok").inner_text() == emitted
        assert all(
            c.locator(".ax-lens-tok").inner_text() == emitted for c in page.locator("#logit-lens td.ax-emitted").all()
        )
        assert "top-1" in page.inner_text("#logit-lens-note")

    page.select_option("#view-select", "rollout")
    page.wait_for_selector(f"#attn-plot[data-view='rollout'][data-step='{T}']", state="attached")
    assert page.is_disabled("#layer-select") and page.is_disabled("#head-select")  # they do not apply
    assert page.is_visible("#rollout-note") and "Layer and head do not apply" in page.inner_text("#rollout-note")
    assert page.is_visible("#enc-rollout canvas") and not page.is_visible("#mosaic")
    assert not page.is_visible("#attn-note")  # it speaks of the mosaic, which rollout hides
    page.eval_on_selector("#step-slider", "(s) => { s.value = 2; s.dispatchEvent(new Event('input')); }")
    painted(page, 2)
    g = grid(page)
    assert (g["rows"], g["cols"]) == (T, len(state(page)["trace"]["src"]))  # rows: steps, cols: source tokens
    # the title names the formula; future rows are hidden
    assert "Chefer" in page.inner_text("#attn-plot .ax-title")
    assert [future for _, future in row_labels(page)] == [i >= 2 for i in range(T)]
    # the painted pixels: the current row is coloured, a future row is the flat 'not generated' grey
    colours = page.evaluate(
        """(g) => { const c = document.querySelector('#attn-plot canvas'), x = c.getContext('2d');
        const k = c.width / parseFloat(c.style.width), px = (r) => Array.from(x.getImageData(
          Math.round((g.left + 0.5 * g.cellW) * k), Math.round((g.top + (r + 0.5) * g.cell) * k), 1, 1)
          .data).slice(0, 3);
        return [px(1), px(g.rows - 1)]; }""",
        g,
    )
    assert colours[0] != colours[1]
    page.locator("#attn-plot canvas").scroll_into_view_if_needed()
    box = page.locator("#attn-plot canvas").bounding_box()
    page.mouse.move(box["x"] + g["left"] + 1.5 * g["cellW"], box["y"] + g["top"] + 0.5 * g["cell"])
    assert "relevance:" in page.inner_text("#viewer-tooltip") and "Chefer" in page.inner_text("#viewer-tooltip")
    page.mouse.move(0, 0)
    page.select_option("#view-select", "encoder")
    page.wait_for_selector("#attn-plot[data-view='encoder']", state="attached")
    assert not page.is_disabled("#layer-select") and not page.is_visible("#enc-rollout canvas")
    assert page.is_visible("#attn-note")  # the note about heads and the mosaic is back with them
    assert requests == [], requests  # all of it drawn from the payload


def test_diagnostics_hover_names_the_habit_and_click_opens_the_head(server, page):
    url, _ = server
    page.goto(url)
    translate(page, SENTENCE)
    open_panel(page, "analysis-panel")
    page.select_option("#diag-measure", "prev")  # one measure at a time
    sel = "#head-diagnostics canvas[data-kind='decoder_self'][data-measure='prev']"
    canvas = page.locator(sel)
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    g = grid(page, sel)  # where drawHeadMap put its grid (heatmap.js)
    left, top, cell = g["left"], g["top"], g["cell"]
    page.mouse.move(box["x"] + left + 2.5 * cell, box["y"] + top + 1.5 * cell)  # layer 2, head 3
    tip = page.locator("#analysis-tooltip")
    assert tip.is_visible()
    habit = state(page)["trace"]["headStats"]["kinds"]["decoder_self"]["habit"][1][2]
    assert habit and f"decoder self-attention, layer 2, head 3: {habit}" in tip.inner_text()
    assert "previous-token share" in tip.inner_text()
    page.mouse.click(box["x"] + left + 2.5 * cell, box["y"] + top + 1.5 * cell)
    page.wait_for_selector("#attn-plot[data-view='decoder'][data-layer='2'][data-head='3']", state="attached")


def test_select_heads_and_knock_them_out(server, page):
    url, _ = server
    page.goto(url)
    translate(page, SENTENCE)
    original = page.locator("#translation textarea").input_value()
    open_section(page, "views")
    open_panel(page, "analysis-panel")
    # the Space can knock heads out, so heads can be selected (the box shows once the panel has mounted)
    page.wait_for_selector("#select-mode", state="visible")
    assert page.is_disabled("#knockout-btn")  # nothing selected yet: nothing to knock out
    # shift-click a tile of the all-heads mosaic (cross-attention, layer 1, head 2)
    g = grid(page, "#mosaic")
    mosaic = page.locator("#mosaic canvas")
    shown = page.get_attribute("#attn-plot", "data-head")
    mosaic.click(position={"x": g["left"] + g["stepX"] + 2, "y": g["top"] + 2}, modifiers=["Shift"])
    page.wait_for_selector("#ko-selection .chip[data-head='cross:1:2']")
    assert page.get_attribute("#attn-plot", "data-head") == shown  # shift-click selects, does not open
    assert not page.is_disabled("#knockout-btn")
    # select mode: a plain click on layer 2, head 1 adds it too; a second click removes it
    page.check("#select-mode")
    mosaic.click(position={"x": g["left"] + 2, "y": g["top"] + g["stepY"] + 2})
    page.wait_for_selector("#ko-selection .chip[data-head='cross:2:1']")
    mosaic.click(position={"x": g["left"] + 2, "y": g["top"] + g["stepY"] + 2})
    page.wait_for_selector("#ko-selection .chip[data-head='cross:2:1']", state="detached")
    page.uncheck("#select-mode")
    assert page.locator("#ko-selection .chip").count() == 1
    assert state(page)["selection"] == [{"kind": "cross", "layer": 1, "head": 2}]

    page.click("#knockout-btn")
    page.wait_for_selector("#ko-result[data-state='done']", state="attached", timeout=120_000)
    text = page.inner_text("#ko-result")
    assert "cross-attention, layer 1, head 2" in text  # names the knocked-out head
    assert page.inner_text("#ko-original") == original
    assert page.inner_text("#ko-translation").strip()  # the new translation, beside the original
    assert page.locator("#ko-result canvas").count() == 1  # p(original token) per step, drawn here

    # knocking out every cross-attention head changes the translation: pick them all in select mode
    page.click("#ko-selection .ax-chip-clear")
    layers, heads = state(page)["trace"]["layers"]["cross"], state(page)["trace"]["heads"]
    page.check("#select-mode")
    for layer in range(layers):
        for head in range(heads):
            mosaic.click(position={"x": g["left"] + head * g["stepX"] + 2, "y": g["top"] + layer * g["stepY"] + 2})
    page.uncheck("#select-mode")
    page.wait_for_function("(n) => window.__explorer.getState().selection.length === n", arg=layers * heads)
    page.click("#knockout-btn")
    page.wait_for_function(
        "() => { const r = document.querySelector('#ko-result');"
        " return r.dataset.state === 'done' && r.innerText.includes('heads:'); }",
        timeout=120_000,
    )
    assert page.inner_text("#ko-translation") != original

    # a new sentence drops the old results (they would look current)
    translate(page, "I have a red car.")
    page.wait_for_selector("#ko-result:not([data-state])", state="attached")


def test_head_importance_maps_paint_and_open_a_head(server, page):
    url, _ = server
    page.goto(url)
    translate(page, SENTENCE)
    open_panel(page, "analysis-panel")
    page.click("#importance-btn")
    page.wait_for_selector("#head-importance[data-state='done']", state="attached", timeout=120_000)
    maps = page.locator("#head-importance canvas")
    assert maps.count() == 3
    for c in maps.all():
        assert float(c.evaluate("c => parseFloat(c.style.width)")) > 100
    cross = page.locator("#head-importance canvas[data-kind='cross']")
    g = json.loads(cross.get_attribute("data-grid"))  # where drawHeadMap put the grid
    cross.click(position={"x": g["left"] + 2.5 * g["cell"], "y": g["top"] + 1.5 * g["cell"]})  # layer 2, head 3
    page.wait_for_selector("#attn-plot[data-view='cross'][data-layer='2'][data-head='3']", state="attached")
    page.wait_for_selector("#ko-selection .chip[data-head='cross:2:3']")  # and it joins the knock-out selection
