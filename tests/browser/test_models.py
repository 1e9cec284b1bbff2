"""Two models in one app (``python app.py --checkpoint A --checkpoint B``): a switch on each
page, and switching keeps the sentence, step, view, layer and head wherever the other model
has them. Here A is the shipped model (4 + 4 layers, 8 heads) and B the tiny test model
(2 + 2 layers, 4 heads), so some settings exist in both and some only in A."""

from __future__ import annotations

import pytest

from tests.helpers import NO_TOUR, SHIPPED, opened_page, painted, serve_app, state


pytestmark = pytest.mark.slow  # the slow set: two models' app of its own


@pytest.fixture(scope="module")
def two_models(tmp_path_factory, tiny_checkpoint):
    first = SHIPPED if (SHIPPED / "config.json").is_file() else tiny_checkpoint
    extra = ("--checkpoint", str(tiny_checkpoint))
    with serve_app(first, tmp_path_factory.mktemp("server") / "app.log", extra=extra) as app:
        yield app


HAS_TRACE = "() => { const s = window.__explorer && window.__explorer.getState(); return !!(s && s.trace); }"


def switch(page) -> list[dict]:
    return page.eval_on_selector_all(
        "#model-switch .ax-model", "bs => bs.map(b => ({text: b.textContent, pressed: b.getAttribute('aria-pressed')}))"
    )


def test_the_switch_opens_the_same_sentence_in_the_other_model_where_it_was(browser, two_models):
    with opened_page(browser, two_models.url, "desktop", init_script=NO_TOUR, timeout_ms=120_000) as page:
        buttons = switch(page)
        assert len(buttons) == 2 and [b["pressed"] for b in buttons] == ["true", "false"]
        assert "tiny" in buttons[1]["text"] and "parameters" in buttons[1]["text"]
        assert not page.locator(".nav-holder").is_visible()  # the switch is the way between the pages
        painted(page)
        first = state(page)
        # a setting the tiny model has (layer 2, head 3, step 2) and one it lacks (decoder view stays)
        page.evaluate(
            "() => { const u = new URL(location.href); const h = new URLSearchParams(u.hash.slice(1));"
            " h.set('step', '2'); h.set('layer', '2'); h.set('head', '3'); h.set('view', 'decoder');"
            " location.hash = h.toString(); }"
        )
        page.reload()
        page.wait_for_function("() => window.__explorer && window.__explorer.getState().layer === 2")
        page.click("#model-switch .ax-model[data-model='1']")
        page.wait_for_url("**/tiny**")
        page.wait_for_function(HAS_TRACE)
        painted(page)
        s = state(page)
        assert s["sentence"] == first["sentence"] and s["origin"] == "translate"
        assert (s["view"], s["layer"], s["head"]) == ("decoder", 2, "3")
        assert s["step"] == min(2, s["trace"]["steps"])
        assert [b["pressed"] for b in switch(page)] == ["false", "true"]
        assert "Not measured on this model" in page.inner_text("#intro")
        # and back: the layer the tiny model lacks is not needed, the shipped one shows the same view
        page.click("#model-switch .ax-model[data-model='0']")
        page.wait_for_function(
            "() => { const s = window.__explorer && window.__explorer.getState(); return s && s.trace; }"
        )
        assert state(page)["sentence"] == first["sentence"] and state(page)["layer"] == 2


def test_a_layer_the_other_model_lacks_falls_back_and_a_whatif_version_is_not_carried(browser, two_models):
    url = two_models.url + "#text=I%20have%20a%20red%20car.&step=1&view=cross&layer=4&head=7&forced=5.6&origin=whatif"
    with opened_page(browser, url, "desktop", init_script=NO_TOUR, timeout_ms=120_000) as page:
        page.wait_for_function(
            "() => { const s = window.__explorer && window.__explorer.getState(); return s && s.trace; }"
        )
        page.click("#model-switch .ax-model[data-model='1']")
        page.wait_for_url("**/tiny**")
        assert "forced=" not in page.url and "origin=" not in page.url
        page.wait_for_function(
            "() => { const s = window.__explorer && window.__explorer.getState(); return s && s.trace; }"
        )
        s = state(page)
        assert s["sentence"] == "I have a red car." and s["origin"] == "translate"
        assert 1 <= s["layer"] <= 2 and (s["head"] in ("mean", "max") or 1 <= int(s["head"]) <= 4)
