"""The picture a visitor came for, and one visual language around it, on a desktop (1366×900),
a projector (1920×1080) and a phone (390×844).

Numbers read as a person reads them, one unit and one subword marker everywhere, one section
and one slider style; the first-visit fixes; junk input; the default view; the main view sized
for a projector and its presentation mode; the line view. The app is a real `python app.py`
(started once for every browser test, tests/browser/conftest.py) in headless Chromium. Run alone with
`python -m pytest -m browser tests/browser/test_picture.py`.
"""

import contextlib
import re

import pytest

from tests.helpers import (
    NO_TOUR,
    DEVICES,
    frames,
    go_to_step,
    open_panel,
    open_section,
    opened_page,
    settled,
    state,
    translate,
)

# the slow set: a long walk through the page (python -m pytest -m slow)
pytestmark = [pytest.mark.browser, pytest.mark.slow]

SENTENCE = "I have a red car."
LAKE = "My parents live in a small house near the lake."


@contextlib.contextmanager
def screen(browser, url: str, width: int, height: int):
    """A page at `url` on a desktop screen of this size (a projector's, say), the viewer mounted."""
    ctx = browser.new_context(viewport={"width": width, "height": height})
    ctx.add_init_script(NO_TOUR)
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(url)
        page.wait_for_selector("#viewer .ax-root")
        yield page
    finally:
        ctx.close()
    assert not errors, errors


def show_head(page, view: str, layer: int, head: str):
    open_section(page, "views")
    page.select_option("#view-select", view)
    page.select_option("#layer-select", str(layer))
    page.select_option("#head-select", head)
    shown = f"#attn-plot[data-view='{view}'][data-layer='{layer}'][data-head='{head}']"
    page.wait_for_selector(shown, state="attached")


def grid(page, fig="#attn-plot") -> dict:
    return page.evaluate("(sel) => JSON.parse(document.querySelector(sel).dataset.grid)", fig)


def cell_tips(page) -> list[str]:
    """The tooltip of every cell of the main map, hovered one by one."""
    canvas = page.locator("#attn-plot canvas")
    canvas.scroll_into_view_if_needed()
    box, g = canvas.bounding_box(), grid(page)
    tips = []
    for r in range(g["rows"]):
        for c in range(g["cols"]):
            page.mouse.move(box["x"] + g["left"] + (c + 0.5) * g["cellW"], box["y"] + g["top"] + (r + 0.5) * g["cell"])
            tips.append(page.inner_text("#viewer-tooltip"))
    page.mouse.move(0, 0)
    return tips


# --- 1. one visual language --------------------------------------------------------------------

# a weight as a person reads it: two decimals, two significant digits below 0.1, "< x" for
# what the 8-bit payload cannot tell from zero; never "0.000"
WEIGHT = re.compile(r"^(0|1\.00|0\.[1-9]\d|0\.0[1-9]\d?|0\.00[1-9]\d?|< 0\.0*[1-9])$")


def test_tooltips_print_weights_as_a_person_reads_them(desktop):
    page = desktop
    translate(page, SENTENCE, step=None)
    show_head(page, "cross", 3, "4")  # a sharp head: most of its weights are tiny
    go_to_step(page, state(page)["trace"]["steps"])
    weights = [m.group(1) for t in cell_tips(page) for m in [re.search(r"weight: (.+)", t)] if m]
    assert len(weights) == grid(page)["rows"] * grid(page)["cols"]
    assert all(WEIGHT.match(w) for w in weights), sorted(set(weights))
    assert any(w.startswith("< ") for w in weights), weights  # a weight the payload rounds to 0 says so


def test_units_are_singular_for_one(desktop):
    page = desktop
    options = page.eval_on_selector_all("#play-speed option", "os => os.map((o) => o.textContent)")
    assert options[0] == "1 step/s" and all(o.endswith(" steps/s") for o in options[1:]), options


