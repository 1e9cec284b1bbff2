"""What a person sees in the explorer, on a desktop (1366×900) and on a phone (390×844).

Each test walks through one thing a visitor does and checks what is on screen: computed
colours and contrast, boxes inside the viewport, visible text, rendered glyphs and the
pixels of a downloaded image. The app is a real `python app.py` (started as in
tests/browser/test_viewer.py) in headless Chromium. Run alone with
`python -m pytest -m browser tests/browser/test_walkthrough.py`.
"""

import io
import json
import re
import urllib.parse

import numpy as np
import pytest

from tests.helpers import DEVICES, go_to_step, open_panel, open_section, painted, state, translate

# the slow set: a long walk through the page (python -m pytest -m slow)
pytestmark = [pytest.mark.browser, pytest.mark.slow]

DESKTOP, PHONE = DEVICES["desktop"]["viewport"], DEVICES["phone"]["viewport"]
SENTENCE = "I have a red car."
LONG = "the black cat sleeps on the red chair while my sister reads a long book and the dog eats"

# --- what the page looks like, measured in the page ---------------------------------------

# WCAG 2.x contrast of every visible text node under `sel` against the background it is
# drawn on (ancestors' backgrounds and opacities blended): [[where, text, ratio], ...] below 4.5
LOW_CONTRAST = """(sel) => {
  const parse = (c) => { const m = c && c.match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
    const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const over = (top, under) => [0, 1, 2].map((i) => top[i] * top[3] + under[i] * (1 - top[3])).concat([1]);
  const background = (e) => { const layers = [];
    for (let x = e; x; x = x.parentElement) { const c = parse(getComputedStyle(x).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; } }
    return layers.reverse().reduce((acc, c) => over(c, acc), [255, 255, 255, 1]); };
  const ratio = (fg, bg) => {
    const a = lum(fg), b = lum(bg);
    return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  };
  const name = (e) => e.id ? `#${e.id}` : `${e.tagName.toLowerCase()}.${String(e.className).split(' ')[0]}`;
  const low = [];
  for (const root of document.querySelectorAll(sel)) {
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      const e = n.parentElement, r = e.getBoundingClientRect();
      if (!n.textContent.trim() || !r.width || !r.height) continue;
      if (!e.checkVisibility({ opacityProperty: true, visibilityProperty: true })) continue;
      let alpha = 1;
      for (let x = e; x; x = x.parentElement) alpha *= Number(getComputedStyle(x).opacity);
      const bg = background(e), c = parse(getComputedStyle(e).color);
      const k = ratio(over([c[0], c[1], c[2], c[3] * alpha], bg), bg);
      if (k < 4.5) low.push([name(e), n.textContent.trim().slice(0, 50), +k.toFixed(2)]);
    }
    const shown = (e) => {
      let a = 1;
      for (let x = e; x; x = x.parentElement) a *= Number(getComputedStyle(x).opacity);
      return a;
    };
    for (const f of root.querySelectorAll('select')) {  // a menu shows its chosen option's text
      if (!f.checkVisibility() || !f.selectedOptions.length) continue;
      const bg = background(f), c = parse(getComputedStyle(f).color);
      const k = ratio(over([c[0], c[1], c[2], c[3] * shown(f)], bg), bg);
      if (k < 4.5) low.push([name(f), f.selectedOptions[0].textContent, +k.toFixed(2)]);
    }
    for (const f of root.querySelectorAll('textarea[placeholder], input[placeholder]')) {
      if (!f.checkVisibility() || f.value) continue;
      const bg = background(f), c = parse(getComputedStyle(f, '::placeholder').color);
      const k = ratio(over(c, bg), bg);
      if (k < 4.5) low.push([`${name(f)}::placeholder`, f.placeholder, +k.toFixed(2)]);
    }
  }
  return low;
}"""

