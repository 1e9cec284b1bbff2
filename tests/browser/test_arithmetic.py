"""The arithmetic of one attention row as a person uses it, on a desktop (1366×900) and a
phone (390×844): a real `python app.py` (started once for every browser test, tests/browser/conftest.py) in headless
Chromium. The drawn softmax column must be the heatmap's row (the model's own trace, and
the payload's rounded copy the heatmap paints) for encoder, decoder self and cross
attention; a click on a heatmap cell highlights its key; a closed section asks the server
nothing while stepping; a new sentence clears it. Run alone with
`python -m pytest -m browser tests/browser/test_arithmetic.py`.
"""

import numpy as np
import pytest

from tests.helpers import DEVICES, frames, go_to_step, opened_page, press, server_calls, state, translate

# the slow set: a long walk through the page (python -m pytest -m slow)
pytestmark = [pytest.mark.browser, pytest.mark.slow]

SENTENCE = "I have a red car."
OTHER = "My sister is tall."
RECORDED = {"encoder": "encoder_attn", "decoder": "decoder_self_attn", "cross": "cross_attn"}
# the heatmap's weights travel rounded to 8 bits per row (u8row / u8tril, explorer/payload.py)
PAYLOAD_TOL = 1 / 255 + 1e-3


@pytest.fixture(scope="module")
def reference(app_server):
    """The app's model in this process: the traces the heatmaps show, at full precision."""
    from transformer import load_translator

    tr = load_translator(app_server.checkpoint)
    return {text: tr.trace(text) for text in (SENTENCE, OTHER)}


@pytest.fixture(params=list(DEVICES))
def page(request, browser, app_server):
    with opened_page(browser, app_server.url, request.param, timeout_ms=90_000) as pg:
        yield pg


# --- helpers ----------------------------------------------------------------------------------


def toggle_section(page):
    press(page, "#arithmetic-panel > button.label-wrap")


def set_view(page, view: str):
    if not page.evaluate("() => document.querySelector('#sec-views').open"):
        press(page, "#sec-views > summary", position={"x": 6, "y": 6})  # the viewer's "more attention views"
    page.select_option("#view-select", view)
    page.wait_for_selector(f"#attn-plot[data-view='{view}']", state="attached")


def show_mean_of_heads(page):
    """The main map as the mean over heads (a new sentence opens on one head, its focus)."""
    if not page.evaluate("() => document.querySelector('#sec-views').open"):
        press(page, "#sec-views > summary", position={"x": 6, "y": 6})
    page.select_option("#head-select", "mean")
    page.wait_for_selector("#attn-plot[data-head='mean']", state="attached")


def shown_row(page, key: str) -> dict:
    """The row the panel draws once it shows `key`: its weights and heatmap column, per key."""
    page.wait_for_selector(f"#arithmetic .ar-root[data-state='done'][data-key='{key}']", state="attached")
    return page.evaluate("""() => {
      const rows = [...document.querySelectorAll('#arith-table tbody tr')];
      return { weights: rows.map((r) => Number(r.dataset.weight)), heat: rows.map((r) => Number(r.dataset.heat)),
               keys: rows.map((r) => r.querySelector('th').textContent),
               picked: [...document.querySelectorAll('#arith-table tr.ar-picked')].map((r) => Number(r.dataset.key)),
               check: document.querySelector('#arith-check').innerText,
               title: document.querySelector('#arith-what').innerText }; }""")


def nothing_asked(page):
    """Wait until the panel has handled the last change and has no request due: its redraw
    runs in the next animation frame (two frames), and a row it means to ask for is marked
    data-asking on its root until the request leaves, once the settings have rested (150 ms,
    700 ms during Play: arithmetic.js). A request it made would then be in the store as
    "pending", which it sets before asking, and in the page's requests."""
    frames(page)
    page.wait_for_function("() => !document.querySelector('#arithmetic .ar-root').dataset.asking")


def click_cell(page, row: int, col: int):
    """Click (tap) cell (row, col), 0-based as drawn, of the attention heatmap."""
    g = page.evaluate("() => JSON.parse(document.querySelector('#attn-plot').dataset.grid)")
    canvas = page.locator("#attn-plot canvas")
    canvas.scroll_into_view_if_needed()
    where = {"x": g["left"] + (col + 0.5) * g["cellW"], "y": g["top"] + (row + 0.5) * g["cell"]}
    canvas.tap(position=where) if page.device == "phone" else canvas.click(position=where)


# --- tests ------------------------------------------------------------------------------------