def test_the_beam_tree_marks_a_new_word_as_every_chip_does(desktop):
    page = desktop
    translate(page, SENTENCE, step=None)
    open_panel(page, "beam-panel")
    page.click("#beam-btn")
    page.wait_for_selector("#beam-tree svg g.bt-node")
    labels = page.eval_on_selector_all("#beam-tree svg g.bt-node text", "ts => ts.map((t) => t.textContent)")
    assert not any("␣" in t for t in labels), labels
    assert any(t.startswith("▁") for t in labels), labels  # the one subword marker, as on the chips


def test_the_epoch_panel_says_no_server_timings(desktop):
    page = desktop
    open_panel(page, "epoch-panel")
    translate(page, SENTENCE, step=None)
    page.locator("#epoch-view").scroll_into_view_if_needed()
    page.wait_for_selector("#epoch-multiples[data-key] figure.ep-fig", state="attached")
    status = page.inner_text("#epoch-status")
    assert status and not re.search(r"\bms\b|server|traced|cached", status), status


SECTION_LOOK = """(sel) => { const e = document.querySelector(sel), cs = getComputedStyle(e);
  const box = getComputedStyle(e.parentElement);
  return { font: [cs.fontWeight, cs.fontSize, cs.fontFamily.split(',')[0]], color: cs.color,
           marker: getComputedStyle(e, '::before').content,
           border: [box.borderTopWidth, box.borderTopStyle, box.borderTopColor, box.borderTopLeftRadius] }; }"""


def test_one_section_style_for_the_viewer_and_the_panels(desktop):
    page = desktop
    translate(page, SENTENCE, step=None)
    closed = [page.evaluate(SECTION_LOOK, sel) for sel in ("#sec-lens > summary", "#beam-panel > .label-wrap")]
    assert closed[0] == closed[1], closed
    open_section(page, "lens")
    open_panel(page, "beam-panel")
    opened = [page.evaluate(SECTION_LOOK, sel) for sel in ("#sec-lens > summary", "#beam-panel > .label-wrap")]
    assert opened[0] == opened[1] and opened[0]["marker"] != closed[0]["marker"], opened


def test_one_slider_style(desktop):
    page = desktop
    translate(page, SENTENCE, step=None)
    open_panel(page, "beam-panel")
    page.wait_for_selector("#beam-size input[type=range]", state="attached")  # Gradio mounts it as the panel opens
    colours = page.evaluate("""() => {
      const probe = (parent, value) => { const d = document.createElement('div'); d.style.color = value;
        parent.append(d); const c = getComputedStyle(d).color; d.remove(); return c; };
      const gradio = document.querySelector('#beam-size input[type=range]');
      return [getComputedStyle(document.querySelector('#step-slider')).accentColor,
              probe(gradio.parentElement, 'var(--slider-color)')]; }""")
    assert colours[0] == colours[1], colours


# --- 2. first visit: minimal pairs -------------------------------------------------------------


def test_minimal_pairs_differ_at_the_step_where_the_sentences_differ(desktop):
    page = desktop
    a, b = "My brother is tall.", "My sister is tall."
    translate(page, a, step=None)
    go_to_step(page, 1)
    open_panel(page, "pairs-panel")
    page.fill("#pair-text", b)
    page.click("#pair-btn")
    page.wait_for_function(
        "(t) => { const p = window.__explorer.getState().pair; return p && p.status === 'done' && p.text === t; }",
        arg=b,
    )
    page.wait_for_selector("#pair-diff[data-step='1'][data-grid]", state="attached")
    # step 1 writes "Mio" against "Mia": the difference map compares that row, "brother" against "sister" included
    canvas = page.locator("#pair-diff canvas")
    canvas.scroll_into_view_if_needed()
    box, g = canvas.bounding_box(), grid(page, "#pair-diff")
    tips = []
    for c in range(g["cols"]):
        page.mouse.move(box["x"] + g["left"] + (c + 0.5) * g["cellW"], box["y"] + g["top"] + 0.5 * g["cell"])
        tips.append(page.inner_text("#pairs-tooltip"))
    compared = [t for t in tips if "B − A: " in t]
    assert len(compared) == g["cols"], tips
    assert any("brother" in t and "sister" in t for t in compared), compared
    labels = page.eval_on_selector_all("#pair-diff .ax-rowlabel", "ls => ls.map((l) => l.textContent)")
    assert labels and "/" in labels[0], labels  # "1: → ▁Mio / ▁Mia"
    # changes read as numbers: never a signed zero
    changes = page.eval_on_selector_all("#pair-cands tbody tr td:last-child", "ts => ts.map((t) => t.textContent)")
    assert not [c for c in changes if re.fullmatch(r"[+−-]0(\.0*)?", c)], changes


