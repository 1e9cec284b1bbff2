"""The explorer in the light and the dark theme, on a desktop (1366×900).

Gradio turns its own parts dark for a browser that prefers dark and for the Hub's
``?__theme=dark`` (it puts a ``dark`` class on <body>); the explorer's palette (web/theme.css,
read by the canvases through web/theme.js) follows that class. Each test reads what a visitor
sees: every visible text's WCAG contrast against the background it is drawn on, the pixels of
the attention map, the file name of a downloaded PNG. The app is the real ``python app.py``
shared by the browser tests (tests/browser/conftest.py). Run alone with
``python -m pytest -m browser tests/browser/test_theme.py``.
"""

import contextlib

import pytest

from tests.helpers import NO_TOUR, grid, open_panel, open_section, opened_page, state, translate

pytestmark = pytest.mark.browser

SENTENCE = "I have a red car."

# how the visitor asks for a theme: the browser's preference, and the Hub's address parameter
# (which wins over the preference either way)
ASKED = {
    "light": ("light", ""),
    "dark": ("dark", ""),
    "dark by ?__theme": ("light", "?__theme=dark"),
    "light by ?__theme": ("dark", "?__theme=light"),
}

# WCAG 2.x contrast of every visible text on the page against the background it is drawn on
# (the first opaque background among its ancestors, lighter layers blended in; an SVG label's
# own rect when it has one). Colours are read through a 1 px canvas, so any CSS colour syntax
# parses. Large text (24 px, or 18.66 px bold) needs 3:1, the rest 4.5:1. Returns
# {checked: n, low: [[where, text, ratio], ...]}.
LOW_CONTRAST = """() => {
  const probe = document.createElement("canvas").getContext("2d", { willReadFrequently: true });
  const rgba = (c) => {
    if (!c || c === "none") return null;
    probe.clearRect(0, 0, 1, 1);
    probe.fillStyle = "rgba(0, 0, 0, 0)";
    probe.fillStyle = c;
    probe.fillRect(0, 0, 1, 1);
    const d = probe.getImageData(0, 0, 1, 1).data;
    return [d[0], d[1], d[2], d[3] / 255];
  };
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const over = (top, under) => [0, 1, 2].map((i) => top[i] * top[3] + under[i] * (1 - top[3])).concat([1]);
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const opacity = (e) => { let a = 1; for (let x = e; x; x = x.parentElement) a *= Number(getComputedStyle(x).opacity);
    return a; };
  const background = (e) => {
    const layers = [];
    for (let x = e; x; x = x.parentElement) {
      let c = rgba(getComputedStyle(x).backgroundColor);
      const rect = x instanceof SVGElement ? x.querySelector(":scope > rect") : null;
      if (rect) c = rgba(getComputedStyle(rect).fill);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    return layers.reverse().reduce((acc, c) => over(c, acc), [255, 255, 255, 1]);
  };
  const name = (e) => e.id ? `#${e.id}`
    : `${e.tagName.toLowerCase()}.${String(e.className.baseVal ?? e.className).split(" ")[0]}`;
  const large = (cs) => parseFloat(cs.fontSize) >= 24
    || (parseFloat(cs.fontSize) >= 18.66 && Number(cs.fontWeight) >= 700);
  const low = [];
  let checked = 0;
  const check = (e, text, colour) => {
    const bg = background(e), c = rgba(colour);
    const k = ratio(over([c[0], c[1], c[2], c[3] * opacity(e)], bg), bg);
    checked++;
    if (k < (large(getComputedStyle(e)) ? 3 : 4.5)) low.push([name(e), text.slice(0, 50), +k.toFixed(2)]);
  };
  const seen = new Set(), walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const e = n.parentElement;
    if (!e || seen.has(e) || !n.textContent.trim() || ["SCRIPT", "STYLE", "NOSCRIPT"].includes(e.tagName)) continue;
    const r = e.getBoundingClientRect();
    if (!r.width || !r.height || !e.checkVisibility({ opacityProperty: true, visibilityProperty: true })) continue;
    seen.add(e);
    check(e, n.textContent.trim(), getComputedStyle(e)[e instanceof SVGElement ? "fill" : "color"]);
  }
  for (const f of document.querySelectorAll("select")) {  // a menu shows its chosen option's text
    if (f.checkVisibility() && f.selectedOptions.length) {
      check(f, f.selectedOptions[0].textContent, getComputedStyle(f).color);
    }
  }
  for (const f of document.querySelectorAll("textarea[placeholder], input[placeholder]")) {
    if (f.checkVisibility() && !f.value) check(f, f.placeholder, getComputedStyle(f, "::placeholder").color);
  }
  return { checked, low };
}"""

