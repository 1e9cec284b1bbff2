"""The beam tree and the epoch comparison in a real `python app.py`, driven in headless Chromium.

The app is started on a copy of the tiny test checkpoint with two snapshots (or on
BEAM_CHECKPOINT, e.g. a real folder with snapshots, for a manual run). Checks are structural
(element ids, data-* attributes set after each paint), so any model passes.
"""

import json
import os

import pytest

from tests.helpers import (
    frames,
    make_snapshots,
    open_panel,
    open_section,
    opened_page,
    serve_app,
    server_calls,
    state,
    translate,
)

# the slow set: a long walk through the page (python -m pytest -m slow)
pytestmark = [pytest.mark.browser, pytest.mark.slow]
SENTENCE = "the black cat sleeps."


@pytest.fixture(scope="module")
def server(tmp_path_factory, request):
    checkpoint = os.environ.get("BEAM_CHECKPOINT") or make_snapshots(
        request.getfixturevalue("tiny_checkpoint"), tmp_path_factory.mktemp("snap") / "tiny"
    )
    with serve_app(checkpoint, tmp_path_factory.mktemp("server") / "app.log") as app:
        yield app.url, app.log


@pytest.fixture
def page(browser, server):
    with opened_page(browser, server[0], "desktop", timeout_ms=90_000) as pg:
        # the panels these tests use, each in its closed section
        open_panel(pg, "beam-panel")
        open_panel(pg, "epoch-panel")
        pg.wait_for_selector("#beam-view .bt-root")
        yield pg


def test_beam_tree_draws_and_opens_a_hypothesis_in_the_viewer(page):
    page.locator("#src-text textarea").fill(SENTENCE)
    page.locator("#beam-size input[type=number]").fill("3")
    page.locator("#beam-size input[type=number]").press("Enter")
    page.click("#beam-btn")
    page.wait_for_function(
        "(t) => { const b = window.__explorer.getState().beam; return b && b.src_text === t; }", arg=SENTENCE
    )
    tree = state(page)["beam"]
    assert tree["beam_size"] == 3
    n_nodes = page.locator("#beam-tree svg g.bt-node").count()
    assert n_nodes == len(tree["nodes"]) and n_nodes > 3
    assert page.locator("#beam-tree .bt-node.on-best").count() == len(tree["best_path"])
    assert page.locator("#beam-tree path.bt-greedy").count() == len(tree["greedy_path"]) - 1
    assert page.locator("#beam-tree .hyp").count() == len(tree["hypotheses"])
    assert page.locator("#beam-hyps li").count() == len(tree["hypotheses"])
    # token labels are text, not markup
    labels = page.eval_on_selector_all("#beam-tree g.bt-node text", "ts => ts.map(t => t.textContent)")
    assert labels[0] == "[SOS]" and len(labels) == n_nodes
    assert page.input_value("#beam-translation textarea") == tree["translation"]

    # views inside the tree: hover, zoom, hide pruned -- no server call
    calls = server_calls(page)
    node = page.locator("#beam-tree g.bt-node[data-id='1']")
    node.hover()
    tip = page.locator("#beam-tooltip")
    assert tip.is_visible()
    text = tip.inner_text()
    assert "P(token | prefix)" in text and "cumulative log-prob" in text
    width = float(page.get_attribute("#beam-tree svg", "width"))
    page.click("#beam-zoom-in")
    assert float(page.get_attribute("#beam-tree svg", "width")) > width
    pruned = sum(n["status"] == "pruned" and not n["on_best"] and not n["on_greedy"] for n in tree["nodes"])
    page.uncheck("#beam-show-pruned")
    assert page.locator("#beam-tree svg g.bt-node").count() == n_nodes - pruned
    page.check("#beam-show-pruned")
    assert page.locator("#beam-tree svg g.bt-node").count() == n_nodes
    # the tree redraws in the handlers of these controls (the counts above saw it), which
    # never ask the server; two frames let what they left for later (the box's resize
    # observer) run too, so a request any of them made would be in `calls` by now
    frames(page)
    assert calls == [], calls

    # clicking a finished hypothesis opens it in the viewer through the forced-prefix trace
    last = len(tree["hypotheses"]) - 1
    before = state(page)["sentence"]
    page.locator(f"#beam-tree .hyp[data-hyp='{last}']").click()
    page.wait_for_function("() => window.__explorer.getState().origin === 'beam'")
    page.wait_for_selector("#attn-plot[data-step='1']", state="attached")
    forced = state(page)["forcedPrefix"]
    # the viewer leaves the sentence it showed (the example a first visit opens on) for the hypothesis
    assert forced == tree["hypotheses"][last]["ids"] and before != SENTENCE == state(page)["sentence"]
    assert f"beam hypothesis {last + 1} of {len(tree['hypotheses'])}" in page.inner_text("#translation")
    assert page.input_value("#translation textarea") == tree["hypotheses"][last]["text"]
    assert page.inner_text("#viewer-forced").startswith("Beam-search hypothesis")
    # and the list opens the best one
    page.click("#beam-hyps li[data-hyp='0'] button")
    page.wait_for_function(
        "(ids) => JSON.stringify(window.__explorer.getState().forcedPrefix) === ids",
        arg=json.dumps(tree["hypotheses"][0]["ids"], separators=(",", ":")),
    )
    assert page.input_value("#translation textarea") == tree["hypotheses"][0]["text"]