# --- 3. junk input -------------------------------------------------------------------------------


@pytest.mark.parametrize("junk", ["function f(x) { return x * 2; }", "1234 5678 9012 %%%"])
def test_text_that_is_mostly_not_words_is_told_its_translation_is_meaningless(desktop, junk):
    page = desktop
    translate(page, junk, step=None)
    page.wait_for_function("() => document.querySelector('#notice').innerText.includes('meaningless')", timeout=10_000)
    assert "not words" in page.inner_text("#notice")


# --- 4. a default that shows something ---------------------------------------------------------


def test_a_new_sentence_opens_on_a_sharp_head_past_step_one_and_says_why(desktop):
    page = desktop
    translate(page, LAKE, step=None)
    s, plot = state(page), page.evaluate("() => ({...document.querySelector('#attn-plot').dataset})")
    focus = s["focus"]
    # cross-attention, one head of a layer past the first, at a step with several rows
    assert (plot["view"], plot["layer"], plot["head"]) == ("cross", str(focus["layer"]), str(focus["head"]))
    assert focus["layer"] > 1 and s["step"] == focus["step"] >= 3, (focus, s["step"])
    assert focus["weight"] >= 0.5  # at that step the head looks clearly at one word
    note = page.inner_text("#focus-note")
    tgt, src = s["trace"]["tgt"], s["trace"]["src"]
    assert page.is_visible("#focus-note")
    for part in (
        f"layer {focus['layer']}, head {focus['head']}",
        f"step {focus['step']}",
        tgt[focus["step"]].replace("▁", ""),
        src[focus["key"]].replace("▁", ""),
    ):
        assert part in note, (part, note)
    # the visitor's own choice stays: another head, then another sentence, opens on that head
    show_head(page, "cross", 1, "mean")
    assert not page.is_visible("#focus-note")  # it spoke of another head
    translate(page, SENTENCE, step=None)
    plot = page.evaluate("() => ({...document.querySelector('#attn-plot').dataset})")
    assert (plot["view"], plot["layer"], plot["head"], plot["step"]) == ("cross", "1", "mean", "1")


def test_a_sentence_with_no_word_to_look_at_opens_at_step_one(desktop):
    page = desktop
    translate(page, "😺😺 ⌘⌘ ☃", step=None)  # every source token is [UNK] or a bare "▁": no word to look at
    assert state(page)["step"] == 1 and "sharpest reader" in page.inner_text("#focus-note")
    translate(page, SENTENCE, step=None)  # and the next sentence opens on its focus again
    assert state(page)["step"] == state(page)["focus"]["step"] >= 2


# --- 5. the main view on a desktop, a projector and a phone -------------------------------------

MAIN_VIEW = """() => { const box = (sel) => { const r = document.querySelector(sel).getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width, height: r.height}; };
  const labels = [...document.querySelectorAll('#attn-plot .ax-rowlabel')]
    .map((l) => parseFloat(getComputedStyle(l).fontSize));
  return { root: box('#viewer .ax-root'), main: box('#main-view'), canvas: box('#attn-plot canvas'),
           legend: box('#attn-plot .ax-legend'), side: box('#topk'),
           grid: JSON.parse(document.querySelector('#attn-plot').dataset.grid),
           labelPx: Math.min(...labels) }; }"""


