"""The analysis panel's callbacks (explorer/panels/analysis.py), called directly on the tiny
checkpoint: knock-out and head importance results, bad input -> a clear message, the page's
requests, the test-set stats."""

import json
import logging
import shutil

import gradio as gr
import pytest

import explorer.page as explorer_page
from explorer.panels.analysis import AnalysisPanel, load_test_stats
from transformer.core import readings
from transformer.interpret import knockout
from transformer import load_translator
from explorer.panels.base import Asked

TEXT = "the black cat sleeps."


@pytest.fixture(scope="module")
def panel(app):
    return app.panel("analysis")


def request(**data):
    return Asked(None, data)


def test_knockout_returns_translation_and_per_step_data(panel, translator):
    translation, data = panel.knockout(TEXT, "cross:0:1, encoder:1:0")
    assert "error" not in data
    assert data["text"] == TEXT and translation == data["knockout"]["translation"]
    assert data["heads"] == [{"kind": "encoder", "layer": 1, "head": 0}, {"kind": "cross", "layer": 0, "head": 1}]
    assert data["original"]["translation"] == translator.trace(TEXT).translation
    n = len(data["original"]["tokens"]) - 1  # one entry per step of the original translation
    steps = data["steps"]
    assert n >= 1 and all(len(steps[k]) == n for k in ("token", "p_original", "p_knockout", "top_knockout"))
    assert all(0.0 <= p <= 1.0 for p in steps["p_original"] + steps["p_knockout"])
    json.dumps(data)  # what the endpoint sends must be JSON


def test_knocking_out_every_cross_head_changes_the_probabilities(panel, translator):
    cfg = translator.cfg
    every = ", ".join(f"cross:{l}:{h}" for l in range(cfg.n_decoder_layers) for h in range(cfg.h))
    _, data = panel.knockout(TEXT, every)
    assert data["steps"]["p_knockout"] != data["steps"]["p_original"]


@pytest.mark.parametrize(
    "heads, words",
    [
        ("cross:9:0", "layer 9 out of range"),
        ("cross:0:99", "head 99 out of range"),
        ("attention:0:1", "unknown kind"),
        ("cross-0-1", "expected 'kind:layer:head'"),
        ("cross:a:b", "must be integers"),
        ("", "No heads selected"),
        ("  ,  ", "No heads selected"),
        (None, "No heads selected"),
    ],
)
def test_bad_heads_get_a_clear_message(panel, heads, words):
    """Every endpoint of the app refuses bad input the same way: gr.Error with the message
    (gradio_client raises it as AppError; tests/test_api_errors.py calls the real server)."""
    with pytest.raises(gr.Error) as exc:
        panel.knockout(TEXT, heads)
    assert words in exc.value.message
    assert "kind:layer:head" in exc.value.message  # and how to write them
    assert exc.value.print_exception is False  # the log gets one line, not Gradio's traceback


@pytest.mark.parametrize("text", ["", "   ", None])
def test_empty_text_gets_a_message(panel, text):
    with pytest.raises(gr.Error, match="Please type an English sentence"):
        panel.knockout(text, "cross:0:1")
    with pytest.raises(gr.Error, match="Please type an English sentence"):
        panel.head_importance(text)


def test_too_long_text_gets_a_message(panel, app):
    with pytest.raises(gr.Error, match="characters"):
        panel.head_importance("a" * (app.max_chars + 1))


def test_a_bug_is_the_generic_message_and_a_logged_trace(panel, monkeypatch, caplog):
    from explorer.errors import GENERIC_ERROR

    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(knockout, "head_importance", boom)
    caplog.set_level(logging.INFO, logger="app")
    with pytest.raises(gr.Error) as exc:
        panel.head_importance(TEXT)
    assert exc.value.message == GENERIC_ERROR and "boom" not in exc.value.message
    failed = [r for r in caplog.records if r.getMessage() == "/head_importance failed"]
    assert len(failed) == 1 and failed[0].exc_info  # the stack trace, for whoever fixes it


