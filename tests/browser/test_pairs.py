"""Minimal pairs in a real `python app.py`, driven in headless Chromium on a desktop
(1366×900) and a phone (390×844): compare a second sentence with the one in the viewer,
step both without asking the server, restore the pair from a link, clear it with a new
sentence. Checks are structural (element ids, data-* attributes set after each paint, the
store through `window.__explorer.getState()`), with expectations computed from the two
traces, so any checkpoint passes.
"""

import urllib.parse

import pytest

from tests.helpers import NO_TOUR, frames, lcs_length, opened_page, server_calls, state, translate

# the slow set: a long walk through the page (python -m pytest -m slow)
pytestmark = [pytest.mark.browser, pytest.mark.slow]

A, B = "My brother is tall.", "My sister is tall."
FIGURES = ("#pair-a-plot", "#pair-b-plot", "#pair-diff")


# a returning visitor: the guided tour (web/tour.js) is not offered over the page


@pytest.fixture(params=["desktop", "phone"])
def page(browser, app_server, request):
    with opened_page(browser, app_server.url, request.param, NO_TOUR, timeout_ms=90_000) as pg:
        yield pg


def open_pairs_panel(page):
    page.click("#pairs-panel > .label-wrap")
    page.wait_for_selector("#pairs-view .pr-root")


def compared(page, b):
    """Wait until B is compared and all three maps are drawn at the store's step."""
    page.wait_for_function(
        "(b) => { const p = window.__explorer.getState().pair; return p && p.status === 'done' && p.text === b; }",
        arg=b,
    )
    drawn_at(page, state(page))


def drawn_at(page, s):
    """Every map of the pair shows the store's step, view, layer and head."""
    for fig in FIGURES:
        page.wait_for_selector(
            f"{fig}[data-step='{s['step']}'][data-layer='{s['layer']}'][data-head='{s['head']}']"
            f"[data-view='{s['view']}']",
            state="attached",
        )


def only_in(tokens, other) -> int:
    """How many tokens of one list have no partner in the other (an LCS alignment)."""
    return len(tokens) - lcs_length(tokens, other)


def fragment(page) -> dict:
    return urllib.parse.parse_qs(urllib.parse.urlparse(page.url).fragment)


def test_compare_draws_both_and_the_difference_and_steps_both_without_requests(page):
    open_pairs_panel(page)
    assert page.is_disabled("#pair-btn")  # nothing to compare with yet
    translate(page, A)
    assert page.input_value("#pair-text") == B  # a curated pair's first sentence: its second is offered
    page.click("#pair-btn")
    compared(page, B)
    s = state(page)
    ta, tb = s["trace"], s["pair"]["trace"]
    assert (ta["srcText"], tb["srcText"]) == (A, B)
    assert page.inner_text("#pair-a-text") == A and page.inner_text("#pair-b-text") == B
    for fig in FIGURES:
        box = page.locator(f"{fig} canvas").bounding_box()
        assert box and box["width"] > 50 and box["height"] > 50, fig
    # the tokens one sentence has and the other lacks are marked, in the translations and the sources
    for sel, mine, other in (
        ("#pair-a-tgt", ta["tgt"], tb["tgt"]),
        ("#pair-b-tgt", tb["tgt"], ta["tgt"]),
        ("#pair-a-src", ta["src"], tb["src"]),
        ("#pair-b-src", tb["src"], ta["src"]),
    ):
        assert page.locator(f"{sel} .chip").count() == len(mine)
        assert page.locator(f"{sel} .chip.pr-diff").count() == only_in(mine, other), sel
    if {"▁brother", "▁sister"} <= set(ta["src"]) ^ set(tb["src"]):  # the shipped tokenizer: one word apart
        titles = lambda sel: page.eval_on_selector_all(sel, "cs => cs.map(c => c.title)")
        assert titles("#pair-a-src .chip.pr-diff") == [f"token {ta['src'].index('▁brother') + 1}: ▁brother (only in A)"]
        assert titles("#pair-b-src .chip.pr-diff") == [f"token {tb['src'].index('▁sister') + 1}: ▁sister (only in B)"]
    # the difference map: shared tokens once, a word swapped for another in the same place paired
    # with it ("brother / sister"), and only what is left over as gaps
    diff = page.evaluate("() => ({...document.querySelector('#pair-diff').dataset})")
    a_only, b_only = only_in(ta["src"], tb["src"]), only_in(tb["src"], ta["src"])
    assert int(diff["swapped"]) >= 1 and int(diff["gapCols"]) == a_only + b_only - 2 * int(diff["swapped"])
    assert "Swapped words are compared with each other" in page.inner_text("#pair-diff-note")
    assert page.locator("#pair-cands tbody tr").count() >= 2

    # the viewer's layer and head: every map follows, with no request
    calls = server_calls(page)
    for sel, value in (
        ("#layer-select", "2"),
        ("#head-select", "3"),
    ):  # the viewer's menus (in a section that may be closed)
        page.eval_on_selector(sel, "(s, v) => { s.value = v; s.dispatchEvent(new Event('change')); }", value)
    drawn_at(page, {**state(page), "layer": 2, "head": "3"})
    # stepping moves both; at the end of the shorter one, it says so
    last = max(ta["steps"], 1)
    for step in range(2, last + 1):
        page.click("#next-btn")
        drawn_at(page, {**state(page), "step": step})
        assert page.get_attribute("#pair-cands", "data-step") == str(min(step, ta["steps"]))
        assert page.get_attribute("#pair-b-plot", "data-shown-step") == str(min(step, tb["steps"]))
    if tb["steps"] < ta["steps"]:
        assert "ended" in page.inner_text("#pair-b-step")
    elif tb["steps"] > ta["steps"]:
        assert "more step" in page.inner_text("#pair-b-step")
    page.click("#prev-btn")
    drawn_at(page, {**state(page), "step": last - 1})
    # the panel asks only on Compare (or a curated pair), marking the store's pair "pending"
    # first (pairs.js); its redraws run in the next frame: two frames after the last one, the
    # pair still done and no request, nothing was asked
    frames(page)
    assert state(page)["pair"]["status"] == "done"
    assert calls == [], calls

    # side by side on a desktop, stacked on a phone, inside the screen either way
    a, b = page.locator("#pair-a").bounding_box(), page.locator("#pair-b").bounding_box()
    if page.device == "desktop":
        assert abs(a["y"] - b["y"]) < 2 and b["x"] >= a["x"] + a["width"]
    else:
        assert b["y"] >= a["y"] + a["height"] - 1
        width = page.viewport_size["width"]
        for sel in ("#pair-a", "#pair-b", "#pair-diff", ".pr-cands-box"):
            box = page.locator(sel).bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5, sel


