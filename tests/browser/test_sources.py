"""Where did this word come from? and the test set at a glance as a person uses them, on a desktop
(1366×900) and a phone (390×844): a real `python app.py` (started once for every browser test,
tests/browser/conftest.py) in headless Chromium. Nothing is computed until the section opens; the
step's bar adds up to 100% and follows the viewer's step with no request; DecoderLens ends on the
translation; the model's own translation scores rank 1 everywhere; a reference token opens What
if? with it forced; "What moved the output" redraws the main map; and the glance list sorts,
filters and opens a sentence with its reference. Run alone with
`python -m pytest -m browser tests/browser/test_sources.py`.
"""

import time

import pytest

from tests.helpers import DEVICES, go_to_step, open_panel, opened_page, press, server_calls, state, translate

pytestmark = pytest.mark.browser

SENTENCE = "Tom gave Mary a beautiful present for her birthday."
REFERENCE = "Tom ha regalato a Maria un bel regalo per il suo compleanno."


# the desktop in the default suite, the phone in the slow set (the same walk on a narrower screen)
@pytest.fixture(params=[d if d == "desktop" else pytest.param(d, marks=pytest.mark.slow) for d in DEVICES])
def page(request, browser, app_server):
    with opened_page(browser, app_server.url, request.param, timeout_ms=90_000) as pg:
        yield pg


def open_view(page):
    open_panel(page, "sources-panel")
    page.wait_for_selector("#sources .src-root")


def done(page, section: str):
    page.wait_for_selector(f"#src-{section}[data-state='done']", state="attached")


def score(page, reference: str):
    page.fill("#src-ref", reference)
    press(page, "#src-score-btn")
    page.wait_for_function(
        "(r) => document.querySelector('#src-score').dataset.state === 'done'"
        " && document.querySelector('#src-score-status').textContent.startsWith('log p')",
        arg=reference,
    )


def ranks(page) -> list:
    return page.eval_on_selector_all("#src-score-table tbody tr", "rs => rs.map(r => Number(r.dataset.rank))")


# --- tests ------------------------------------------------------------------------------------


def test_the_bar_row_and_map_follow_the_step_and_decoder_lens_ends_on_the_translation(page):
    translate(page, SENTENCE, step=3)
    everything = server_calls(page)
    calls = lambda: [c for c in everything if "/queue/join" in c]  # noqa: E731 - the events sent (not heartbeats)
    assert page.locator("#sources .src-root").count() == 0  # the closed section has asked nothing
    open_view(page)
    done(page, "alti")
    assert calls(), "opening the section asks the server"
    s = state(page)
    share = page.eval_on_selector("#src-share", "e => [Number(e.dataset.source), Number(e.dataset.prefix)]")
    assert sum(share) == 100 and 0 < share[0] < 100
    assert f"source {share[0]}% · prefix {share[1]}%" in page.inner_text("#src-share")
    # one row: every source token, then the three decoder inputs step 3 has read
    assert page.locator("#src-row .src-source").count() == len(s["trace"]["src"])
    assert page.locator("#src-row .src-prefix").count() == 3
    assert page.get_attribute("#src-map", "data-step") == "3"
    done(page, "lens")
    # stepping redraws from the answer: no request
    asked = len(calls())
    go_to_step(page, 5)
    page.wait_for_selector("#src-map[data-step='5']", state="attached")
    assert page.locator("#src-row .src-prefix").count() == 5
    share = page.eval_on_selector("#src-share", "e => Number(e.dataset.source) + Number(e.dataset.prefix)")
    assert share == 100
    assert len(calls()) == asked
    # one decoder layer's own mixing: the map follows the choice, the bar still adds up
    page.select_option("#src-layer", "layer:1")
    page.wait_for_selector("#src-map[data-layer='layer:1']", state="attached")
    assert page.eval_on_selector("#src-share", "e => Number(e.dataset.source) + Number(e.dataset.prefix)") == 100
    # DecoderLens: one row per encoder layer, the last the model's translation, marked
    rows = page.locator("#src-lens-table tbody tr")
    assert rows.count() == s["trace"]["layers"]["encoder"]
    last = page.locator("#src-lens-table tbody tr.src-final")
    assert last.count() == 1 and last.locator(".src-lens-text").inner_text() == s["trace"]["translation"]
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")


