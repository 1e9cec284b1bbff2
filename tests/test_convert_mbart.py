"""Converted mBART-50 models (transformers' model_type "mbart") run exactly as transformers runs them.

A small mBART-50 many-to-many model is built with transformers (GELU, learned positions, the
embedding norms, a logits bias, every LayerNorm and the bias moved off their initial values),
with MBart50Tokenizer's tokenizer.json over a unigram SentencePiece model trained on our corpus
(its 52 codes like en_XX, and the clean-up of spaces before punctuation that its config asks
for), saved as the Hub has them, converted with ``python -m transformer.cli.convert`` (the
``mbart50_like`` fixture) and compared as tests/test_convert_m2m100.py compares M2M100 and NLLB:
token ids, text, teacher-forced logits and attention weights, greedy and beam output.
"""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from tests.helpers import (
    FAMILY_LANGS,
    assert_teacher_forced_matches,
    converted_and_source,
    exit_2,
    hf_generate,
    short_test_sources,
    tatoeba_pairs,
)
from transformer.core import stepping
from transformer.core.beam import beam_search
from transformer.core.decoding import greedy_decode, max_new_tokens
from transformer.core.tokenizer import encode

pytestmark = pytest.mark.usefixtures("one_thread")

EN, IT = FAMILY_LANGS["mbart50"]
DIRECTIONS = [(EN, IT, 0), (IT, EN, 1)]  # (source language, target language, side of the pair read)
N_DECODE = 6
BEAM = 4


@pytest.fixture(scope="module")
def mbart(mbart50_like):
    """(our Translator, transformers model, its tokenizer)."""
    return converted_and_source(mbart50_like, "mbart50")


def _sources(side: int) -> list[str]:
    en = short_test_sources(N_DECODE)
    return en if side == 0 else [it for e, it in tatoeba_pairs("test", 10 * N_DECODE) if e in en]


def test_learned_tables_are_mbarts_from_position_0(mbart):
    """Each stack's own table, from the row transformers reads at position 0 (its row 2), and the
    encoder's is what the viewer draws."""
    tr, model, _ = mbart
    theirs = model.model.encoder.embed_positions.weight[2:]
    assert torch.equal(tr.model.pos_encoding.pe, theirs)
    assert torch.equal(tr.model.tgt_pos_encoding.pe, model.model.decoder.embed_positions.weight[2:])
    assert not torch.equal(tr.model.pos_encoding.pe, tr.model.tgt_pos_encoding.pe)


def test_source_ids_match_the_tokenizer(mbart):
    tr, _, tok = mbart
    odd = ["  Two   spaces  ", "Naïve café, «quoted»\ttab", "ÉLAN Ωmega ½", "emoji 😀😀 here", "x\u200by"]
    for src_lang, _, side in DIRECTIONS:
        tok.src_lang = src_lang
        for text in [pair[side] for pair in tatoeba_pairs("test", 300)] + odd:
            ours = stepping.frame_source(tr.cfg, encode(tr.src_tok, text), src_lang)
            assert ours == tok(text).input_ids, (src_lang, text)


def test_decoding_matches_the_tokenizer(mbart):
    """Word ids decode as MBart50Tokenizer.decode(skip_special_tokens=True) decodes them,
    spaces before punctuation cleaned up as its config asks ("casa ." -> "casa.")."""
    tr, _, tok = mbart
    tok.tgt_lang = IT
    cases = [tok(text_target=it).input_ids for _, it in tatoeba_pairs("test", 200)]
    g = torch.Generator().manual_seed(0)
    cases += [torch.randint(len(tok), (10,), generator=g).tolist() for _ in range(200)]
    for ids in cases:
        words = stepping.words_of(tr.cfg, ids)
        assert tr.tgt_tok.decode(words, skip_special_tokens=True) == tok.decode(words, skip_special_tokens=True), ids
    dot = [*encode(tr.tgt_tok, "casa"), *(tr.tgt_tok.token_to_id(t) for t in ("▁", "."))]  # "casa ."
    assert tr.tgt_tok.decode(dot) == tok.decode(dot) == "casa."


def test_teacher_forced_logits_and_attention(mbart):
    tr, model, tok = mbart
    for src_lang, tgt_lang, side in DIRECTIONS:
        pairs = [(p[side], p[1 - side]) for p in tatoeba_pairs("test", 8)]
        assert_teacher_forced_matches(tr, model, tok, pairs, src_lang, tgt_lang)


def test_greedy_matches_generate(mbart):
    tr, model, tok = mbart
    for src_lang, tgt_lang, side in DIRECTIONS:
        tok.src_lang = src_lang
        for text in _sources(side):
            src = torch.tensor([tr.encode_source(text, src_lang).ids])
            ours = greedy_decode(tr.model, src, tgt_lang=tgt_lang).ids[0]
            limit = max_new_tokens(tr.model, src.shape[1])
            assert ours == hf_generate(model, tok, [text], tr.cfg.lang_ids[tgt_lang], limit, num_beams=1)[0], text


def test_beam_matches_generate(mbart):
    tr, model, tok = mbart
    for src_lang, tgt_lang, side in DIRECTIONS:
        tok.src_lang = src_lang
        for text in _sources(side):
            src = torch.tensor([tr.encode_source(text, src_lang).ids])
            ours = beam_search(tr.model, src, BEAM, length_penalty=0.0, early_stopping=True, tgt_lang=tgt_lang).ids[0]
            limit = max_new_tokens(tr.model, src.shape[1])
            settings = dict(num_beams=BEAM, length_penalty=0.0, early_stopping=True)
            assert ours == hf_generate(model, tok, [text], tr.cfg.lang_ids[tgt_lang], limit, **settings)[0], text


def test_converted_config_and_card(mbart):
    tr, model, _ = mbart
    cfg = json.loads((tr.directory / "config.json").read_text())
    switches = ("positional_table", "position_offset", "embedding_norm", "final_logits_bias", "activation")
    assert [cfg[k] for k in switches] == ["learned", 0, True, True, "gelu"]
    assert (cfg["src_sos_id"], cfg["tgt_sos_id"], cfg["tgt_eos_id"], cfg["tie_embeddings"]) == (None, 2, 2, "all")
    assert len(cfg["lang_ids"]) == 52 and (cfg["src_lang"], cfg["tgt_lang"]) == (EN, IT)
    assert cfg["src_vocab_size"] == model.config.vocab_size == tr.src_tok.get_vocab_size()
    card = (tr.directory / "README.md").read_text()
    assert "license: mit" in card and "mBART-50" in card


def test_an_mbart25_tokenizer_is_refused(mbart50_like, tmp_path, capfd):
    """mBART-25 frames sources ``x </s> en_XX`` and starts its decoder from the target language:
    not the framing the config can say, so one line and exit code 2."""
    from transformer.cli import convert

    src = tmp_path / "mbart25"
    shutil.copytree(mbart50_like.parent / "hf", src)
    config = json.loads((src / "tokenizer_config.json").read_text())
    (src / "tokenizer_config.json").write_text(json.dumps({**config, "tokenizer_class": "MBartTokenizer"}))
    assert "mBART-25" in exit_2(capfd, convert.main, [str(src), "--out", str(tmp_path / "out")])
    suffix = json.loads((src / "tokenizer.json").read_text())
    single = suffix["post_processor"]["single"]
    suffix["post_processor"]["single"] = [single[1], single[2], single[0]]  # x </s> lang
    (src / "tokenizer.json").write_text(json.dumps(suffix))
    (src / "tokenizer_config.json").write_text(json.dumps(config))
    assert "language x </s>" in exit_2(capfd, convert.main, [str(src), "--out", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()
