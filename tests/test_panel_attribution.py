"""The "Why this word?" panel (explorer/panels/attribution.py), called directly on the tiny
checkpoint: its named endpoints return the library's dicts for the 1-based step of the page,
page requests run on the translation the viewer shows (forced tokens included), and bad
input is refused with one clear message (``gr.Error`` for the API, ``{"error"}`` for the page)."""

import json
import logging

import gradio as gr
import numpy as np
import pytest

import explorer.page as explorer_page
from explorer.errors import GENERIC_ERROR
from explorer.panels import PANELS
from explorer.panels.attribution import MAX_N_STEPS, AttributionPanel
from transformer.interpret.attribution import activation_patching, direct_logit_attribution, greedy_targets
from transformer.interpret.saliency import saliency
from explorer.panels.base import Asked

TEXT = "the black cat sleeps."
# candidates for B: the test takes the first whose greedy translation differs from TEXT's at some step
OTHERS = ["the white dog eats.", "we see a house.", "i like coffee.", "where is the station?"]


@pytest.fixture(scope="module")
def panel(app):
    return app.panel("attribution")


@pytest.fixture(scope="module")
def greedy(translator):
    return greedy_targets(translator, [TEXT])[0]


@pytest.fixture(scope="module")
def pair(translator):
    """(B, 1-based step) where the greedy translations of TEXT and B emit different tokens."""
    for other in OTHERS:
        a, b = greedy_targets(translator, [TEXT, other])
        diff = [t for t in range(min(len(a), len(b))) if a[t] != b[t]]
        if diff:
            return other, diff[0] + 1
    pytest.fail("no sentence of OTHERS translates differently from TEXT on the tiny model")


def request(**data):
    return Asked(None, data)


def ask(panel, trace, **data) -> dict:
    return json.loads(panel.request(trace, request(**data)))


# --- registration ---------------------------------------------------------------------------------


def test_the_panel_is_a_closed_section_with_three_public_endpoints(translator, panel):
    assert AttributionPanel in PANELS and isinstance(panel, AttributionPanel)
    assert panel.section.open is False  # nothing is computed until a visitor opens it and asks
    demo = explorer_page.build_ui(translator)
    public = {d.api_name: d for d in demo.fns.values() if d.api_visibility != "private"}
    for name, n_inputs in (("attribution", 3), ("patching", 3), ("saliency", 3)):
        assert public[name].fn.__name__ == name and len(public[name].inputs) == n_inputs
        assert len(public[name].outputs) == 1
    asked = [f for f in demo.fns.values() if getattr(f.fn, "__func__", None) is AttributionPanel.request]
    assert len(asked) == 1 and asked[0].trigger_mode == "multiple"  # DLA asked during saliency is queued
    assert "attribution" in {getattr(b, "elem_id", None) for b in demo.blocks.values()}


# --- the API --------------------------------------------------------------------------------------


def test_attribution_is_the_librarys_for_the_1_based_step(panel, translator, greedy):
    for step in (1, len(greedy)):
        got = panel.attribution(TEXT, step)
        want = direct_logit_attribution(translator, TEXT, step - 1).to_dict()
        assert got == {"text": TEXT, **want}
        assert got["step"] == step - 1 and got["token_id"] == greedy[step - 1]
        assert abs(got["total"] - got["value"]) < 1e-3
    json.dumps(got)


def test_attribution_against_the_runner_up_or_a_candidate(panel, translator, greedy):
    runner = panel.attribution(TEXT, 1, "runner-up")
    assert runner["versus_id"] is not None and runner["versus_id"] != greedy[0]
    assert runner == {"text": TEXT, **direct_logit_attribution(translator, TEXT, 0, versus="runner-up").to_dict()}
    other = runner["versus"]  # the candidate by its text, as the page names it
    got = panel.attribution(TEXT, 1, other)
    assert got["versus_id"] == runner["versus_id"] and got["value"] == runner["value"]


