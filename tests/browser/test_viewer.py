"""The app as a person uses it: a real `python app.py`, driven in headless Chromium.

Run alone with `python -m pytest -m browser`; tests/browser/conftest.py says which Chromium.
Checks are structural (element ids, data-* attributes set after each paint, the store as
the page's test handle `window.__explorer.getState()` shows it), so a retrained checkpoint
with other translations still passes.
"""

import json
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import attn, frames, grid, open_panel, open_section, painted, row_labels, state, steps, translate

pytestmark = pytest.mark.browser

SCREENSHOT_DIR = Path(tempfile.gettempdir()) / "attention-explorer-screenshots"
SENTENCE = "The black cat is sleeping on the red chair."


def test_every_control_draws_in_the_browser_without_server_requests(server, page):
    url, _ = server
    page.goto(url)
    page.wait_for_selector("#viewer .ax-root")
    painted(page)  # a first visit opens on an example already drawn
    # a refused sentence empties the viewer: stepping controls disabled, empty hint box hidden
    page.locator("#src-text textarea").fill("   ")
    page.click("#translate-btn")
    page.wait_for_selector("#attn-plot:not([data-step])", state="attached")
    for control in (
        "#prev-btn",
        "#next-btn",
        "#play-btn",
        "#step-slider",
        "#view-select",
        "#layer-select",
        "#head-select",
        "#hide-specials",
        "#download-view-png",
    ):
        assert page.is_disabled(control), control
    assert not page.is_visible("#hint .ax-hint") and page.is_visible("#viewer-empty")
    open_panel(page, "whatif-panel")
    assert page.is_disabled("#whatif-btn")

    translate(page, SENTENCE)
    T = steps(page)
    assert T >= 3
    assert page.inner_text("#step-label") == f"Step 1 of {T}"
    assert page.inner_text("#step-text").startswith(f"Step 1 of {T}.")
    assert page.input_value("#step-slider") == "1"
    assert page.get_attribute("#step-slider", "max") == str(T)
    # one chip per subword; the word-start marker is a separate, subtle span
    src = state(page)["trace"]["src"]
    assert page.locator("#src-chips span.chip").count() == len(src)
    assert page.locator("#src-chips span.chip .ws").count() == sum(t.startswith("▁") for t in src)
    assert page.locator("#prefix-chips span.chip").count() == 2
    assert page.locator("#prefix-chips span.chip.current").count() == 1
    open_section(page, "views")  # the view menus and the mosaic

    requests = []
    page.on("request", lambda r: requests.append(r.url))
    # Playwright's request event leaves out the browser's own fetches, such as /favicon.ico;
    # the DevTools protocol sees every one
    cdp = page.context.new_cdp_session(page)
    fetched = lambda e: e["request"]["url"].startswith("http") and requests.append(e["request"]["url"])  # noqa: E731
    cdp.on("Network.requestWillBeSent", fetched)
    cdp.send("Network.enable")

    page.click("#next-btn")
    painted(page, 2)
    assert page.inner_text("#step-label") == f"Step 2 of {T}" and page.input_value("#step-slider") == "2"
    assert page.locator("#prefix-chips span.chip").count() == 3
    assert page.get_attribute("#mosaic", "data-step") == "2"
    page.click("#prev-btn")
    painted(page, 1)
    page.eval_on_selector("#step-slider", "(s, v) => { s.value = v; s.dispatchEvent(new Event('input')); }", str(T))
    painted(page, T)
    assert page.is_disabled("#next-btn") and page.inner_text("#step-label") == f"Step {T} of {T}"

    # future rows never show their tokens
    page.eval_on_selector("#step-slider", "(s) => { s.value = 2; s.dispatchEvent(new Event('input')); }")
    painted(page, 2)
    rows = row_labels(page)
    tgt = state(page)["trace"]["tgt"]
    assert [f for _, f in rows] == [i >= 2 for i in range(T)]
    for i, (label, future) in enumerate(rows):
        assert label == (f"{i + 1}: not generated yet" if future else f"{i + 1}: {tgt[i]} → {tgt[i + 1]}")

    # view / layer / head / hide-specials each repaint with the right settings
    page.select_option("#view-select", "encoder")
    page.wait_for_selector("#attn-plot[data-view='encoder']")
    page.select_option("#layer-select", "2")  # layers and heads count from 1, as their labels do
    page.wait_for_selector("#attn-plot[data-layer='2']")
    assert page.eval_on_selector("#layer-select", "s => s.selectedOptions[0].textContent") == "layer 2"
    page.select_option("#head-select", "3")
    page.wait_for_selector("#attn-plot[data-head='3']")
    assert page.eval_on_selector("#head-select", "s => s.selectedOptions[0].textContent") == "head 3"
    page.select_option("#head-select", "max")
    page.wait_for_selector("#attn-plot[data-head='max']")
    before = grid(page)
    page.check("#hide-specials")
    page.wait_for_selector("#attn-plot[data-hide='1']")
    after = grid(page)
    assert (after["rows"], after["cols"]) == (before["rows"] - 2, before["cols"] - 2)  # [SOS], [EOS] gone
    labels = [text for text, _ in row_labels(page)]  # encoder view: rows are the source tokens
    assert "[SOS]" not in labels and "[EOS]" not in labels and len(labels) == after["rows"]
    assert page.get_attribute("#mosaic", "data-hide") == "1"  # the mosaic follows hide-specials
    page.uncheck("#hide-specials")
    page.wait_for_selector("#attn-plot[data-hide='0']")
    page.select_option("#view-select", "decoder")
    page.wait_for_selector("#attn-plot[data-view='decoder'][data-layer='2'][data-head='max']")
    page.select_option("#view-select", "cross")
    page.wait_for_selector("#attn-plot[data-view='cross']")

    # hover names the cell: query, key and weight
    page.locator("#attn-plot canvas").scroll_into_view_if_needed()
    box = page.locator("#attn-plot canvas").bounding_box()
    g = grid(page)
    page.mouse.move(box["x"] + g["left"] + 1.5 * g["cellW"], box["y"] + g["top"] + 0.5 * g["cell"])
    tip = page.locator("#viewer-tooltip")
    assert tip.is_visible()
    lines = tip.inner_text()
    assert "query: step 1" in lines and "key: source token 2" in lines and "weight: " in lines
    page.mouse.move(box["x"] + g["left"] + 0.5 * g["cellW"], box["y"] + g["top"] + 2.5 * g["cell"])
    assert "not generated yet" in tip.inner_text()  # row 3 at step 2
    page.mouse.move(0, 0)

    # keyboard: → six times from step 1 lands on step 7 (or the last), never snaps back; space plays
    page.eval_on_selector("#step-slider", "(s) => { s.value = 1; s.dispatchEvent(new Event('input')); }")
    painted(page, 1)
    page.locator("#step-text").click()
    for _ in range(6):
        page.keyboard.press("ArrowRight")
    painted(page, min(7, T))
    page.keyboard.press("ArrowLeft")
    painted(page, min(7, T) - 1)
    page.eval_on_selector("#step-slider", "(s) => { s.value = 1; s.dispatchEvent(new Event('input')); }")
    page.select_option("#play-speed", "12")
    page.locator("#step-text").click()
    page.keyboard.press(" ")
    assert page.get_attribute("#play-btn", "aria-pressed") == "true"
    painted(page, T)  # Play runs to the end and stops
    page.wait_for_function("() => document.querySelector('#play-btn').getAttribute('aria-pressed') === 'false'")

    # the address bar is a shareable link to exactly this view, counting from 1 as the page does
    frag = urllib.parse.parse_qs(urllib.parse.urlparse(page.url).fragment)
    assert frag["text"] == [SENTENCE] and frag["step"] == [str(T)] and frag["view"] == ["cross"]
    assert frag["layer"] == ["2"] and frag["head"] == ["max"]

    # every control's handler has run (the waits above saw each drawing, Play stopped); two
    # frames more let what they left for later run, so a request any of them made is seen by now
    frames(page)
    assert requests == [], requests  # stepping, Play and every view change stayed in the browser
    cdp.detach()

    # PNG export of one chart and of the whole view
    with page.expect_download() as d:
        page.click("#download-view-png")
    assert d.value.suggested_filename.endswith(".png")
    with page.expect_download() as d:
        page.click("#topk .ax-png")
    assert d.value.suggested_filename.startswith("topk")

    # the full-precision trace: the button is enabled once the file is written (after the views)
    page.wait_for_selector("#download-trace:not([disabled])")
    with page.expect_download() as d:
        page.click("#download-trace")
    with open(d.value.path(), encoding="utf-8") as f:
        assert json.load(f)["src_text"] == SENTENCE