# Characters of visible text that render as the "missing glyph" box: each non-ASCII
# character is drawn in its element's font and compared with an unassigned code point
MISSING_GLYPHS = """(sel) => {
  const c = document.createElement('canvas'); c.width = 64; c.height = 64;
  const ctx = c.getContext('2d', { willReadFrequently: true });
  const ink = (ch, font) => { ctx.clearRect(0, 0, 64, 64); ctx.font = font; ctx.textBaseline = 'middle';
    ctx.fillText(ch, 4, 32); return ctx.getImageData(0, 0, 64, 64).data.join(','); };
  const seen = new Map();
  for (const root of document.querySelectorAll(sel)) {
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      const e = n.parentElement;
      if (!e || !e.checkVisibility()) continue;
      const cs = getComputedStyle(e), font = `${cs.fontStyle} ${cs.fontWeight} 32px ${cs.fontFamily}`;
      for (const ch of Array.from(n.textContent.replace(/[\\uFE0E\\uFE0F\\u200B-\\u200D]/g, ''))) {
        if (ch.codePointAt(0) > 0x7f && !/\\s/.test(ch)) seen.set(`${ch}|${font}`, [ch, font, e.id || e.tagName]);
      }
    }
  }
  const missing = [];
  for (const [ch, font, where] of seen.values()) if (ink(ch, font) === ink('\\u0378', font)) missing.push([ch, where]);
  return { checked: seen.size, missing };
}"""

# Row labels beside a heatmap as a person sees them: [text, top, bottom], top to bottom
ROW_LABEL_BOXES = """(sel) => [...document.querySelectorAll(sel + ' .ax-rowlabel')]
  .map((l) => { const r = l.getBoundingClientRect(); return [l.textContent, r.top, r.bottom]; })
  .filter((x) => x[2] > x[1]).sort((a, b) => a[1] - b[1])"""

# Gradio fades a block while its request runs; measure colours only once nothing is fading
# (a control's own opacity is part of how it looks, so it does not count as fading)
SETTLED = """() => [...document.querySelectorAll('.gradio-container *')].every((e) => {
  const o = Number(getComputedStyle(e).opacity);
  return o === 1 || o === 0 || e.matches('select, input, button, textarea') || !e.checkVisibility(); })"""


def fail_translate(page):
    """Press Translate on blank text: the app refuses it and clears the old results."""
    page.locator("#src-text textarea").fill("   ")
    page.click("#translate-btn")
    page.wait_for_selector("#attn-plot:not([data-step])", state="attached")
    page.wait_for_function("() => document.querySelector('#notice').innerText.includes('Please type')")


def run_beam(page):
    open_panel(page, "beam-panel")
    page.click("#beam-btn")
    page.wait_for_function("() => window.__explorer.getState().beam !== null")
    page.wait_for_selector("#beam-hyps li")


def grid(page, fig="#attn-plot") -> dict:
    return page.evaluate("(sel) => JSON.parse(document.querySelector(sel).dataset.grid)", fig)


def in_viewport_x(page, locator) -> bool:
    r = locator.bounding_box()
    return r is not None and r["x"] >= -0.5 and r["x"] + r["width"] <= page.viewport_size["width"] + 0.5


def fragment(page) -> dict:
    return urllib.parse.parse_qs(urllib.parse.urlparse(page.url).fragment)


def visible_text(page) -> str:
    return page.evaluate("() => document.querySelector('.gradio-container').innerText")


# --- 1. checkboxes -------------------------------------------------------------------------


def checkbox_look(page, sel: str) -> dict:
    """A checkbox as drawn: its fill, and the share of its pixels that stand out from white
    (at least 3:1, the contrast WCAG asks of a control's state)."""
    from PIL import Image

    box = page.locator(sel)
    box.scroll_into_view_if_needed()
    image = Image.open(io.BytesIO(box.screenshot())).convert("RGB")
    px = np.asarray(image).reshape(-1, 3).tolist()
    lum = lambda c: sum(
        w * ((v / 255) / 12.92 if v / 255 <= 0.03928 else ((v / 255 + 0.055) / 1.055) ** 2.4)
        for w, v in zip((0.2126, 0.7152, 0.0722), c)
    )
    dark = sum((1.05) / (lum(c) + 0.05) >= 3 for c in px) / len(px)
    return {"fill": box.evaluate("e => getComputedStyle(e).backgroundColor"), "dark": dark, "checked": box.is_checked()}


