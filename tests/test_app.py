"""The app's callbacks, called directly (no server): dict outputs, bad input, limits,
What-if, links, panels that follow the sentence, and the download files."""

import json
import os
import threading
import time
from pathlib import Path

import gradio as gr
import numpy as np
import pytest

import app as app_module

from explorer import page as explorer_page
from explorer import downloads
from explorer.payload import decode_payload
from transformer.core.wire import unpack_arrays
from tests.helpers import SHIPPED, load_script
from explorer.panels.base import Asked


def value(update):
    """The value of a component update (gr.Textbox(...)) or of a plain returned value."""
    return update.value if isinstance(update, gr.components.Component) else update


def file_path(update) -> str | None:
    v = update.value
    return v["path"] if isinstance(v, dict) else v


def payload(out, app):
    return json.loads(out[app.viewer])


def event(**data):
    """What a view's request looks like to its callback (an ``Asked`` made from the dict the view sends)."""
    return Asked(None, data)


def test_translate_returns_outputs_keyed_by_component(app):
    out = app.translate("the black cat sleeps.")
    assert isinstance(out, dict) and all(isinstance(k, gr.blocks.Block) for k in out)
    trace = out[app.trace_state]
    assert value(out[app.translation]) == trace.translation
    assert out[app.translation].label == explorer_page.GREEDY_LABEL
    p = payload(out, app)
    assert p["src_tokens"] == trace.src_tokens and p["steps"] == trace.steps and p["origin"] == "translate"
    np.testing.assert_allclose(decode_payload(p)["cross_attn"], trace.cross_attn, atol=1 / 255)
    assert file_path(out[app.download]) is None  # written after the views, by prepare_download
    ready = app.prepare_download(trace)[app.download]
    assert ready.interactive is True
    with open(file_path(ready), encoding="utf-8") as f:
        assert json.load(f)["src_tokens"] == trace.src_tokens
    assert file_path(app.prepare_download(None)[app.download]) is None
    assert set(out) == set(app.outputs)  # a new trace updates every panel's sentence state too


def test_the_opening_example_can_be_downloaded_from_the_first_screen(app):
    assert app.download.interactive is True
    with open(file_path(app.download), encoding="utf-8") as f:
        assert json.load(f)["src_text"] == app.opening.src_text


def test_a_new_sentence_opens_on_the_checkpoints_test_set_head(app, monkeypatch):
    """With the checkpoint's head_stats.json, the payload's focus is its test-set head (the
    viewer says "over N test sentences"); without it, the sentence's own."""
    cfg = app.tr.cfg
    entropy = [[0.9] * cfg.h for _ in range(cfg.n_decoder_layers)]
    entropy[-1][-1] = 0.1  # the last head of the last layer is the sharp one
    sink = [[0.1] * cfg.h for _ in range(cfg.n_decoder_layers)]
    monkeypatch.setattr(app, "test_stats", {"n_sentences": 7, "kinds": {"cross": {"entropy": entropy, "sink": sink}}})
    focus = payload(app.translate("the black cat sleeps."), app)["focus"]
    assert (focus["source"], focus["layer"], focus["head"], focus["n_sentences"]) == (
        "test",
        cfg.n_decoder_layers,
        cfg.h,
        7,
    )
    monkeypatch.setattr(app, "test_stats", None)
    assert payload(app.translate("the black cat sleeps."), app)["focus"]["source"] == "sentence"


def test_the_shipped_app_loads_its_test_set_head_diagnostics():
    from transformer import load_translator

    shipped = explorer_page.App(load_translator(SHIPPED))
    assert shipped.test_stats["n_sentences"] == 1000


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "Please type an English sentence"),
        ("   \n ", "Please type an English sentence"),
        (None, "Please type an English sentence"),
        ("x" * (explorer_page.MAX_CHARS + 1), f"{explorer_page.MAX_CHARS + 1:,} characters"),
        ("\x00\x01\x02", "only control characters"),
        ("<b></b>", "only markup"),
    ],
)
def test_bad_input_clears_the_previous_results(app, text, message):
    out = app.translate(text)
    assert message in out[app.notice] and "Traceback" not in out[app.notice]
    assert out[app.trace_state] is None and out[app.viewer] == "" and value(out[app.translation]) == ""
    assert file_path(out[app.download]) is None
    assert set(out) == set(app.outputs)  # every panel's sentence state is cleared as well


