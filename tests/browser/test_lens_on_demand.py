"""The logit lens asked for when its section opens, as a model with a large vocabulary serves it
(``python app.py --lens-on-demand always`` makes the shipped model do the same): the payload of
Translate comes without the lens, opening the section asks the server once for the sentence on
screen, and the table that arrives is the one a full trace draws, step after step without asking
again. A new sentence asks again only when the section is open."""

from __future__ import annotations

import pytest

from tests.helpers import NO_TOUR, SHIPPED, open_section, opened_page, painted, serve_app, state, translate
from transformer import load_translator

pytestmark = pytest.mark.browser

SENTENCE = "The black cat is sleeping on the red chair."


@pytest.fixture(scope="module")
def lazy_app(tmp_path_factory):
    with serve_app(SHIPPED, tmp_path_factory.mktemp("lens") / "app.log", extra=("--lens-on-demand", "always")) as app:
        yield app


def lens_asks(page) -> list:
    """The page's requests for a logit lens from now on (the event's data names its action)."""
    asked = []
    page.on("request", lambda r: asked.append(r.url) if "logit_lens" in (r.post_data or "") else None)
    return asked


def test_the_lens_arrives_when_its_section_opens(browser, lazy_app):
    full = load_translator(SHIPPED).trace(SENTENCE, logit_lens=True)
    with opened_page(browser, lazy_app.url, "desktop", init_script=NO_TOUR) as page:
        translate(page, SENTENCE)
        painted(page)
        s = state(page)
        assert s["trace"]["lensLeftOut"] and s["lens"] is None  # nothing asked with the section closed
        asked = lens_asks(page)
        open_section(page, "lens")
        page.wait_for_selector("#logit-lens[data-step]", state="attached", timeout=30_000)
        assert state(page)["lens"]["status"] == "done"
        L = full.logit_lens_ids.shape[1]
        for step in (1, 2, full.steps):
            page.eval_on_selector(
                "#step-slider", "(s, v) => { s.value = v; s.dispatchEvent(new Event('input')); }", str(step)
            )
            page.wait_for_selector(f"#logit-lens[data-step='{step}']", state="attached")
            rows = page.locator("#logit-lens tbody tr")
            assert rows.count() == L
            shown = [rows.nth(layer).locator(".ax-lens-tok").all_inner_texts() for layer in range(L)]
            assert shown == full.logit_lens_tokens[step - 1]
        assert len(asked) == 1  # once for the sentence: the steps draw from what arrived
        translate(page, "Good morning.")  # the section is open: the new sentence's lens is asked at once
        page.wait_for_function("() => window.__explorer.getState().lens?.status === 'done'", timeout=30_000)
        page.wait_for_selector("#logit-lens[data-step]", state="attached")
        assert page.locator("#logit-lens tbody tr").count() == L