def test_ticked_checkboxes_look_ticked(desktop):
    page = desktop
    translate(page, SENTENCE)
    open_section(page, "views")
    open_panel(page, "analysis-panel")  # select mode is there once knock-out is
    for sel in ("#hide-specials", "#select-mode"):
        off = checkbox_look(page, sel)
        page.check(sel)
        on = checkbox_look(page, sel)
        assert on["checked"] and not off["checked"]
        # a ticked box is a filled box with a tick, not a white tick on nothing
        assert on["fill"] not in ("rgba(0, 0, 0, 0)", "rgb(255, 255, 255)", off["fill"]), (sel, on, off)
        assert on["dark"] >= 0.5 and off["dark"] <= 0.4, (sel, on, off)
        page.uncheck(sel)
    # "show pruned" is on by default, and looks on: like a ticked box, unlike an unticked one
    run_beam(page)
    on = checkbox_look(page, "#beam-show-pruned")
    assert on["checked"] and on["dark"] >= 0.5, on
    page.uncheck("#beam-show-pruned")
    off = checkbox_look(page, "#beam-show-pruned")
    assert off["dark"] <= 0.4 and off["fill"] != on["fill"], (on, off)


# --- 2. the beam panel follows the sentence ---------------------------------------------------


def beam_on_screen(page) -> dict:
    return {
        "hyps": page.locator("#beam-hyps li").count(),
        "nodes": page.locator("#beam-tree svg g.bt-node").count(),
        "best": page.input_value("#beam-translation textarea"),
        "summary": page.inner_text("#beam-summary"),
    }


def test_beam_panel_shows_only_the_sentence_in_the_viewer(desktop):
    page = desktop
    other = "My sister is tall."
    # Translate A, run Beam: A's tree, and it says which sentence it is for
    translate(page, SENTENCE)
    run_beam(page)
    shown = beam_on_screen(page)
    assert shown["hyps"] and shown["nodes"] and shown["best"] and SENTENCE in shown["summary"]
    # translate B: nothing of A's tree is left to read or click
    translate(page, other)
    page.wait_for_function("() => document.querySelectorAll('#beam-hyps li').length === 0")
    shown = beam_on_screen(page)
    assert shown["nodes"] == 0 and shown["best"] == "" and SENTENCE not in shown["summary"], shown
    # B's own tree, then an error: the tree goes with the sentence
    run_beam(page)
    assert other in beam_on_screen(page)["summary"]
    fail_translate(page)
    page.wait_for_function("() => document.querySelectorAll('#beam-hyps li').length === 0")
    shown = beam_on_screen(page)
    assert shown["nodes"] == 0 and shown["best"] == "" and other not in shown["summary"], shown
    # A's tree, then B typed but not translated: a hypothesis of A opens A, and the box says A
    translate(page, SENTENCE)
    run_beam(page)
    page.locator("#src-text textarea").fill(other)
    page.click("#beam-hyps li[data-hyp='0'] button")
    page.wait_for_function("() => window.__explorer.getState().origin === 'beam'")
    assert state(page)["sentence"] == SENTENCE
    assert page.input_value("#src-text textarea") == SENTENCE
    assert page.locator("#beam-hyps li").count() > 0  # the tree it was opened from stays


# --- 3. a tap names a cell on a phone ----------------------------------------------------------


def test_a_tap_on_a_heatmap_cell_shows_its_value_on_a_phone(phone):
    page = phone
    translate(page, SENTENCE)
    go_to_step(page, 3)
    canvas = page.locator("#attn-plot canvas")
    canvas.scroll_into_view_if_needed()
    g = grid(page)
    tip = page.locator("#viewer-tooltip")
    for row, col in ((1, 2), (2, 4)):
        canvas.tap(position={"x": g["left"] + (col + 0.5) * g["cellW"], "y": g["top"] + (row + 0.5) * g["cell"]})
        page.wait_for_function(
            "(k) => { const t = document.querySelector('#viewer-tooltip');"
            " return !t.hidden && t.innerText.includes(k); }",
            arg=f"source token {col + 1} ",
        )
        text = tip.inner_text()
        assert f"query: step {row + 1} " in text and re.search(r"weight: (< )?\d\.\d+", text), text
        box = tip.bounding_box()  # the whole tooltip can be read
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"] + 0.5
        assert box["y"] >= 0 and box["y"] + box["height"] <= PHONE["height"] + 0.5
    page.locator("#step-text").tap()  # a tap elsewhere puts it away
    page.wait_for_selector("#viewer-tooltip", state="hidden")