@pytest.mark.parametrize("size", [(1366, 900), (1920, 1080)])
def test_the_main_view_fills_the_width_with_large_labels_and_the_legend_beside(browser, app_server, size):
    with screen(browser, app_server.url, *size) as page:
        cells = {}
        for text in (SENTENCE, LAKE):
            translate(page, text, step=None)
            m = page.evaluate(MAIN_VIEW)
            cells[text] = m["grid"]["cell"]
            # the main view takes the content width right of the rail, where the candidates stand
            assert m["main"]["right"] >= m["root"]["right"] - 4 and m["main"]["width"] >= 0.6 * m["root"]["width"], m
            assert m["side"]["right"] <= m["main"]["left"] and m["side"]["top"] < m["canvas"]["bottom"], m
            assert m["canvas"]["left"] - m["main"]["left"] <= 0.4 * m["main"]["width"], m
            # the map and its legend fill the room up to the right edge (columns widen where the
            # height binds), not a third of it
            assert m["main"]["right"] - m["legend"]["right"] <= 0.1 * m["main"]["width"], m
            assert m["grid"]["cell"] <= m["grid"]["cellW"] <= 2 * m["grid"]["cell"], m
            # labels a projector can carry: at least 14 px, 2 % of the screen's height
            assert min(m["labelPx"], m["grid"]["font"]) >= max(14, 0.016 * size[1]), m
            assert m["grid"]["cell"] >= 1.5 * m["grid"]["font"] - 1, m  # cells wider than a label is high
            # the legend stands beside the map, not under it
            assert m["legend"]["left"] >= m["canvas"]["right"] and m["legend"]["top"] < m["canvas"]["bottom"], m
            assert m["legend"]["height"] > 2 * m["legend"]["width"], m  # upright
        assert cells[SENTENCE] > cells[LAKE], cells  # cells scale with the sentence


def test_the_main_view_on_a_phone_fits_the_screen(phone):
    page = phone
    translate(page, LAKE, step=None)
    m = page.evaluate(MAIN_VIEW)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= DEVICES["phone"]["viewport"]["width"]
    assert m["legend"]["top"] >= m["canvas"]["bottom"] - 1  # under the map on a narrow screen
    assert m["labelPx"] >= 12 and m["grid"]["cell"] >= 14
    # row labels are whole: the step and what it writes
    labels = page.eval_on_selector_all(
        "#attn-plot .ax-rowlabel", "ls => ls.map((l) => l.scrollWidth <= l.clientWidth + 1)"
    )
    assert labels and all(labels), labels


def test_presentation_mode_shows_the_picture_alone_full_screen_and_keys_step_and_play(browser, app_server):
    viewport = {"width": 1920, "height": 1080}
    with screen(browser, app_server.url, 1920, 1080) as page:
        translate(page, SENTENCE, step=None)
        before = page.evaluate(MAIN_VIEW)
        page.click("#present-btn")
        page.wait_for_function("() => window.__explorer.getState().presenting")
        page.wait_for_function("() => document.querySelector('#viewer .ax-root').classList.contains('ax-presenting')")
        settled(page, "#viewer .ax-root", "#attn-plot canvas")  # the resize after entering full screen
        m = page.evaluate(MAIN_VIEW)
        # one view, filling the screen, in large type
        assert m["root"]["width"] >= viewport["width"] - 1 and m["root"]["height"] >= viewport["height"] - 1, m
        assert m["grid"]["font"] >= 0.024 * viewport["height"], m
        assert m["grid"]["cell"] > before["grid"]["cell"], (m, before)
        for hidden in ("#topk", "#sec-views", "#src-chips"):
            assert not page.is_visible(hidden), hidden
        for shown in ("#attn-plot canvas", "#step-slider", "#play-btn", "#present-sentence", "#picture-lines"):
            assert page.is_visible(shown), shown
        assert SENTENCE in page.inner_text("#present-sentence")
        # keys step and play
        step = state(page)["step"]
        page.keyboard.press("ArrowLeft")
        page.wait_for_selector(f"#attn-plot[data-step='{step - 1}']", state="attached")
        page.keyboard.press(" ")
        assert state(page)["playing"]
        page.wait_for_function("() => !window.__explorer.getState().playing", timeout=15_000)  # played to the end
        # the line view is there too, and Esc leaves
        page.click("#picture-lines")
        page.wait_for_selector("#attn-lines .ln-svg")
        page.keyboard.press("Escape")
        page.wait_for_function("() => !window.__explorer.getState().presenting")
        assert not page.evaluate("() => document.querySelector('#viewer .ax-root').classList.contains('ax-presenting')")
        assert page.is_visible("#topk")


