"""Every label names the languages and special tokens of the model on the page (``explorer.names``):
the small converted Marian model (``opus_mt_like``: en→it, its end token </s>, its decoder starting
from <pad>) says </s> where ours says [EOS]; the same model told it translates into German (en→de)
says German and never Italian; a de→en model asks for German sentences; and the shipped wording
stays as it was. The browser's side of the same names (``web/names.js``, the glossary) runs under Node."""

from __future__ import annotations

import dataclasses
import json

import gradio as gr
import pytest

from explorer import page as explorer_page
from explorer import texts
from explorer.claims import GENERIC, GENERIC_ANY_TARGET
from explorer.names import OURS, article, of_trace, of_translator
from explorer.panels.base import Asked
from explorer.payload import encode_trace
from tests.helpers import needs_node, run_node
from transformer import load_translator

SENTENCE = "I like red apples."
MARIAN_TOKENS = {"pad": "<pad>", "unk": "<unk>", "sos": None, "eos": "</s>"}


def built(tr) -> explorer_page.App:
    app = explorer_page.App(tr)
    app.build()
    return app


@pytest.fixture(scope="module")
def marian(opus_mt_like):
    return built(load_translator(opus_mt_like))


@pytest.fixture(scope="module")
def marian_de(opus_mt_like):
    """The same Marian model, its config saying it translates English into German."""
    tr = load_translator(opus_mt_like)
    tr.cfg.tgt_lang = "de"
    return built(tr)


def label(update) -> str:
    return update.label if isinstance(update, gr.components.Component) else ""


def page_texts(app, out: dict) -> str:
    """What the page says about a trace: the translation's label, the notices, the payload's
    names, the examples' hints, the title line and the sentence box."""
    return "\n".join(
        [
            label(out[app.translation]),
            str(out[app.notice]),
            json.dumps(json.loads(out[app.viewer])["names"]),
            json.dumps(app.claims.examples() + [p["hint"] for p in app.claims.pairs()]),
            app.intro(),
            app.sentence_placeholder(),
        ]
    )


def unfinished(app, trace) -> dict:
    """The page of ``trace`` as if decoding had hit the length limit before the end token."""
    return app.show(dataclasses.replace(trace, finished=False), origin="translate")


def test_the_names_come_from_the_checkpoints_config_and_tokenizers(marian, translator):
    n = of_translator(marian.tr)
    assert (n.src_lang, n.tgt_lang, n.src, n.tgt) == ("en", "it", "English", "Italian")
    assert n.src_tokens == MARIAN_TOKENS  # a Marian source has no start token
    assert n.tgt_tokens == {**MARIAN_TOKENS, "sos": "<pad>"}  # its decoder starts from <pad>
    assert (n.sos, n.eos, n.unk) == ("<pad>", "</s>", "<unk>")
    assert of_translator(translator) == OURS  # ours: [PAD] [UNK] [SOS] [EOS], English into Italian
    assert OURS.translation("greedy") == explorer_page.GREEDY_LABEL == "Italian translation (greedy)"


def test_a_marian_page_names_its_end_token_where_ours_names_eos(marian):
    trace = marian.tr.trace(SENTENCE)
    out = unfinished(marian, trace)
    said = page_texts(marian, out)
    assert "before the model emitted </s>." in out[marian.notice]
    assert "[EOS]" not in said and "[SOS]" not in said and "[UNK]" not in said
    assert label(out[marian.translation]) == "Italian translation (greedy)"  # en→it: as on our page
    names = json.loads(out[marian.viewer])["names"]
    assert names == {
        "src_lang": "en",
        "tgt_lang": "it",
        "src": "English",
        "tgt": "Italian",
        "tokens": {"src": MARIAN_TOKENS, "tgt": {**MARIAN_TOKENS, "sos": "<pad>"}},
    }
    assert marian.claims is GENERIC  # an en→it model without claims: the Italian hints fit it


def test_a_model_into_german_says_german_and_never_italian(marian_de):
    app = marian_de
    trace = app.tr.trace(SENTENCE)
    out = unfinished(app, trace)
    said = page_texts(app, out)
    assert "Italian" not in said and "[EOS]" not in said, said
    assert label(out[app.translation]) == "German translation (greedy)"
    assert "emitted </s>" in out[app.notice]
    assert app.claims is GENERIC_ANY_TARGET and "'è'" not in said
    # the translation's other labels: a What-if version, a beam hypothesis, one from a link
    forced = app.tr.trace(SENTENCE, forced_prefix=trace.tgt_ids[1:2])
    assert label(app.show(forced, origin="whatif")[app.translation]).startswith("German translation (step 1 forced")
    state = {"text": SENTENCE, "k": 2, "hyps": [trace.tgt_ids[1:]]}
    beam = app.panel("beam").open_hypothesis(state, Asked(None, {"hyp": 0}))
    assert label(beam[app.translation]) == "German translation (beam hypothesis 1 of 1, beam size 2)"
    linked = app.open_link(Asked(None, {"text": SENTENCE, "forced": trace.tgt_ids[1:], "origin": "beam"}))
    assert label(linked[app.translation]) == "German translation (beam hypothesis, from a link)"
    # what the panels say when asked wrongly
    with pytest.raises(ValueError, match=r"reference translation \(German\)"):
        app.panel("sources")._reference("")
    with pytest.raises(ValueError, match="model's German vocabulary"):
        app.panel("attribution")._versus("no-such-token-anywhere")
    # another language in the box: the notice names the model's two languages
    notice = app.translate("Il gatto dorme sul divano.")[app.notice]
    assert "looks like Italian. It translates English into German" in notice