def test_patching_is_the_librarys_for_the_1_based_step(panel, translator, pair):
    other, step = pair
    got = panel.patching(TEXT, other, step)
    want = activation_patching(translator, TEXT, other, step - 1).to_dict()
    assert got == want and got["step"] == step - 1 and got["metric"] == "difference"
    assert abs(got["fraction"]["all"] - 1.0) < 1e-3  # every component patched gives B's difference
    json.dumps(got)


def test_patching_where_a_and_b_write_the_same_word_is_against_the_runner_up(panel, translator, greedy):
    """No refusal where both translations emit the same token: the answer says the maps are
    about A's lead of that token over its runner-up (here B = A, so nothing moves it)."""
    got = panel.patching(TEXT, TEXT, 1)
    assert got == activation_patching(translator, TEXT, TEXT, 0).to_dict()
    word = translator.tgt_tok.id_to_token(greedy[0])
    assert (got["metric"], got["token_a"], got["runner_up"]) == ("runner-up", word, got["token_b"])
    assert got["runner_up_id"] != greedy[0] and got["reference"] == 0.0
    assert got["summary"].startswith(
        f"A and B both write “{word}” at step 1: the maps show how much each head's and FFN's output from B moves "
    )
    assert "runner-up" in got["summary"] or "top token" in got["summary"]
    assert np.abs(np.array(got["fraction"]["cross"])).max() < 1e-3 and abs(got["fraction"]["all"]) < 1e-3
    trace = translator.trace(TEXT)
    page = ask(panel, trace, action="patching", sentenceId=3, key="p", step=1, textB=TEXT)
    assert "error" not in page and page["metric"] == "runner-up" and page["summary"] == got["summary"]


def test_saliency_is_the_librarys_for_the_1_based_step(panel, translator):
    got = panel.saliency(TEXT, 2, 8)
    want = saliency(translator, TEXT, 1, n_steps=8).to_dict()
    assert got["text"] == TEXT and got["n_steps"] == 8 and got["step"] == 1
    np.testing.assert_allclose(got["src"]["integrated_gradients"], want["src"]["integrated_gradients"], atol=1e-4)
    np.testing.assert_allclose(got["src"]["attention"], want["src"]["attention"], atol=1e-5)
    assert got["src"]["tokens"] == want["src"]["tokens"]
    json.dumps(got)


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda p: p.attribution("", 1), "Please type an English sentence"),
        (lambda p: p.attribution(None, 1), "Please type an English sentence"),
        (lambda p: p.attribution(TEXT, 0), "There is no step 0 here"),
        (lambda p: p.attribution(TEXT, 999), "There is no step 999 here"),
        (lambda p: p.attribution(TEXT, "two"), "The step must be a number"),
        (lambda p: p.attribution(TEXT, 1, "no-such-token-xyz"), "versus must be '', 'runner-up' or a candidate token"),
        (lambda p: p.attribution(TEXT, 1, 5), "versus must be"),
        (lambda p: p.patching(TEXT, "", 1), "Type a second sentence (B)"),
        (lambda p: p.patching(TEXT, TEXT, 999), "There is no step 999 here"),
        (lambda p: p.saliency(TEXT, 1, 0), f"n_steps must be a whole number from 1 to {MAX_N_STEPS}, got 0"),
        (lambda p: p.saliency(TEXT, 1, MAX_N_STEPS + 1), "n_steps must be a whole number"),
        (lambda p: p.saliency(TEXT, 1, 2.5), "n_steps must be a whole number"),
        (lambda p: p.saliency("", 1), "Please type an English sentence"),
    ],
)
def test_bad_input_is_a_gr_error_with_one_log_line(panel, call, words, caplog):
    caplog.set_level(logging.INFO, logger="app")
    with pytest.raises(gr.Error) as exc:
        call(panel)
    assert words in exc.value.message
    assert exc.value.print_exception is False  # the log gets one line, not Gradio's traceback
    lines = [r for r in caplog.records if r.name == "app.attribution"]
    assert len(lines) == 1 and "refused" in lines[0].getMessage() and not lines[0].exc_info


