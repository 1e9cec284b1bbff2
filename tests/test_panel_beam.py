"""The beam and epoch panels' callbacks (explorer/panels/beam.py, epochs.py), called
directly: /beam, opening a hypothesis in the viewer, snapshot loading with and without
snapshots, and the epoch trace cache."""

import json
import shutil

import gradio as gr
import pytest

import explorer.page as explorer_page
from explorer.panels import epochs as epoch_panel
from explorer.payload import decode_payload
from tests.helpers import make_snapshots, run_node
from transformer import load_translator
from explorer.panels.base import Asked

SENTENCE = "the black cat sleeps."


@pytest.fixture(scope="module")
def snap_checkpoint(tiny_checkpoint, tmp_path_factory):
    return make_snapshots(tiny_checkpoint, tmp_path_factory.mktemp("snap") / "tiny")


@pytest.fixture(scope="module")
def snap_app(snap_checkpoint):
    a = explorer_page.App(load_translator(snap_checkpoint))
    a.build()
    return a


def value(update):
    return update.value if isinstance(update, gr.components.Component) else update


def label(update):
    return update.label if isinstance(update, gr.components.Component) else None


def chosen(hyp):
    """The beam view's request to open hypothesis ``hyp``, as its callback sees it."""
    return Asked(None, {"hyp": hyp})


# --- /beam ---------------------------------------------------------------------------------------
def test_beam_api_returns_translation_and_documented_tree(app):
    best, tree = app.panel("beam").api_beam(SENTENCE, 3)
    assert tree["schema"] == "transformer-beam-tree/1" and tree["beam_size"] == 3
    assert best == tree["translation"] == tree["hypotheses"][0]["text"]
    ids = [n["id"] for n in tree["nodes"]]
    assert ids == list(range(len(ids)))
    assert {n["status"] for n in tree["nodes"]} <= {"kept", "pruned", "finished"}
    assert tree["best_path"][0] == 0 and tree["best_path"][-1] == tree["best"]
    json.dumps(tree)  # JSON-ready


@pytest.mark.parametrize("text, message", [("", "type"), ("   \n", "type"), ("x" * 100_000, "characters")])
def test_beam_bad_text_gets_a_clear_message(app, text, message):
    with pytest.raises(gr.Error, match=message):
        app.panel("beam").api_beam(text, 4)
    beam = app.panel("beam")
    out = beam.show_beam(text, 4)
    assert message in out[beam.beam_notice] and out[beam.beam_notice].startswith("⚠️")
    assert out[beam.host] == "" and out[beam.beam_state] is None  # old tree cleared


@pytest.mark.parametrize("k", [0, 9, 2.5, "four", None, True, float("nan")])
def test_beam_api_refuses_a_bad_beam_size(app, k):
    with pytest.raises(gr.Error, match="beam size must be a whole number from 1 to 8"):
        app.panel("beam").api_beam(SENTENCE, k)


@pytest.mark.parametrize("k, used", [(0, 1), (-3, 1), (99, 8), (2.6, 3), ("5", 5)])
def test_the_ui_clamps_the_beam_size(app, k, used):
    beam = app.panel("beam")
    out = beam.show_beam(SENTENCE, k)
    assert json.loads(out[beam.host])["beam_size"] == used
    assert out[beam.beam_state]["k"] == used


def test_markup_in_the_sentence_cannot_become_markup(app):
    beam = app.panel("beam")
    out = beam.show_beam("<img src=x onerror=alert(1)> the cat", 2)
    assert "<" not in out[beam.host]  # escaped as \u003c inside the JSON
    assert json.loads(out[beam.host])["src_text"] == "the cat"  # the tag was taken out before tokenising


def test_opening_a_hypothesis_traces_it_with_every_token_forced(app):
    panel = app.panel("beam")
    out = panel.show_beam(SENTENCE, 4)
    state, tree = out[panel.beam_state], json.loads(out[panel.host])
    last = len(state["hyps"]) - 1
    shown = panel.open_hypothesis(state, chosen(last))
    assert set(shown) <= {app.src_text, *app.outputs} and shown[app.src_text] == SENTENCE
    assert panel.beam_state not in shown  # one of the tree's own hypotheses: the tree stays
    raw = json.loads(shown[app.viewer])
    assert decode_payload(raw)["cross_attn"].shape[2] == len(raw["tgt_tokens"]) - 1
    assert raw["origin"] == "beam"
    assert raw["forced_prefix"] == tree["hypotheses"][last]["ids"]
    assert value(shown[app.translation]) == tree["hypotheses"][last]["text"]
    assert "beam hypothesis" in label(shown[app.translation]) and f"{last + 1} of {len(state['hyps'])}" in label(
        shown[app.translation]
    )
    assert shown[app.trace_state].forced_prefix == tree["hypotheses"][last]["ids"]


@pytest.mark.parametrize(
    "state, index",
    [(None, 0), ({"text": SENTENCE, "k": 2, "hyps": [[3]]}, 5), ({"text": SENTENCE, "k": 2, "hyps": [[3]]}, "x")],
)
def test_opening_without_a_beam_or_with_a_bad_index_says_so(app, state, index):
    out = app.panel("beam").open_hypothesis(state, chosen(index))
    assert list(out) == [app.notice] and out[app.notice].startswith("⚠️")