# --- 6. the line view ----------------------------------------------------------------------------

LINES = """() => { const slot = document.querySelector('#attn-lines');
  const toks = (side) => [...slot.querySelectorAll(`g.ln-tok[data-side="${side}"]`)]
    .map((g) => g.querySelector('text').textContent);
  const lines = [...slot.querySelectorAll('line')].map((l) => ({q: +l.dataset.q, k: +l.dataset.k, head: l.dataset.head,
    colour: l.getAttribute('stroke'), width: +l.getAttribute('stroke-width')}));
  return { data: {...slot.dataset}, queries: toks('q'), keys: toks('k'), lines,
    weights: [...slot.querySelectorAll('.ln-weights text')].map((t) => t.textContent) }; }"""

# WCAG relative luminance and contrast of two "#rrggbb" / "rgb(...)" colours
CONTRAST = """([a, b]) => { const rgb = (c) => { const d = document.createElement('div'); d.style.color = c;
    document.body.append(d); const m = getComputedStyle(d).color.match(/\\d+/g).map(Number); d.remove(); return m; };
  const lum = (c) => c.slice(0, 3).reduce((acc, v, i) => { v /= 255;
    v = v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; return acc + [0.2126, 0.7152, 0.0722][i] * v; }, 0);
  const x = lum(rgb(a)), y = lum(rgb(b)); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); }"""


def show_lines(page):
    page.click("#picture-lines")
    page.wait_for_selector("#attn-lines .ln-svg")
    assert not page.is_visible("#attn-plot canvas")


def test_the_line_view_joins_queries_to_keys_one_colour_per_head(desktop):
    page = desktop
    translate(page, SENTENCE, step=None)
    calls = []
    page.on("request", lambda r: calls.append(r.url) if "/gradio_api/" in r.url and "/file=" not in r.url else None)
    show_lines(page)
    s, tr = state(page), state(page)["trace"]
    seen = page.evaluate(LINES)
    # cross-attention: the Italian tokens written so far on the left, the English ones on the right
    assert seen["queries"] == tr["tgt"][1 : s["step"] + 1] and seen["keys"] == tr["src"]
    assert seen["lines"] and {x["head"] for x in seen["lines"]} == {str(s["head"])}  # the viewer's head alone
    # every head, each in its own colour, with numbered swatches
    page.click("#line-heads button[data-head='all']")
    page.wait_for_selector("#attn-lines[data-head='mean']")
    seen = page.evaluate(LINES)
    colours = {}
    for x in seen["lines"]:
        colours.setdefault(x["head"], set()).add(x["colour"])
    assert len(colours) >= 3 and all(len(c) == 1 for c in colours.values()), colours
    assert len({next(iter(c)) for c in colours.values()}) == len(colours)  # one colour per head
    swatches = page.eval_on_selector_all("#line-heads button[data-head]", "bs => bs.map((b) => b.textContent)")
    assert swatches[1:] == [str(h) for h in range(1, tr["heads"] + 1)], swatches
    card = page.eval_on_selector("#attn-lines-card", "c => getComputedStyle(c).backgroundColor")
    for colour in {next(iter(c)) for c in colours.values()}:
        assert page.evaluate(CONTRAST, [colour, card]) >= 3, colour  # lines stand out from the card
    # one head alone from its swatch; steps move the lines with the rest of the page
    page.click("#line-heads button[data-head='2']")
    page.wait_for_selector("#attn-lines[data-head='2']")
    assert {x["head"] for x in page.evaluate(LINES)["lines"]} == {"2"}
    page.click("#prev-btn")
    page.wait_for_selector(f"#attn-lines[data-step='{s['step'] - 1}']", state="attached")
    assert len(page.evaluate(LINES)["queries"]) == s["step"] - 1
    # the lines redraw in the store change of each click (the waits above saw it) and never ask
    # the server: two frames more let anything they left for later run, so a request would be here
    frames(page)
    assert calls == [], calls  # drawn in the browser


