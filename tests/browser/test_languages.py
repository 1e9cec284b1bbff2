"""A converted model of each family in the browser: OPUS-MT's Marian, M2M100, NLLB-200 and
mBART-50, served by one app (``python app.py --checkpoint A --checkpoint B ...``, one page per
model). Each page draws its map; a Marian model (one pair) shows no language pickers and its
links name no languages; on a multilingual one, picking another target language translates the
sentence on screen into it (the forced first token and the labels change), the link keeps the
pair, and opening that link brings it back."""

from __future__ import annotations

import json
import re

import pytest

from tests.helpers import NO_TOUR, opened_page, painted, serve_app, state
from transformer.core.languages import language_name

pytestmark = pytest.mark.slow  # four converted models and an app of their own

FAMILIES = ["opus_mt_like", "m2m100_like", "nllb_like", "mbart50_like"]


@pytest.fixture(scope="module")
def four_models(request, tmp_path_factory):
    """The app on the four converted models: (server, {fixture: (page path, config)})."""
    folders = [request.getfixturevalue(f) for f in FAMILIES]
    extra = tuple(a for f in folders[1:] for a in ("--checkpoint", str(f)))
    pages = {}
    for i, (fixture, folder) in enumerate(zip(FAMILIES, folders)):
        key = re.sub(r"[^a-z0-9]+", "_", folder.name.lower()).strip("_")  # explorer.models.Model.all_of
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        pages[fixture] = ("/" if i == 0 else "/" + key.replace("_", "-"), config)
    with serve_app(folders[0], tmp_path_factory.mktemp("server") / "app.log", extra=extra) as app:
        yield app, pages


def sentence_id(page) -> int:
    return page.evaluate("() => window.__explorer.getState().sentenceId")


def pick_language(page, side: str, code: str) -> None:
    """Pick ``code`` in the ``side`` picker ("src", "tgt") as a visitor does: type its name, Enter."""
    box = page.locator(f"#{side}-lang input")
    box.click()
    box.fill(f"{language_name(code)} ({code})")
    page.keyboard.press("Enter")


@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_draws_its_map_and_a_multilingual_one_changes_language(browser, four_models, family):
    app, pages = four_models
    path, config = pages[family]
    url = app.url.rstrip("/") + path
    with opened_page(browser, url, "desktop", init_script=NO_TOUR, timeout_ms=180_000) as page:
        painted(page)
        s = state(page)
        assert s["trace"]["steps"] >= 1 and page.locator("#attn-plot").is_visible()
        if not config.get("lang_ids"):  # one pair: no pickers, no languages in the link
            assert not page.locator("#tgt-lang").is_visible() and not page.locator("#src-lang").is_visible()
            page.wait_for_url(re.compile("#text="))
            assert "tgt=" not in page.url and "src=" not in page.url
            return
        src, tgt = config["src_lang"], config["tgt_lang"]
        assert page.locator("#tgt-lang").is_visible() and page.locator("#src-lang").is_visible()
        assert page.locator("#tgt-lang input").input_value() == f"{language_name(tgt)} ({tgt})"
        forced = s["trace"]["tgt"][1]  # the first token out is forced: the target language's
        assert tgt.strip("_") in forced or forced.strip("_") in tgt, forced
        other = next(c for c in sorted(config["lang_ids"]) if c not in (src, tgt) and language_name(c) != c)
        before = sentence_id(page)
        pick_language(page, "tgt", other)
        page.wait_for_function(
            "([n, code]) => { const s = window.__explorer.getState();"
            " return s.sentenceId > n && s.trace && s.trace.names.tgtLang === code; }",
            arg=[before, other],
            timeout=120_000,
        )
        painted(page)
        s2 = state(page)
        assert s2["sentence"] == s["sentence"]  # the same sentence, in the other language
        assert s2["trace"]["tgt"][1] != forced and s2["trace"]["names"]["tgt"] == language_name(other)
        assert f"{language_name(other)} translation" in page.inner_text("#translation")
        page.wait_for_url(re.compile(f"tgt={re.escape(other)}"))
        assert f"src={src}" in page.url
        # the link opens the sentence in the language it names
        page.reload()
        page.wait_for_function(
            "(code) => { const s = window.__explorer && window.__explorer.getState();"
            " return s && s.trace && s.trace.names.tgtLang === code; }",
            arg=other,
            timeout=120_000,
        )
        assert state(page)["trace"]["tgt"][1] == s2["trace"]["tgt"][1]
        page.wait_for_function(
            "(label) => document.querySelector('#tgt-lang input').value === label",
            arg=f"{language_name(other)} ({other})",
        )