def test_bad_beam_input_says_so_and_clears_the_tree(page):
    page.locator("#src-text textarea").fill("   ")
    page.click("#beam-btn")
    page.wait_for_function("() => document.querySelector('#beam-notice').innerText.includes('type an English')")
    assert page.locator("#beam-tree svg").count() == 0


def test_switching_epochs_redraws_in_the_browser(page):
    translate(page, SENTENCE)
    page.locator("#epoch-view").scroll_into_view_if_needed()
    page.wait_for_selector("#epoch-multiples[data-key] figure.ep-fig", state="attached")
    options = page.eval_on_selector_all("#epoch-select option", "os => os.map(o => o.value)")
    assert options[-1] == "final" and len(options) >= 2
    assert page.locator("#epoch-multiples figure.ep-fig").count() == len(options)
    assert page.get_attribute("#epoch-multiples", "data-step") == "1"

    calls = server_calls(page)
    texts = {}
    for epoch in options:
        page.select_option("#epoch-select", epoch)
        page.wait_for_selector(f"#epoch-translation[data-epoch='{epoch}']")
        page.wait_for_selector(f"#epoch-multiples[data-selected='{epoch}']")
        texts[epoch] = page.inner_text("#epoch-translation")
        assert page.locator("#epoch-multiples figure.ep-fig.selected").get_attribute("data-epoch") == epoch
    assert texts[options[0]].startswith(f"Epoch {options[0]}:") and "validation" in texts[options[0]]
    assert texts["final"].startswith("Final model")
    # the multiples follow the main viewer's view, layer, head and step
    page.click("#next-btn")
    page.wait_for_selector("#epoch-multiples[data-step='2']", state="attached")
    open_section(page, "views")
    page.select_option("#layer-select", "1")
    page.select_option("#head-select", "2")
    page.select_option("#view-select", "decoder")
    page.wait_for_selector("#epoch-multiples[data-view='decoder'][data-layer='1'][data-head='2']", state="attached")
    page.select_option("#epoch-select", options[0])  # back to a seen epoch: drawn from what the browser has
    page.wait_for_selector(f"#epoch-translation[data-epoch='{options[0]}']")
    # the panel asks in its redraw (next frame), marking the store's epochs "pending" first
    # (epochs.js): two frames after the last change, and nothing pending, means nothing was asked
    frames(page)
    assert state(page)["epochs"]["pending"] is None
    assert calls == [], calls


def test_panels_follow_the_sentence(page):
    """A new sentence clears the beam tree of the old one (here and on the server), and an
    error leaves no panel, caption or address of the old sentence behind."""
    translate(page, SENTENCE)
    page.click("#beam-btn")
    page.wait_for_function("() => window.__explorer.getState().beam !== null")
    assert page.locator("#beam-hyps li").count() > 0
    translate(page, "the dog eats.")
    page.wait_for_function("() => window.__explorer.getState().beam === null")
    assert page.locator("#beam-hyps li").count() == 0 and page.locator("#beam-tree svg").count() == 0
    page.locator("#epoch-view").scroll_into_view_if_needed()
    page.wait_for_selector("#epoch-multiples[data-key] figure.ep-fig", state="attached")
    assert "text=" in page.url
    page.locator("#src-text textarea").fill("   ")
    page.click("#translate-btn")
    page.wait_for_selector("#attn-plot:not([data-step])", state="attached")
    page.wait_for_function("() => document.querySelectorAll('#epoch-multiples figure').length === 0")
    assert page.inner_text("#epoch-caption") == "" and page.inner_text("#epoch-status") == ""
    assert page.inner_text("#epoch-translation").startswith("Translate a sentence")
    assert "text=" not in page.url  # a reload does not bring the old sentence back
    store = page.evaluate("() => window.__explorer.getState()")
    assert store["sentence"] is None and store["beam"] is None and store["whatif"] is None
