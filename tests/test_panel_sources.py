"""The "Where did this word come from?" panel (explorer/panels/sources.py) and the test set at a
glance (explorer/panels/glance.py), called directly on the tiny checkpoint: the named endpoints
return the library's dicts, page requests run on the translation the viewer shows (forced tokens
included), bad input is refused with one clear message (``gr.Error`` for the API, ``{"error"}``
for the page), What if? forces any token of the vocabulary, and the glance list is read from the
checkpoint's ``glance.json`` or says the command that makes it."""

import json
import shutil
from types import SimpleNamespace

import gradio as gr
import numpy as np
import pytest

import explorer.page as explorer_page
from explorer.errors import GENERIC_ERROR
from explorer.panels import PANELS
from explorer.panels.base import Asked
from explorer.panels.glance import GlancePanel, load_glance
from explorer.panels.sources import SourcesPanel
from transformer.interpret.contributions import alti_contributions, value_norms
from transformer.interpret.decoder_lens import decoder_lens
from transformer.interpret.reference import score_reference

TEXT = "the black cat sleeps."


@pytest.fixture(scope="module")
def panel(app):
    return app.panel("sources")


@pytest.fixture(scope="module")
def trace(translator):
    return translator.trace(TEXT)


def request(**data):
    return Asked(None, data)


def ask(panel, trace, **data) -> dict:
    return json.loads(panel.request(trace, request(**data)))


# --- registration ---------------------------------------------------------------------------------


def test_two_closed_sections_and_three_public_endpoints(translator, panel, app):
    assert SourcesPanel in PANELS and GlancePanel in PANELS and isinstance(panel, SourcesPanel)
    assert panel.section.open is False and app.panel("glance").section.open is False
    demo = explorer_page.build_ui(translator)
    public = {d.api_name: d for d in demo.fns.values() if d.api_visibility != "private"}
    for name, n_inputs in (("contributions", 2), ("decoder_lens", 1), ("score_reference", 2)):
        assert public[name].fn.__name__ == name and len(public[name].inputs) == n_inputs
        assert len(public[name].outputs) == 1
    asked = [f for f in demo.fns.values() if getattr(f.fn, "__func__", None) is SourcesPanel.request]
    assert len(asked) == 2 and {a.trigger_mode for a in asked} == {"multiple"}  # the section's, the norms'
    ids = {getattr(b, "elem_id", None) for b in demo.blocks.values()}
    assert {"sources", "moved", "glance", "sources-panel", "glance-panel"} <= ids


def test_translate_computes_none_of_it(app, panel, monkeypatch):
    """Translate's cost does not change: no analysis of this panel runs on a new sentence."""
    calls = []
    for name in ("contributions_data", "lens_data", "score_data", "norms_data"):
        monkeypatch.setattr(panel, name, lambda *a, _n=name, **k: calls.append(_n))
    app.translate(TEXT)
    assert calls == []


# --- the API --------------------------------------------------------------------------------------


def test_contributions_are_the_librarys_and_a_step_is_1_based(panel, translator, trace):
    got = panel.contributions(TEXT, 2)
    want = alti_contributions(translator, trace)
    assert got["text"] == TEXT and got["output_tokens"] == want.output_tokens
    np.testing.assert_allclose(got["source_share"], want.source_share, atol=1e-3)
    np.testing.assert_allclose(np.array(got["source_share"]) + got["prefix_share"], 1, atol=1e-3)
    assert got["at"]["step"] == 1 and abs(got["at"]["source_share"] - want.source_share[1]) < 1e-5
    L = translator.cfg.n_decoder_layers
    assert np.array(got["layers"]["source"]).shape == (L, trace.steps, len(trace.src_tokens))
    assert "encoder_layers" not in got
    assert "at" not in panel.contributions(TEXT, 0)
    json.dumps(got)


def test_decoder_lens_ends_with_the_translation(panel, translator, trace):
    got = panel.decoder_lens(TEXT)
    assert got == decoder_lens(translator, TEXT).to_dict()
    assert len(got["rows"]) == translator.cfg.n_encoder_layers
    assert got["rows"][-1]["text"] == trace.translation


def test_scoring_the_models_own_translation_gives_rank_1_everywhere(app, shipped):
    """On the shipped model (the tiny one writes nothing worth scoring): the panel's checks
    and the library's scores, through a panel that reads the shipped translator."""
    panel = SourcesPanel(SimpleNamespace(tr=shipped, check_text=app.check_text))
    text = "Tom gave Mary a beautiful present for her birthday."
    own = shipped.translate([text])[0]
    got = panel.score_reference(text, own)
    assert got == score_reference(shipped, text, own).to_dict()
    assert [s["rank"] for s in got["steps"]] == [1] * len(got["steps"]) and got["first_divergence"] is None
    other = panel.score_reference(text, "Tom ha regalato a Maria un bel regalo per il suo compleanno.")
    first = other["first_divergence"]
    assert first is not None and other["steps"][first]["rank"] > 1
    assert all(s["rank"] == 1 for s in other["steps"][:first])


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda p: p.contributions("", 1), "Please type an English sentence"),
        (lambda p: p.contributions(TEXT, 999), "There is no step 999 here"),
        (lambda p: p.contributions(TEXT, "two"), "The step must be a number"),
        (lambda p: p.decoder_lens(None), "Please type an English sentence"),
        (lambda p: p.score_reference(TEXT, ""), "Type a reference translation"),
        (lambda p: p.score_reference(TEXT, "x" * 3000), "score one sentence"),
        (lambda p: p.score_reference(TEXT, 5), "reference must be a string"),
    ],
)
def test_bad_input_is_refused_with_gr_error(panel, call, words, caplog):
    with caplog.at_level("INFO", logger="app.sources"), pytest.raises(gr.Error) as exc:
        call(panel)
    assert words in str(exc.value)
    assert len([r for r in caplog.records if "refused" in r.message]) == 1


