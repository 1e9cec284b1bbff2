"""Things a learner trips over, on a 1366×900 laptop, a 1920×1080 projector and a 390×844
phone: the explanation of a row beside the map (the controls stay on screen, every column of
its table shows, hiding it gives the page back), the beam tree's labels, the wide tables of the
panels on a phone, and the tour giving the page back when it ends. The app is the shared
`python app.py` (tests/browser/conftest.py). Run alone with
`python -m pytest -m browser tests/browser/test_learner_defects.py`.
"""

import pytest

from tests.helpers import beam_tree_of, open_panel, press, settled, slow, translate

pytestmark = pytest.mark.browser

BIRTHDAY = "Tom gave Mary a beautiful present for her birthday."
LAKE = "My parents live in a small house near the lake."
SCREENS = {"laptop": (1366, 900), "projector": (1920, 1080)}

BOX = """(e) => { const r = e.getBoundingClientRect();
  return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width, height: r.height}; }"""


def box(page, sel: str) -> dict:
    return page.locator(sel).first.evaluate(BOX)


def scroll_y(page) -> float:
    return page.evaluate("() => window.scrollY")


# --- 1. "Explain a row" beside the map ---------------------------------------------------------------


@pytest.mark.parametrize("screen", ["laptop", slow("projector")])
def test_explain_a_row_keeps_the_controls_and_every_column_on_screen_and_hide_gives_the_page_back(desktop, screen):
    page = desktop
    width, height = SCREENS[screen]
    page.set_viewport_size({"width": width, "height": height})
    translate(page, BIRTHDAY, step=None)
    page.evaluate("() => window.scrollTo(0, 60)")  # the visitor has scrolled the page a little
    settled(page, "#attn-plot canvas")
    before = scroll_y(page)
    assert before > 0
    press(page, "#explain-btn")
    page.wait_for_selector(".ar-root[data-state='done']", state="attached")
    settled(page, "#attn-plot canvas", "#arithmetic-panel", "#arith-table")
    # the step, layer and head controls, the map and its explanation, all on the one screen
    for sel in ("#prev-btn", "#next-btn", "#step-slider", "#layer-buttons", "#head-buttons", "#attn-plot canvas"):
        b = box(page, sel)
        assert b["top"] >= -0.5 and b["bottom"] <= height + 0.5, (sel, b)
        assert b["left"] >= -0.5 and b["right"] <= width + 0.5, (sel, b)
    panel, canvas = box(page, "#arithmetic-panel"), box(page, "#attn-plot canvas")
    assert panel["left"] >= canvas["right"] - 1, (canvas, panel)  # beside the map, not over it
    # every column of the table in its box, with no sideways scroll
    body = box(page, "#arith-body")
    heads = page.eval_on_selector_all("#arith-table thead th", f"ths => ths.map({BOX})")
    assert len(heads) == 9
    for i, th in enumerate(heads):
        assert th["left"] >= body["left"] - 0.5 and th["right"] <= body["right"] + 0.5, (i, th, body)
        assert th["right"] <= width + 0.5, (i, th)
    assert page.evaluate("() => document.documentElement.scrollWidth <= innerWidth")
    # "Hide the explanation": the page as it was
    press(page, "#explain-btn")
    page.wait_for_function("() => !document.documentElement.classList.contains('ax-explaining')")
    settled(page, "#attn-plot canvas")
    assert abs(scroll_y(page) - before) <= 1, (scroll_y(page), before)


# --- 2. the beam tree's labels --------------------------------------------------------------------

# the size every text of the tree is drawn at on screen: its font size times the tree's zoom
TREE_TEXT = """() => {
  const svg = document.querySelector('#beam-tree svg');
  const z = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  return [...svg.querySelectorAll('text')].map((t) => ({ text: t.textContent,
    px: parseFloat(getComputedStyle(t).fontSize) * z, kind: t.classList.contains('bt-colhead') ? 'head' : 'node' }));
}"""


def test_the_beam_tree_labels_are_12px_or_more_and_the_tree_fits_its_box(desktop):
    page = desktop
    beam_tree_of(page, BIRTHDAY)
    texts = page.evaluate(TREE_TEXT)
    assert texts and min(t["px"] for t in texts) >= 12, sorted((round(t["px"], 1), t["kind"]) for t in texts)[:3]
    tree, drawing = box(page, "#beam-tree"), box(page, "#beam-tree svg")
    assert drawing["left"] >= tree["left"] - 0.5 and drawing["right"] <= tree["right"] + 0.5, (drawing, tree)


# --- 3. wide tables on a phone --------------------------------------------------------------------