def test_shared_link_reopens_the_same_view(server, page):
    url, _ = server
    frag = urllib.parse.urlencode(
        {"text": "I don't like coffee.", "step": 3, "view": "encoder", "layer": 2, "head": "max", "hide": 1}
    )
    page.goto(f"{url}#{frag}")
    page.wait_for_selector("#attn-plot[data-view='encoder']")
    assert {"step": "3", "view": "encoder", "layer": "2", "head": "max", "hide": "1"}.items() <= attn(page).items()
    assert page.eval_on_selector("#layer-select", "s => s.selectedOptions[0].textContent") == "layer 2"
    assert page.locator("#src-text textarea").input_value() == "I don't like coffee."
    page.goto(url + "?text=" + urllib.parse.quote("I have a red car."))
    page.wait_for_function("() => window.__explorer && window.__explorer.getState().sentence === 'I have a red car.'")
    painted(page)  # on the step a typed sentence opens on (tests/browser/test_first_screen.py)
    assert page.locator("#src-text textarea").input_value() == "I have a red car."


def test_whatif_explores_the_forced_version(server, page):
    url, _ = server
    page.goto(url)
    translate(page, "My sister is tall.")
    page.click("#next-btn")
    painted(page, 2)
    open_panel(page, "whatif-panel")
    page.select_option("#candidate select", "1")
    page.click("#whatif-btn")
    page.wait_for_function("() => document.querySelector('#whatif-text').innerText.includes('Step 2 forced to')")
    page.click("#open-whatif-btn")
    page.wait_for_selector("#viewer-forced:not([hidden])")
    assert "step 2 forced to" in page.inner_text("#viewer-forced")
    assert "step 2 forced to" in page.inner_text("#translation")  # the label says forced, not greedy
    assert "greedy" not in page.inner_text("#translation")
    painted(page, 2)
    page.wait_for_function(
        "() => { const r = document.querySelector('#viewer').getBoundingClientRect();"
        " return r.top < window.innerHeight && r.bottom > 0; }"
    )  # scrolled to the viewer
    # its link opens the same version again, at the same step
    forced = state(page)["forcedPrefix"]
    frag = urllib.parse.parse_qs(urllib.parse.urlparse(page.url).fragment)
    assert frag["origin"] == ["whatif"] and frag["forced"] == [".".join(map(str, forced))]
    page.goto(page.url.split("#")[0] + "?reload=1#" + urllib.parse.urlparse(page.url).fragment)
    page.wait_for_function("() => window.__explorer && window.__explorer.getState().origin === 'whatif'")
    painted(page, 2)
    assert state(page)["forcedPrefix"] == forced and "step 2 forced to" in page.inner_text("#viewer-forced")


