"""The app's callbacks, called directly (no server): dict outputs, bad input, limits,
What-if, links and the download files."""

import json
import os
import time

import gradio as gr
import numpy as np
import pytest

import app as app_module
from transformer.payload import decode_payload


def value(update):
    """The value of a component update (gr.Textbox(...)) or of a plain returned value."""
    return update.value if isinstance(update, gr.components.Component) else update


def file_path(update) -> str | None:
    v = update.value
    return v["path"] if isinstance(v, dict) else v


def payload(out, app):
    return json.loads(out[app.viewer])


def test_translate_returns_outputs_keyed_by_component(app):
    out = app.translate("the black cat sleeps.")
    assert isinstance(out, dict) and all(isinstance(k, gr.blocks.Block) for k in out)
    trace = out[app.trace_state]
    assert value(out[app.translation]) == trace.translation
    assert out[app.translation].label == app_module.GREEDY_LABEL
    p = payload(out, app)
    assert p["src_tokens"] == trace.src_tokens and p["steps"] == trace.steps and p["origin"] == "translate"
    np.testing.assert_allclose(decode_payload(p)["cross_attn"], trace.cross_attn, atol=1 / 255)
    assert file_path(out[app.download]) is None  # written after the views, by prepare_download
    ready = app.prepare_download(trace)[app.download]
    assert ready.interactive is True
    with open(file_path(ready), encoding="utf-8") as f:
        assert json.load(f)["src_tokens"] == trace.src_tokens
    assert file_path(app.prepare_download(None)[app.download]) is None
    assert out[app.whatif_btn].interactive is True and out[app.open_btn].interactive is False


@pytest.mark.parametrize("text, message", [
    ("", "Please type an English sentence"),
    ("   \n ", "Please type an English sentence"),
    (None, "Please type an English sentence"),
    ("x" * 10_000, "10,000 characters"),
    ("\x00\x01\x02", "empty sentence"),
])
def test_bad_input_clears_the_previous_results(app, text, message):
    out = app.translate(text)
    assert message in out[app.notice] and "Traceback" not in out[app.notice]
    assert out[app.trace_state] is None and out[app.viewer] == "" and value(out[app.translation]) == ""
    assert file_path(out[app.download]) is None and out[app.whatif_btn].interactive is False


def test_character_limit_agrees_with_the_token_cap(app, translator):
    n = translator.max_source_tokens
    assert app.max_chars == app_module.CHARS_PER_TOKEN * n
    assert f"{n} subword tokens" in app.translate("a" * (app.max_chars + 1))[app.notice]
    # just under the limit is accepted and cut to the cap, reported in tokens
    out = app.translate(("the cat " * app.max_chars)[: app.max_chars])
    trace = out[app.trace_state]
    assert trace.truncated and len(trace.src_tokens) == n + 2
    total = n + trace.n_src_tokens_dropped
    assert f"at most {n} subword tokens and this text has {total}" in out[app.notice]
    assert f"{trace.n_src_tokens_dropped} tokens dropped" in out[app.notice]


@pytest.mark.parametrize("text", ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "the cat 😺",
                                  "שלום עולם", "a\u202eb\x07c"])
def test_markup_emoji_rtl_and_control_characters_are_inert(app, text):
    out = app.translate(text)
    assert out[app.trace_state] is not None
    assert "<" not in out[app.viewer]  # the payload carries no markup at all
    assert payload(out, app)["src_text"] == text


def test_mostly_unknown_text_says_the_output_is_meaningless(app):
    out = app.translate("שלום עולם")
    assert "meaningless" in out[app.notice]
    assert "meaningless" not in app.translate("the black cat sleeps.")[app.notice]


def test_two_users_never_see_each_others_results(app):
    a = app.translate("the black cat sleeps.")
    b = app.translate("where is the station?")
    assert payload(a, app)["src_text"] != payload(b, app)["src_text"]
    assert a[app.trace_state] is not b[app.trace_state]


