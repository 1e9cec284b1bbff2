"""The picture where room is short: a phone's first screen, a map wider or taller than its box,
a page whose layout moves after the map was fitted, presentation mode on a long sentence, and a
card docked at the bottom of the window (the CSS length ``--ax-dock``).

Measured as a person meets the page: bounding boxes in the real app, on a 390×844 touch phone,
a 1366×900 laptop and a 1920×1080 projector, in the light and the dark colour scheme.
"""

from __future__ import annotations

import pytest

from tests.helpers import go_to_step, screen_page, painted, settled, slow, state, translate

SIX = "I have a red car today."
EIGHTEEN = "My old friend from school told me yesterday that she will move to Rome with her two children next year."
TWELVE = "Tom gave Mary a beautiful present for her birthday at the party."
LONG = (
    "When we arrived at the old station late last night, the train to Milan had already left, "
    "so we had to find a small hotel near the square and wait until the morning."
)
PHONE = (390, 844)
MAP = "#attn-plot canvas"

BOX = """(sel) => { const e = document.querySelector(sel); if (!e) return null;
  const b = e.getBoundingClientRect(); return {left: b.left, top: b.top, right: b.right, bottom: b.bottom,
  width: b.width, height: b.height}; }"""

# the map's box, its grid and the columns the map should keep in view: for cross-attention the
# darkest cell of the current row (the largest weight, on the light theme's scale), for the
# decoder's self-attention the current step's own column
FOLLOWED = """() => {
  const s = window.__explorer.getState(), fig = document.querySelector('#attn-plot');
  const canvas = fig.querySelector('canvas'), box = fig.querySelector('.ax-scroll');
  const rows = fig.querySelector('.ax-rows');
  const g = JSON.parse(fig.dataset.grid), scale = canvas.width / parseFloat(canvas.style.width);
  let cols = [s.step - 1];
  if (s.view === 'cross') {
    const y = g.top + (s.step - 0.5) * g.cell, ink = [];
    for (let c = 0; c < g.cols; c++) {
      const p = canvas.getContext('2d').getImageData(Math.round((g.left + (c + 0.5) * g.cellW) * scale),
        Math.round(y * scale), 1, 1).data;
      ink.push(765 - p[0] - p[1] - p[2]);
    }
    const most = Math.max(...ink);
    cols = ink.map((v, c) => [v, c]).filter(([v]) => v >= most - 3).map(([, c]) => c);
  }
  const b = box.getBoundingClientRect();
  const centre = (c) => b.left + g.rowW + g.left + (c + 0.5) * g.cellW - box.scrollLeft;
  const from = rows.getBoundingClientRect().right, to = b.left + box.clientWidth;
  const seen = cols.some((c) => centre(c) >= from - 1 && centre(c) <= to + 1);
  return { cols, centres: cols.map(centre), from, to, seen,
    boxLeft: b.left, rowsLeft: rows.getBoundingClientRect().left, scrollLeft: box.scrollLeft,
    wide: box.scrollWidth > box.clientWidth + 1 };
}"""


def box(page, sel: str) -> dict:
    b = page.evaluate(BOX, sel)
    assert b is not None, f"{sel} is not on the page"
    return b


def close(ctx, page):
    ctx.close()
    assert not page.errors, page.errors


def rest(page):
    settled(page, MAP, "#prev-btn", "#attn-plot .ax-rowlabel.current")


def seen(page, sel: str, bottom: float | None = None) -> dict:
    """The element is wholly inside the window (above ``bottom``, if given) and nothing covers
    its centre."""
    b, h = box(page, sel), page.evaluate("innerHeight") if bottom is None else bottom
    assert b["height"] > 0 and 0 <= b["top"] and b["bottom"] <= h + 1, (sel, b, h)
    on_top = page.evaluate(
        "([sel, x, y]) => { const e = document.elementFromPoint(x, y); return !!e && !!e.closest(sel); }",
        [sel, (b["left"] + b["right"]) / 2, (b["top"] + b["bottom"]) / 2],
    )
    assert on_top, f"{sel} is covered"
    return b


def map_and_steps_on_one_screen(page) -> None:
    """The map's top in the upper 60 % of the window, and the step control and the current row
    on screen with it."""
    h = page.evaluate("innerHeight")
    top = box(page, MAP)["top"]
    assert 0 <= top <= 0.6 * h, (top, h)
    for sel in ("#prev-btn", "#next-btn", "#attn-plot .ax-rowlabel.current"):
        seen(page, sel)