# --- the page -------------------------------------------------------------------------------------


def test_page_requests_run_on_the_trace_on_screen_forced_tokens_included(panel, translator, trace):
    forced = translator.trace(TEXT, forced_prefix=[int(trace.topk_ids[0][1])])
    got = ask(panel, forced, action="contributions", sentenceId=7, key="contributions")
    assert (got["action"], got["sentenceId"], got["key"]) == ("contributions", 7, "contributions")
    assert (
        got["output_tokens"]
        == alti_contributions(translator, forced).output_tokens
        != ask(panel, trace, action="contributions", sentenceId=7, key="c")["output_tokens"]
    )
    assert got["testReference"] is None  # the tiny checkpoint has no glance.json
    norms = ask(panel, forced, action="norms", sentenceId=7, key="norms")
    want = value_norms(translator, forced)
    np.testing.assert_allclose(norms["cross"], want.cross, atol=1e-3)
    lens = ask(panel, trace, action="lens", sentenceId=7)
    assert lens["rows"][-1]["text"] == trace.translation
    scored = ask(panel, trace, action="score", sentenceId=7, reference="il gatto")
    assert scored == {
        "action": "score",
        "sentenceId": 7,
        "key": None,
        "seq": scored["seq"],
        **score_reference(translator, TEXT, "il gatto").to_dict(),
    }


def test_page_errors_are_said_in_the_answer(panel, trace):
    assert ask(panel, None, action="lens", sentenceId=1)["error"] == "Translate a sentence first."
    assert ask(panel, trace, action="nope", sentenceId=1)["error"] == GENERIC_ERROR
    assert "Type a reference" in ask(panel, trace, action="score", sentenceId=1, reference=" ")["error"]


# --- What if? with any token ----------------------------------------------------------------------


def test_whatif_forces_a_token_outside_the_candidates(app, translator):
    whatif = app.panel("whatif")
    cfg = translator.cfg
    specials = {cfg.tgt_pad_id, cfg.tgt_sos_id, cfg.tgt_eos_id}
    words = [i for i in range(cfg.tgt_vocab_size) if i not in specials]
    trace = translator.trace(TEXT, forced_prefix=[words[0]])  # a first word, so step 2 has candidates
    outside = next(i for i in words if i not in set(map(int, trace.topk_ids[1])))
    ids = [words[0], outside]
    out = whatif.decode(trace, request(sentenceId=3, step=2, ids=ids))
    alt, msg = out[whatif.alt_state], json.loads(out[whatif.host])
    assert list(alt.tgt_ids[1:3]) == ids and msg["step"] == 2 and msg["rank"] is None
    assert msg["token"] and msg["prefixForced"] is False and msg["translation"] == alt.translation
    inside = whatif.decode(trace, request(sentenceId=3, step=2, ids=[words[0], int(trace.topk_ids[1][2])]))
    assert json.loads(inside[whatif.host])["rank"] == 2
    other = json.loads(whatif.decode(trace, request(sentenceId=3, step=2, ids=[words[1], outside]))[whatif.host])
    assert other["prefixForced"] is True  # the reference's own word before it was forced too
    for bad in ([], [translator.cfg.tgt_vocab_size], ["a"], [translator.cfg.tgt_eos_id, 5], [True]):
        got = json.loads(whatif.decode(trace, request(sentenceId=3, step=1, ids=bad))[whatif.host])
        assert "cannot be forced" in got["error"]


# --- the test set at a glance ---------------------------------------------------------------------


def test_glance_without_the_file_gives_the_command(app):
    got = json.loads(app.panel("glance").listing(request(action="list")))
    assert got["missing"] is True and "python -m transformer.cli.glance --checkpoint" in got["command"]


def test_glance_lists_the_file_and_a_click_opens_the_sentence(translator, tiny_checkpoint, tmp_path):
    from transformer import load_translator

    folder = tmp_path / "ckpt"
    shutil.copytree(tiny_checkpoint, folder)
    rows = [
        {
            "src": TEXT,
            "ref": "il gatto nero dorme.",
            "hyp": "x",
            "chrf": 12.5,
            "logprob": -1.2,
            "src_share": 0.6,
            "coverage": 0.8,
            "extra": 1,
        }
    ]
    (folder / "glance.json").write_text(json.dumps({"schema": "glance/1", "mean": {"chrf": 12.5}, "sentences": rows}))
    app = explorer_page.App(load_translator(str(folder)))
    app.build()
    got = json.loads(app.panel("glance").listing(request(action="list")))
    assert got["n"] == 1 and got["sentences"][0]["ref"] == "il gatto nero dorme." and "extra" not in got["sentences"][0]
    assert load_glance(str(folder)) is load_glance(str(folder))  # read once
    out = app.panel("glance").open(request(text=TEXT))
    assert out[app.src_text] == TEXT and out[app.trace_state].src_text == TEXT
    c = ask(app.panel("sources"), out[app.trace_state], action="contributions", sentenceId=1)
    assert c["testReference"] == "il gatto nero dorme."  # the reference box is filled with it