def test_whatif_forces_a_candidate_at_a_one_based_step(app):
    trace = app.translate("the black cat sleeps.")[app.trace_state]
    out = app.whatif(trace, 2, 1)
    alt = out[app.alt_state]
    assert alt.tgt_ids[2] == int(trace.topk_ids[1][1])  # step 2 emits tgt_ids[2]
    assert "Original" in out[app.whatif_md] and "Step 2 forced to" in out[app.whatif_md]
    assert out[app.open_btn].interactive is True
    shown = app.open_whatif(alt)
    assert shown[app.trace_state] is alt and "step 2 forced to" in shown[app.translation].label
    assert payload(shown, app)["origin"] == "whatif" and payload(shown, app)["forced_prefix"] == alt.forced_prefix
    assert app.whatif(trace, 999, 999)[app.alt_state] is not None  # clamped, not a crash
    assert app.whatif(None, 1, 1)[app.alt_state] is None
    assert app.whatif(trace, "x", 1)[app.alt_state] is None
    assert "What-if" in app.open_whatif(None)[app.notice]


def test_api_translate_returns_translation_and_trace(app):
    translation, trace = app.api_translate("the black cat sleeps.")
    assert translation == trace["translation"] and trace["schema"] == "transformer-trace/1"
    from transformer.trace import unpack_arrays

    cross = unpack_arrays(trace["cross_attn"])  # packed float32, (L, H, T, S)
    assert cross.shape == (trace["layers"], trace["heads"], len(trace["tgt_tokens"]) - 1, len(trace["src_tokens"]))
    with pytest.raises(gr.Error, match="Please type"):
        app.api_translate("")


def test_links_translate_on_load(app):
    out = app.from_url("the black cat sleeps.", None)
    assert out[app.src_text] == "the black cat sleeps." and out[app.trace_state] is not None
    nothing = app.from_url("", None)
    assert app.trace_state not in nothing and all(isinstance(v, type(gr.skip())) for v in nothing.values())


def test_trace_files_are_content_addressed_and_only_pruned_at_startup(app, tmp_path, monkeypatch):
    monkeypatch.setattr(app_module, "TRACE_DIR", tmp_path)
    trace = app.translate("the black cat sleeps.")[app.trace_state]
    first = app_module.write_trace_file(trace)
    assert app_module.write_trace_file(trace) == first  # same content, same file
    other = app_module.write_trace_file(app.translate("where is the station?")[app.trace_state])
    assert other != first
    old = time.time() - 2 * app_module.TRACE_MAX_AGE_S
    os.utime(first, (old, old))
    assert app_module.prune_trace_files() == 1
    assert not os.path.exists(first) and os.path.exists(other)
    assert not list(tmp_path.glob("*.part"))


def test_ui_builds_with_named_endpoints(translator):
    demo = app_module.build_ui(translator)
    public = {d.api_name: d for d in demo.fns.values() if d.api_visibility != "private"}
    assert {"translate", "whatif"} <= set(public)
    assert public["translate"].fn.__name__ == "api_translate"
    html = [b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "viewer"][0]
    assert html.props["module_url"].startswith("gradio_api/file=") and html.props["module_url"].endswith("viewer.js")


def test_cli_flags_and_env(monkeypatch):
    monkeypatch.setenv("GRADIO_SERVER_PORT", "7999")
    monkeypatch.setenv("CHECKPOINT", "some/where")
    args = app_module.parse_args([])
    assert args.port == 7999 and args.checkpoint == "some/where" and args.concurrency >= 1
    args = app_module.parse_args(["--port", "8001", "--host", "0.0.0.0", "--checkpoint", "x", "--concurrency", "3"])
    assert (args.port, args.host, args.checkpoint, args.concurrency) == (8001, "0.0.0.0", "x", 3)
    for bad in (["--checkpoint", "/no/such/checkpoint"], ["--concurrency", "0"], ["--max-batch", "0"]):
        with pytest.raises(SystemExit) as exit_:
            app_module.main(bad)
        assert exit_.value.code == 2