# --- 1. a phone's first screen -----------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["light", slow("dark")])
def test_a_phone_meets_the_map_and_its_step_control_on_the_first_screen(browser, app_server, scheme):
    ctx, page = screen_page(browser, app_server.url, scheme=scheme)
    painted(page)
    rest(page)
    assert page.evaluate("scrollY") == 0
    map_and_steps_on_one_screen(page)
    # the sentence and Translate are on that screen too, the text large enough not to zoom (iOS)
    seen(page, "#src-text textarea")
    seen(page, "#translate-btn")
    assert page.eval_on_selector("#src-text textarea", "e => parseFloat(getComputedStyle(e).fontSize)") >= 16
    close(ctx, page)


@pytest.mark.parametrize(
    "sentence, scheme", [(SIX, "light"), (EIGHTEEN, "dark"), slow(SIX, "dark"), slow(EIGHTEEN, "light")]
)
def test_after_translate_a_phone_shows_the_map_with_its_step_control_at_every_step(
    browser, app_server, sentence, scheme
):
    ctx, page = screen_page(browser, app_server.url, scheme=scheme)
    painted(page)
    translate(page, sentence, step=None)
    rest(page)
    map_and_steps_on_one_screen(page)
    # later in the sentence the current row is still on the screen the step control is on
    n = state(page)["trace"]["steps"]
    for step in sorted({min(15, n), n}):
        go_to_step(page, step)
        rest(page)
        for sel in ("#prev-btn", "#next-btn", "#attn-plot .ax-rowlabel.current"):
            seen(page, sel)
    close(ctx, page)


@pytest.mark.parametrize("how", ["link", slow("example")])
def test_a_sentence_opened_by_a_link_or_an_example_brings_the_phone_map_into_view(browser, app_server, how):
    path = "?text=" + EIGHTEEN.replace(" ", "%20") if how == "link" else ""
    ctx, page = screen_page(browser, app_server.url, path=path)
    if how == "link":
        page.wait_for_function("(t) => window.__explorer.getState().sentence === t", arg=EIGHTEEN)
    else:
        painted(page)
        example = page.locator("#hint .ax-example").first
        text = example.inner_text()
        example.tap()
        page.wait_for_function(
            "(t) => window.__explorer.getState().sentence === t && window.__explorer.getState().sentenceId > 1",
            arg=text,
        )
    painted(page)
    rest(page)
    map_and_steps_on_one_screen(page)
    close(ctx, page)


# --- 2. a map wider than its box scrolls in it and follows the current column ---------------------


def follows_the_column(page) -> dict:
    f = page.evaluate(FOLLOWED)
    assert f["seen"], f
    # the row labels stay put while the map scrolls under them
    assert abs(f["rowsLeft"] - f["boxLeft"]) <= 1, f
    return f


def test_a_map_wider_than_a_phone_scrolls_in_its_box_to_the_current_column(phone):
    page = phone
    translate(page, EIGHTEEN, step=None)
    assert page.evaluate(FOLLOWED)["wide"]  # 24 source tokens are wider than a phone
    n = state(page)["trace"]["steps"]
    scrolled = []
    for step in (2, n - 6, n - 2):
        go_to_step(page, step)
        scrolled.append(follows_the_column(page)["scrollLeft"])
    assert max(scrolled) > 0, scrolled
    page.select_option("#kind-select", "decoder")  # self-attention: the step's own column
    page.wait_for_selector("#attn-plot[data-view='decoder']", state="attached")
    for step in (3, n - 1):
        go_to_step(page, step)
        follows_the_column(page)


@pytest.mark.parametrize("size", [(1366, 900), slow((1920, 1080))])
def test_a_long_sentence_on_a_laptop_keeps_the_current_column_in_view(browser, app_server, size):
    ctx, page = screen_page(browser, app_server.url, size=size)
    painted(page)
    translate(page, LONG, step=None)
    n = state(page)["trace"]["steps"]
    for step in (n - 4, n - 2):  # steps that look at the sentence's last words
        go_to_step(page, step)
        follows_the_column(page)
        # the map stops where its box does: nothing of it runs under the colour bar
        assert box(page, "#attn-plot .ax-scroll")["right"] <= box(page, "#attn-plot .ax-legend")["left"]
    close(ctx, page)


# --- 3. the map's fit follows the layout around it ---------------------------------------------


def fit(page) -> dict:
    g = page.evaluate("() => JSON.parse(document.querySelector('#attn-plot').dataset.grid)")
    end = box(page, "#attn-plot .ax-cols" if g["pinned"] else MAP)["bottom"]
    top = page.eval_on_selector("#attn-plot .ax-scroll", "e => e.scrollTop")
    return {"cell": g["cell"], "cellW": g["cellW"], "font": g["font"], "pinned": g["pinned"], "end": end, "top": top}


def refitted(page) -> dict:
    """The fit a window resize gives the page as it stands."""
    page.evaluate("() => window.dispatchEvent(new Event('resize'))")
    settled(page, MAP)
    return fit(page)


