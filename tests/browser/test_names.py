"""The page names the languages and special tokens of the model it shows, as its checkpoint names
them: here the small converted Marian model (``opus_mt_like``: its end token </s>, its decoder
starting from <pad>), its config saying it translates English into German. Every text a visitor
reads (the translation's label, the step line, the map's caption, the Lines headers, the hide
switch, the glossary, the beam tree and the hypothesis it opens, the diagnostics' measures, the
reference box) says German, English, </s> and <pad>, and none says Italian or [EOS]."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.helpers import (
    NO_TOUR,
    go_to_step,
    open_panel,
    open_section,
    opened_page,
    painted,
    serve_app,
    state,
    translate,
)

pytestmark = pytest.mark.slow  # the slow set: a Marian model trained with transformers, and an app of its own

SENTENCE = "The cat sleeps."  # short: the tiny model ends it with </s>


@pytest.fixture(scope="module")
def german_app(tmp_path_factory, opus_mt_like):
    """``python app.py`` on a copy of the converted Marian model whose config says en→de."""
    folder = tmp_path_factory.mktemp("names") / "opus-mt-en-de-tiny"
    shutil.copytree(opus_mt_like, folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    (folder / "config.json").write_text(json.dumps({**config, "tgt_lang": "de"}), encoding="utf-8")
    with serve_app(folder, tmp_path_factory.mktemp("server") / "app.log") as app:
        yield app


def no_other_names(text: str, where: str) -> None:
    assert "Italian" not in text and "[EOS]" not in text and "[SOS]" not in text, f"{where}: {text}"


def test_every_label_names_the_models_own_languages_and_tokens(browser, german_app):
    with opened_page(browser, german_app.url, "desktop", init_script=NO_TOUR, timeout_ms=120_000) as page:
        painted(page)
        assert state(page)["trace"]["names"]["tgt"] == "German"
        translate(page, SENTENCE)
        s = state(page)
        assert s["trace"]["tgt"][-1] == "</s>" and s["trace"]["tgt"][0] == "<pad>", s["trace"]["tgt"]
        assert "German translation (greedy)" in page.inner_text("#translation")
        assert "English sentence" in page.inner_text("#src-text")
        # the step line: the decoder reads <pad> first and emits </s> last
        assert "The decoder reads “<pad>” (input 1)" in page.inner_text("#step-text"), page.inner_text("#step-text")
        go_to_step(page, s["trace"]["steps"])
        assert "and emits “</s>”" in page.inner_text("#step-text"), page.inner_text("#step-text")
        caption = page.inner_text("#attn-caption")
        assert "each new German token" in caption and "in the English sentence" in caption, caption
        # Lines: its column headers
        page.click("#picture-lines")
        page.wait_for_selector("#attn-lines svg")
        heads = page.eval_on_selector_all("#attn-lines .ln-colhead", "hs => hs.map((h) => h.textContent)")
        assert heads and heads[0].startswith("German") and heads[1].startswith("English"), heads
        page.click("#picture-map")
        # the hide switch and the glossary: the model's own special tokens
        open_section(page, "views")
        assert page.inner_text("#hide-specials-label").strip() == "hide <pad> </s> (weights not renormalised)"
        page.locator("#hide-specials-label .gl-term[data-term='eos']").hover()
        page.wait_for_selector("#gl-tip", state="visible")
        assert page.inner_text("#gl-tip").startswith("eos: </s>, end of sequence"), page.inner_text("#gl-tip")
        page.mouse.move(0, 0)
        definitions = page.eval_on_selector("#gl-defs", "d => d.textContent")
        assert "</s>, end of sequence" in definitions and "each new German token" in definitions
        no_other_names(definitions, "glossary")
        # the beam tree starts from <pad>, and the hypothesis it opens is German
        open_panel(page, "beam-panel")
        page.click("#beam-btn")
        page.wait_for_selector("#beam-tree svg")
        labels = page.eval_on_selector_all("#beam-tree .bt-node text", "ts => ts.map((t) => t.textContent)")
        assert labels[0] == "<pad>", labels[:3]
        page.click("#beam-hyps li[data-hyp='0'] button")
        page.wait_for_function("() => window.__explorer.getState().origin === 'beam'")
        page.wait_for_function("() => document.querySelector('#translation').innerText.includes('beam hypothesis')")
        assert "German translation (beam hypothesis 1 of" in page.inner_text("#translation")
        # the diagnostics' measures and the reference box
        # a panel's view is built when it first opens, and names its words once it has drawn
        # this trace: a frame or more later on a loaded machine
        open_panel(page, "analysis-panel")
        named = "[...document.querySelectorAll('#diag-measure option')].some((o) => o.textContent === t)"
        page.wait_for_function(f"(t) => {named}", arg="sink share (<pad> </s> punct.)")
        open_panel(page, "sources-panel")
        page.wait_for_function("() => (document.querySelector('#src-ref')?.placeholder || '').includes('German')")
        assert page.get_attribute("#src-ref", "aria-label") == "Your reference translation (German)"
        assert page.get_attribute("#src-ref", "placeholder") == "a German sentence"
        no_other_names(page.inner_text("body"), "the page")