# --- 4. the example hint ----------------------------------------------------------------------


def test_example_hint_leaves_when_you_type_your_own_sentence(desktop):
    page = desktop
    page.locator("#src-text").scroll_into_view_if_needed()
    page.locator(f"text={SENTENCE}").first.click()
    page.wait_for_selector("#hint .ax-hint:not([hidden])")
    assert "red car" in page.inner_text("#hint .ax-hint")
    page.click("#translate-btn")
    page.wait_for_function("(t) => window.__explorer.getState().sentence === t", arg=SENTENCE)
    assert page.is_visible("#hint .ax-hint")  # still the example's sentence
    box = page.locator("#src-text textarea")
    box.click()
    box.press("Control+a")
    page.keyboard.type("The dog eats.")  # real keys, as a person types
    page.wait_for_selector("#hint .ax-hint", state="hidden")
    page.keyboard.press("Enter")
    page.wait_for_function("() => window.__explorer.getState().sentence === 'The dog eats.'")
    # no wait: the hint follows the trace in the same store change (hint.js), and it has gone
    assert state(page)["hint"] is None
    assert not page.is_visible("#hint .ax-hint") and "red car" not in page.locator("#hint .ax-hint").inner_text()


# --- 5 and 6. an error leaves nothing of the old sentence: epoch panel, address -----------------


def test_epoch_panel_after_an_error_shows_one_consistent_state(desktop):
    page = desktop
    open_panel(page, "epoch-panel")  # the shipped checkpoint has snapshots, so the panel is there
    page.wait_for_selector("#epoch-view .ep-root", state="attached")  # mounted when first opened
    translate(page, SENTENCE)
    page.locator("#epoch-view").scroll_into_view_if_needed()
    page.wait_for_selector("#epoch-multiples[data-key] figure.ep-fig", state="attached")
    assert page.inner_text("#epoch-caption") and page.inner_text("#epoch-status")
    fail_translate(page)
    page.wait_for_function("() => document.querySelectorAll('#epoch-multiples figure').length === 0")
    # only the placeholder: no caption, status or maps of the old sentence beside it
    panel = page.inner_text("#epoch-view .ep-root")
    assert "Translate a sentence" in panel
    assert page.inner_text("#epoch-caption") == "" and page.inner_text("#epoch-status") == ""
    assert SENTENCE not in panel and "traced" not in panel and "layer" not in panel, panel


def test_address_forgets_the_sentence_after_an_error(desktop):
    page = desktop
    translate(page, SENTENCE)
    assert fragment(page)["text"] == [SENTENCE]
    fail_translate(page)
    page.wait_for_function("() => !location.href.includes('text=')")
    page.reload()
    page.wait_for_selector("#viewer .ax-root")
    # the viewer reads a link when it mounts, and a link keeps the example sent with the page
    # from being drawn (viewer.js): the example drawn, as the first sentence, with no link in
    # the store, means no link was read
    painted(page)
    s = state(page)
    assert s["link"] is None and s["sentenceId"] == 1, (s["link"], s["sentenceId"])
    # the old sentence is not brought back: the page opens on its example, as a first visit does
    opening = state(page)["sentence"]
    assert opening and opening != SENTENCE and not page.is_visible("#viewer-empty")
    assert page.input_value("#src-text textarea") == opening


# --- 7. links ---------------------------------------------------------------------------------