def test_beam_endpoints_are_named(translator):
    demo = explorer_page.build_ui(translator)
    public = {d.api_name: d for d in demo.fns.values() if d.api_visibility != "private"}
    assert public["beam"].fn.__name__ == "api_beam"
    html = [b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "beam-view"][0]
    assert html.props["view"] == "beam"


# --- snapshots ------------------------------------------------------------------------------------
def test_without_snapshots_there_is_no_epoch_control(app, translator):
    assert app.panel("epochs").snapshots == [] and app.panel("epochs").host is None
    demo = explorer_page.build_ui(translator)
    ids = {getattr(b, "elem_id", None) for b in demo.blocks.values()}
    assert "beam-view" in ids and "epoch-view" not in ids and "epoch-panel" not in ids


def test_snapshots_are_loaded_once_at_start_up_with_their_scores(snap_app):
    panel = snap_app.panel("epochs")
    assert [s.epoch for s in panel.snapshots] == [1, 2]
    meta = json.loads(panel.host.props["data"])
    assert meta["meta"] and [s["epoch"] for s in meta["snapshots"]] == [1, 2]
    assert meta["snapshots"][1]["scores"] == {"bleu": 2.0, "chrf": 20.0, "val_loss": 3.0}


def test_a_broken_snapshot_is_skipped_not_fatal(snap_checkpoint, tmp_path):
    d = shutil.copytree(snap_checkpoint, tmp_path / "ck")
    (d / "snapshots" / "epoch-002" / "model.safetensors").write_bytes(b"not safetensors")
    snaps = epoch_panel.load_snapshots(d)
    assert [s.epoch for s in snaps] == [1]


def test_epoch_traces_force_the_viewers_tokens_and_are_cached(snap_app, monkeypatch):
    panel = snap_app.panel("epochs")
    trace = snap_app.tr.trace(SENTENCE)
    calls = []
    for s in panel.snapshots:
        orig = s.tr.trace
        monkeypatch.setattr(s.tr, "trace", lambda *a, _o=orig, **k: calls.append(1) or _o(*a, **k))
    data = json.loads(panel.load_epochs(trace)[panel.host])
    assert data["schema"] == "attention-explorer-epochs/1" and "error" not in data
    assert [s["epoch"] for s in data["snapshots"]] == [1, 2]
    for s in data["snapshots"]:
        part = s["trace"]  # the attention part of the viewer's payload, read by the same decoder
        assert part["tgt_tokens"] == list(trace.tgt_tokens)  # same rows as the main viewer
        assert part["steps"] == trace.steps and part["src_tokens"] == list(trace.src_tokens)
        assert decode_payload(part)["cross_attn"].shape == trace.cross_attn.shape
        assert s["translation"] == panel.snapshots[s["epoch"] - 1].tr.translate([SENTENCE])[0]
        assert s["scores"]["bleu"] == float(s["epoch"])
    # the snapshots really differ from each other (else the comparison would show nothing)
    assert (
        data["snapshots"][0]["trace"]["attn"]["cross"]["data"] != data["snapshots"][1]["trace"]["attn"]["cross"]["data"]
    )
    assert data["key"] == [SENTENCE, list(trace.tgt_tokens)]
    assert data["final"]["translation"] == trace.translation
    assert len(calls) == 2
    again = json.loads(panel.load_epochs(trace)[panel.host])
    assert len(calls) == 2  # switching back costs no trace
    assert again["snapshots"] == data["snapshots"] and again["seq"] != data["seq"]
    other = snap_app.tr.trace("the dog eats.")
    panel.load_epochs(other)
    assert len(calls) == 4  # a new sentence is traced once per snapshot


def test_epochs_without_a_sentence_say_so(snap_app):
    panel = snap_app.panel("epochs")
    data = json.loads(panel.load_epochs(None)[panel.host])
    assert data["error"] == "Translate a sentence first."


def test_epoch_cache_is_bounded():
    cache = epoch_panel.EpochCache(size=2)
    for i in range(3):
        cache.get(i, lambda i=i: i * 10)
    assert list(cache.data) == [1, 2] and cache.get(1, lambda: -1) == 10 and cache.misses == 3


def test_a_fine_tuned_models_epoch_counts_on_from_the_model_it_started_from(tmp_path):
    """The snapshots of a fine-tune are those of the model it started from, so its final
    epoch reads as that model's epochs plus its own, on the server and in the browser."""
    assert epoch_panel.final_epoch({"epoch": 3, "epochs_before": 13}) == {"epoch": 3, "epochs_before": 13}
    assert epoch_panel.final_epoch({"epoch": 15}) == {"epoch": 15, "epochs_before": None}
    script = (
        'import { finalEpoch } from "./numbers.js";\n'
        "const cases = [{ epoch: 3, epochs_before: 13 }, { epoch: 15, epochs_before: null }, { epoch: null }];\n"
        "console.log(JSON.stringify(cases.map(finalEpoch)));\n"
    )
    assert run_node(tmp_path, ("numbers.js",), script) == ["epoch 13 + 3 of fine-tuning", "epoch 15", ""]
