"""Small things a new visitor meets, on a 1366×900 laptop and a 390×844 phone: the explanation
of a row on a phone, headings with glossary words, the sentence-B hint of "Why this word?", the
beam tree's box, the epoch panel opened off-screen, the decoder's future columns, readable
importance and epoch maps, and the tour's targets. The app is the shared `python app.py`
(tests/browser/conftest.py). Run alone with
`python -m pytest -m browser tests/browser/test_small_items.py`.
"""

import json
import re

import pytest

from tests.helpers import beam_tree_of, open_panel, open_section, press, settled, slow, state, translate

pytestmark = pytest.mark.browser

SENTENCE = "I have a red car."
LAKE = "My parents live in a small house near the lake."
BIRTHDAY = "Tom gave Mary a beautiful present for her birthday."

BOX = """(e) => { const r = e.getBoundingClientRect();
  return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width, height: r.height}; }"""

# every visible element fixed to the viewport that overlaps the visible part of `sel`
FIXED_OVER = """(sel) => {
  const r = document.querySelector(sel).getBoundingClientRect();
  const top = Math.max(0, r.top), bottom = Math.min(innerHeight, r.bottom);
  return [...document.querySelectorAll('body *')].filter((e) => {
    if (getComputedStyle(e).position !== 'fixed' || e.closest('[hidden]')) return false;
    const b = e.getBoundingClientRect();
    return b.width > 0 && b.height > 0 && b.top < bottom && b.bottom > top && b.left < r.right && b.right > r.left;
  }).map((e) => e.id || e.className || e.tagName);
}"""

# every text drawn on a canvas from now on, with the canvas and the font it was drawn in
RECORD_TEXT = """() => {
  if (window.__drawnText) return;
  window.__drawnText = [];
  const fill = CanvasRenderingContext2D.prototype.fillText;
  CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) {
    window.__drawnText.push({ canvas: this.canvas, text: String(text), font: this.font });
    return fill.call(this, text, ...rest);
  };
}"""
DRAWN_IN = """(sel) => window.__drawnText.filter((d) => d.canvas.isConnected && d.canvas.closest(sel))
  .map((d) => ({ text: d.text, px: parseFloat(/([\\d.]+)px/.exec(d.font)[1]) }))"""


def box(page, sel: str) -> dict:
    return page.locator(sel).first.evaluate(BOX)


def device_page(request, device: str):
    return request.getfixturevalue(device)


# --- 1. "Explain a row" on a phone ---------------------------------------------------------------


def test_explain_a_row_on_a_phone_flows_under_the_map_and_keeps_weight_and_heatmap_in_view(phone):
    page = phone
    translate(page, SENTENCE, step=None)
    press(page, "#explain-btn")
    page.wait_for_selector(".ar-root[data-state='done']", state="attached")
    settled(page, "#attn-plot canvas", "#arith-table")  # under the map, the page scrolled to it
    vw = page.viewport_size["width"]
    # the table's key, weight and heatmap columns are on the phone's screen, inside the table's box
    heads = page.eval_on_selector_all("#arith-table thead th", f"ths => ths.map({BOX})")
    body = box(page, "#arith-body")
    for name, i in (("key", 0), ("weight", 5), ("heatmap", 6)):
        th = heads[i]
        assert th["left"] >= -0.5 and th["right"] <= vw + 0.5, (name, th)
        assert th["left"] >= body["left"] - 0.5 and th["right"] <= body["right"] + 0.5, (name, th, body)
    # it sits under the map, in the page
    assert box(page, "#arith-table")["top"] > box(page, "#attn-plot canvas")["top"]
    # another section scrolled into view: nothing fixed to the screen covers it
    page.mouse.move(1, 1)  # translate() clicked with a mouse: no word's hover tip under it when the page scrolls
    for sel in ("#why-tools", "#sec-lens"):
        page.locator(sel).scroll_into_view_if_needed()
        settled(page, sel)
        assert page.evaluate(FIXED_OVER, sel) == [], sel
    # and it goes away again
    press(page, "#explain-btn")
    page.wait_for_function("() => !document.documentElement.classList.contains('ax-explaining')")
    assert page.locator("#main-view .ar-root").count() == 0


# --- 2. headings with glossary words -------------------------------------------------------------

# (heading, a glossary word in it, its "?", how the heading says it is open); a Gradio
# accordion's title is a button, so its "?" follows it
HEADINGS = [
    (
        "#sec-lens > summary",
        "logit lens",
        "#sec-lens > summary .gl-ask",
        "() => document.querySelector('#sec-lens').open",
    ),
    (
        "#sec-views > summary",
        "rollout",
        "#sec-views > summary .gl-ask",
        "() => document.querySelector('#sec-views').open",
    ),
    (
        "#analysis-panel > .label-wrap",
        "knock-out",
        "#analysis-panel > .gl-ask",
        "() => document.querySelector('#analysis-panel > .label-wrap').classList.contains('open')",
    ),
    (
        "#beam-panel > .label-wrap",
        "beam",
        "#beam-panel > .gl-ask",
        "() => document.querySelector('#beam-panel > .label-wrap').classList.contains('open')",
    ),
]


