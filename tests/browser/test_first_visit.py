"""A first visit, on a desktop (1366×900) and on a phone (390×844): one screen to start, the
sections that open when asked for (and a link that opens them again), one-click examples,
the guided tour and the glossary. The app is a real `python app.py` (started as in
tests/browser/test_viewer.py) in headless Chromium. Run alone with
`python -m pytest -m browser tests/browser/test_first_visit.py`.
"""

import contextlib
import urllib.parse

import pytest

from tests.helpers import DEVICES, device_page, go_to_step, settled, state, translate

# the slow set: a long walk through the page (python -m pytest -m slow)
pytestmark = [pytest.mark.browser, pytest.mark.slow]

DESKTOP, PHONE = DEVICES["desktop"]["viewport"], DEVICES["phone"]["viewport"]
SENTENCE = "I have a red car."
LAKE = "My parents live in a small house near the lake."
TOUR_STEPS = 7


def open_page(browser, app_server, device: str, url: str | None = None):
    ctx, pg = device_page(browser, device)
    pg.goto(url or app_server.url)
    pg.wait_for_selector("#viewer .ax-root")
    pg.evaluate("() => localStorage.clear()")  # a first visit: the tour has not been seen
    return ctx, pg


@pytest.fixture
def desktop(browser, app_server):
    ctx, pg = open_page(browser, app_server, "desktop")
    with contextlib.closing(ctx):
        yield pg
    assert not pg.errors, pg.errors


@pytest.fixture
def phone(browser, app_server):
    ctx, pg = open_page(browser, app_server, "phone")
    with contextlib.closing(ctx):
        yield pg
    assert not pg.errors, pg.errors


def box(page, sel: str) -> dict:
    return page.locator(sel).first.evaluate(
        "e => { const r = e.getBoundingClientRect();"
        " return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; }"
    )


def open_sections(page) -> dict:
    """What is open: the viewer's sections and the panels' accordions, by name."""
    return page.evaluate("""() => ({
      viewer: [...document.querySelectorAll('#viewer details[data-section]')]
        .filter(d => d.open).map(d => d.dataset.section),
      panels: [...document.querySelectorAll('#why-tools .gr-accordion[id]')]
        .filter(a => a.querySelector(':scope > .label-wrap').classList.contains('open')).map(a => a.id),
      allPanels: [...document.querySelectorAll('#why-tools .gr-accordion[id]')].map(a => a.id),
    })""")


def toggle_section(page, name: str):
    page.locator(f"#sec-{name} > summary").click(position={"x": 10, "y": 10})  # the marker: the words may be terms


def toggle_panel(page, elem_id: str):
    page.locator(f"#{elem_id} > .label-wrap").click()


# --- 1. one screen to start ---------------------------------------------------------------------


# phone: three screens, plus the one-line titles of the two closed sections "Where did this word
# come from?" and "The test set at a glance" (40 px each with their gap)
@pytest.mark.parametrize("device,limit", [("desktop", 1440), ("phone", 2532 + 2 * 40)])
def test_one_translate_fits_on_few_screens_with_every_section_closed(browser, app_server, device, limit):
    ctx, page = open_page(browser, app_server, device)
    translate(page, LAKE, step=None)  # a 10-word sentence: 14 steps, 14 source tokens
    settled(page, "#attn-plot canvas", "#topk canvas")  # the page's height is final
    sections = open_sections(page)
    assert sections["viewer"] == [] and sections["panels"] == [], sections
    assert len(sections["allPanels"]) >= 4, sections  # every panel has its own section
    height = page.evaluate("() => document.documentElement.scrollHeight")
    assert height <= limit, (device, height)
    # what stays out of the way until asked for: no mosaic, lens, diagnostics, beam or PE on show
    for sel in ("#mosaic", "#logit-lens", "#pe-heat", "#diag-maps", "#beam-tree", "#view-select"):
        assert not page.locator(sel).is_visible(), sel
    # the one attention map: cross-attention, one head (tests/browser/test_picture.py says which), with its caption
    plot = page.evaluate("() => ({...document.querySelector('#attn-plot').dataset})")
    assert plot["view"] == "cross" and plot["head"] not in ("mean", "max"), plot
    assert "English sentence" in page.inner_text("#attn-caption")
    ctx.close()
    assert not page.errors, page.errors