@pytest.mark.parametrize("sentence", [EIGHTEEN, slow(TWELVE)])
def test_the_map_fits_the_window_after_translate_and_after_the_line_over_it_goes(browser, app_server, sentence):
    ctx, page = screen_page(browser, app_server.url, size=(1366, 900))
    painted(page)
    translate(page, sentence, step=None)
    page.evaluate("() => window.scrollTo(0, 0)")
    settled(page, MAP)
    now = fit(page)
    assert now["end"] <= 900, now  # the column labels on the first screen
    assert now == refitted(page)
    assert now["pinned"] or now["top"] == 0, now  # row 1 in view when the whole map fits
    # another layer: the line about the opening head goes, and the map grows into its room
    assert page.is_visible("#focus-note")
    layer = 1 if state(page)["layer"] != 1 else 2
    page.click(f"#layer-btn-{layer}")
    page.wait_for_selector(f"#attn-plot[data-layer='{layer}']", state="attached")
    settled(page, MAP)
    assert not page.is_visible("#focus-note")
    now = fit(page)
    assert now == refitted(page)
    # what stands above the picture grows after it was fitted (a notice, a longer translation)
    page.evaluate("() => { document.querySelector('#intro').style.paddingBottom = '80px'; }")
    settled(page, MAP)
    now = fit(page)
    assert now["end"] <= 900, now
    assert now == refitted(page)
    close(ctx, page)


# --- 4. presentation mode ----------------------------------------------------------------------


@pytest.mark.parametrize("size", [(1366, 900), slow((1920, 1080))])
def test_presentation_shows_a_long_sentence_whole_from_its_first_row(browser, app_server, size):
    ctx, page = screen_page(browser, app_server.url, size=size)
    painted(page)
    translate(page, LONG, step=None)
    go_to_step(page, state(page)["trace"]["steps"] - 4)
    page.click("#present-btn")
    page.wait_for_selector(".ax-root.ax-presenting")
    settled(page, "#viewer .ax-root", MAP)
    scroll = page.evaluate(
        "() => { const e = document.querySelector('#attn-plot .ax-scroll');"
        " return {sw: e.scrollWidth, cw: e.clientWidth, sh: e.scrollHeight, ch: e.clientHeight, top: e.scrollTop}; }"
    )
    # every column on screen, clear of the colour bar
    assert scroll["sw"] <= scroll["cw"] + 1, scroll
    assert box(page, "#attn-plot .ax-scroll")["right"] <= box(page, "#attn-plot .ax-legend")["left"]
    # the map takes the screen's height before its rows scroll: no row scrolled away while room is left
    now, h = fit(page), size[1]
    assert now["end"] <= h, now
    assert now["top"] == 0 or h - now["end"] <= 2 * now["cell"] + 0.025 * h, (now, h)
    seen(page, "#attn-plot .ax-rowlabel.current")
    page.keyboard.press("Escape")
    close(ctx, page)


def test_presentation_on_a_touch_screen_lists_no_keys_and_keeps_row_labels_whole(phone):
    page = phone
    translate(page, SIX, step=None)
    page.click("#present-btn")
    page.wait_for_selector(".ax-root.ax-presenting")
    settled(page, "#viewer .ax-root", MAP)
    assert not page.is_visible("#keys-note")  # no keys on a touch screen
    cut = page.eval_on_selector_all(
        "#attn-plot .ax-rowlabel", "ls => ls.filter((l) => l.scrollWidth > l.clientWidth + 1).map((l) => l.textContent)"
    )
    assert cut == [], cut
    page.click("#present-btn")


# --- 5. room for a card docked at the bottom of the window --------------------------------------


@pytest.mark.parametrize("size", [(1366, 900), slow(PHONE)])
def test_the_map_leaves_the_room_a_docked_card_takes(browser, app_server, size):
    ctx, page = screen_page(browser, app_server.url, size=size)
    painted(page)
    translate(page, EIGHTEEN, step=None)
    # what a lesson card does when it docks: its height on the page's root, then a resize
    page.evaluate(
        "() => { document.documentElement.style.setProperty('--ax-dock', '240px');"
        " window.dispatchEvent(new Event('resize')); }"
    )
    if size == PHONE:  # the map comes into view again
        page.locator("#attn-col").evaluate("e => e.scrollIntoView({block: 'start'})")
    else:
        page.evaluate("() => window.scrollTo(0, 0)")
    settled(page, MAP)
    room = size[1] - 240
    assert fit(page)["end"] <= room, (fit(page), room)
    if size == PHONE:
        for sel in ("#prev-btn", "#next-btn", "#attn-plot .ax-rowlabel.current"):
            seen(page, sel, bottom=room)
    close(ctx, page)