# where a table (or a map's stage) stands: the nearest box that clips it, whether it fits there,
# and, if that box scrolls, whether its first column is still in view once scrolled to the end
FIRST_COLUMN = """(sel) => {
  const t = document.querySelector(sel), vw = document.documentElement.clientWidth;
  let box = t.parentElement;
  while (box && getComputedStyle(box).overflowX === 'visible') box = box.parentElement;
  const tb = t.getBoundingClientRect(), bb = box.getBoundingClientRect();
  const onScreen = bb.left >= -0.5 && bb.right <= vw + 0.5;
  const fits = onScreen && tb.left >= bb.left - 0.5 && tb.right <= bb.right + 0.5;
  const scrolls = ['auto', 'scroll'].includes(getComputedStyle(box).overflowX) && box.scrollWidth > box.clientWidth;
  const first = [...t.querySelectorAll(t.matches('table') ? 'tr > :first-child' : '.ax-rowlabel')];
  const keep = box.scrollLeft;
  box.scrollLeft = box.scrollWidth;
  const inner = box.getBoundingClientRect().left + box.clientLeft;
  const shown = first.map((c) => c.getBoundingClientRect()).filter((c) => c.width > 0)
    .every((c) => c.left >= inner - 0.5 && c.right <= inner + box.clientWidth + 0.5);
  box.scrollLeft = keep;
  return { fits, onScreen, scrolls, firstShown: shown && first.length > 0, width: tb.width, room: box.clientWidth };
}"""

# the arithmetic's key, weight and heatmap columns (its 1st, 6th and 7th) inside its box, unscrolled
ARITH_KEY_COLUMNS = """() => {
  const body = document.querySelector('#arith-body').getBoundingClientRect();
  return [0, 5, 6].map((i) => document.querySelectorAll('#arith-table thead th')[i].getBoundingClientRect())
    .every((th) => th.left >= body.left - 0.5 && th.right <= body.right + 0.5);
}"""


def test_the_panels_tables_fit_a_phone_or_scroll_in_their_box_with_their_first_column(phone):
    page = phone
    translate(page, BIRTHDAY, step=None)
    open_panel(page, "sources-panel")
    page.wait_for_selector("#src-lens-table", state="attached", timeout=120_000)
    page.fill("#src-ref", "Tom ha regalato a Maria un bellissimo regalo per il suo compleanno.")
    press(page, "#src-score-btn")
    page.wait_for_selector("#src-score-table", state="attached", timeout=120_000)
    open_panel(page, "arithmetic-panel")
    page.wait_for_selector("#arithmetic .ar-root[data-state='done']", state="attached", timeout=120_000)
    open_panel(page, "epoch-panel")
    page.wait_for_selector("#epoch-multiples canvas", state="attached", timeout=120_000)
    settled(page, "#epoch-multiples", "#arith-table", "#src-score-table")
    seen = {sel: page.evaluate(FIRST_COLUMN, sel) for sel in ("#src-lens-table", "#epoch-multiples .ax-stage")}
    # these fit the phone's screen
    assert all(s["fits"] for s in seen.values()), seen
    # these are wider than a phone: they scroll in their own box, their first column kept in view
    for sel in ("#src-score-table", "#arith-table"):
        s = page.evaluate(FIRST_COLUMN, sel)
        assert s["fits"] or (s["onScreen"] and s["scrolls"] and s["firstShown"]), (sel, s)
    # the arithmetic as on a phone's "Explain a row": key, weight and the heatmap's weight in view together
    assert page.evaluate(ARITH_KEY_COLUMNS)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= page.viewport_size["width"]


# --- 4. the tour gives the page back ----------------------------------------------------------------


def open_sections(page) -> list:
    return page.evaluate("() => window.__explorer.getState().open || []")


@pytest.mark.parametrize(("device", "how"), [("desktop", "done"), slow("desktop", "skip"), slow("phone", "done")])
def test_the_tour_ends_where_it_started(request, device, how):
    page = request.getfixturevalue(device)
    translate(page, LAKE, step=None)
    page.evaluate("() => window.scrollTo(0, 30)")
    settled(page, "#attn-plot canvas")
    before, sections = scroll_y(page), open_sections(page)
    press(page, "#tour-btn")
    last = 7 if how == "done" else 5  # "Skip tour" after step 5 has opened "More views"
    for i in range(1, last + 1):
        page.wait_for_selector(f"#tour-bubble[data-step='{i}']")
        if i < last:
            press(page, "#tour-next")
    assert "views" in open_sections(page)  # the tour opened a section on its way
    press(page, "#tour-next" if how == "done" else "#tour-skip")
    page.wait_for_selector("#tour-bubble", state="hidden")
    settled(page, "#attn-plot canvas", "#sec-views")
    assert open_sections(page) == sections
    assert not page.eval_on_selector("#sec-views", "d => d.open")
    assert abs(scroll_y(page) - before) <= 1, (scroll_y(page), before)