def test_hovering_or_tapping_a_token_isolates_its_lines(desktop):
    page = desktop
    translate(page, SENTENCE, step=None)
    show_lines(page)
    page.click("#line-heads button[data-head='all']")
    page.wait_for_selector("#attn-lines[data-head='mean']")
    everything = page.evaluate(LINES)["lines"]
    key = max(range(len(state(page)["trace"]["src"])), key=lambda k: sum(x["k"] == k for x in everything))
    token = page.locator(f"#attn-lines g.ln-tok[data-side='k'][data-i='{key}']")
    token.hover()
    page.wait_for_selector(f"#attn-lines[data-isolated='k{key + 1}']", state="attached")
    seen = page.evaluate(LINES)
    assert seen["lines"] and {x["k"] for x in seen["lines"]} == {key} and len(seen["lines"]) < len(everything)
    assert seen["weights"], seen  # the weights of its lines, beside the other column
    page.mouse.move(0, 0)
    page.wait_for_selector("#attn-lines[data-isolated='']", state="attached")
    # a click pins it (as a tap does), a second one lets go
    query = page.locator("#attn-lines g.ln-tok[data-side='q'][data-i='0']")
    query.click()
    page.mouse.move(0, 0)
    page.wait_for_selector("#attn-lines[data-pinned='q1']", state="attached")
    assert {x["q"] for x in page.evaluate(LINES)["lines"]} == {0}
    page.locator("#attn-lines g.ln-tok[data-side='q'][data-i='0']").click()
    page.wait_for_selector("#attn-lines[data-pinned='']", state="attached")


def test_the_line_view_covers_self_attention_too(desktop):
    page = desktop
    translate(page, SENTENCE, step=None)
    show_lines(page)
    tr, step = state(page)["trace"], state(page)["step"]
    open_section(page, "views")
    page.select_option("#view-select", "decoder")
    page.wait_for_selector("#attn-lines[data-view='decoder']", state="attached")
    seen = page.evaluate(LINES)
    # decoder self-attention: the tokens read so far, on both sides (none after the step: the mask)
    assert seen["queries"] == tr["tgt"][:step] and seen["keys"] == tr["tgt"][:step]
    assert all(x["k"] <= x["q"] for x in seen["lines"])
    page.select_option("#view-select", "encoder")
    page.wait_for_selector("#attn-lines[data-view='encoder']", state="attached")
    seen = page.evaluate(LINES)
    assert seen["queries"] == tr["src"] and seen["keys"] == tr["src"] and seen["lines"]


def test_the_line_view_reads_down_a_phone(phone):
    page = phone
    translate(page, LAKE, step=None)
    show_lines(page)
    width = DEVICES["phone"]["viewport"]["width"]
    svg = page.locator("#attn-lines .ln-svg").bounding_box()
    assert svg["x"] >= 0 and svg["x"] + svg["width"] <= width + 0.5  # two columns side by side, on screen
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    heights = page.eval_on_selector_all("#attn-lines .ln-hit", "rs => rs.map((r) => r.getBoundingClientRect().height)")
    assert min(heights) >= 44, min(heights)  # a finger's row
    page.locator("#attn-lines g.ln-tok[data-side='k'][data-i='2']").tap()
    page.wait_for_selector("#attn-lines[data-pinned='k3']", state="attached")
    assert {x["k"] for x in page.evaluate(LINES)["lines"]} <= {2}


# --- 7. the explanation beside the picture -------------------------------------------------------

BOXES = """(sels) => sels.map((sel) => { const r = document.querySelector(sel).getBoundingClientRect();
  return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; })"""