def test_the_first_desktop_screen_shows_translation_steps_prefix_candidates_and_attention(desktop):
    page = desktop
    translate(page, SENTENCE, step=None)
    page.evaluate("() => window.scrollTo(0, 0)")
    assert page.input_value("#translation textarea") == state(page)["trace"]["translation"]
    # the prefix is the picture's rows ("12: a → Mary"): the current row says what the step writes
    for sel in ("#translation", "#step-slider", "#next-btn", "#attn-plot .ax-rowlabel.current", "#attn-caption"):
        r = box(page, sel)
        assert 0 <= r["top"] and r["bottom"] <= DESKTOP["height"] and r["right"] <= DESKTOP["width"], (sel, r)
        assert page.locator(sel).first.is_visible(), sel
    # the picture (sized for a projector) and the candidates beside it are wholly on the first screen
    for sel in ("#topk canvas", "#attn-plot canvas"):
        r = box(page, sel)
        assert 0 <= r["top"] and r["bottom"] <= DESKTOP["height"], (sel, r)


# --- 2. examples ---------------------------------------------------------------------------------


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_an_example_translates_in_one_click_and_shows_its_whole_hint(browser, app_server, device):
    from explorer.page import EXAMPLES

    ctx, page = open_page(browser, app_server, device)
    for i in (0, len(EXAMPLES) - 1):
        sentence, hint = EXAMPLES[i]
        button = page.locator(f"#hint .ax-example[data-example='{i}']")
        assert button.inner_text() == sentence  # the whole sentence, not cut
        assert button.evaluate("b => b.scrollWidth <= b.clientWidth + 1")
        button.click()  # one click, no Translate
        page.wait_for_function("(t) => window.__explorer.getState().sentence === t", arg=sentence)
        page.wait_for_selector("#attn-plot[data-step]", state="attached")
        assert page.input_value("#src-text textarea") == sentence
        shown = page.locator("#hint .ax-hint-text")
        assert shown.is_visible() and shown.inner_text() == hint and "…" not in shown.inner_text()
        assert shown.evaluate("p => p.scrollWidth <= p.clientWidth + 1 && p.scrollHeight <= p.clientHeight + 1")
    ctx.close()
    assert not page.errors, page.errors


# --- 3. sections ---------------------------------------------------------------------------------


def test_sections_keep_their_state_and_a_link_opens_them_again(desktop, browser, app_server):
    page = desktop
    translate(page, SENTENCE, step=None)
    go_to_step(page, 1)
    # the viewer's "more views" section: drawn only once opened
    assert page.get_attribute("#mosaic", "data-step") is None
    toggle_section(page, "views")
    page.wait_for_selector("#mosaic[data-step='1']", state="attached")
    page.select_option("#layer-select", "2")
    page.select_option("#head-select", "3")
    page.wait_for_selector("#attn-plot[data-layer='2'][data-head='3']", state="attached")
    toggle_section(page, "views")
    page.wait_for_selector("#view-select", state="hidden")
    page.click("#next-btn")  # stepping while it is closed
    page.wait_for_selector("#attn-plot[data-step='2']", state="attached")
    toggle_section(page, "views")
    page.wait_for_selector("#mosaic[data-step='2'][data-layer='2'][data-head='3']", state="attached")
    assert page.input_value("#layer-select") == "2" and page.input_value("#head-select") == "3"
    # a panel's section: the What-if answer survives closing and opening it
    toggle_panel(page, "whatif-panel")
    page.select_option("#candidate select", "1")
    page.click("#whatif-btn")
    page.wait_for_function("() => document.querySelector('#whatif-text').innerText.includes('forced to')")
    answer = page.inner_text("#whatif-text")
    toggle_panel(page, "whatif-panel")
    page.wait_for_selector("#whatif-btn", state="hidden")
    toggle_panel(page, "whatif-panel")
    page.wait_for_selector("#whatif-btn", state="visible")
    assert page.inner_text("#whatif-text") == answer
    # the address says what is open, and a link opens it again
    toggle_section(page, "lens")
    page.wait_for_selector("#logit-lens[data-step='2']", state="attached")
    page.wait_for_function("() => location.hash.includes('open=')")
    opened = urllib.parse.parse_qs(urllib.parse.urlparse(page.url).fragment)["open"][0].split(".")
    assert set(opened) == {"views", "lens", "whatif-panel"}, opened
    ctx, other = open_page(browser, app_server, "desktop", url=page.url)
    other.wait_for_selector("#mosaic[data-step='2'][data-layer='2']", state="attached")
    other.wait_for_selector("#logit-lens[data-step='2']", state="attached")
    other.wait_for_selector("#whatif-btn", state="visible")
    found = open_sections(other)
    assert set(found["viewer"]) == {"views", "lens"} and found["panels"] == ["whatif-panel"], found
    ctx.close()
    assert not other.errors, other.errors