def test_links_count_from_one_and_reopen_the_version_on_screen(desktop, app_server):
    page = desktop
    translate(page, SENTENCE)
    open_section(page, "views")
    page.select_option("#view-select", "decoder")
    page.select_option("#layer-select", "1")
    page.select_option("#head-select", "1")
    go_to_step(page, 2)
    page.wait_for_selector("#attn-plot[data-view='decoder'][data-layer='1'][data-head='1']", state="attached")
    f = fragment(page)  # layer 1, head 1 as on screen, like the step
    assert (f["step"], f["layer"], f["head"], f["view"]) == (["2"], ["1"], ["1"], ["decoder"]), f
    # a link's numbers mean what the menus say
    frag = urllib.parse.urlencode({"text": SENTENCE, "step": 2, "view": "cross", "layer": 1, "head": 2})
    page.goto(f"{app_server.url}?fresh=1#{frag}")
    page.wait_for_selector(
        "#attn-plot[data-view='cross'][data-step='2'][data-layer='1'][data-head='2']", state="attached"
    )
    assert page.eval_on_selector("#layer-select", "s => s.selectedOptions[0].textContent") == "layer 1"
    assert page.eval_on_selector("#head-select", "s => s.selectedOptions[0].textContent") == "head 2"

    # a beam hypothesis other than the greedy one: its link reopens that hypothesis and says so
    translate(page, SENTENCE)
    run_beam(page)
    tree = state(page)["beam"]
    i = next(k for k, h in enumerate(tree["hypotheses"]) if h["text"] != tree["greedy_translation"])
    page.click(f"#beam-hyps li[data-hyp='{i}'] button")
    page.wait_for_function(
        "(ids) => JSON.stringify(window.__explorer.getState().forcedPrefix) === ids",
        arg=json.dumps(tree["hypotheses"][i]["ids"], separators=(",", ":")),
    )
    assert fragment(page)["origin"] == ["beam"]
    page.goto(f"{app_server.url}?again=1#{urllib.parse.urlparse(page.url).fragment}")  # a reload of the link
    page.wait_for_function("() => window.__explorer && window.__explorer.getState().origin === 'beam'")
    page.wait_for_selector("#attn-plot[data-step]", state="attached")
    assert state(page)["forcedPrefix"] == tree["hypotheses"][i]["ids"]
    assert page.input_value("#translation textarea") == tree["hypotheses"][i]["text"]
    assert "beam hypothesis" in page.inner_text("#translation")
    assert page.inner_text("#viewer-forced").startswith("Beam-search hypothesis")
    # the tree itself is not in the link: the beam panel says so instead of looking blank
    assert "link" in page.inner_text("#beam-summary") and "Beam search" in page.inner_text("#beam-summary")

    # a What-if version: its link reopens it, at the forced step
    translate(page, "My sister is tall.")
    go_to_step(page, 2)
    open_panel(page, "whatif-panel")
    page.select_option("#candidate select", "1")
    page.click("#whatif-btn")
    page.wait_for_function("() => document.querySelector('#whatif-text').innerText.includes('forced to')")
    page.click("#open-whatif-btn")
    page.wait_for_function("() => window.__explorer.getState().origin === 'whatif'")
    forced = state(page)["forcedPrefix"]
    page.goto(f"{app_server.url}?again=2#{urllib.parse.urlparse(page.url).fragment}")
    page.wait_for_function("() => window.__explorer && window.__explorer.getState().origin === 'whatif'")
    page.wait_for_selector("#attn-plot[data-step='2']", state="attached")
    assert state(page)["forcedPrefix"] == forced and "step 2 forced to" in page.inner_text("#viewer-forced")

    # forced tokens this model cannot read: the greedy version, and a notice that says so
    frag = urllib.parse.urlencode({"text": SENTENCE, "forced": "999999.999999", "origin": "whatif"})
    page.goto(f"{app_server.url}?again=3#{frag}")
    page.wait_for_function(
        "() => { const n = document.querySelector('#notice');"
        " return n && n.innerText.includes('greedy translation is shown'); }"
    )
    # the notice is text from the server; the store takes the trace once its attention is inflated
    page.wait_for_function("() => window.__explorer.getState().origin === 'translate'")
    assert state(page)["forcedPrefix"] == []


# --- 8. phone heatmaps ------------------------------------------------------------------------