def test_a_curated_pair_is_one_click_and_shows_its_hint(page):
    open_pairs_panel(page)
    page.click("#pairs-curated button[data-pair='2']")
    a = page.eval_on_selector("#pairs-curated button[data-pair='2']", "b => b.textContent").split("  /  ")
    page.wait_for_function("(t) => window.__explorer.getState().sentence === t", arg=a[0])
    compared(page, a[1])
    assert page.input_value("#src-text textarea") == a[0] and page.input_value("#pair-text") == a[1]
    assert page.is_visible("#pair-hint") and "What to look for" in page.inner_text("#pair-hint")
    # another B for the same A: not the curated pair any more, so no hint
    page.fill("#pair-text", "The doctor said they were tired.")
    page.click("#pair-btn")
    compared(page, "The doctor said they were tired.")
    assert not page.is_visible("#pair-hint")


def test_the_link_restores_the_pair_and_a_new_sentence_clears_it(desktop):
    page = desktop
    open_pairs_panel(page)
    translate(page, A)
    page.fill("#pair-text", "My sister is very tall.")
    page.press("#pair-text", "Enter")
    compared(page, "My sister is very tall.")
    page.click("#next-btn")
    drawn_at(page, {**state(page), "step": 2})
    assert fragment(page)["pair"] == ["My sister is very tall."]

    page.reload()
    page.wait_for_selector("#viewer .ax-root")
    compared(page, "My sister is very tall.")
    s = state(page)
    assert (s["sentence"], s["step"], s["pair"]["trace"]["srcText"]) == (A, 2, "My sister is very tall.")
    assert page.is_visible("#pair-diff canvas")

    # a new sentence in the viewer: the comparison goes, here and in the address
    translate(page, "The cat is sleeping.")
    page.wait_for_function("() => window.__explorer.getState().pair === null")
    assert not page.is_visible("#pair-shown") and "pair" not in fragment(page)
    assert page.locator("#pair-diff[data-step]").count() == 0
    assert page.input_value("#pair-text") == ""  # the old suggestion is gone too


def test_a_b_the_model_cannot_read_gets_one_plain_message(desktop):
    page = desktop
    open_pairs_panel(page)
    translate(page, A)
    page.fill("#pair-text", "   ")
    assert page.is_disabled("#pair-btn")
    page.fill("#pair-text", "x" * 60_000)
    page.click("#pair-btn")
    page.wait_for_function("() => { const p = window.__explorer.getState().pair; return p && p.status === 'error'; }")
    text = page.inner_text("#pair-status")
    assert text.startswith("⚠️") and "characters" in text and "\n" not in text.strip()
    assert not page.is_visible("#pair-shown") and "pair" not in fragment(page)