def test_long_text_is_cut_in_one_place_and_the_notice_says_what_was_dropped(app, translator):
    """A paste of thousands of characters reaches the model whole; only the token cap cuts it,
    and the notice counts the tokens of the whole text and quotes where the cut is."""
    n = translator.max_source_tokens
    assert app.max_chars > 5_000
    words = ["cat", "dog", "house", "car", "book", "letter", "station", "table", "coffee", "tea"]
    text = " ".join(f"the {a}, the {b} and the {c}." for a in words for b in words for c in words[:3])  # no repeats
    assert len(text) > 5_000
    out = app.translate(text)
    trace = out[app.trace_state]
    assert trace.truncated and len(trace.src_tokens) == n + 2 and trace.src_text == text
    total = len(translator.src_tok.encode(text, add_special_tokens=False).ids)
    assert total == n + trace.n_src_tokens_dropped  # counted on the whole text, not a cut copy
    assert f"at most {n} subword tokens and this text has {total}" in out[app.notice]
    assert f"{trace.n_src_tokens_dropped} tokens dropped" in out[app.notice]
    dropped = out[app.notice].split("from “")[1].split("” on")[0].rstrip("…")
    kept = translator.src_tok.decode(trace.src_ids[1:-1]).strip()  # what the model read
    assert text.startswith(kept) and text.index(dropped) >= len(kept)  # quotes the text right after the cut
    assert f"{n} subword tokens" in app.translate("a" * (app.max_chars + 1))[app.notice]


@pytest.mark.parametrize(
    "text, language",
    [
        ("Il gatto dorme sul divano.", "Italian"),
        ("Ho una macchina rossa.", "Italian"),
        ("La casa es grande y bonita.", "Spanish"),
    ],
)
def test_text_in_another_language_is_told_plainly_that_the_model_reads_english(app, text, language):
    out = app.translate(text)
    assert out[app.trace_state] is not None
    assert "reads English only" in out[app.notice] and language in out[app.notice]
    assert "English only" not in app.translate("the black cat sleeps.")[app.notice]


@pytest.mark.parametrize(
    "text, read",
    [
        ("the cat 😺", "the cat 😺"),
        ("שלום עולם", "שלום עולם"),
        ("a\u202eb\x07c", "a b c"),
        ("<b>the</b> cat", "the cat"),
        ("\x1b[31mthe cat\x1b[0m", "the cat"),
    ],
)
def test_emoji_and_rtl_reach_the_model_and_markup_and_control_characters_do_not(app, text, read):
    out = app.translate(text)
    assert out[app.trace_state] is not None
    assert "<" not in out[app.viewer]  # the payload carries no markup at all
    assert payload(out, app)["src_text"] == read
    assert ("Taken out before translating" in out[app.notice]) == (read != text)


def test_emoji_beside_english_words_are_said_unread_and_do_not_make_it_meaningless(app):
    out = app.translate("😺😺😺 the cat 😺")
    assert out[app.trace_state] is not None
    assert "meaningless" not in out[app.notice]
    assert "emoji" in out[app.notice] and "😺" in out[app.notice]