def test_keys_hint_and_checkboxes_behave_as_a_person_expects(server, page):
    url, _ = server
    page.goto(url)
    page.wait_for_selector("#viewer .ax-root")
    # an example's hint shows with its sentence, and goes when another sentence is typed
    page.locator("#src-text").scroll_into_view_if_needed()
    page.locator("text=I have a red car.").first.click()
    page.wait_for_selector("#hint .ax-hint:not([hidden])")
    assert "red car" in page.inner_text("#hint .ax-hint")
    page.locator("#src-text textarea").fill("My sister is tall.")
    page.wait_for_selector("#hint .ax-hint", state="hidden")
    translate(page, "My sister is tall.")
    open_section(page, "views")  # the checkboxes
    open_panel(page, "analysis-panel")  # select mode is there once knock-out is
    # space on a focused button presses that button; elsewhere it plays
    page.focus("#next-btn")
    page.keyboard.press(" ")
    painted(page, 2)
    assert state(page)["playing"] is False
    # a ticked checkbox shows its tick: a filled box, not a white tick on nothing
    for box in ("#hide-specials", "#select-mode"):
        page.check(box)
        colour = page.eval_on_selector(box, "e => getComputedStyle(e).backgroundColor")
        assert colour not in ("rgba(0, 0, 0, 0)", "transparent", "rgb(255, 255, 255)"), (box, colour)
        page.uncheck(box)