def test_head_importance_has_one_layers_by_heads_map_per_kind(panel, translator):
    cfg = translator.cfg
    data = panel.head_importance(TEXT)
    assert "error" not in data and data["text"] == TEXT
    for kind in ("encoder", "decoder_self", "cross"):
        L = cfg.n_encoder_layers if kind == "encoder" else cfg.n_decoder_layers
        imp = data["importance"][kind]
        assert len(imp) == L and all(len(row) == cfg.h for row in imp)
    # the panel returns what the package computes
    direct = knockout.head_importance(translator, TEXT)
    assert data["importance"] == direct["importance"] and data["translation"] == direct["translation"]
    json.dumps(data)


def test_endpoints_are_named_and_public(translator):
    demo = explorer_page.build_ui(translator)
    public = {d.api_name: d for d in demo.fns.values() if d.api_visibility != "private"}
    assert public["knockout"].fn.__name__ == "knockout"
    assert public["head_importance"].fn.__name__ == "head_importance"
    assert len(public["knockout"].inputs) == 2 and len(public["knockout"].outputs) == 2
    ids = {getattr(b, "elem_id", None) for b in demo.blocks.values()}
    assert "analysis" in ids  # the view's block; its buttons are drawn in the browser


def test_page_requests_run_on_the_sentence_in_the_viewer(panel, app):
    """The page asks with the heads picked on screen (0-based on the wire) and its sentence
    number; the answer names both, and a bad request is said in the page's words."""
    trace = app.translate(TEXT)[app.trace_state]
    ko = json.loads(
        panel.request(trace, request(action="knockout", sentenceId=3, heads=[{"kind": "cross", "layer": 0, "head": 1}]))
    )
    assert ko["action"] == "knockout" and ko["sentenceId"] == 3 and ko["text"] == TEXT and "error" not in ko
    assert ko["heads"] == [{"kind": "cross", "layer": 0, "head": 1}]
    imp = json.loads(panel.request(trace, request(action="importance", sentenceId=3)))
    assert imp["action"] == "importance" and imp["importance"]["cross"] and imp["text"] == TEXT
    none = json.loads(panel.request(trace, request(action="knockout", sentenceId=3, heads=[])))
    assert none["error"].startswith("No heads selected") and "0-based" not in none["error"]
    bad = json.loads(
        panel.request(
            trace, request(action="knockout", sentenceId=3, heads=[{"kind": "cross", "layer": 99, "head": 0}])
        )
    )
    assert "do not fit this model" in bad["error"] and "kind:layer:head" not in bad["error"]
    assert "Translate a sentence first" in json.loads(panel.request(None, request(action="importance")))["error"]


def test_test_set_stats_are_loaded_once_and_sent_with_the_page(tiny_checkpoint, tmp_path, translator):
    ckpt = tmp_path / "ckpt"
    shutil.copytree(tiny_checkpoint, ckpt)
    assert load_test_stats(ckpt) is None  # none shipped: only this sentence's diagnostics
    stats = readings.aggregate_head_stats(
        [translator.trace(TEXT).head_stats, translator.trace("the dog eats.").head_stats]
    )
    (ckpt / "head_stats.json").write_text(json.dumps(stats), encoding="utf-8")
    tr = load_translator(ckpt)
    a = explorer_page.App(tr)
    demo = a.build()
    assert a.panel("analysis").test_stats["n_sentences"] == 2
    host = [b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "analysis"][0]
    assert json.loads(host.props["data"])["kinds"].keys() == stats["kinds"].keys()
    assert "<" not in host.props["data"]  # no text in the stats can look like markup


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"schema": "head-stats/1"}', b"\xff\xfe"])
def test_corrupt_test_set_stats_are_ignored(tmp_path, content):
    path = tmp_path / "head_stats.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert load_test_stats(tmp_path) is None
    assert load_test_stats(None) is None


def test_panel_without_directory(translator):
    class Bare:  # a translator built in memory has no folder
        tr = type("T", (), {"directory": None, "cfg": translator.cfg})()

    assert AnalysisPanel(Bare()).test_stats is None