@pytest.mark.parametrize("text", ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>"])
def test_text_that_is_only_markup_is_refused_in_words(app, text):
    out = app.translate(text)
    assert out[app.trace_state] is None and "only markup" in out[app.notice]


def test_mostly_unknown_text_says_the_output_is_meaningless(app):
    out = app.translate("שלום עולם")
    assert "meaningless" in out[app.notice]
    assert "meaningless" not in app.translate("the black cat sleeps.")[app.notice]


def test_keyboard_mashing_is_translated_with_a_notice_that_the_output_is_meaningless(app):
    out = app.translate("lalala bababa")  # letters the tiny test tokenizer knows: no [UNK] notice first
    trace = out[app.trace_state]
    assert trace is not None and out[app.translation].value == trace.translation  # a notice, not a refusal
    assert "most words of this text are not English" in out[app.notice] and "meaningless" in out[app.notice]
    assert "meaningless" not in app.translate("the black cat sleeps.")[app.notice]


def test_two_users_translating_at_once_share_a_batch_and_each_get_their_own_result(app, monkeypatch):
    """Two visitors press Translate while the model is busy with a third: their sentences go
    through the model in one batch, and each page gets the picture of its own sentence, as it
    would alone."""
    translator = app.batcher.translator
    texts = ["the black cat sleeps.", "where is the station?"]
    alone = {text: translator.trace(text) for text in texts}
    busy, release = threading.Event(), threading.Event()
    real = translator.trace_batch

    def held_first(batch):  # the third visitor's batch holds the model until both have queued
        if not busy.is_set():
            busy.set()
            release.wait(30)
        return real(batch)

    monkeypatch.setattr(translator, "trace_batch", held_first)
    sizes_before = len(app.batcher.batch_sizes)
    third = threading.Thread(target=app.translate, args=("a red cat.",))
    third.start()
    assert busy.wait(30)
    got: dict = {}
    users = [threading.Thread(target=lambda t=t: got.__setitem__(t, app.translate(t))) for t in texts]
    for user in users:
        user.start()
    while app.batcher._queue.qsize() < 2:
        time.sleep(0.01)
    release.set()
    for th in [third, *users]:
        th.join(timeout=60)
    assert list(app.batcher.batch_sizes)[sizes_before:] == [1, 2]  # the two shared one batch
    for text in texts:
        trace, shown = got[text][app.trace_state], payload(got[text], app)
        assert trace.src_text == shown["src_text"] == text and value(got[text][app.translation]) == trace.translation
        assert trace.translation == alone[text].translation
        np.testing.assert_allclose(trace.cross_attn, alone[text].cross_attn, atol=1e-5)


def test_whatif_forces_a_candidate_at_a_one_based_step(app):
    whatif = app.panel("whatif")
    trace = app.translate("the black cat sleeps.")[app.trace_state]
    out = whatif.decode(trace, event(step=2, rank=1, sentenceId=7))
    alt, told = out[whatif.alt_state], json.loads(out[whatif.host])
    assert alt.tgt_ids[2] == int(trace.topk_ids[1][1])  # step 2 emits tgt_ids[2]
    assert told["sentenceId"] == 7 and told["step"] == 2 and told["original"] == trace.translation
    assert told["translation"] == alt.translation and "<" not in out[whatif.host]
    shown = whatif.explore(alt)
    assert shown[app.trace_state] is alt and "step 2 forced to" in shown[app.translation].label
    assert payload(shown, app)["origin"] == "whatif" and payload(shown, app)["forced_prefix"] == alt.forced_prefix
    assert shown[whatif.alt_state] is None  # explored: the next What-if starts afresh
    assert whatif.decode(trace, event(step=999, rank=999))[whatif.alt_state] is not None  # clamped, not a crash
    assert "Translate a sentence first" in json.loads(whatif.decode(None, event(step=1, rank=1))[whatif.host])["error"]
    bad = whatif.decode(trace, event(step="x", rank=1))
    assert bad[whatif.alt_state] is None and json.loads(bad[whatif.host])["error"]
    assert "What-if" in whatif.explore(None)[app.notice]


def test_api_translate_returns_translation_and_trace(app):
    translation, trace = app.api_translate("the black cat sleeps.")
    assert translation == trace["translation"] and trace["schema"] == "transformer-trace/1"
    assert trace["cross_attn"]["enc"] == "f32"  # the library's exact codec (transformer/core/wire.py)
    cross = unpack_arrays(trace)["cross_attn"]  # float32, (L, H, T, S)
    assert cross.shape == (trace["layers"], trace["heads"], len(trace["tgt_tokens"]) - 1, len(trace["src_tokens"]))
    with pytest.raises(gr.Error, match="Please type"):
        app.api_translate("")


def test_links_reopen_the_sentence_and_its_forced_version(app):
    out = app.open_link(event(text="the black cat sleeps."))
    assert out[app.src_text] == "the black cat sleeps." and out[app.trace_state] is not None
    assert payload(out, app)["origin"] == "translate"
    greedy = out[app.trace_state]
    forced = [int(greedy.topk_ids[0][1])]  # a What-if version: the second candidate at step 1
    out = app.open_link(event(text="the black cat sleeps.", forced=forced, origin="whatif"))
    assert out[app.trace_state].forced_prefix == forced and payload(out, app)["origin"] == "whatif"
    assert "step 1 forced to" in out[app.translation].label
    beam = app.open_link(event(text="the black cat sleeps.", forced=greedy.tgt_ids[1:], origin="beam"))
    assert payload(beam, app)["origin"] == "beam" and "beam hypothesis" in beam[app.translation].label
    # tokens this model cannot have: the greedy version, and a notice that says so
    out = app.open_link(event(text="the black cat sleeps.", forced=[10**9], origin="whatif"))
    assert out[app.trace_state].forced_prefix == [] and "greedy translation is shown" in out[app.notice]
    for bad in ([], ["x"], "3.4", None):  # malformed forced tokens never break the page
        out = app.open_link(event(text="the black cat sleeps.", forced=bad, origin="whatif"))
        assert out[app.trace_state] is not None or out[app.notice].startswith("⚠️")
    nothing = app.open_link(event(text=""))
    assert nothing[app.trace_state] is None and "Please type" in nothing[app.notice]


def test_panels_follow_the_sentence(app):
    """A new sentence (or an error) clears every panel's server state; opening one of the
    beam tree's own hypotheses keeps the tree."""
    beam, whatif = app.panel("beam"), app.panel("whatif")
    tree_out = beam.show_beam("the black cat sleeps.", 2)
    assert tree_out[beam.beam_state]["hyps"]
    for out in (app.translate("where is the station?"), app.translate("   ")):
        assert out[beam.beam_state] is None and out[beam.beam_translation] == "" and out[whatif.alt_state] is None
    opened = beam.open_index(tree_out[beam.beam_state], 0)
    assert beam.beam_state not in opened and opened[app.src_text] == "the black cat sleeps."


def test_an_example_click_translates_it_in_one_request(app):
    """web/hint.js asks with the example's sentence; the answer is a whole new trace."""
    out = app.run_example(event(text="the black cat sleeps."))
    assert out[app.trace_state].src_text == "the black cat sleeps." and payload(out, app)["origin"] == "translate"
    assert app.run_example(event(text=None))[app.trace_state] is None  # nothing to translate: refused, cleared


def test_every_panel_starts_closed_in_its_own_section(translator):
    """One screen to start: each panel's gr.Accordion is closed and named (a link opens it by id)."""
    demo = explorer_page.build_ui(translator)
    sections = [b for b in demo.blocks.values() if isinstance(b, gr.Accordion)]
    assert len(sections) >= 4 and all(s.open is False and s.elem_id for s in sections)  # (no epochs without snapshots)
    assert {"viewer", "hint", "tour"} <= {b.props.get("view") for b in demo.blocks.values() if isinstance(b, gr.HTML)}


def test_trace_files_are_content_addressed_and_only_pruned_at_startup(app, tmp_path):
    trace = app.translate("the black cat sleeps.")[app.trace_state]
    first = downloads.write_trace_file(trace, tmp_path)
    assert downloads.write_trace_file(trace, tmp_path) == first  # same content, same file
    saved = json.loads(Path(first).read_text(encoding="utf-8"))  # its heads named as the viewer names them
    assert saved["head_stats"]["kinds"]["cross"]["habit"] and saved["head_stats"]["habit_rule"]
    other = downloads.write_trace_file(app.translate("where is the station?")[app.trace_state], tmp_path)
    assert other != first
    old = time.time() - 2 * downloads.TRACE_MAX_AGE_S
    os.utime(first, (old, old))
    assert downloads.prune_trace_files(directory=tmp_path) == 1
    assert not os.path.exists(first) and os.path.exists(other)
    assert not list(tmp_path.glob("*.part"))


def test_ui_builds_with_named_endpoints_and_one_bootstrap(translator):
    demo = explorer_page.build_ui(translator)
    public = {d.api_name: d for d in demo.fns.values() if d.api_visibility != "private"}
    assert {"translate", "knockout", "head_importance", "beam"} <= set(public)
    assert public["translate"].fn.__name__ == "api_translate"
    assert not [d for d in demo.fns.values() if d.js]  # no js= snippets on any event
    hosts = {b.elem_id: b for b in demo.blocks.values() if isinstance(b, gr.HTML) and b.props.get("view")}
    assert {"viewer", "hint", "whatif", "analysis", "beam-view"} <= set(hosts)
    for host in hosts.values():  # every view mounts through the same bootstrap and module
        assert host.js_on_load == hosts["viewer"].js_on_load
        assert host.props["module_url"].startswith("gradio_api/file=") and host.props["module_url"].endswith(
            "gradio.js"
        )


def test_cli_flags_and_env(monkeypatch):
    monkeypatch.setenv("GRADIO_SERVER_PORT", "7999")
    monkeypatch.setenv("CHECKPOINT", "some/where")
    args = app_module.parse_args([])
    assert args.port == 7999 and args.checkpoint == ["some/where"] and args.concurrency >= 1
    monkeypatch.setenv("CHECKPOINT", "a, b/c")  # several models, as a Space's variable gives them
    assert app_module.parse_args([]).checkpoint == ["a", "b/c"]
    args = app_module.parse_args(["--port", "8001", "--host", "0.0.0.0", "--checkpoint", "x", "--concurrency", "3"])
    assert (args.port, args.host, args.checkpoint, args.concurrency) == (8001, "0.0.0.0", ["x"], 3)
    assert app_module.parse_args(["--checkpoint", "x", "--checkpoint", "y"]).checkpoint == ["x", "y"]
    for bad in (
        ["--checkpoint", "/no/such/checkpoint"],
        ["--checkpoint", str(SHIPPED), "--checkpoint", "/no/such"],
        ["--concurrency", "0"],
        ["--max-batch", "0"],
    ):
        with pytest.raises(SystemExit) as exit_:
            app_module.main(bad)
        assert exit_.value.code == 2


def test_the_page_preloads_every_browser_module_from_the_url_the_views_import():
    """The head lists gradio.js and every module it imports, at the address the bootstrap
    imports gradio.js from (its imports resolve beside it), so the browser fetches them at once."""
    import re
    from urllib.parse import unquote

    from explorer.assets import WEB, module_sources
    from explorer.blocks import MODULE_URL, module_preloads

    hrefs = re.findall(r'<link rel="modulepreload" href="([^"]+)">', module_preloads())
    assert MODULE_URL in hrefs and len(hrefs) == len(module_sources("gradio.js")) > 20
    base = MODULE_URL.rsplit("/", 1)[0] + "/"
    assert all(h.startswith(base) for h in hrefs)
    assert {unquote(h[len(base) :]) for h in hrefs} == set(module_sources("gradio.js"))
    assert all((WEB / unquote(h[len(base) :])).is_file() for h in hrefs)


def test_the_page_head_carries_its_icon_inline():
    """The icon travels in the head as a data: URL, so the browser never asks for /favicon.ico."""
    import re
    from urllib.parse import unquote

    from explorer.blocks import page_head

    icons = re.findall(r'<link rel="icon" type="image/svg\+xml" href="([^"]+)">', page_head())
    assert len(icons) == 1 and icons[0].startswith("data:image/svg+xml,")
    assert unquote(icons[0].split(",", 1)[1]).startswith("<svg ") and '"' not in icons[0]


def test_two_models_get_one_page_each_with_their_own_endpoints(translator, tmp_path):
    """``build_ui([A, B])``: B's page at "/<its folder's name>", its endpoints suffixed with that
    key, its own batcher; the first model keeps the plain names a single-model app has."""
    from explorer.models import Model

    models = Model.all_of([translator, translator, translator])
    assert [m.key for m in models] == ["", "tiny", "tiny_2"] and [m.path for m in models] == ["/", "/tiny", "/tiny-2"]
    demo = explorer_page.build_ui([translator, translator])
    names = {d.api_name for d in demo.fns.values()}
    for name in ("translate", "knockout", "beam", "attribution", "contributions", "decoder_lens", "score_reference"):
        assert name in names and f"{name}_tiny" in names
    assert [path for path, *_ in demo.pages] == ["", "tiny"]


def test_the_server_timing_benchmark_runs_against_the_app(tiny_checkpoint, capsys):
    """benchmarks/app_timing.py drives the app's own callbacks, so it must follow them: it
    times every part on a tiny checkpoint and ends with its one JSON line."""
    app_timing = load_script("benchmarks/app_timing.py")
    args = ["--checkpoint", str(tiny_checkpoint), "--repeat", "1", "--long-tokens", "8", "--skip-startup"]
    assert app_timing.main(args) == 0
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert figures["short"]["trace_ms"] > 0 and figures["short"]["payload_kb"] > 0
    assert figures["long_8_tokens"]["translate_ms"] > 0


def test_the_model_budget_benchmark_compares_two_checkpoints(tiny_checkpoint, tmp_path, capsys):
    """benchmarks/model_budget.py times both checkpoints and sizes their folders; a folder
    without weights is one line before any model loads."""
    budget = load_script("benchmarks/model_budget.py")
    assert budget.main(["--old", str(tiny_checkpoint), "--new", str(tiny_checkpoint), "--rounds", "1"]) == 0
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    for side in ("old", "new"):
        assert figures[side]["trace_ms"] > 0 and figures[side]["payload_kb"] > 0
        assert figures[side]["weights_mb"] == round((tiny_checkpoint / "model.safetensors").stat().st_size / 1e6, 1)
    assert budget.main(["--old", str(tmp_path), "--new", str(tiny_checkpoint)]) == 2
    assert capsys.readouterr().err == f"error: --old {tmp_path}: no model.safetensors there\n"