# The colours a visitor sees of the viewer and its main map: the viewer's background, and the
# cells of the current row, [r, g, b] each, read from the canvas (row `row`, 0-based)
MAP_COLOURS = """([g, row]) => {
  const c = document.querySelector("#attn-plot canvas"), x = c.getContext("2d");
  const k = c.width / parseFloat(c.style.width);
  const cell = (r, col) => Array.from(x.getImageData(Math.round((g.left + (col + 0.5) * g.cellW) * k),
    Math.round((g.top + (r + 0.5) * g.cell) * k), 1, 1).data).slice(0, 3);
  const probe = document.createElement("canvas").getContext("2d", { willReadFrequently: true });
  probe.fillStyle = getComputedStyle(document.querySelector("#viewer .ax-root")).backgroundColor;
  probe.fillRect(0, 0, 1, 1);
  return { viewer: Array.from(probe.getImageData(0, 0, 1, 1).data).slice(0, 3),
           cells: Array.from({ length: g.cols }, (_, col) => cell(row, col)),
           future: g.rows > row + 1 ? cell(g.rows - 1, 0) : null };
}"""

# The palette's colours for the cells that are not weights, and the line view's head colours
# on their card: [r, g, b] each
PALETTE = """() => {
  const probe = document.createElement("canvas").getContext("2d", { willReadFrequently: true });
  const rgb = (c) => { probe.fillStyle = c; probe.fillRect(0, 0, 1, 1);
    return Array.from(probe.getImageData(0, 0, 1, 1).data).slice(0, 3); };
  const style = getComputedStyle(document.querySelector(".gradio-container"));
  const v = (name) => rgb(style.getPropertyValue(name).trim());
  return { bg: v("--ax-bg"), masked: v("--ax-masked"), future: v("--ax-future"), highlight: v("--ax-highlight") };
}"""


# Gradio fades a block while its request runs; colours are measured once nothing is fading (a
# control's own opacity is part of how it looks)
SETTLED = """() => [...document.querySelectorAll('.gradio-container *')].every((e) => {
  const o = Number(getComputedStyle(e).opacity);
  return o === 1 || o === 0 || e.matches('select, input, button, textarea') || !e.checkVisibility(); })"""

# The line view's card and the colour of each head's lines on it, [r, g, b] each
LINE_COLOURS = """() => { const probe = document.createElement('canvas').getContext('2d', { willReadFrequently: true });
  const rgb = (c) => { probe.fillStyle = c; probe.fillRect(0, 0, 1, 1);
    return Array.from(probe.getImageData(0, 0, 1, 1).data).slice(0, 3); };
  const strokes = new Set([...document.querySelectorAll('#attn-lines line')].map((l) => l.getAttribute('stroke')));
  return { card: rgb(getComputedStyle(document.querySelector('#attn-lines .ln-card')).backgroundColor),
           heads: [...strokes].map(rgb) }; }"""


def luminance(rgb) -> float:
    f = [(v / 255) / 12.92 if v / 255 <= 0.03928 else ((v / 255 + 0.055) / 1.055) ** 2.4 for v in rgb]
    return 0.2126 * f[0] + 0.7152 * f[1] + 0.0722 * f[2]


def contrast(a, b) -> float:
    x, y = luminance(a), luminance(b)
    return (max(x, y) + 0.05) / (min(x, y) + 0.05)


@contextlib.contextmanager
def themed(browser, url: str, asked: str):
    """The app on a 1366×900 desktop as a visitor who asks for the theme ``asked`` (ASKED)."""
    scheme, query = ASKED[asked]
    with opened_page(
        browser,
        url + query,
        "desktop",
        init_script=NO_TOUR,
        timeout_ms=90_000,
        color_scheme=scheme,
        accept_downloads=True,
    ) as page:
        yield page


def open_everything(page):
    """Every closed section of the viewer and every panel, open."""
    for name in ("views", "lens", "pe"):
        open_section(page, name)
    for panel in page.eval_on_selector_all("#why-tools .gr-accordion[id]", "as => as.map((a) => a.id)"):
        open_panel(page, panel)
    # the arithmetic's table (or why there is none), and nothing fading while a request runs
    page.wait_for_selector(
        "#arithmetic .ar-root:not([data-state='pending']):not([data-state='empty'])", state="attached"
    )
    # every other answer in too: Gradio fades a component while its request runs
    page.wait_for_function(
        "() => !document.querySelector(\"#gl-root[data-state='idle'], #why-tools [data-state='pending'], "
        "#why-tools [data-state='queued'], #why-tools [data-asking]\")"
    )
    page.wait_for_function(SETTLED)


# each theme once in the default suite; asked for by ?__theme against the system's choice, in
# the slow set (every section opened: a long walk)
BY_ADDRESS = pytest.mark.slow


