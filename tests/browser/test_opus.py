"""A converted Marian (OPUS-MT) model in the app, ``python app.py --checkpoint DIR``: every view
and every analysis works on it as on ours. The model is the small OPUS-MT-style one the
``opus_mt_like`` fixture trains with transformers and converts (2 + 2 layers, 4 heads, one
shared SentencePiece vocabulary, no start token in the source, the decoder starting from <pad>)."""

from __future__ import annotations

import pytest

from tests.helpers import NO_TOUR, open_panel, open_section, opened_page, painted, serve_app, state


pytestmark = pytest.mark.slow  # the slow set: a Marian model trained with transformers, and an app of its own


@pytest.fixture(scope="module")
def opus_app(tmp_path_factory, opus_mt_like):
    with serve_app(opus_mt_like, tmp_path_factory.mktemp("server") / "app.log") as app:
        yield app


def store_has(page, expression: str):
    page.wait_for_function(f"() => {{ const s = window.__explorer.getState(); return !!({expression}); }}")


def test_every_view_and_analysis_works_on_a_converted_opus_mt_model(browser, opus_app):
    with opened_page(browser, opus_app.url, "desktop", init_script=NO_TOUR, timeout_ms=120_000) as page:
        painted(page)
        intro = page.inner_text("#intro")
        assert "converted from" in intro and "2+2 layers, 4 heads" in intro and "Not measured on this model" in intro
        s = state(page)
        assert s["trace"]["heads"] == 4 and s["trace"]["layers"]["encoder"] == 2
        assert s["trace"]["src"][-1] == "</s>" and not any(t == "[SOS]" for t in s["trace"]["src"])  # Marian's pieces
        assert s["trace"]["tgt"][0] == "<pad>"  # the decoder starts from <pad>
        # the picker offers this model's layers and heads, no more
        assert page.locator("[id^='layer-btn-']").count() == 2
        assert page.locator("#head-btn-4").count() == 1 and page.locator("#head-btn-5").count() == 0
        # the viewer's own sections and pictures
        for name in ("views", "lens", "pe"):
            open_section(page, name)
        page.click("#picture-lines")
        page.wait_for_selector("#attn-lines svg")
        page.click("#picture-map")
        painted(page)
        page.click("#explain-btn")
        page.wait_for_selector("#arith-table tr", state="attached")
        # every panel that asks the model again
        open_panel(page, "whatif-panel")
        page.click("#whatif-btn")
        store_has(page, "s.whatif && s.whatif.status === 'done'")
        open_panel(page, "analysis-panel")
        page.click("#importance-btn")
        store_has(page, "s.importance && s.importance.status === 'done'")
        open_panel(page, "beam-panel")
        page.click("#beam-btn")
        store_has(page, "s.beam")
        assert page.locator("#beam-hyps li").count() > 0
        open_panel(page, "attribution-panel")
        # direct logit attribution splits a pre-norm residual stream; a post-norm model (Marian)
        # has none to split, and the panel says so in one line instead of drawing a wrong split
        page.click("#attr-go")
        page.wait_for_selector("#attr-dla[data-state='error']", state="attached")
        assert "needs a pre-norm model" in page.inner_text("#attr-dla-status")
        page.click("#attr-sal-btn")
        page.wait_for_selector("#attr-sal[data-state='done']", state="attached")
        open_panel(page, "pairs-panel")
        page.locator("#pair-text").fill("I have a blue car.")
        page.click("#pair-btn")
        store_has(page, "s.pair && s.pair.status === 'done'")
        # no other view answered with an error
        errors = page.evaluate("() => [...document.querySelectorAll('[data-state=error]')].map(e => e.id)")
        assert errors == ["attr-dla"], errors