def test_the_models_own_translation_scores_rank_1_everywhere(desktop):
    page = desktop
    translate(page, SENTENCE, step=None)
    open_view(page)
    done(page, "alti")
    score(page, state(page)["trace"]["translation"])
    got = ranks(page)
    assert got and got == [1] * len(got)
    assert "rank 1 everywhere" in page.inner_text("#src-score-status")
    assert page.locator(".src-whatif").count() == 0


def test_a_reference_token_opens_what_if_with_it_forced(page):
    translate(page, SENTENCE, step=None)
    open_view(page)
    done(page, "alti")
    score(page, REFERENCE)
    first = page.locator("#src-score-table tr[data-first='true']")
    assert first.count() == 1 and int(first.get_attribute("data-rank")) > 1
    assert "they part here" in first.inner_text()
    step = int(first.get_attribute("id").rsplit("-", 1)[1])
    token = first.locator("td.at-tok").inner_text()
    assert all(r == 1 for r in ranks(page)[: step - 1])  # before they part, the reference is the model's choice
    press(page, f"#src-whatif-{step}")
    page.wait_for_selector("#whatif-panel > .label-wrap.open")
    page.wait_for_selector("#whatif-text[data-state='done']", state="attached")
    assert f"Step {step} forced to “{token.replace('▁', '')}”" in page.inner_text("#whatif-text")
    assert state(page)["step"] == step
    # the candidate menu shows the forced token as its choice (its candidate, or an entry of its
    # own when it is none of the step's candidates), until a candidate is picked
    menu = page.locator("#candidate select")
    n_candidates = page.locator("#candidate option:not([value='forced'])").count()
    rank = int(first.get_attribute("data-rank"))
    assert menu.evaluate("(s) => s.value") == (str(rank - 1) if rank <= n_candidates else "forced")
    assert token.replace("▁", "") in menu.evaluate("(s) => s.selectedOptions[0].text")
    pick = "0" if rank != 1 else "1"
    menu.select_option(pick)
    page.wait_for_function("(k) => window.__explorer.getState().candidate === k", arg=int(pick))
    assert menu.evaluate("(s) => s.value") == pick and page.locator("#candidate option[value='forced']").count() == 0
    press(page, "#open-whatif-btn")
    page.wait_for_function("(n) => window.__explorer.getState().forcedPrefix.length === n", arg=step)


@pytest.mark.slow  # the same walk as above, with a token none of the candidates
def test_a_forced_reference_token_outside_the_candidates_has_its_own_entry_in_the_menu(page):
    translate(page, SENTENCE, step=None)
    open_view(page)
    score(page, "Zanzara " + REFERENCE)
    first = page.locator("#src-score-table tr[data-first='true']")
    step = int(first.get_attribute("id").rsplit("-", 1)[1])
    n_candidates = len(state(page)["trace"]["topk"][step - 1]) if "topk" in state(page)["trace"] else 10
    assert int(first.get_attribute("data-rank")) > n_candidates, "the test needs a token outside the candidates"
    press(page, f"#src-whatif-{step}")
    page.wait_for_selector("#whatif-text[data-state='done']", state="attached")
    menu = page.locator("#candidate select")
    assert menu.evaluate("(s) => s.value") == "forced"
    assert first.locator("td.at-tok").inner_text().replace("▁", "") in menu.evaluate("(s) => s.selectedOptions[0].text")
    menu.select_option("0")
    page.wait_for_selector("#candidate option[value='forced']", state="detached")
    assert menu.evaluate("(s) => s.value") == "0"


