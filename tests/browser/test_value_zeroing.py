"""Value zeroing in the browser, as a person uses it: the section asks nothing until it opens,
then asks once for the sentence and draws every step, layer and map from that answer; the
step's chips carry the numbers the library computes, and the map follows the kind picked.
The desktop in the default suite, the phone in the slow set."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import DEVICES, go_to_step, open_panel, opened_page, server_calls, state, translate

pytestmark = pytest.mark.browser

SENTENCE = "Tom gave Mary a beautiful present for her birthday."


@pytest.fixture(params=[d if d == "desktop" else pytest.param(d, marks=pytest.mark.slow) for d in DEVICES])
def page(request, browser, app_server):
    with opened_page(browser, app_server.url, request.param, timeout_ms=90_000) as pg:
        yield pg


def drawn(page, step: int, layer: str = "all", kind: str = "cross"):
    sel = f"#vz-root[data-state='done'][data-step='{step}'][data-layer='{layer}'][data-kind='{kind}']"
    page.wait_for_selector(sel, state="attached", timeout=60_000)


def chip_values(page, part: str) -> list[float]:
    return page.eval_on_selector_all(f"#vz-row .src-{part}", "cs => cs.map(c => Number(c.dataset.value))")


def test_the_view_asks_once_and_follows_step_layer_and_kind(page, app_server):
    from transformer import load_translator
    from transformer.interpret.value_zeroing import value_zeroing

    translate(page, SENTENCE, step=3)
    calls = server_calls(page)
    asked = lambda: [c for c in calls if "/queue/join" in c]  # noqa: E731 - the events sent
    assert page.locator("#vz-root").count() == 0  # the closed section has asked nothing
    open_panel(page, "vz-panel")
    tr = load_translator(app_server.checkpoint)
    vz = value_zeroing(tr, tr.trace(state(page)["sentence"]))
    S, c = len(vz.src_tokens), vz.cross
    # it opens on the layer whose cross-attention rows are sharpest (lowest mean entropy)
    entropy = [np.mean([-(r[r > 0] * np.log(r[r > 0])).sum() for r in c[layer]]) for layer in range(len(c))]
    sharpest = int(np.argmin(entropy))
    drawn(page, 3, str(sharpest + 1))
    assert chip_values(page, "source") == pytest.approx(list(c[sharpest, 2]), abs=1e-4)
    assert chip_values(page, "prefix") == pytest.approx(list(vz.decoder_self[sharpest, 2, :3]), abs=1e-4)
    assert "needs most" in page.inner_text("#vz-status")
    n = len(asked())
    go_to_step(page, 5)
    drawn(page, 5, str(sharpest + 1))
    assert len(chip_values(page, "source")) == S and len(chip_values(page, "prefix")) == 5
    page.select_option("#vz-layer", "all")
    drawn(page, 5)
    assert chip_values(page, "source") == pytest.approx(list(vz.cross_rollout[-1, 4]), abs=1e-4)
    assert chip_values(page, "prefix") == pytest.approx(list(vz.decoder_rollout[4, :5]), abs=1e-4)
    page.select_option("#vz-kind", "encoder")
    drawn(page, 5, "all", "encoder")
    assert page.locator("#vz-map canvas").bounding_box()["width"] > 50
    assert len(asked()) == n  # the step, the layer and the map are drawn from the one answer
