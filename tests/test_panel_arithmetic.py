"""The arithmetic panel's callback (explorer/panels/arithmetic.py), called directly on the tiny
checkpoint: the page's 1-based request becomes the library's 0-based row, the softmax row
of the answer is the trace's own row, and a bad request gets one plain sentence."""

import json
import logging

import numpy as np
import pytest

from explorer.errors import GENERIC_ERROR
from explorer.panels import PANELS
from explorer.panels.arithmetic import PICK_HEAD, ArithmeticPanel
from transformer.interpret.arithmetic import attention_arithmetic
from explorer.panels.base import Asked

TEXT = "the black cat sleeps."
TOL = 1e-5
RECORDED = {"encoder": "encoder_attn", "decoder": "decoder_self_attn", "cross": "cross_attn"}
KIND = {"encoder": "encoder", "decoder": "decoder_self", "cross": "cross"}


@pytest.fixture(scope="module")
def panel(app):
    return app.panel("arithmetic")


@pytest.fixture(scope="module")
def trace(translator):
    return translator.trace(TEXT)


def ask(panel, trace, **data) -> dict:
    """The panel's answer to the page's request ``data`` (what the block's submit event carries)."""
    return json.loads(panel.request(trace, Asked(None, data)))


def test_the_panel_is_a_closed_section_of_the_page(app, panel):
    assert ArithmeticPanel in PANELS and isinstance(panel, ArithmeticPanel)
    assert panel.section.open is False  # rows are computed only for visitors who open it
    assert panel.section.label.startswith("The arithmetic of attention")


def test_rows_asked_while_one_computes_are_queued_not_dropped(translator):
    import explorer.page as explorer_page

    demo = explorer_page.App(translator).build()
    asked = [f for f in demo.fns.values() if getattr(f.fn, "__func__", None) is ArithmeticPanel.request]
    # Gradio's default ("once") drops a request made while the last one runs: that row would wait forever
    assert len(asked) == 1 and asked[0].trigger_mode == "multiple"


@pytest.mark.parametrize("view", ["encoder", "decoder", "cross"])
def test_a_1_based_request_gets_that_rows_arithmetic(panel, translator, trace, view):
    cfg = translator.cfg
    layers = cfg.n_encoder_layers if view == "encoder" else cfg.n_decoder_layers
    rows = len(trace.src_tokens) if view == "encoder" else trace.steps
    for layer in range(1, layers + 1):
        for head in (1, cfg.h):
            for query in range(1, rows + 1):
                got = ask(
                    panel,
                    trace,
                    sentenceId=7,
                    key=f"{view}:{layer}:{head}:{query}",
                    view=view,
                    layer=layer,
                    head=head,
                    step=1,
                    query=query,
                )
                assert "error" not in got, got
                assert got["sentenceId"] == 7 and got["key"] == f"{view}:{layer}:{head}:{query}"
                # the library counts from 0: the page's layer 1, head 1, row 1 are its 0, 0, 0
                assert (got["kind"], got["layer"], got["head"], got["query"]) == (
                    KIND[view],
                    layer - 1,
                    head - 1,
                    query - 1,
                )
                recorded = getattr(trace, RECORDED[view])[layer - 1, head - 1, query - 1]
                assert np.abs(np.array(got["weights"]) - recorded).max() <= TOL
                expected = attention_arithmetic(translator, trace, KIND[view], layer - 1, head - 1, query - 1).to_dict()
                for name in ("q", "dots", "scores", "exp_scores", "weights", "out"):
                    np.testing.assert_allclose(got[name], expected[name], rtol=0, atol=TOL, err_msg=name)
                assert got["masked"] == expected["masked"] and got["key_tokens"] == expected["key_tokens"]


def test_decoder_rows_default_to_the_step_and_heads_may_be_text(panel, trace):
    got = ask(panel, trace, sentenceId=1, key="k", view="cross", layer=2, head="3", step=trace.steps)
    assert (got["kind"], got["layer"], got["head"], got["query"]) == ("cross", 1, 2, trace.steps - 1)
    assert got["output_token"] == trace.tgt_tokens[trace.steps]
    # decoder self-attention at step 2 of the page: keys after it are masked as the future
    got = ask(panel, trace, sentenceId=1, key="k", view="decoder", layer=1, head=1, step=2, query=2)
    assert got["mask_reasons"][:2] == [None, None] and set(got["mask_reasons"][2:]) <= {"future"}
    assert got["weights"][2:] == [0.0] * (trace.steps - 2)


@pytest.mark.parametrize(
    "data, words",
    [
        ({"view": "rollout", "layer": 1, "head": 1, "step": 1}, "Pick an attention view"),
        ({"view": None, "layer": 1, "head": 1, "step": 1}, "Pick an attention view"),
        ({"view": "cross", "layer": 1, "head": "mean", "step": 1}, PICK_HEAD),
        ({"view": "cross", "layer": 1, "head": "max", "step": 1}, PICK_HEAD),
        ({"view": "cross", "layer": 0, "head": 1, "step": 1}, "There is no layer 0 here: pick one from 1 to 2."),
        ({"view": "encoder", "layer": 3, "head": 1, "query": 1}, "There is no layer 3 here: pick one from 1 to 2."),
        ({"view": "cross", "layer": 1, "head": 5, "step": 1}, "There is no head 5 here: pick one from 1 to 4."),
        ({"view": "cross", "layer": 1, "head": "x", "step": 1}, "The head must be a number from 1 to 4."),
        ({"view": "cross", "layer": True, "head": 1, "step": 1}, "The layer must be a number from 1 to 2."),
        ({"view": "cross", "layer": 1.5, "head": 1, "step": 1}, "The layer must be a number from 1 to 2."),
        ({"view": "cross", "layer": 1, "head": 1}, "The step must be a number"),
        ({"view": "decoder", "layer": 1, "head": 1, "step": 99}, "There is no step 99 here"),
        ({"view": "encoder", "layer": 1, "head": 1, "query": 0}, "There is no source token 0 here"),
        ({}, "Pick an attention view"),
    ],
)
def test_a_bad_request_gets_one_plain_sentence(panel, trace, data, words):
    got = ask(panel, trace, sentenceId=3, key="bad", **data)
    assert set(got) == {"sentenceId", "key", "error", "seq"} and got["sentenceId"] == 3 and got["key"] == "bad"
    assert words in got["error"] and "Traceback" not in got["error"] and "0-based" not in got["error"]


def test_no_sentence_and_odd_keys(panel, trace):
    got = ask(panel, None, sentenceId=4, key="cross:1:1:1", view="cross", layer=1, head=1, step=1)
    assert got["error"] == "Translate a sentence first." and got["sentenceId"] == 4
    got = ask(panel, trace, sentenceId=4, key=["not", "a", "string"], view="cross", layer=1, head=1, step=1)
    assert got["key"] is None and "weights" in got  # the answer still comes; the page ignores it
    got = json.loads(panel.request(trace, Asked(None, None)))  # an event without data
    assert "Pick an attention view" in got["error"]


def test_a_bug_is_logged_and_the_page_gets_the_generic_line(panel, trace, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("explorer.panels.arithmetic.attention_arithmetic", broken)
    with caplog.at_level(logging.ERROR, logger="app.arithmetic"):
        got = ask(panel, trace, sentenceId=5, key="k", view="cross", layer=1, head=1, step=1)
    assert got["error"] == GENERIC_ERROR and "boom" not in json.dumps(got)
    assert "boom" in caplog.text  # the stack trace goes to the log, not to the page