# --- 4. the tour ---------------------------------------------------------------------------------


def in_viewport(page, r: dict) -> bool:
    vp = page.viewport_size
    return (
        r["left"] >= -0.5 and r["right"] <= vp["width"] + 0.5 and r["top"] >= -0.5 and r["bottom"] <= vp["height"] + 0.5
    )


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_the_tour_is_offered_once_walks_the_visitors_sentence_and_is_remembered(browser, app_server, device):
    ctx, page = open_page(browser, app_server, device)
    # offered at once: a first visit opens on an example already drawn, which the tour can walk
    page.wait_for_selector("#tour-offer", state="visible")
    assert not page.is_disabled("#tour-btn")
    translate(page, SENTENCE, step=None)  # the visitor's own sentence, which the tour then walks
    page.click("#tour-btn")
    tr = state(page)["trace"]
    seen_text, shown = [], {}
    for i in range(1, TOUR_STEPS + 1):
        page.wait_for_selector(f"#tour-bubble[data-step='{i}']")
        settled(page, "#tour-bubble", ".tour-target")  # the scroll to its target, and any redraw it caused
        shown[i] = {"step": state(page)["step"], "layer": page.get_attribute("#attn-plot", "data-layer")}
        bubble = box(page, "#tour-bubble")
        assert in_viewport(page, bubble), (i, bubble)  # the whole bubble fits the screen
        for b in ("#tour-next", "#tour-skip"):
            assert in_viewport(page, box(page, b)), (i, b)
        assert page.locator(".tour-target").count() == 1
        target = box(page, ".tour-target")
        # the part it talks about is on screen, above the bubble
        assert 0 <= target["top"] < bubble["top"] - 20 and target["bottom"] > 0, (i, target, bubble)
        seen_text.append(page.inner_text("#tour-text"))
        page.click("#tour-next")
    page.wait_for_selector("#tour-bubble", state="hidden")
    assert page.locator(".tour-target").count() == 0
    # it speaks of this sentence: its token count (the words' tokens, not the markers), what
    # step 1 wrote, its candidates
    assert f"became {len(tr['src']) - 2} tokens" in seen_text[0]
    # the map, the heads and the candidates are shown at a step with several rows, and the
    # text names the layer the map beside it shows
    for i in (4, 5, 6):
        assert shown[i]["step"] >= min(3, tr["steps"]), (i, shown[i])
    for i in (4, 5):
        assert f"layer {shown[i]['layer']}" in seen_text[i - 1] and f"step {shown[i]['step']}" in seen_text[i - 1], (
            i,
            shown,
        )
    assert tr["tgt"][1].replace("▁", "") in seen_text[2]
    assert state(page)["trace"]["translation"] and "%" in seen_text[5]
    assert page.evaluate("() => localStorage.getItem('explorer-tour-seen')") == "1"
    # remembered: a new translation on a new visit offers nothing
    page.goto(app_server.url)
    page.wait_for_selector("#viewer .ax-root")
    # no wait: the tour decides whether to offer itself when it hears of the new trace, in the
    # same store change that translate() waited for (tour.js)
    translate(page, "My sister is tall.", step=None)
    assert not page.is_visible("#tour-offer") and not page.is_visible("#tour-bubble")
    ctx.close()
    assert not page.errors, page.errors