def test_the_softmax_row_is_the_heatmaps_row_for_every_kind(page, reference):
    translate(page, SENTENCE)
    trace = reference[SENTENCE]
    show_mean_of_heads(page)
    toggle_section(page)
    # mean over heads has no single row: one click picks a head
    page.wait_for_selector("#arithmetic .ar-root[data-state='head']", state="attached")
    assert "pick one head to see its arithmetic" in page.inner_text("#arithmetic")
    press(page, "#arith-choices button[data-head='2']")
    assert state(page)["head"] == "2"
    go_to_step(page, 2)
    for view in ("cross", "decoder", "encoder"):
        set_view(page, view)
        s = state(page)
        layer = s["layer"]
        query = 1 if view == "encoder" else 2  # the encoder's first source token; the decoder views' step
        key = f"{view}:{layer}:2:{query}"
        shown = shown_row(page, key)
        answer = state(page)["arithmetic"][key]
        assert shown["weights"] == answer["weights"]  # drawn as the model computed it
        recorded = getattr(trace, RECORDED[view])[layer - 1, 1, query - 1]
        assert len(shown["weights"]) == len(recorded)
        assert np.abs(np.array(shown["weights"]) - recorded).max() <= 1e-4, view  # the model's own row
        # and beside it, the row the heatmap paints (the payload's 8-bit copy of the same row)
        assert np.abs(np.array(shown["heat"]) - recorded).max() <= PAYLOAD_TOL, view
        assert np.abs(np.array(shown["weights"]) - np.array(shown["heat"])).max() <= PAYLOAD_TOL
        assert "equals the heatmap's row" in shown["check"]
        tokens = trace.src_tokens if view != "decoder" else trace.tgt_tokens[: trace.steps]
        assert [k.split(" ", 1)[1] for k in shown["keys"]] == tokens and shown["keys"][0].startswith("1 ")
        if view == "decoder":  # the keys after step 2 are the future: masked, weight 0
            assert shown["weights"][2:] == [0.0] * (trace.steps - 2)
            assert page.locator("#arith-table tr.ar-masked").count() == trace.steps - 2
    # the panel scrolls inside itself: the page never gets wider than the screen
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")


def test_a_heatmap_click_highlights_its_key_and_rows_come_back_without_asking(page, reference):
    translate(page, SENTENCE)
    trace = reference[SENTENCE]
    show_mean_of_heads(page)
    toggle_section(page)
    press(page, "#arith-choices button[data-head='3']")
    go_to_step(page, 3)
    layer = state(page)["layer"]
    shown = shown_row(page, f"cross:{layer}:3:3")
    assert shown["picked"] == []
    click_cell(page, 2, 1)  # the current step's row (step 3), source token 2
    page.wait_for_function("() => document.querySelector('#arithmetic .ar-root').dataset.picked === '2'")
    assert state(page)["cell"] == {"view": "cross", "step": 3, "row": 3, "col": 2}
    assert shown_row(page, f"cross:{layer}:3:3")["picked"] == [1]
    # an earlier row of the heatmap: its own arithmetic, with the clicked key highlighted
    click_cell(page, 0, len(trace.src_tokens) - 1)
    shown = shown_row(page, f"cross:{layer}:3:1")
    assert shown["picked"] == [len(trace.src_tokens) - 1] and "step 1" in shown["title"]
    # a row of the table highlights its key too
    press(page, "#arith-table tbody tr[data-key='0'] th")
    page.wait_for_function("() => document.querySelector('#arithmetic .ar-root').dataset.picked === '1'")
    # stepping asks once per new row; going back to a row already seen asks nothing
    go_to_step(page, 2)
    assert state(page)["cell"] is None  # a new step forgets the clicked cell: its row is the step again
    shown_row(page, f"cross:{layer}:3:2")
    calls = server_calls(page)
    go_to_step(page, 3)
    shown_row(page, f"cross:{layer}:3:3")
    go_to_step(page, 2)
    shown_row(page, f"cross:{layer}:3:2")
    nothing_asked(page)
    assert calls == [], calls
    assert {r["status"] for r in state(page)["arithmetic"].values()} == {"done"}


def test_a_closed_section_asks_nothing_and_a_new_sentence_clears_it(page, reference):
    translate(page, SENTENCE)
    show_mean_of_heads(page)
    toggle_section(page)
    # a head other than the one the sentence opened on: the next sentence then keeps the
    # visitor's settings instead of opening on its own focus
    head = "2" if state(page)["focused"]["head"] == "1" else "1"
    press(page, f"#arith-choices button[data-head='{head}']")
    layer = state(page)["layer"]
    shown_row(page, f"cross:{layer}:{head}:1")
    click_cell(page, 0, 0)
    page.wait_for_function("() => window.__explorer.getState().cell !== null")
    toggle_section(page)  # closed again
    page.wait_for_selector("#arithmetic .ar-root", state="hidden")
    calls = server_calls(page)
    steps = state(page)["trace"]["steps"]
    for _ in range(steps - 1):
        press(page, "#next-btn")
    page.wait_for_selector(f"#attn-plot[data-step='{steps}']", state="attached")
    go_to_step(page, 1)
    press(page, "#play-btn")
    page.wait_for_function(
        "(n) => { const s = window.__explorer.getState(); return !s.playing && s.step === n; }", arg=steps
    )
    nothing_asked(page)
    assert calls == [], calls  # 0 requests while stepping and playing with the section closed
    assert len(state(page)["arithmetic"]) == 1  # only the row asked for while it was open

    translate(page, OTHER)
    s = state(page)
    assert s["cell"] is None and s["arithmetic"] is None  # nothing of the old sentence is left
    toggle_section(page)
    shown = shown_row(page, f"cross:{layer}:{head}:1")
    assert [k.split(" ", 1)[1] for k in shown["keys"]] == reference[OTHER].src_tokens
    assert shown["picked"] == []