def explain(page):
    page.click("#explain-btn")
    page.wait_for_selector(".ar-root[data-state='done']", state="attached")  # beside the map, or under it on a phone
    settled(page, "#attn-plot canvas", "#arithmetic-panel", "#arith-table")  # the drawer, the scroll, the map's refit


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_the_arithmetic_shows_beside_the_map_it_explains(browser, app_server, device):
    with opened_page(browser, app_server.url, device, init_script=NO_TOUR) as page:
        translate(page, SENTENCE, step=None)
        explain(page)
        vw, vh = page.viewport_size["width"], page.viewport_size["height"]
        canvas, panel, table = page.evaluate(BOXES, ["#attn-plot canvas", "#arithmetic-panel", "#arith-table"])
        # the map and its arithmetic together: a drawer beside the map on one screen, and on a
        # phone the explanation itself right under the map, in the page
        assert canvas["top"] >= 0 and canvas["top"] < vh, canvas
        if device == "desktop":
            assert table["top"] < vh, table
            assert panel["left"] >= canvas["right"] - 1, (canvas, panel)
            assert panel["right"] <= vw + 1 and panel["top"] <= 1, panel
        else:
            dock = page.evaluate(BOXES, ["#explain-dock"])[0]
            assert page.locator("#explain-dock .ar-root").count() == 1
            assert canvas["bottom"] <= dock["top"] < canvas["bottom"] + 0.5 * vh and table["top"] > dock["top"], dock
            assert page.locator("#arithmetic-panel #arith-moved").count() == 1  # its section says where it went
        # it explains the row of the map on screen, and a click on a cell picks that key
        s = state(page)
        key = page.get_attribute(".ar-root", "data-key")
        assert key == f"cross:{s['layer']}:{s['head']}:{s['step']}", key
        g = grid(page)
        cell = {
            "x": g["left"] + 1.5 * g["cellW"],
            "y": g["top"] + (s["step"] - 0.5) * g["cell"],
        }  # this step's row, key 2
        page.locator("#attn-plot canvas").click(position=cell)
        page.wait_for_selector(".ar-root[data-picked='2']", state="attached")
        # and it goes away again
        page.click("#explain-btn")
        page.wait_for_function("() => !document.documentElement.classList.contains('ax-explaining')")
        assert "arithmetic-panel" not in state(page)["open"]


# --- 8. readable diagnostics ---------------------------------------------------------------------


def diag_maps(page) -> list:
    return page.eval_on_selector_all(
        "#diag-maps canvas",
        """cs => cs.map((c) => ({kind: c.dataset.kind,
      measure: c.dataset.measure, grid: JSON.parse(c.dataset.grid), right: c.getBoundingClientRect().right}))""",
    )


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_diagnostics_show_one_measure_at_a_time_large(browser, app_server, device):
    with opened_page(browser, app_server.url, device, init_script=NO_TOUR) as page:
        translate(page, SENTENCE, step=None)
        open_panel(page, "analysis-panel")
        page.wait_for_selector("#diag-maps canvas")
        measures = page.eval_on_selector_all("#diag-measure option", "os => os.map((o) => o.value)")
        assert {"entropy", "sink", "prev", "monotonicity"} <= set(measures), measures
        for measure, kinds in (
            ("entropy", ["encoder", "decoder_self", "cross"]),
            ("prev", ["encoder", "decoder_self"]),
            ("monotonicity", ["cross"]),
        ):
            page.select_option("#diag-measure", measure)
            page.wait_for_selector(f"#diag-maps[data-measure='{measure}']", state="attached")
            maps = diag_maps(page)
            assert [m["kind"] for m in maps] == kinds and {m["measure"] for m in maps} == {measure}, maps
            assert all(m["grid"]["cell"] >= 30 for m in maps), maps  # large enough to read a number in each cell
            assert all(m["right"] <= page.viewport_size["width"] for m in maps), maps
            assert page.inner_text("#diag-about")  # what the measure says, in words
        # the whole test set, same measure
        page.select_option("#diag-source", "test")
        page.wait_for_selector("#diag-maps[data-source='test'][data-measure='monotonicity']", state="attached")
        # hover names the head's habit; a click opens it
        canvas = page.locator("#diag-maps canvas[data-kind='cross']")
        canvas.scroll_into_view_if_needed()
        g = diag_maps(page)[0]["grid"]
        box = canvas.bounding_box()
        x, y = box["x"] + g["left"] + 4.5 * g["cell"], box["y"] + g["top"] + 2.5 * g["cell"]  # layer 3, head 5
        if device == "desktop":
            page.mouse.move(x, y)
            assert "cross-attention, layer 3, head 5: " in page.inner_text("#analysis-tooltip")
            page.mouse.click(x, y)
        else:
            page.touchscreen.tap(x, y)
        page.wait_for_selector("#attn-plot[data-view='cross'][data-layer='3'][data-head='5']", state="attached")