def test_markup_is_inserted_as_text_and_bad_input_clears(server, page):
    url, _ = server
    page.goto(url)
    page.wait_for_selector("#viewer .ax-root")
    page.evaluate("() => { window.__xss = false; }")
    text = '<img src=x onerror="window.__xss=true"><script>window.__xss=true</script> the cat'
    translate(page, text, read="the cat")  # the tags and the script are taken out before tokenising
    assert "Taken out before translating: markup" in page.inner_text("#notice")
    assert page.evaluate("() => window.__xss") is False
    assert page.locator("#viewer img, #viewer script").count() == 0
    src = state(page)["trace"]["src"]
    chips = page.eval_on_selector_all("#src-chips > *", "cs => cs.map(c => [c.tagName, c.textContent])")
    assert chips == [["SPAN", t] for t in src]  # every token became the text of one chip, nothing else
    assert state(page)["sentence"] == "the cat"
    # bad input clears the old results instead of leaving them looking current
    page.locator("#src-text textarea").fill("   ")
    page.click("#translate-btn")
    page.wait_for_function("() => document.querySelector('#notice').innerText.includes('Please type')")
    page.wait_for_selector("#attn-plot:not([data-step])", state="attached")
    assert page.locator("#translation textarea").input_value() == ""
    assert page.is_disabled("#next-btn") and page.is_visible("#viewer-empty")
    # text in another script: the notice says plainly that the output is meaningless
    translate(page, "😺😺 שלום עולם")
    page.wait_for_function("() => document.querySelector('#notice').innerText.includes('meaningless')")


def test_control_characters_and_markup_are_taken_out_and_only_markup_is_refused(server, page):
    url, _ = server
    page.goto(url)
    page.wait_for_selector("#viewer .ax-root")
    translate(page, "\x1b[31mThe <b>black</b> cat sleeps.\x1b[0m", read="The black cat sleeps.")
    assert "markup (HTML tags) and control characters" in page.inner_text("#notice")
    page.locator("#src-text textarea").fill("<script>alert(1)</script>")
    page.click("#translate-btn")
    page.wait_for_function("() => document.querySelector('#notice').innerText.includes('only markup')")


def on_screen(page, sel: str) -> bool:
    """The element lies inside the viewport horizontally (as far as a swipe of the page goes)."""
    r = page.locator(sel).bounding_box()
    return r is not None and r["x"] >= 0 and r["x"] + r["width"] <= page.viewport_size["width"] + 0.5


@pytest.mark.slow  # a walk over every map on a phone (the first screen's phone checks stay default)
def test_phone_viewport_keeps_every_part_of_a_map_readable(server, browser):
    url, _ = server
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    # a link that names its step opens on it (one that names none opens where a typed sentence would)
    page.goto(url + "?text=" + urllib.parse.quote("The book that I bought yesterday is very interesting.") + "&step=1")
    painted(page, 1)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 392  # no sideways page scroll
    g = grid(page)
    assert g["cell"] >= 14  # cells stay big enough for legible labels
    # a sentence this short fits: every column, the legend and the title are on screen
    for part in ("#attn-plot canvas", "#attn-plot .ax-legend", "#attn-plot .ax-title"):
        assert on_screen(page, part), part
    title = page.locator("#attn-plot .ax-title")
    assert page.evaluate("(t) => t.scrollWidth <= t.clientWidth", title.element_handle())  # wrapped, not clipped
    # a tap on a cell names it, as hover does with a mouse
    page.locator("#attn-plot canvas").scroll_into_view_if_needed()
    page.locator("#attn-plot canvas").tap(position={"x": g["left"] + 1.5 * g["cellW"], "y": g["top"] + 0.5 * g["cell"]})
    page.wait_for_selector("#viewer-tooltip:not([hidden])")
    assert "weight: " in page.inner_text("#viewer-tooltip")
    # every figure's PNG button sits above its canvas, not on the chart
    overlaps = page.evaluate("""() => [...document.querySelectorAll('.ax-fig:not([hidden])')].map(f => {
        const b = f.querySelector('.ax-png'), c = f.querySelector('canvas');
        if (!b || !c) return null;
        const rb = b.getBoundingClientRect(), rc = c.getBoundingClientRect();
        return rb.height > 0 && rc.height > 0 && rb.bottom > rc.top + 0.5 && rb.top < rc.bottom ? f.id : null;
      }).filter(Boolean)""")
    assert overlaps == []
    page.click("#next-btn")
    painted(page, 2)
    # a long sentence scrolls sideways inside its box, under row labels that stay put, and
    # its legend stays on screen
    translate(page, "the black cat sleeps on the red chair while my sister reads a long book " * 3)
    scroller = page.locator("#attn-plot .ax-scroll")
    assert scroller.evaluate("s => s.scrollWidth > s.clientWidth")
    left = page.locator("#attn-plot .ax-rows").bounding_box()["x"]
    scroller.evaluate("s => { s.scrollLeft = s.scrollWidth; }")
    page.wait_for_function("() => document.querySelector('#attn-plot .ax-scroll').scrollLeft > 100")
    assert abs(page.locator("#attn-plot .ax-rows").bounding_box()["x"] - left) < 1
    assert on_screen(page, "#attn-plot .ax-legend") and on_screen(page, "#attn-plot .ax-rows")
    ctx.close()


