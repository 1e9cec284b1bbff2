"""Why this word? as a person uses it, on a desktop (1366×900) and a phone (390×844): a real
`python app.py` (started once for every browser test, tests/browser/conftest.py) in headless Chromium.
Nothing is computed
until asked; the logit attribution grids show the model's own terms and a head cell opens that
head in the viewer; patching takes B from the minimal pairs; saliency draws one row per source
token; and the named endpoints refuse bad input with gradio_client's AppError and one log line.
Run alone with `python -m pytest -m browser tests/browser/test_attribution.py`.
"""

import re
import time

import numpy as np
import pytest

from tests.helpers import DEVICES, go_to_step, open_panel, opened_page, press, state, translate

# the slow set: a long walk through the page (python -m pytest -m slow)
pytestmark = [pytest.mark.browser, pytest.mark.slow]

SENTENCE = "Tom gave Mary a beautiful present for her birthday."
OTHER = "Tom gave John a beautiful present for his birthday."
NEGATIVE_ZERO = re.compile(r"[−-]0(\.0+)?(?!\.?\d*[1-9])")  # "−0", "-0.00": a zero printed with a sign


@pytest.fixture(scope="module")
def reference(app_server):
    """The app's model in this process: the translation the viewer shows and B's."""
    from transformer import load_translator
    from transformer.interpret.attribution import greedy_targets

    tr = load_translator(app_server.checkpoint)
    a, b = greedy_targets(tr, [SENTENCE, OTHER])
    differ = next(t for t in range(min(len(a), len(b))) if a[t] != b[t])
    return {"tr": tr, "trace": tr.trace(SENTENCE), "differ": differ + 1}  # the 1-based step where A and B differ


@pytest.fixture(params=list(DEVICES))
def page(request, browser, app_server):
    with opened_page(browser, app_server.url, request.param, timeout_ms=90_000) as pg:
        yield pg


def open_view(page):
    open_panel(page, "attribution-panel")
    page.wait_for_selector("#attribution .at-root")


def text_key(text: str) -> str:
    """attribution.js textKey: FNV-1a of the text's UTF-16 code units, with their count, base 36."""
    units = text.encode("utf-16-le")
    codes = [int.from_bytes(units[i : i + 2], "little") for i in range(0, len(units), 2)]
    h = 0x811C9DC5
    for c in codes:
        h = ((h ^ c) * 0x01000193) & 0xFFFFFFFF
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        h, r = divmod(h, 36)
        out = digits[r] + out
        if not h:
            return f"{len(codes)}.{out}"


def done(page, section: str, key: str):
    page.wait_for_selector(f"#attr-{section}[data-state='done'][data-key='{key}']", state="attached")


def values(page, table: str) -> list:
    """A grid's numbers as drawn (layers x heads), from its cells' data-value."""
    return page.evaluate(
        """(sel) => [...document.querySelectorAll(sel + ' tbody tr')].map((r) =>
        [...r.querySelectorAll('td')].map((c) => Number(c.dataset.value)))""",
        table,
    )


def no_signed_zero(page, sel: str):
    texts = page.eval_on_selector_all(f"{sel} td", "cs => cs.map(c => c.textContent)")
    assert texts and not [t for t in texts if NEGATIVE_ZERO.fullmatch(t.strip())], texts


# --- tests ------------------------------------------------------------------------------------