@pytest.mark.parametrize("device", ["desktop", slow("phone")])
def test_a_click_on_a_glossary_word_in_a_heading_opens_and_closes_its_section(request, device):
    page = device_page(request, device)
    translate(page, SENTENCE, step=None)
    for heading, word, ask, is_open in HEADINGS:
        sel = f"{heading} .gl-term[data-term='{word}']"
        assert page.locator(sel).count() == 1, f"{heading} has no glossary word {word!r}"
        assert not page.evaluate(is_open), heading
        press(page, sel)
        page.wait_for_function(is_open)  # the word opened its section
        press(page, sel)
        page.wait_for_function(f"() => !({is_open})()")  # and closes it again
        # its definition is still there: on hover (a mouse) or behind the heading's "?" (touch)
        if device == "desktop":
            page.locator(sel).hover()
        else:
            press(page, ask)
        page.wait_for_selector("#gl-tip", state="visible")
        assert f"{word}: " in page.inner_text("#gl-tip").lower(), page.inner_text("#gl-tip")
        assert not page.evaluate(is_open), heading  # the "?" only explains
        page.mouse.move(0, 0) if device == "desktop" else page.locator("#step-label").tap()
        page.wait_for_selector("#gl-tip", state="hidden")


# --- 3. sentence B's hint and its empty box -------------------------------------------------------


def test_sentence_b_shows_a_placeholder_hint_and_an_empty_b_is_said_where_b_is_typed(desktop):
    page = desktop
    translate(page, SENTENCE, step=None)
    open_panel(page, "attribution-panel")
    b = page.locator("#attr-patch-b")
    assert b.get_attribute("placeholder"), "no placeholder"
    looks = b.evaluate(
        """(e) => { const p = getComputedStyle(e, '::placeholder'), t = getComputedStyle(e);
        return {pColor: p.color, pStyle: p.fontStyle, tColor: t.color, tStyle: t.fontStyle}; }"""
    )
    # a hint, not a sentence that looks typed: another colour and another shape of letter
    assert looks["pColor"] != looks["tColor"] and looks["pStyle"] == "italic" != looks["tStyle"], looks
    page.click("#attr-patch-btn")
    msg = page.locator("#attr-patch-b-msg")
    msg.wait_for(state="visible")
    assert "sentence B" in msg.inner_text()
    assert page.evaluate("() => document.activeElement.id") == "attr-patch-b"
    assert b.get_attribute("aria-invalid") == "true"
    assert "attr-patch-b-msg" in (b.get_attribute("aria-describedby") or "")
    # the message stands right under (or beside) the box it is about
    m, i = box(page, "#attr-patch-b-msg"), box(page, "#attr-patch-b")
    assert -1 <= m["top"] - i["bottom"] <= 40 or abs(m["top"] - i["top"]) <= 10, (m, i)
    # typing in B takes it away
    b.fill("Tom gave John a present.")
    msg.wait_for(state="hidden")
    assert b.get_attribute("aria-invalid") != "true"


# --- 4. the beam tree fits its box ----------------------------------------------------------------


def test_the_beam_tree_fits_its_box_on_a_laptop(desktop):
    page = desktop
    beam_tree_of(page, BIRTHDAY)
    tree, drawing = box(page, "#beam-tree"), box(page, "#beam-tree svg")
    assert drawing["left"] >= tree["left"] - 0.5 and drawing["right"] <= tree["right"] + 0.5, (drawing, tree)
    root = box(page, "#beam-tree g.bt-node[data-id='0']")
    assert root["left"] >= tree["left"] and root["right"] <= tree["right"], (root, tree)
    assert page.evaluate("() => document.documentElement.scrollWidth <= innerWidth")


# --- 5. the epochs start when their section opens -------------------------------------------------


def test_attention_across_training_draws_when_opened_off_screen(desktop):
    page = desktop
    translate(page, SENTENCE, step=None)
    page.evaluate("() => window.scrollTo(0, 0)")
    # opened by its heading, without scrolling it into view
    page.evaluate("() => document.querySelector('#epoch-panel > .label-wrap').click()")
    page.wait_for_selector("#epoch-panel > .label-wrap.open")
    assert box(page, "#epoch-panel")["top"] > page.viewport_size["height"], "the panel is on screen"
    page.wait_for_selector("#epoch-multiples canvas", state="attached", timeout=120_000)
    assert box(page, "#epoch-multiples")["top"] > page.viewport_size["height"]  # drawn while still off-screen
    assert int(page.get_attribute("#epoch-multiples", "data-epochs")) >= 2


# --- 6. future columns of the decoder's self-attention -------------------------------------------