def test_phone_heatmaps_keep_legend_columns_labels_and_titles_on_screen(phone):
    page = phone
    translate(page, "The book that I bought yesterday is very interesting.")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    scroller = page.locator("#attn-plot .ax-scroll")
    scroller.scroll_into_view_if_needed()
    # a short sentence fits: every column, the legend, the row labels and the whole title
    for part in ("#attn-plot canvas", "#attn-plot .ax-legend", "#attn-plot .ax-rows", "#attn-plot .ax-title"):
        assert in_viewport_x(page, page.locator(part)), part
    assert not scroller.evaluate("s => s.scrollWidth > s.clientWidth + 1")
    for title in page.locator(".ax-fig:not([hidden]) .ax-title").all():  # wrapped, never cut off
        if title.inner_text():
            assert title.evaluate("t => t.scrollWidth <= t.clientWidth + 1 && t.scrollHeight <= t.clientHeight + 1")
            assert in_viewport_x(page, title), title.inner_text()
    # a long one scrolls sideways inside its box: the last column can be reached, the row
    # labels stay where they were and the legend stays on screen
    translate(page, f"{LONG}. " * 2)
    go_to_step(page, 4)
    scroller.scroll_into_view_if_needed()
    labels = page.locator("#attn-plot .ax-rows")
    x0 = labels.bounding_box()["x"]
    assert scroller.evaluate("s => s.scrollWidth > s.clientWidth")
    scroller.evaluate("s => { s.scrollLeft = s.scrollWidth; }")
    page.wait_for_function("() => document.querySelector('#attn-plot .ax-scroll').scrollLeft > 50")
    canvas = page.locator("#attn-plot canvas").bounding_box()
    assert canvas["x"] + canvas["width"] <= PHONE["width"] + 0.5  # the right-hand columns are on screen
    assert abs(labels.bounding_box()["x"] - x0) < 1 and in_viewport_x(page, labels)
    assert page.locator("#attn-plot .ax-rowlabel.current").is_visible()
    assert in_viewport_x(page, page.locator("#attn-plot .ax-legend"))
    assert page.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]


# --- 9. space on a button ---------------------------------------------------------------------


def test_space_presses_the_focused_button_and_plays_elsewhere(desktop):
    page = desktop
    translate(page, SENTENCE)
    open_section(page, "views")  # the checkbox
    page.select_option("#play-speed", "1")
    page.focus("#next-btn")
    page.keyboard.press(" ")
    page.wait_for_selector("#attn-plot[data-step='2']", state="attached")
    page.focus("#prev-btn")
    page.keyboard.press(" ")
    page.wait_for_selector("#attn-plot[data-step='1']", state="attached")
    assert state(page)["playing"] is False
    page.focus("#hide-specials")
    page.keyboard.press(" ")  # ticks the box, does not play
    assert page.is_checked("#hide-specials") and state(page)["playing"] is False
    page.focus("#play-btn")
    page.keyboard.press(" ")  # one press of Play: playing, not toggled twice
    assert page.get_attribute("#play-btn", "aria-pressed") == "true"
    page.keyboard.press(" ")
    assert page.get_attribute("#play-btn", "aria-pressed") == "false"
    page.locator("#step-text").click()  # away from any control, space plays
    page.keyboard.press(" ")
    assert page.get_attribute("#play-btn", "aria-pressed") == "true"
    page.keyboard.press(" ")
    assert page.get_attribute("#play-btn", "aria-pressed") == "false"


# --- 10. a long paste -------------------------------------------------------------------------