def test_logit_attribution_grid_and_a_head_click_opens_it(page, reference):
    translate(page, SENTENCE, step=None)
    open_view(page)
    # nothing is asked until the visitor presses the button
    # (the view fills its sections on the frame after it mounts)
    page.wait_for_function("() => document.querySelector('#attr-dla-status').textContent.includes('Why this word?')")
    assert page.get_attribute("#attr-dla", "data-state") == "idle"
    go_to_step(page, 2)
    press(page, "#attr-go")
    done(page, "dla", "attribution:2:")
    tr, trace = reference["tr"], reference["trace"]
    from transformer.interpret.attribution import direct_logit_attribution

    want = direct_logit_attribution(tr, SENTENCE, 1, target_ids=trace.tgt_ids[1:])
    L, H = want.cross.shape
    for part, array in (("self", want.decoder_self), ("cross", want.cross)):
        drawn = np.array(values(page, f"#attr-dla-{part}"))
        assert drawn.shape == (L, H)
        assert np.abs(drawn - array).max() < 1e-3, part  # the model's own terms
        no_signed_zero(page, f"#attr-dla-{part}")
    assert "scale frozen at this step" in page.inner_text("#attr-dla-note")
    assert f"logit “{want.token}”" in page.inner_text("#attr-dla-status")
    # a head cell opens that head in the viewer (as the mosaic's tiles do)
    press(page, "#attr-dla-cross-2-3")
    page.wait_for_function(
        "() => { const s = window.__explorer.getState(); "
        "return s.view === 'cross' && s.layer === 2 && s.head === '3'; }"
    )
    page.wait_for_selector("#attn-plot[data-view='cross'][data-layer='2'][data-head='3']", state="attached")
    assert "at-open" in page.get_attribute("#attr-dla-cross-2-3", "class")
    press(page, f"#attr-dla-self-1-{H}")
    page.wait_for_function(
        "() => { const s = window.__explorer.getState(); "
        f"return s.view === 'decoder' && s.layer === 1 && s.head === '{H}'; }}"
    )
    # once asked, the analysis follows the step; and the choice "against the runner-up" splits the difference
    go_to_step(page, 3)
    done(page, "dla", "attribution:3:")
    page.select_option("#attr-versus", "runner-up")
    done(page, "dla", "attribution:3:runner-up")
    assert " − logit “" in page.inner_text("#attr-dla-status")
    # wide grids scroll inside their own box, with an edge that shows: the page never gets wider than the screen
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")
    for look in page.eval_on_selector_all(
        "#attr-dla-body .at-scroll",
        """bs => bs.map((b) => {
        const cs = getComputedStyle(b); return {overflow: cs.overflowX, border: parseFloat(cs.borderTopWidth),
        image: cs.backgroundImage, right: b.getBoundingClientRect().right}; })""",
    ):
        assert look["overflow"] in ("auto", "scroll") and look["border"] >= 1 and "gradient" in look["image"], look
        assert look["right"] <= page.viewport_size["width"] + 0.5, look
    # a new sentence forgets every answer
    translate(page, OTHER, step=None)
    page.wait_for_selector("#attr-dla[data-state='idle']", state="attached")
    assert page.locator("#attr-dla-body td").count() == 0


def test_patching_takes_b_from_minimal_pairs_and_a_cell_shows_both_rows(desktop, reference):
    page = desktop
    translate(page, SENTENCE, step=None)
    open_panel(page, "pairs-panel")
    page.wait_for_selector("#pairs-view .pr-root")
    page.fill("#pair-text", OTHER)
    page.click("#pair-btn")
    page.wait_for_function("() => { const p = window.__explorer.getState().pair; return p && p.status === 'done'; }")
    open_view(page)
    assert page.input_value("#attr-patch-b") == OTHER  # the pairs view's B is offered
    step = reference["differ"]
    go_to_step(page, step)
    t0 = time.perf_counter()
    page.click("#attr-patch-btn")
    done(page, "patch", f"patching:{step}:{text_key(OTHER)}")
    print(f"\npatching at step {step}: {1000 * (time.perf_counter() - t0):.0f} ms to paint")
    s = state(page)
    L, H = s["trace"]["layers"]["cross"], s["trace"]["heads"]
    assert np.array(values(page, "#attr-patch-cross")).shape == (L, H)
    assert "everything together 1.00" in page.inner_text("#attr-patch-status")  # patching all of B gives B
    no_signed_zero(page, "#attr-patch-cross")
    page.click("#attr-patch-cross-1-1")
    page.wait_for_selector("#attr-patch-row-a .at-barcol", state="attached")
    assert page.locator("#attr-patch-row-a .at-barcol").count() == len(s["trace"]["src"])
    assert page.locator("#attr-patch-row-b .at-barcol").count() == len(s["pair"]["trace"]["src"])
    a_row = page.eval_on_selector_all("#attr-patch-row-a .at-barcol", "cs => cs.map(c => Number(c.dataset.weight))")
    trace = reference["trace"]
    assert np.abs(np.array(a_row) - trace.cross_attn[0, 0, step - 1]).max() <= 1 / 255 + 1e-3  # the payload's row
    assert (state(page)["view"], state(page)["layer"], state(page)["head"]) == ("cross", 1, "1")
    assert "at-picked" in page.get_attribute("#attr-patch-cross-1-1", "class")
    # where A and B write the same word, patching (followed) measures A's lead over its runner-up
    assert step > 1
    go_to_step(page, 1)
    done(page, "patch", f"patching:1:{text_key(OTHER)}")
    said = page.inner_text("#attr-patch-status")
    assert f"A and B both write “{trace.tgt_tokens[1]}” here" in said and "over its runner-up" in said, said