def test_future_columns_of_decoder_self_attention_are_marked_as_future(desktop):
    page = desktop
    page.evaluate(RECORD_TEXT)
    translate(page, SENTENCE, step=2)
    open_section(page, "views")
    page.select_option("#view-select", "decoder")
    page.wait_for_selector("#attn-plot[data-view='decoder'][data-step='2']", state="attached")
    labels = [d["text"] for d in page.evaluate(DRAWN_IN, "#attn-plot")]
    assert "·" not in labels, labels
    future = [t for t in labels if "future" in t]
    assert future and all(t == "(future)" for t in future), labels
    # as many future columns as inputs not written yet: the trace's steps after step 2
    assert len(future) >= state(page)["trace"]["steps"] - 2, labels


# --- 7. importance and epoch maps readable ----------------------------------------------------------


def test_importance_and_epoch_maps_have_12px_labels_and_numbers_on_hover(desktop):
    page = desktop
    page.evaluate(RECORD_TEXT)
    translate(page, SENTENCE, step=None)
    open_panel(page, "analysis-panel")
    page.click("#importance-btn")
    page.wait_for_selector("#head-importance canvas", timeout=120_000)
    drawn = page.evaluate(DRAWN_IN, "#head-importance")
    assert drawn and min(d["px"] for d in drawn) >= 12, sorted({(d["px"], d["text"]) for d in drawn})[:5]
    canvas = page.locator("#head-importance canvas").first
    canvas.scroll_into_view_if_needed()
    g = json.loads(canvas.get_attribute("data-grid"))
    canvas.hover(position={"x": g["left"] + g["cell"] / 2, "y": g["top"] + g["cell"] / 2})
    page.wait_for_selector("#analysis-tooltip", state="visible")
    assert re.search(r"\d\.\d", page.inner_text("#analysis-tooltip"))
    # in the cells themselves too: one number per head
    assert sum(bool(re.fullmatch(r"−?\d+\.\d\d|0", d["text"])) for d in drawn) >= 3 * state(page)["trace"]["heads"]

    open_panel(page, "epoch-panel")
    page.locator("#epoch-panel").scroll_into_view_if_needed()
    page.wait_for_selector("#epoch-multiples canvas", timeout=120_000)
    drawn = page.evaluate(DRAWN_IN, "#epoch-multiples")
    assert drawn and min(d["px"] for d in drawn) >= 12, sorted({(d["px"], d["text"]) for d in drawn})[:5]
    rows = page.eval_on_selector_all("#epoch-multiples .ax-rowlabel", "ls => ls.map(l => getComputedStyle(l).fontSize)")
    assert rows and min(float(px[:-2]) for px in rows) >= 12, rows
    fig = page.locator("#epoch-multiples canvas").last
    fig.scroll_into_view_if_needed()
    g = json.loads(fig.get_attribute("data-grid"))
    fig.hover(position={"x": g["left"] + g["cellW"] / 2, "y": g["top"] + g["cell"] / 2})
    page.wait_for_selector("#epoch-tooltip", state="visible")
    assert re.search(r"weight: (< )?\d", page.inner_text("#epoch-tooltip")), page.inner_text("#epoch-tooltip")


# --- 8. the tour points at what is on screen -------------------------------------------------------

BANDS = {1: "one row of tiles per layer", 2: "two rows of tiles per layer", 4: "four rows of tiles per layer"}


@pytest.mark.parametrize("device", ["desktop", slow("phone")])
def test_each_tour_step_shows_its_target_on_screen_and_says_what_the_screen_shows(request, device):
    page = device_page(request, device)
    translate(page, LAKE, step=None)
    press(page, "#tour-btn")
    vw = page.viewport_size["width"]
    for i in range(1, 8):
        page.wait_for_selector(f"#tour-bubble[data-step='{i}']")
        bubble, target = box(page, "#tour-bubble"), box(page, ".tour-target")
        room = bubble["top"] if bubble["left"] < target["right"] and bubble["right"] > target["left"] else 10**6
        room = min(room, page.viewport_size["height"])
        # on screen, above the bubble; the whole of it when it fits there
        assert target["top"] < room and target["bottom"] > 0, (i, target, bubble)
        if target["height"] <= room - 16:
            assert 0 <= target["top"] and target["bottom"] <= room + 0.5, (i, target, bubble)
        text = page.inner_text("#tour-text")
        if i == 3:  # "step 1 wrote …": step 1's chip is on screen
            chip = page.locator("#prefix-chips .chip").nth(1).evaluate(BOX)
            assert 0 <= chip["left"] and chip["right"] <= vw and 0 <= chip["top"] and chip["bottom"] <= room, chip
        if i == 5:  # the rows of tiles per layer are as many as the text says, and the map's layer is on screen
            g = json.loads(page.get_attribute("#mosaic", "data-grid"))
            assert BANDS[g["bands"]] in text, (g, text)
            layer = state(page)["layer"] - 1
            canvas = box(page, "#mosaic canvas")
            top = canvas["top"] + g["top"] + layer * g["bands"] * g["stepY"]
            bottom = top + (g["bands"] - 1) * g["stepY"] + g["tileH"]
            assert 0 <= top and bottom <= room + 0.5, (top, bottom, room)
        press(page, "#tour-next")
    page.wait_for_selector("#tour-bubble", state="hidden")