def test_a_long_paste_is_cut_once_by_the_model_and_the_notice_says_what_was_dropped(desktop, app_server):
    from transformer.core.tokenizer import encode, load_tokenizer

    page = desktop
    text = " ".join(f"Sentence number {i} is about a red car." for i in range(1, 400))[:5000]
    box = page.locator("#src-text textarea")
    box.fill("")  # the example the page opened on out of the way
    box.click()
    page.keyboard.insert_text(text)  # what a paste does
    assert len(box.input_value()) == 5000  # the box keeps all of it
    page.click("#translate-btn")
    page.wait_for_function("() => document.querySelector('#notice').innerText.includes('dropped')")
    # the model was given all of it (the store takes the trace once its attention is inflated)
    page.wait_for_function("(t) => window.__explorer.getState().sentence === t", arg=text)
    notice = page.inner_text("#notice")
    m = re.search(
        r"at most (\d+) subword tokens and this text has (\d+)\. Only the first \1 were translated: "
        r"(\d+) of its (\d+) words were read and (\d+) were dropped \((\d+) tokens dropped, from “(.+?)…?” on\)",
        notice,
    )
    assert m, notice
    kept, total, dropped, preview = int(m[1]), int(m[2]), int(m[6]), m[7]
    assert int(m[4]) == len(text.split()) and int(m[3]) + int(m[5]) == int(m[4])  # words read and dropped
    cfg = json.loads((app_server.checkpoint / "config.json").read_text())
    tok = load_tokenizer(app_server.checkpoint / cfg["src_tokenizer_file"])
    assert total == len(encode(tok, text)) and dropped == total - kept  # counted on the whole paste
    start = tok.encode(text, add_special_tokens=False).offsets[kept][0]
    assert text[start:].strip().startswith(preview.rstrip("…").strip())  # quoted from where the cut is
    assert len(state(page)["trace"]["src"]) == kept + 2


# --- 11. row labels on long sentences ----------------------------------------------------------


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_row_labels_never_overlap_on_long_sentences(device, request):
    page = request.getfixturevalue(device)
    translate(page, f"{LONG}. " * 3)
    open_section(page, "views")  # the view menu and the encoder rollout
    T = state(page)["trace"]["steps"]
    for step in sorted({1, min(39, T), min(40, T), T}):
        go_to_step(page, step)
        for view in ("cross", "decoder", "encoder", "rollout"):
            page.select_option("#view-select", view)
            page.wait_for_selector(f"#attn-plot[data-view='{view}'][data-step='{step}']", state="attached")
            for fig in ("#attn-plot", "#enc-rollout"):
                boxes = page.evaluate(ROW_LABEL_BOXES, fig)
                clash = [(a[0], b[0]) for a, b in zip(boxes, boxes[1:]) if b[1] < a[2] - 0.5]
                assert not clash, (device, step, view, fig, clash[:3])
        if step > 1:  # the current row always keeps its label
            page.select_option("#view-select", "cross")
            assert page.locator("#attn-plot .ax-rowlabel.current").inner_text().startswith(f"{step}: ")


# --- 12. knock-out ----------------------------------------------------------------------------


def test_knockout_waits_for_a_head_and_speaks_plainly(desktop):
    page = desktop
    translate(page, SENTENCE)
    open_section(page, "views")  # the mosaic
    open_panel(page, "analysis-panel")
    btn = page.locator("#knockout-btn")
    btn.scroll_into_view_if_needed()
    idle = btn.evaluate("b => [getComputedStyle(b).backgroundColor, getComputedStyle(b).borderStyle]")
    assert btn.is_disabled() and idle[1] == "dashed", idle  # flat and dashed: nothing to do yet
    assert "shift-click" in page.inner_text("#ko-why")  # what to do, in words
    g = grid(page, "#mosaic")
    page.locator("#mosaic canvas").click(position={"x": g["left"] + 2, "y": g["top"] + 2}, modifiers=["Shift"])
    page.wait_for_selector("#ko-selection .chip[data-head='cross:1:1']")
    ready = btn.evaluate("b => [getComputedStyle(b).backgroundColor, getComputedStyle(b).borderStyle]")
    assert not btn.is_disabled() and ready[0] != idle[0] and ready[1] == "solid", (idle, ready)
    assert page.inner_text("#ko-why") == ""
    btn.click()
    page.wait_for_selector("#ko-result[data-state='done']", state="attached", timeout=120_000)
    assert "cross-attention, layer 1, head 1" in page.inner_text("#ko-result")
    page.click("#ko-selection .ax-chip-clear")
    page.wait_for_function("() => document.querySelector('#knockout-btn').disabled")
    # nowhere does the page speak the API's head format
    text = visible_text(page)
    assert "0-based" not in text and "kind:layer:head" not in text and "cross:0:" not in text