# --- 9. phone ---------------------------------------------------------------------------------

WIDER_THAN_THEIR_BOX = """() => [...document.querySelectorAll('#viewer, #why-tools > .gr-accordion, #viewer .ax-fold')]
  .filter((e) => e.scrollWidth > e.clientWidth + 1).map((e) => [e.id || e.className, e.scrollWidth, e.clientWidth])"""


def test_on_a_phone_every_head_table_and_panel_fits_the_screen(phone):
    page = phone
    width = DEVICES["phone"]["viewport"]["width"]
    translate(page, LAKE, step=None)
    g = grid(page)
    assert g["left"] >= 0.7 * g["font"] - g["cellW"] / 2 - 0.5  # room for the first column's label ([SOS])
    for name in ("views", "lens", "pe"):
        open_section(page, name)
    for panel in ("analysis-panel", "beam-panel", "epoch-panel", "pairs-panel", "whatif-panel"):
        open_panel(page, panel)
    # every head of the mosaic is on screen: the heads of a layer wrap instead of scrolling away
    page.wait_for_selector("#mosaic[data-grid]", state="attached")
    m = page.evaluate("() => JSON.parse(document.querySelector('#mosaic').dataset.grid)")
    assert m["perRow"] * m["bands"] >= state(page)["trace"]["heads"], m
    assert page.eval_on_selector("#mosaic .ax-scroll", "s => s.scrollWidth <= s.clientWidth + 1")
    canvas = page.locator("#mosaic canvas").bounding_box()
    assert canvas["x"] >= 0 and canvas["x"] + canvas["width"] <= width + 0.5
    # a knock-out's chart, caption and all, inside the screen
    page.check("#select-mode")
    page.locator("#mosaic canvas").tap(position={"x": m["left"] + 2, "y": m["top"] + 2})
    page.wait_for_selector("#ko-selection .chip", state="attached")
    page.click("#knockout-btn")
    page.wait_for_selector("#ko-result[data-state='done'] canvas")
    seen = page.eval_on_selector(
        "#ko-result .ax-scroll",
        """s => ({ right: s.getBoundingClientRect().right,
      room: s.clientWidth, caption: Number(s.querySelector('canvas').dataset.captionWidth) })""",
    )
    # the bars may scroll; the caption is whole
    assert seen["right"] <= width + 0.5 and seen["caption"] <= seen["room"], seen
    # wide tables scroll inside their own box, with an edge that shows
    page.click("#pairs-curated button[data-pair='0']")
    page.wait_for_function("() => { const p = window.__explorer.getState().pair; return p && p.status === 'done'; }")
    for box in ("#logit-lens-box", ".pr-cands-box"):
        look = page.eval_on_selector(
            box,
            """b => { const cs = getComputedStyle(b); const r = b.getBoundingClientRect();
          return {overflow: cs.overflowX, border: parseFloat(cs.borderTopWidth), image: cs.backgroundImage,
                  right: r.right}; }""",
        )
        assert look["overflow"] in ("auto", "scroll"), (box, look)
        assert look["border"] >= 1 and "gradient" in look["image"], (box, look)
        assert look["right"] <= width + 0.5, (box, look)
    # no panel wider than the screen, and the page never scrolls sideways
    assert page.evaluate(WIDER_THAN_THEIR_BOX) == []
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