def test_what_moved_the_output_redraws_the_main_map(page):
    translate(page, SENTENCE, step=4)
    pixels = "() => document.querySelector('#attn-plot canvas').toDataURL()"
    before = page.evaluate(pixels)
    assert page.get_attribute("#moved-btn", "aria-pressed") == "false"
    press(page, "#moved-btn")
    page.wait_for_selector("#attn-plot[data-moved='1']", state="attached")
    assert page.get_attribute("#moved-btn", "aria-pressed") == "true"
    assert page.inner_text("#attn-plot figcaption").startswith("What moved the output: ‖α·f(x)‖")
    assert "share of row" in page.inner_text("#attn-plot .ax-legend")
    assert page.evaluate(pixels) != before
    # kept for the next sentence (one request each), and off again draws the weights
    translate(page, "I have a red car.", step=2)
    page.wait_for_selector("#attn-plot[data-moved='1']", state="attached")
    press(page, "#moved-btn")
    page.wait_for_selector("#attn-plot[data-moved='']", state="attached")
    assert not page.inner_text("#attn-plot figcaption").startswith("What moved")


def test_the_test_set_list_sorts_filters_and_opens_a_sentence_with_its_reference(page):
    assert page.locator("#gl-table").count() == 0  # nothing of it comes with the page
    open_panel(page, "glance-panel")
    page.wait_for_selector("#gl-root[data-state='done']", state="attached")
    assert page.inner_text("#gl-status").startswith("1000 of 1000 test sentences")
    column = "(k) => [...document.querySelectorAll('#gl-table tbody tr')].map(r => Number(r.dataset[k]))"
    press(page, "#gl-sort-chrf")
    low = page.evaluate(column, "chrf")
    assert low == sorted(low) and len(low) == 100
    press(page, "#gl-sort-chrf")
    high = page.evaluate(column, "chrf")
    assert high == sorted(high, reverse=True) and high[0] > low[0]
    page.select_option("#gl-filter", "src_share")
    shares = page.evaluate(column, "srcShare")
    assert len(shares) == 50 and page.inner_text("#gl-status").startswith("50 of 1000")
    page.select_option("#gl-filter", "all")
    page.fill("#gl-search", "station")
    texts = page.eval_on_selector_all("#gl-table tbody tr", "rs => rs.map(r => r.textContent.toLowerCase())")
    assert texts and all("station" in t for t in texts)
    # a click opens the sentence in the viewer and its reference in "Where did this word come from?"
    button = page.locator("#gl-table tbody .gl-open").first
    src, ref = button.inner_text(), page.locator("#gl-table tbody .gl-ref").first.inner_text()
    start = time.perf_counter()
    press(page, "#gl-table tbody .gl-open")
    page.wait_for_function("(t) => window.__explorer.getState().sentence === t", arg=src)
    assert page.input_value("#src-text textarea") == src
    page.wait_for_selector("#sources-panel > .label-wrap.open")
    page.wait_for_function("(r) => document.querySelector('#src-ref').value === r", arg=ref)
    print(f"\nglance click to reference in the box: {1000 * (time.perf_counter() - start):.0f} ms")


def test_named_endpoints_answer_and_refuse(app_server):
    from gradio_client import Client
    from gradio_client.exceptions import AppError

    client = Client(app_server.url, verbose=False)
    got = client.predict(SENTENCE, 2, api_name="/contributions")
    assert got["schema"] == "alti-plus/1" and got["text"] == SENTENCE
    assert got["at"]["step"] == 1 and abs(got["at"]["source_share"] + got["at"]["prefix_share"] - 1) < 1e-3
    lens = client.predict(SENTENCE, api_name="/decoder_lens")
    own = lens["rows"][-1]["text"]
    scored = client.predict(SENTENCE, own, api_name="/score_reference")
    assert {s["rank"] for s in scored["steps"]} == {1} and scored["first_divergence"] is None
    for args, api, words in (
        ((SENTENCE, 99), "/contributions", "There is no step 99 here"),
        (("",), "/decoder_lens", "Please type an English sentence"),
        ((SENTENCE, ""), "/score_reference", "Type a reference translation"),
    ):
        with pytest.raises(AppError) as exc:
            client.predict(*args, api_name=api)
        assert words in str(exc.value)