def test_saliency_draws_one_row_per_source_token_with_its_rank_correlation(desktop, reference):
    page = desktop
    translate(page, SENTENCE, step=None)
    open_view(page)
    go_to_step(page, 4)
    page.click("#attr-sal-btn")
    page.wait_for_selector("#attr-sal[data-state='done']", state="attached")
    assert page.get_attribute("#attr-sal", "data-key").startswith("saliency:4:16:")
    trace = reference["trace"]
    assert page.locator("#attr-sal-src tbody tr").count() == len(trace.src_tokens)
    assert page.locator("#attr-sal-tgt tbody tr").count() == 4  # the decoder inputs of step 4
    assert "Spearman ρ" in page.inner_text("#attr-sal-rho")
    assert "add up to within" in page.inner_text("#attr-sal-status")
    no_signed_zero(page, "#attr-sal-src")
    page.select_option("#attr-sal-n", "32")  # followed: more steps are asked for at once
    page.wait_for_selector("#attr-sal[data-state='done'][data-key^='saliency:4:32:']", state="attached")
    assert "with 32 integration steps" in page.inner_text("#attr-sal-status")


def test_named_endpoints_answer_and_refuse_like_knockout(app_server, reference):
    from gradio_client import Client
    from gradio_client.exceptions import AppError

    client = Client(app_server.url, verbose=False)
    data = client.predict(SENTENCE, 1, "runner-up", api_name="/attribution")
    assert data["schema"] == "logit-attribution/1" and data["step"] == 0 and data["versus_id"] is not None
    assert (
        client.predict(SENTENCE, OTHER, reference["differ"], api_name="/patching")["schema"] == "activation-patching/1"
    )
    assert client.predict(SENTENCE, SENTENCE, 1, api_name="/patching")["metric"] == "runner-up"  # the same word
    assert client.predict(SENTENCE, 2, 8, api_name="/saliency")["n_steps"] == 8
    for args, api, words in (
        ((SENTENCE, 0, ""), "/attribution", "There is no step 0 here"),
        ((SENTENCE, "", 1), "/patching", "Type a second sentence (B)"),
        ((SENTENCE, 1, 0), "/saliency", "n_steps must be a whole number"),
    ):
        start = len(app_server.log.read_text())
        with pytest.raises(AppError) as exc:
            client.predict(*args, api_name=api)
        assert words in str(exc.value)
        # no wait: the app writes "refused" to its log (flushed at once, explorer.launch runs it
        # unbuffered) before it raises the error that becomes this answer (explorer.serving.api_answer)
        lines = app_server.log.read_text()[start:].splitlines()
        assert len([line for line in lines if f"{api} refused" in line]) == 1, lines
        assert not [line for line in lines if "Traceback" in line], lines
