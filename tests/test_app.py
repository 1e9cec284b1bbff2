"""The app's callbacks, called directly (no server): bad input, stepping, what-if, users."""

import json

import numpy as np
import gradio as gr
import pytest

import app as app_module
from transformer import viewer


@pytest.fixture(scope="module")
def app(translator):
    return app_module.App(translator)


VIEW = (viewer.CROSS, 0, "mean", False)


def test_translate_renders_everything(app):
    out = app.translate("the black cat sleeps.", *VIEW)
    assert len(out) == app_module.N_TRACE_OUTPUTS
    trace, translation, notice = out[:3]
    assert translation == trace.translation and "too long" not in notice
    src_chips = out[3]
    assert src_chips[0] == ("[SOS]", "special") and src_chips[-1] == ("[EOS]", "special")
    with open(out[7], encoding="utf-8") as f:
        assert json.load(f)["src_tokens"] == trace.src_tokens
    attn = out[12]
    assert np.array(attn.data[0].z, dtype=float).shape == trace.cross_attn.shape[2:]


@pytest.mark.parametrize("text, message", [
    ("", "Please type an English sentence"),
    ("   \n ", "Please type an English sentence"),
    (None, "Please type an English sentence"),
    ("x" * 10_000, "10,000 characters"),
    ("\x00\x01\x02", "empty sentence"),
])
def test_bad_input_gets_a_message_and_keeps_what_the_user_had(app, text, message):
    out = app.translate(text, *VIEW)
    assert len(out) == app_module.N_TRACE_OUTPUTS
    assert message in out[2] and "Traceback" not in out[2]
    assert all(o is not None and not isinstance(o, (str, list)) for i, o in enumerate(out) if i != 2)  # skips


def test_long_text_is_truncated_with_a_notice(app, translator):
    out = app.translate("the black cat sleeps. " * 30, *VIEW)
    assert out[0].truncated and "too long" in out[2]


@pytest.mark.parametrize("text", ["<script>alert(1)</script>", "the cat 😺", "שלום עולם", "a\u202eb\x07c"])
def test_markup_emoji_rtl_and_control_characters_are_inert(app, text):
    out = app.translate(text, *VIEW)
    assert out[0] is not None
    attn = out[12]
    assert "<script" not in json.dumps(attn.to_plotly_json()["layout"])


def test_stepping_slices_the_trace_without_running_the_model(app, monkeypatch):
    trace = app.translate("the black cat sleeps.", *VIEW)[0]

    def boom(*a, **k):
        raise AssertionError("the model ran while stepping")

    monkeypatch.setattr(app.tr, "trace", boom)
    t, prefix, text, topk, attn, grid, cand = app.step(trace, 2, *VIEW)
    assert t == 2 and prefix[-1] == (trace.tgt_tokens[3], "current") and len(prefix) == 4
    assert "Step 3 of" in text
    z = np.array(attn.data[0].z, dtype=float)
    np.testing.assert_allclose(z[2], np.round(trace.cross_attn[0].mean(0)[2], 4), atol=1e-6)
    assert app.move(trace, 0, -1, *VIEW)[0] == 0  # clamped at the start
    assert app.move(trace, trace.steps - 1, +1, *VIEW)[0] == trace.steps - 1  # and at the end
    assert app.step(None, 0, *VIEW)[0] is not None  # nothing translated yet: no crash


def test_two_users_never_see_each_others_results(app):
    a = app.translate("the black cat sleeps.", *VIEW)[0]
    b = app.translate("where is the station?", *VIEW)[0]
    t_a = app.step(a, 1, *VIEW)
    assert t_a[1][0][0] == a.tgt_tokens[0]
    assert "query" in t_a[4].data[0].hovertemplate
    assert list(t_a[4].layout.xaxis.ticktext) == [f"{i}: {t}" for i, t in enumerate(a.src_tokens)]
    assert a.src_text != b.src_text and a.src_tokens != b.src_tokens


def test_whatif_forces_a_candidate(app):
    trace = app.translate("the black cat sleeps.", *VIEW)[0]
    alt, md = app.whatif(trace, 1, 1)
    assert alt.tgt_ids[2] == int(trace.topk_ids[1][1])
    assert "Original" in md and "If step 2 had emitted" in md
    out = app.open_whatif(alt, *VIEW)
    assert out[0] is alt
    assert app.whatif(None, 0, 1)[0] is None


def test_play_timer_stops_at_the_end(app):
    trace = app.translate("the black cat sleeps.", *VIEW)[0]
    playing, timer, label = app.toggle_play(trace, False)
    assert playing and "Pause" in label
    out = app.tick(trace, trace.steps - 1, *VIEW)
    assert "Play" in out[1] and out[2] is False  # stopped at the end, play state reset
    out = app.tick(trace, 0, *VIEW)
    assert out[3] == 1


def test_api_translate_returns_translation_and_trace(app):
    translation, trace = app.api_translate("the black cat sleeps.")
    assert translation == trace["translation"] and trace["schema"] == "transformer-trace/1"
    with pytest.raises(gr.Error, match="Please type"):
        app.api_translate("")


def test_positional_encoding_callback(app):
    trace = app.translate("the black cat sleeps.", *VIEW)[0]
    heat_fig, sim, curves, md = app.pe(trace, 500, 99)  # clamped to the buffer and the length
    assert np.array(heat_fig.data[0].z).shape[0] == trace.positional_encoding.shape[0]
    assert "past the end" in md


def test_ui_builds_with_named_endpoints(translator):
    demo = app_module.build_ui(translator)
    names = {d.api_name for d in demo.fns.values() if getattr(d, "api_name", None)}
    assert {"translate", "show", "step", "whatif"} <= names


def test_cli_flags_and_env(monkeypatch):
    monkeypatch.setenv("GRADIO_SERVER_PORT", "7999")
    monkeypatch.setenv("CHECKPOINT", "some/where")
    args = app_module.parse_args([])
    assert args.port == 7999 and args.checkpoint == "some/where"
    args = app_module.parse_args(["--port", "8001", "--host", "0.0.0.0", "--checkpoint", "x"])
    assert (args.port, args.host, args.checkpoint) == (8001, "0.0.0.0", "x")
    assert app_module.main(["--checkpoint", "/no/such/checkpoint"]) == 2