def test_long_input_is_capped_in_tokens(server, page):
    url, _ = server
    page.goto(url)
    translate(page, "the black cat sleeps on the red chair while my sister reads a long book " * 12)
    page.wait_for_function("() => document.querySelector('#notice').innerText.includes('tokens dropped')")
    n = len(state(page)["trace"]["src"])
    assert n == 128  # 126 subwords plus [SOS] and [EOS]
    open_section(page, "views")
    page.select_option("#view-select", "encoder")
    page.wait_for_selector("#attn-plot[data-view='encoder']")
    page.keyboard.press("ArrowRight")
    painted(page, 2)


def test_gradio_client_translate_endpoint(server):
    from gradio_client import Client

    url, _ = server
    client = Client(url, verbose=False)
    translation, trace = client.predict("The black cat is sleeping.", api_name="/translate")
    if isinstance(trace, str):
        trace = json.loads(trace)
    assert translation and trace["translation"] == translation
    assert trace["schema"] == "transformer-trace/1"
    from transformer.core.wire import unpack_arrays

    cross = unpack_arrays(trace)["cross_attn"]  # encoded on the wire: (L, H, T, S) float32
    assert cross.shape == (trace["layers"], trace["heads"], len(trace["tgt_tokens"]) - 1, len(trace["src_tokens"]))


def test_notebook_output_runs_the_same_viewer(browser, translator, tmp_path):
    """trace.show()'s HTML, opened as a page: the same modules mount and step with no server."""
    from explorer.notebook import show_trace

    html = show_trace(translator.trace("the black cat sleeps.")).data
    page_file = tmp_path / "notebook.html"
    page_file.write_text(f"<!doctype html><html><body>{html}</body></html>", encoding="utf-8")
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(page_file.as_uri())
    painted(page, 1)
    page.click("#next-btn")
    painted(page, 2)
    page.locator("#step-text").click()
    page.keyboard.press("ArrowLeft")  # keys work once the viewer has focus
    painted(page, 1)
    assert page.url.startswith("file:") and "#" not in page.url  # notebooks never rewrite the address
    page.close()
    assert not errors, errors


def test_screenshot(server, page):
    """Last: a fresh 1440x900 screenshot of a translated sentence, for the README."""
    url, _ = server
    page.goto(url + "#" + urllib.parse.urlencode({"text": "I have a red car.", "step": 3, "view": "cross"}))
    painted(page, 3)
    for name in ("lens", "views"):  # the logit lens and the mosaic, as the README's caption says
        open_section(page, name)
    painted(page, 3)
    page.evaluate("() => document.querySelector('#viewer').scrollIntoView({block: 'start'})")
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOT_DIR / "app.png"
    page.screenshot(path=str(shot))
    print(f"screenshot: {shot}")
    assert shot.stat().st_size > 10_000