def test_a_model_from_german_asks_for_german_and_skips_the_english_word_checks(translator):
    names = dataclasses.replace(OURS, src_lang="de", tgt_lang="en")
    assert names.a_sentence() == "a German sentence" and names.translation("greedy") == "English translation (greedy)"
    trace = translator.trace("the black cat sleeps.")
    # babble a model of English would call "not English" is no concern of a model of German
    babble = dataclasses.replace(trace, src_text="asdkjh qwe zzz")
    assert any("not English" in n for n in texts.notices(babble, 126))
    assert not any("English" in n for n in texts.notices(babble, 126, names=names))


def test_the_payload_carries_the_names_of_each_trace(marian):
    """A multilingual model's trace names the languages of its own request, and so does its payload."""
    trace = marian.tr.trace(SENTENCE)
    assert "names" not in encode_trace(trace)  # without names the browser falls back on ours
    as_french = dataclasses.replace(trace, tgt_lang="fr")  # as a multilingual model traces a request into French
    names = marian.names_for(as_french)
    assert (names.tgt_lang, names.tgt, names.eos) == ("fr", "French", "</s>")
    assert encode_trace(as_french, names=names)["names"]["tgt"] == "French"
    assert label(marian.show(as_french, origin="translate")[marian.translation]) == "French translation (greedy)"
    assert of_trace(OURS, None) is OURS and marian.names_for(trace) == marian.names


@pytest.mark.parametrize(
    "name, a", [("English", "an"), ("German", "a"), ("Italian", "an"), ("Urdu", "an"), ("Ukrainian", "a"), ("", "a")]
)
def test_the_article_before_a_language_name(name, a):
    assert article(name) == a


BROWSER_NAMES = """
import { readFileSync } from "node:fs";
// canvas.js, which the glossary imports, measures text on a canvas of the page: a stub page will do
globalThis.document = { createElement: () => ({ getContext: () => ({}) }), getElementById: () => null };
const { readNames, OURS, spoken } = await import("./names.js");
const { GLOSSARY, define, useNames } = await import("./glossary.js");
const defs = () => Object.fromEntries(Object.keys(GLOSSARY).map((k) => [k, define(k)]));
const out = { before: defs() };  // a page before its first trace
for (const [key, p] of Object.entries(JSON.parse(readFileSync(0, "utf-8")))) {
  const n = readNames(p);
  useNames(n);
  out[key] = { names: n, defs: defs(), habit: spoken("[SOS] sink", n) };
}
useNames(OURS);
out.back = defs();
console.log(JSON.stringify(out));
"""


@needs_node
def test_the_browsers_names_and_glossary_speak_of_the_model_on_the_page(tmp_path, marian, marian_de):
    data = {"ours": OURS.payload(), "marian": marian.names.payload(), "german": marian_de.names.payload()}
    got = run_node(tmp_path, ("names.js", "glossary.js"), BROWSER_NAMES, data)
    ours = got["ours"]
    # the shipped model's wording, word for word, whether its names came with a trace or not
    assert ours["defs"] == got["before"] == got["back"]
    eos = "[EOS], end of sequence: the token that marks the end of a sentence; writing it stops decoding."
    assert ours["defs"]["eos"] == eos
    assert ours["defs"]["cross-attention"] == (
        "The decoder looking at the English sentence: where each new Italian token gets its information."
    )
    assert ours["defs"]["token"].endswith("grey chips are the markers [SOS] and [EOS].")
    assert ours["names"]["markers"] == ["[SOS]", "[EOS]", "[PAD]"] and ours["habit"] == "[SOS] sink"
    # a Marian model's: </s> ends, <pad> starts, no [EOS] anywhere
    marian_defs = json.dumps(got["marian"]["defs"])
    assert "[EOS]" not in marian_defs and "[SOS]" not in marian_defs
    assert got["marian"]["defs"]["eos"].startswith("</s>, end of sequence")
    assert got["marian"]["defs"]["sos"].startswith("<pad> (the padding token, as the start)")
    assert got["marian"]["names"]["markers"] == ["<pad>", "</s>"] and got["marian"]["habit"] == "<pad> sink"
    assert got["marian"]["names"]["srcSos"] is None and got["marian"]["names"]["srcEos"] == "</s>"
    # into German: German, never Italian
    german = json.dumps(got["german"]["defs"])
    assert "Italian" not in german and "German token" in german and got["german"]["names"]["tgt"] == "German"