def test_versus_the_emitted_token_itself_is_refused(panel, translator, greedy):
    token = translator.tgt_tok.id_to_token(greedy[0])
    with pytest.raises(gr.Error, match="is the token step 1 emits"):
        panel.attribution(TEXT, 1, token)


def test_a_bug_is_the_generic_message_and_a_logged_trace(panel, monkeypatch, caplog):
    import explorer.panels.attribution as module

    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(module, "saliency", boom)
    caplog.set_level(logging.INFO, logger="app")
    with pytest.raises(gr.Error) as exc:
        panel.saliency(TEXT, 1)
    assert exc.value.message == GENERIC_ERROR
    failed = [r for r in caplog.records if r.getMessage() == "/saliency failed"]
    assert len(failed) == 1 and failed[0].exc_info


# --- the page -------------------------------------------------------------------------------------


def test_page_requests_run_on_the_translation_in_the_viewer(panel, translator, greedy):
    """A forced version (What-if) is analysed as shown, not as the greedy one."""
    forced = next(i for i in range(4, translator.cfg.tgt_vocab_size) if i != greedy[0])
    trace = translator.trace(TEXT, forced_prefix=[forced])
    got = ask(panel, trace, action="attribution", sentenceId=5, key="attribution:1:", step=1, versus="")
    assert (got["action"], got["sentenceId"], got["key"]) == ("attribution", 5, "attribution:1:")
    assert "error" not in got and got["token_id"] == forced and got["step"] == 0
    want = direct_logit_attribution(translator, TEXT, 0, target_ids=trace.tgt_ids[1:]).to_dict()
    assert got["value"] == want["value"] and got["cross"] == want["cross"]
    last = ask(panel, trace, action="attribution", sentenceId=5, key="k", step=trace.steps, versus="runner-up")
    assert last["token"] == trace.tgt_tokens[trace.steps] and last["versus_id"] is not None

    sal = ask(panel, trace, action="saliency", sentenceId=5, key="s", step=1, nSteps=4, layer=1, head=2)
    assert "error" not in sal and sal["token_id"] == forced and sal["n_steps"] == 4
    assert sal["attention_of"] == {"layer": 0, "head": 1}  # the page's layer 1, head 2
    np.testing.assert_allclose(sal["src"]["attention"], trace.cross_attn[0, 1, 0], atol=1e-5)  # the viewer's row
    mean = ask(panel, trace, action="saliency", sentenceId=5, key="s", step=1, nSteps=4, layer=None, head="mean")
    assert mean["attention_of"] == {"layer": translator.cfg.n_decoder_layers - 1, "head": "mean"}


def test_page_patching_uses_the_viewers_translation_as_a(panel, translator, pair):
    other, step = pair
    trace = translator.trace(TEXT)
    got = ask(panel, trace, action="patching", sentenceId=2, key="p", step=step, textB=other)
    assert "error" not in got and got["text_b"] == other and got["step"] == step - 1
    assert got["token_a"] == trace.tgt_tokens[step]


def test_page_requests_that_cannot_run_say_why(panel, translator):
    trace = translator.trace(TEXT)
    none = ask(panel, None, action="attribution", sentenceId=1, key="k", step=1)
    assert none["error"] == "Translate a sentence first." and none["key"] == "k"
    bad = ask(panel, trace, action="attribution", sentenceId=1, key="k", step=trace.steps + 1)
    assert bad["error"] == f"There is no step {trace.steps + 1} here: pick one from 1 to {trace.steps}."
    assert ask(panel, trace, action="patching", sentenceId=1, key="k", step=1, textB="  ")["error"].startswith(
        "Type a second sentence (B)"
    )
    assert ask(panel, trace, action="bogus", sentenceId=1, key="k")["error"] == GENERIC_ERROR
    long_key = ask(panel, trace, action="attribution", sentenceId=1, key="x" * 1000, step=1)
    assert long_key["key"] is None  # a key is echoed only when it is one the page could have made