def test_the_tour_can_be_skipped_and_declined(desktop):
    page = desktop
    translate(page, SENTENCE, step=None)
    page.wait_for_selector("#tour-offer", state="visible")
    page.click("#tour-no")  # declined
    page.wait_for_selector("#tour-offer", state="hidden")
    assert page.evaluate("() => localStorage.getItem('explorer-tour-seen')") == "1"
    translate(page, "My sister is tall.", step=None)  # (no wait: as in the test above)
    assert not page.is_visible("#tour-offer")  # offered once only
    page.click("#tour-btn")  # and still there to take later
    page.wait_for_selector("#tour-bubble[data-step='1']")
    page.click("#tour-next")
    page.wait_for_selector("#tour-bubble[data-step='2']")
    page.click("#tour-skip")
    page.wait_for_selector("#tour-bubble", state="hidden")
    assert page.locator(".tour-target").count() == 0


# --- 5. the glossary -----------------------------------------------------------------------------

TERMS = {
    "head": "#sec-views > summary",
    "rollout": "#sec-views > summary",
    "logit lens": "#sec-lens > summary",
    "nats": "#analysis",
    "entropy": "#analysis",
    "beam": "#beam-summary",
    "prefix": "#sources",
    "alti+": "#sources",
    "decoderlens": "#sources",
}


def show_term(page, term: str, where: str, how: str) -> str:
    """The definition `term` shows: on hover, or on a tap (a tap on a heading's word opens its
    section, so a heading's words are explained by its "?"); the line of the popup that is its."""
    t = page.locator(f"{where} .gl-term[data-term='{term}']").first
    t.scroll_into_view_if_needed()
    shown = page.locator(f"{where} .gl-ask") if how == "tap" and where.endswith("> summary") else t
    if how == "hover":
        t.hover()
    else:
        shown.tap()
    page.wait_for_selector("#gl-tip", state="visible")
    tip = page.locator("#gl-tip")
    text = next((line for line in tip.inner_text().splitlines() if line.startswith(f"{term}: ")), tip.inner_text())
    assert in_viewport(page, box(page, "#gl-tip")), (term, box(page, "#gl-tip"))
    assert shown.get_attribute("aria-expanded") == "true" and shown.get_attribute("aria-describedby")
    return text


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_glossary_terms_explain_themselves_on_hover_and_on_tap(browser, app_server, device):
    ctx, page = open_page(browser, app_server, device)
    translate(page, SENTENCE, step=None)
    toggle_panel(page, "analysis-panel")
    toggle_panel(page, "beam-panel")
    toggle_panel(page, "sources-panel")
    page.wait_for_selector("#analysis .gl-term[data-term='nats']")
    page.wait_for_selector("#sources .gl-term[data-term='decoderlens']")
    how = "hover" if device == "desktop" else "tap"
    for term, where in TERMS.items():
        text = show_term(page, term, where, how)
        assert text.startswith(f"{term}: ") and len(text) > len(term) + 20, (term, text)
        if how == "hover":
            page.mouse.move(0, 0)
        else:
            page.locator("#step-label").tap()  # a tap elsewhere puts it away
        page.wait_for_selector("#gl-tip", state="hidden")
    # a heading's "?" explains its words and does not open the section
    assert open_sections(page)["viewer"] == []
    ctx.close()
    assert not page.errors, page.errors