# --- 13. not English ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "italian", ["Il gatto nero dorme sul divano.", "Mia sorella è alta.", "Ho una macchina rossa."]
)
def test_italian_input_is_told_the_model_reads_english(desktop, italian):
    page = desktop
    translate(page, italian)
    page.wait_for_function("() => document.querySelector('#notice').innerText.includes('English only')")
    notice = page.inner_text("#notice")
    assert "Italian" in notice and "meaningless" in notice and page.is_visible("#notice")
    translate(page, SENTENCE)  # and English gets no such warning
    page.wait_for_function("() => !document.querySelector('#notice').innerText.includes('English only')")


# --- 14. contrast ------------------------------------------------------------------------------


def test_all_text_meets_wcag_aa_contrast(desktop):
    page = desktop
    checks = {}

    def check(when):
        page.wait_for_function(SETTLED)
        checks[when] = page.evaluate(LOW_CONTRAST, ".gradio-container")

    check("before a sentence")  # help text under the box, placeholder, disabled controls
    translate(page, "Il gatto dorme.")  # a warning in the notice
    check("with a notice")
    translate(page, SENTENCE)
    open_section(page, "views")
    open_panel(page, "analysis-panel")
    page.select_option("#view-select", "rollout")
    page.click("#importance-btn")
    page.wait_for_selector("#head-importance[data-state='done']", state="attached", timeout=120_000)
    run_beam(page)
    if page.locator("#epoch-panel").count():
        open_panel(page, "epoch-panel")
    if page.locator("#epoch-view").count():
        page.locator("#epoch-view").scroll_into_view_if_needed()
        page.wait_for_selector("#epoch-multiples[data-key] figure.ep-fig", state="attached")
    check("with every panel")
    assert not any(checks.values()), checks


# --- 15. leftovers ------------------------------------------------------------------------------


def test_notes_speak_only_of_what_is_on_screen(desktop):
    page = desktop
    translate(page, SENTENCE)
    open_section(page, "views")
    page.select_option("#view-select", "rollout")
    page.wait_for_selector("#attn-plot[data-view='rollout']", state="attached")
    assert not page.is_visible("#mosaic")
    notes = " ".join(n.inner_text() for n in page.locator("#viewer .ax-note").all() if n.is_visible())
    assert "mosaic" not in notes and "layer and head do not apply" in notes.lower(), notes
    page.select_option("#view-select", "cross")
    page.wait_for_selector("#mosaic canvas", state="visible")
    assert "mosaic" in page.inner_text("#attn-note")


def test_no_text_needs_an_emoji_font(desktop):
    page = desktop
    missing = {}

    def check(when):
        found = page.evaluate(MISSING_GLYPHS, "body")
        missing[when] = found["missing"]

    check("start")
    translate(page, "Il gatto dorme. 😺")  # a warning, and [UNK]
    check("notice")
    translate(page, SENTENCE)
    page.select_option("#play-speed", "1")
    page.click("#play-btn")
    check("playing")  # the pause button
    page.click("#play-btn")
    open_section(page, "views")
    open_panel(page, "analysis-panel")  # shift-click selects for knock-out
    g = grid(page, "#mosaic")
    page.locator("#mosaic canvas").click(position={"x": g["left"] + 2, "y": g["top"] + 2}, modifiers=["Shift"])
    run_beam(page)
    check("panels")
    assert not any(missing.values()), missing


def test_whole_view_png_includes_the_logit_lens_table(desktop):
    from PIL import Image

    page = desktop
    translate(page, SENTENCE)
    go_to_step(page, 2)
    open_section(page, "lens")
    page.wait_for_selector("#logit-lens[data-step='2']", state="attached")
    assert page.locator("#logit-lens tbody tr").count() > 0
    with page.expect_download() as d:
        page.click("#download-view-png")
    image = Image.open(d.value.path()).convert("RGB")
    # the lens marks the emitted token's cells in its own colour (#ffd9b3); no chart uses it
    lens_cells = int((np.abs(np.asarray(image).astype(int) - (255, 217, 179)).sum(axis=2) <= 6).sum())
    assert lens_cells > 200, lens_cells
    assert image.height > page.locator("#attn-plot canvas").bounding_box()["height"] + 200