@pytest.mark.parametrize("asked", [a if "?" not in a else pytest.param(a, marks=BY_ADDRESS) for a in ASKED])
def test_every_text_meets_wcag_aa_in_the_theme_asked_for(browser, app_server, asked):
    dark = asked.startswith("dark")
    with themed(browser, app_server.url, asked) as page:
        # Gradio's own choice, and the explorer's palette, follow what the visitor asked for
        assert page.evaluate("() => document.body.classList.contains('dark')") == dark
        translate(page, SENTENCE)
        assert state(page)["theme"] == ("dark" if dark else "light")
        low = {}
        seen = page.evaluate(LOW_CONTRAST)  # the first screen: the closed sections' titles among it
        low["after one Translate"] = seen["low"]
        open_everything(page)
        everything = page.evaluate(LOW_CONTRAST)
        low["every section open"] = everything["low"]
        assert everything["checked"] > seen["checked"] + 100  # the sections' texts were read too
        assert not any(low.values()), low


@pytest.mark.parametrize("asked", ["dark", pytest.param("dark by ?__theme", marks=BY_ADDRESS), "light"])
def test_the_map_starts_from_the_background_and_keeps_its_marks(browser, app_server, asked):
    dark = asked.startswith("dark")
    with themed(browser, app_server.url, asked) as page:
        translate(page, SENTENCE)
        seen = page.evaluate(MAP_COLOURS, [grid(page), 0])  # step 1: the first row, the rest not generated yet
        viewer, cells = seen["viewer"], seen["cells"]
        weakest = min(cells, key=lambda c: contrast(c, viewer))
        strongest = max(cells, key=lambda c: contrast(c, viewer))
        if dark:
            assert luminance(viewer) < 0.02, viewer  # the viewer is dark, not a white box
        else:
            assert luminance(viewer) > 0.9, viewer
        # a weight of 0 is (nearly) the background; the strongest weight stands out from it
        assert contrast(weakest, viewer) < 1.1, (weakest, viewer)
        assert contrast(strongest, viewer) > 3, (strongest, viewer)
        # rows not generated yet and masked cells are told apart from a zero weight and from each other
        assert contrast(seen["future"], weakest) >= 1.1, (seen["future"], weakest)
        p = page.evaluate(PALETTE)
        assert contrast(p["masked"], p["future"]) >= 1.2 and contrast(p["masked"], p["bg"]) >= 1.2, p
        assert contrast(p["highlight"], p["bg"]) >= 3, p  # the current row's frame
        # the line view's heads keep 3:1 against their card
        page.click("#picture-lines")
        page.click("#line-heads button[data-head='all']")
        page.wait_for_selector("#attn-lines[data-head='mean'] .ln-svg line", state="attached")
        lines = page.evaluate(LINE_COLOURS)
        assert len(lines["heads"]) >= 3 and all(contrast(h, lines["card"]) >= 3 for h in lines["heads"]), lines


def test_a_theme_change_redraws_the_map_and_a_png_says_its_theme(browser, app_server):
    from PIL import Image

    with themed(browser, app_server.url, "light") as page:
        translate(page, SENTENCE)
        g = grid(page)
        with page.expect_download() as d:
            page.click("#attn-plot .ax-png")
        assert d.value.suggested_filename == "attn-plot-step1.png"
        light = page.evaluate(MAP_COLOURS, [g, 0])
        # the system setting turns dark while the page is open: Gradio follows it, so does the map
        page.emulate_media(color_scheme="dark")
        page.wait_for_function("() => document.body.classList.contains('dark')")
        page.wait_for_function("() => window.__explorer.getState().theme === 'dark'", timeout=10_000)
        page.wait_for_function(
            """([g, before]) => { const c = document.querySelector('#attn-plot canvas');
              const k = c.width / parseFloat(c.style.width);
              const px = Array.from(c.getContext('2d').getImageData(Math.round((g.left + 0.5 * g.cellW) * k),
                Math.round((g.top + (g.rows - 0.5) * g.cell) * k), 1, 1).data).slice(0, 3);
              return px.join() !== before.join(); }""",
            arg=[g, light["future"]],
            timeout=10_000,
        )
        dark = page.evaluate(MAP_COLOURS, [g, 0])
        assert luminance(dark["viewer"]) < 0.02 and luminance(min(dark["cells"], key=luminance)) < 0.02, dark
        # a PNG taken now is drawn as the screen shows it, and its name says so
        with page.expect_download() as d:
            page.click("#attn-plot .ax-png")
        assert d.value.suggested_filename == "attn-plot-step1-dark.png"
        image = Image.open(d.value.path()).convert("RGB")
        assert luminance(image.getpixel((2, 2))) < 0.02  # its background is the dark one
        # and back: the light theme again, and its file names
        page.emulate_media(color_scheme="light")
        page.wait_for_function("() => window.__explorer.getState().theme === 'light'", timeout=10_000)
        assert page.evaluate(MAP_COLOURS, [g, 0])["cells"] == light["cells"]
        with page.expect_download() as d:
            page.click("#download-view-png")
        name = d.value.suggested_filename  # the light theme's: no "-dark"
        assert name.startswith("attention-map-") and name.endswith("-step1.png"), name
