"""The value zeroing view's Python side (explorer/panels/value_zeroing.py), on the tiny checkpoint:
the page's request answers the viewer's own sentence with the library's numbers, ``/value_zeroing``
adds the 1-based step alone, bad input is one line, and the notebook's figure draws each kind."""

import json

import gradio as gr
import numpy as np
import pytest

from explorer.panels.base import Asked
from explorer.panels.value_zeroing import ValueZeroingPanel, at_step, figure
from transformer.interpret.value_zeroing import value_zeroing

TEXT = "the black cat sleeps."


@pytest.fixture(scope="module")
def panel(app):
    return app.panel("value_zeroing")


@pytest.fixture(scope="module")
def traced(translator):
    return translator.trace(TEXT)


def test_the_page_gets_every_step_and_layer_of_the_sentence_on_screen(panel, translator, traced):
    assert isinstance(panel, ValueZeroingPanel)
    asked = Asked(None, {"action": "value_zeroing", "sentenceId": 7, "key": "value_zeroing"})
    answer = json.loads(panel.request(traced, asked))
    assert (answer["action"], answer["sentenceId"], answer["key"]) == ("value_zeroing", 7, "value_zeroing")
    vz = value_zeroing(translator, traced)
    for name in ("encoder", "decoder_self", "cross", "encoder_rollout", "decoder_rollout", "cross_rollout"):
        np.testing.assert_allclose(np.array(answer[name]), getattr(vz, name), atol=6e-5, err_msg=name)
    assert answer["src_tokens"] == traced.src_tokens and answer["tgt_tokens"] == traced.tgt_tokens[: traced.steps]
    refused = json.loads(panel.request(None, asked))
    assert refused["error"] == "Translate a sentence first."


def test_the_endpoint_answers_a_step_alone(panel, translator, traced):
    out = panel.value_zeroing(TEXT, 2)
    assert out["translation"] == traced.translation
    vz = value_zeroing(translator, traced)
    at = out["at"]
    assert at["step"] == 2 and at == at_step(vz, 1)
    np.testing.assert_allclose(at["source_rollout"], vz.cross_rollout[-1, 1], atol=6e-5)
    assert len(at["prefix_rollout"]) == 2 and abs(sum(at["source_rollout"]) - 1) < 1e-3
    assert "at" not in panel.value_zeroing(TEXT, 0)
    for text, step, message in (
        ("", 1, "Please type"),
        (TEXT, traced.steps + 1, f"There is no step {traced.steps + 1} here"),
        (TEXT, "two", "The step must be a number"),
        (5, 1, "text must be a string"),
    ):
        with pytest.raises(gr.Error, match=message):
            panel.value_zeroing(text, step)


def test_the_notebook_figure_draws_each_kind_at_a_layer_and_rolled_out(translator, traced):
    vz = value_zeroing(translator, traced)
    for kind in ("cross", "decoder_self", "encoder"):
        for layer in (None, 1):
            fig = figure(vz, step=2, kind=kind, layer=layer)
            z = np.array(fig.data[0].z, dtype=float)
            want = {"cross": vz.cross_rollout[-1], "decoder_self": vz.decoder_rollout, "encoder": vz.encoder_rollout}
            expected = want[kind] if layer is None else getattr(vz, kind)[0]
            np.testing.assert_allclose(np.nan_to_num(z), expected, atol=1e-9)
    with pytest.raises(ValueError, match="kind must be one of"):
        figure(vz, kind="heads")
