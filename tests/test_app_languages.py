"""Many languages in the app: a multilingual checkpoint (here the small converted NLLB-200
model) translates, opens links and runs its panels in the languages asked, the pickers say
them, and a language the model does not know is refused in one line; a model of one pair
(the tiny checkpoint) hides the pickers and refuses any other language."""

from __future__ import annotations

import gradio as gr
import pytest

from explorer.panels.base import Asked
from transformer.core import stepping
from transformer import load_translator

TEXT = "The cat sleeps."


def event(**data):
    return Asked(None, data)


@pytest.fixture(scope="module")
def nllb_app(nllb_like):
    import explorer.page as explorer_page

    a = explorer_page.App(load_translator(nllb_like), max_batch=4)
    a.build()
    return a


def other_language(app) -> str:
    """A target language the model knows that is not its default."""
    return next(c for c in stepping.language_codes(app.tr.cfg) if c not in (app.tr.cfg.tgt_lang, app.tr.cfg.src_lang))


def test_the_pickers_list_every_language_by_name_with_the_configs_pair_chosen(nllb_app):
    cfg = nllb_app.tr.cfg
    assert nllb_app.src_lang.visible and nllb_app.tgt_lang.visible
    assert (nllb_app.src_lang.value, nllb_app.tgt_lang.value) == (cfg.src_lang, cfg.tgt_lang)
    choices = dict((code, label) for label, code in nllb_app.tgt_lang.choices)
    assert set(choices) == set(cfg.lang_ids)
    assert choices.get("ita_Latn", "Italian (ita_Latn)") == "Italian (ita_Latn)"
    assert choices[cfg.tgt_lang].endswith(f"({cfg.tgt_lang})") and not choices[cfg.tgt_lang].startswith("(")


def test_translate_and_the_api_take_the_languages(nllb_app):
    other = other_language(nllb_app)
    out = nllb_app.translate(TEXT, None, other)
    trace = out[nllb_app.trace_state]
    assert trace.tgt_lang == other and trace.tgt_ids[1] == nllb_app.tr.cfg.lang_ids[other]
    assert out[nllb_app.tgt_lang] == other and out[nllb_app.src_lang] == nllb_app.tr.cfg.src_lang
    translation, content = nllb_app.api_translate(TEXT, "", other)
    assert content["tgt_ids"][1] == nllb_app.tr.cfg.lang_ids[other]
    default = nllb_app.api_translate(TEXT)[1]
    assert default["tgt_ids"][1] == nllb_app.tr.cfg.lang_ids[nllb_app.tr.cfg.tgt_lang]


def test_a_bad_language_is_one_clear_line(nllb_app):
    with pytest.raises(gr.Error, match="unknown language 'xx_Zzzz': this model knows"):
        nllb_app.api_translate(TEXT, "", "xx_Zzzz")
    with pytest.raises(gr.Error, match="unknown language"):
        nllb_app.api_translate(TEXT, "xx_Zzzz", "")
    out = nllb_app.translate(TEXT, None, "xx_Zzzz")
    assert out[nllb_app.trace_state] is None and "unknown language 'xx_Zzzz'" in out[nllb_app.notice]
    assert "Traceback" not in out[nllb_app.notice] and "\n" not in out[nllb_app.notice].split("this model knows")[0]


def test_a_link_keeps_its_languages_and_a_bad_one_is_said(nllb_app):
    other = other_language(nllb_app)
    out = nllb_app.open_link(event(text=TEXT, src=nllb_app.tr.cfg.src_lang, tgt=other))
    trace = out[nllb_app.trace_state]
    assert trace.tgt_lang == other and out[nllb_app.tgt_lang] == other
    # a What-if link: the forced version, in the link's languages
    forced = trace.tgt_ids[1:3]
    whatif = nllb_app.open_link(event(text=TEXT, tgt=other, forced=forced, origin="whatif"))[nllb_app.trace_state]
    assert whatif.tgt_lang == other and whatif.tgt_ids[1 : len(forced) + 1] == forced
    bad = nllb_app.open_link(event(text=TEXT, tgt="nope_Nope"))
    assert bad[nllb_app.trace_state] is None and "unknown language 'nope_Nope'" in bad[nllb_app.notice]
    assert bad[nllb_app.src_text] == TEXT


