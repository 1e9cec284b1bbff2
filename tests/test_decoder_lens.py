"""DecoderLens (``transformer/interpret/decoder_lens.py``): one greedy translation per encoder
layer; the last layer's is the model's own."""

from __future__ import annotations

import json

import pytest
import torch

from tests.helpers import tiny_config
from transformer.core.decoding import greedy_decode
from transformer.core.model import build_model
from transformer.core.translator import Translator
from transformer.interpret.decoder_lens import decoder_lens

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = ["the black cat sleeps.", "where is the station?"]


@pytest.fixture(scope="module", params=["pre", "post"])
def tiny(request, tokenizers_pair):
    src_tok, tgt_tok = tokenizers_pair
    torch.manual_seed(2)
    cfg = tiny_config(src_tok, tgt_tok, norm_placement=request.param, n_encoder_layers=3)
    return Translator(build_model(cfg), src_tok, tgt_tok)


def test_one_row_per_encoder_layer_and_the_last_is_the_models_translation(tiny):
    for text in TEXTS:
        lens = decoder_lens(tiny, text)
        assert [r.layer for r in lens.rows] == [0, 1, 2]
        last = lens.rows[-1]
        assert last.text == tiny.translate([text])[0]
        src = torch.tensor([tiny.encode_source(text).ids])
        assert last.ids == greedy_decode(tiny.model, src).ids[0]
        assert all(len(r.tokens) == len(r.ids) for r in lens.rows)
        d = json.loads(lens.to_json())
        assert len(d["rows"]) == 3 and d["rows"][-1]["text"] == last.text


def test_shipped_last_row_and_a_step_limit(shipped):
    text = "My brother bought a new red car for his wife yesterday."
    lens = decoder_lens(shipped, text)
    assert len(lens.rows) == shipped.cfg.n_encoder_layers
    assert lens.rows[-1].text == shipped.translate([text])[0]
    assert lens.first_layer_like_final is not None
    short = decoder_lens(shipped, text, max_steps=2)
    assert all(len(r.ids) <= 2 for r in short.rows)


def test_empty_sentence_raises(translator):
    with pytest.raises(ValueError):
        decoder_lens(translator, "")


def test_figure(translator):
    lens = decoder_lens(translator, TEXTS[0])
    fig = lens.figure()
    assert list(fig.data[0].cells.values[0]) == [str(i + 1) for i in range(len(lens.rows))]