def test_picking_a_target_language_retranslates_the_sentence_on_screen(nllb_app):
    cfg = nllb_app.tr.cfg
    shown = nllb_app.translate(TEXT)[nllb_app.trace_state]
    other = other_language(nllb_app)
    out = nllb_app.retarget(shown, "something else typed", cfg.src_lang, other)
    assert out[nllb_app.src_text] == shown.src_text
    assert out[nllb_app.trace_state].src_text == shown.src_text and out[nllb_app.trace_state].tgt_lang == other
    assert nllb_app.retarget(None, "  ", cfg.src_lang, other) == {}  # nothing on screen, nothing typed


def test_the_panels_run_in_the_traces_languages(nllb_app):
    other = other_language(nllb_app)
    lang_id = nllb_app.tr.cfg.lang_ids[other]
    trace = nllb_app.translate(TEXT, None, other)[nllb_app.trace_state]
    # What if?: the second candidate at step 2, in the trace's language
    whatif = nllb_app.panel("whatif")
    alt = whatif.forced(trace, 2, 1, 1)[whatif.alt_state]
    assert alt.tgt_lang == other and alt.tgt_ids[1] == lang_id
    # the beam tree and the hypothesis it opens
    beam = nllb_app.panel("beam")
    shown = beam.show_beam(TEXT, 2, trace)
    state = shown[beam.beam_state]
    assert state["langs"]["tgt_lang"] == other and all(h[0] == lang_id for h in state["hyps"])
    opened = beam.open_index(state, 0)[nllb_app.trace_state]
    assert opened.tgt_lang == other
    # DecoderLens and the reference score
    sources = nllb_app.panel("sources")
    assert sources.run(trace, "lens", {})["rows"][-1]["ids"][0] == lang_id
    assert sources.run(trace, "score", {"reference": "il gatto dorme."})["steps"][0]["id"] == lang_id
    # knock-out and head importance measure the translation on screen
    analysis = nllb_app.panel("analysis")
    heads = [{"kind": "cross", "layer": 0, "head": 0}]
    knocked = analysis.knock_out_selected(trace.src_text, heads, nllb_app.trace_languages(trace))
    assert knocked["original"]["ids"][1] == lang_id and knocked["original"]["translation"] == trace.translation
    # why this word? the source is framed in the trace's own language (here not the config's)
    cfg = nllb_app.tr.cfg
    src_other = next(code for code in sorted(cfg.lang_ids) if code not in (cfg.src_lang, other))
    trace = nllb_app.translate(TEXT, src_other, other)[nllb_app.trace_state]
    src_lang_token = nllb_app.tr.src_tok.id_to_token(cfg.lang_ids[src_other])
    assert trace.src_tokens[0] == src_lang_token
    why = nllb_app.panel("attribution")
    dla = why.run(trace, "attribution", {"step": 2})
    assert dla["src_tokens"][0] == src_lang_token and dla["prefix_tokens"][1] == trace.tgt_tokens[1]
    sal = why.run(trace, "saliency", {"step": 2, "nSteps": 2})
    assert sal["src"]["tokens"][0] == src_lang_token


def test_a_model_of_one_pair_hides_the_pickers_and_refuses_other_languages(app):
    assert not app.src_lang.visible and not app.tgt_lang.visible
    assert app.languages(app.tr.cfg.src_lang, app.tr.cfg.tgt_lang) == {}
    with pytest.raises(gr.Error, match="this model translates"):
        app.api_translate("the black cat sleeps.", "", "fr")
    out = app.open_link(event(text="the black cat sleeps.", tgt="fr"))
    assert out[app.trace_state] is None and "this model translates" in out[app.notice]
