"""Converted M2M100 and NLLB-200 models (transformers' model_type "m2m_100") run exactly as
transformers runs them.

Small models are built with transformers: an M2M100 (a BPE SentencePiece model over vocab.json,
the 100 language tokens __xx__ after it, 8 embedding rows past them) trained for a few seconds so
it ends its sentences, and an NLLB (NllbTokenizer's tokenizer.json with its 202 codes like
eng_Latn, 2 rows past the tokenizer) with random weights; both saved as the Hub has them,
converted with ``python -m transformer.cli.convert`` (the ``m2m100_like`` and ``nllb_like``
fixtures), and compared:

- token ids: ``stepping.frame_source`` of our tokenizer's ids == the transformers tokenizer's
  input_ids with its src_lang set (``lang x </s>``), for English and Italian sources;
- text: ours == the transformers tokenizer's ``decode(skip_special_tokens=True)``;
- teacher-forced logits within 1e-4, attention weights (encoder, decoder self, cross) within 1e-5;
- greedy output token-identical to ``generate(num_beams=1, forced_bos_token_id=lang)``, both ways;
- beam search identical to ``generate(num_beams=4, length_penalty=0.0, early_stopping=True)``,
  where the two searches agree (tests/test_marian.py says why: no length penalty, early stopping).

Both decoders never emit <pad> (the converter bans it, and ``generate`` is told the same), and
``generate`` forces no </s> at the limit (ours leaves such a sentence open).
"""

from __future__ import annotations

import json
import warnings

import pytest
import torch

from tests.helpers import (
    FAMILY_LANGS,
    assert_teacher_forced_matches,
    converted_and_source,
    hf_generate,
    short_test_sources,
    single_thread,
    tatoeba_pairs,
    train_fairseq_spm,
    write_fairseq_tokenizer,
)
from transformer.core import stepping
from transformer.core.beam import beam_search
from transformer.core.decoding import greedy_decode, max_new_tokens
from transformer.core.model import sinusoidal_table
from transformer.core.tokenizer import encode

pytestmark = pytest.mark.usefixtures("one_thread")

# transformer.core.beam ranks a forced step's candidates by the model's own log-probs (only its
# logits are masked), so the tokens topk fills in after the forced one, the lowest ids, </s> among
# them, outrank it; with logp masked as the logits are, both families match generate
N_DECODE = 6  # test sentences decoded greedily and with beams, per direction
BEAM = 4
ODD = ["  Two   spaces  ", "Naïve café, «quoted»\ttab", "ÉLAN Ωmega ½", "emoji 😀😀 here", "x\u200by", "ｆｕｌｌ width"]


@pytest.fixture(scope="module", params=["m2m100", "nllb"])
def family(request):
    """(kind, our Translator, transformers model, its tokenizer) for each family's fixture."""
    folder = request.getfixturevalue(f"{request.param}_like")
    return (request.param, *converted_and_source(folder, request.param))


def _directions(kind: str) -> list[tuple[str, str, int]]:
    """(source language, target language, index of the pair's side read): en->it and it->en."""
    en, it = FAMILY_LANGS[kind]
    return [(en, it, 0), (it, en, 1)]


# ------------------------------------------------------------------------- the table


def test_fairseq_table_is_m2m100s():
    """fairseq's sinusoids, read from row padding_idx + 1 = 2, to the bit."""
    from transformers.models.m2m_100.modeling_m2m_100 import M2M100SinusoidalPositionalEmbedding

    for n, d in ((64, 32), (10, 1024), (8, 33)):
        theirs = M2M100SinusoidalPositionalEmbedding.get_embedding(n + 2, d, padding_idx=1)
        assert torch.equal(sinusoidal_table(n, d, "fairseq", offset=2), theirs[2:])


# ------------------------------------------------------------------------- tokenizers


def test_source_ids_match_the_tokenizer(family):
    """``lang x </s>``: our ids framed by the config == the transformers tokenizer's input_ids."""
    kind, tr, _, tok = family
    for src_lang, _, side in _directions(kind):
        tok.src_lang = src_lang
        texts = [pair[side] for pair in tatoeba_pairs("test", 300)] + ODD
        for text in texts:
            ours = stepping.frame_source(tr.cfg, encode(tr.src_tok, text), src_lang)
            assert ours == tok(text).input_ids, (src_lang, text)
            if len(ours) <= tr.cfg.max_positions:  # longer sources are cut to the positional table
                assert tr.encode_source(text, src_lang).ids == ours


def test_decoding_matches_the_tokenizer(family):
    """The text of word ids (language tokens and the start and end tokens taken off, as a
    translation's are) == the transformers tokenizer's decode(skip_special_tokens=True), for the
    target sentences' ids and for random ids of the tokenizer."""
    kind, tr, _, tok = family
    tok.tgt_lang = FAMILY_LANGS[kind][1]
    cases = [tok(text_target=it).input_ids for _, it in tatoeba_pairs("test", 200)]
    g = torch.Generator().manual_seed(0)
    size = len(tok.encoder) if kind == "m2m100" else len(tok)  # not the rows past the tokenizer
    cases += [torch.randint(size, (10,), generator=g).tolist() for _ in range(200)]
    for ids in cases:
        words = stepping.words_of(tr.cfg, ids)
        assert tr.tgt_tok.decode(words, skip_special_tokens=True) == tok.decode(words, skip_special_tokens=True), ids


def test_m2m100_unigram_tokenizer(tmp_path):
    """M2M100Tokenizer over a unigram SentencePiece model converts as exactly as over a BPE one."""
    from transformer.cli.conversion import read_json
    from transformer.cli.from_m2m100 import m2m100_tokenizer

    pairs = tatoeba_pairs("train", 2000)
    hf = write_fairseq_tokenizer(
        tmp_path / "hf", "m2m100", train_fairseq_spm([s for p in pairs for s in p], 500, "unigram")
    )
    ours, lang_ids, notes = m2m100_tokenizer(tmp_path / "hf", read_json(tmp_path / "hf" / "tokenizer_config.json"))
    assert notes == [] and lang_ids["it"] == hf.get_lang_id("it")
    for text in [en for en, _ in tatoeba_pairs("test", 300)] + ODD:
        assert [lang_ids["en"], *encode(ours, text), 2] == hf(text).input_ids, text


# ------------------------------------------------------------------------- the model


def test_teacher_forced_logits_and_attention(family):
    kind, tr, model, tok = family
    for src_lang, tgt_lang, side in _directions(kind):
        pairs = [(p[side], p[1 - side]) for p in tatoeba_pairs("test", 8)]
        assert_teacher_forced_matches(tr, model, tok, pairs, src_lang, tgt_lang)


def _sources(kind: str, side: int) -> list[str]:
    en = short_test_sources(N_DECODE)
    return en if side == 0 else [it for e, it in tatoeba_pairs("test", 10 * N_DECODE) if e in en]


def test_greedy_matches_generate(family):
    """Greedy decoding, token for token, forced to begin with the target language; our
    translate gives the text transformers decodes."""
    kind, tr, model, tok = family
    finished = 0
    for src_lang, tgt_lang, side in _directions(kind):
        tok.src_lang = src_lang
        texts = _sources(kind, side)
        expected = []
        for text in texts:
            src = torch.tensor([tr.encode_source(text, src_lang).ids])
            ours = greedy_decode(tr.model, src, tgt_lang=tgt_lang).ids[0]
            limit = max_new_tokens(tr.model, src.shape[1])
            assert ours == hf_generate(model, tok, [text], tr.cfg.lang_ids[tgt_lang], limit, num_beams=1)[0], text
            assert ours[0] == tr.cfg.lang_ids[tgt_lang]
            finished += side == 0 and ours[-1] == tr.cfg.tgt_eos_id
            expected.append(tok.decode(ours, skip_special_tokens=True).removeprefix(f"__{tgt_lang}__").strip())
        if kind == "m2m100":  # its tokenizer leaves <unk> out of a decoded text, as transformers does
            assert tr.translate(texts, src_lang=src_lang, tgt_lang=tgt_lang) == expected
    if kind == "m2m100":
        assert finished >= N_DECODE - 1  # the model trained on en -> it ends those sentences


def test_beam_matches_generate(family):
    """Beam search, k = 4, with no length penalty and early stopping (where both agree)."""
    kind, tr, model, tok = family
    for src_lang, tgt_lang, side in _directions(kind):
        tok.src_lang = src_lang
        for text in _sources(kind, side):
            src = torch.tensor([tr.encode_source(text, src_lang).ids])
            ours = beam_search(tr.model, src, BEAM, length_penalty=0.0, early_stopping=True, tgt_lang=tgt_lang).ids[0]
            limit = max_new_tokens(tr.model, src.shape[1])
            settings = dict(num_beams=BEAM, length_penalty=0.0, early_stopping=True)
            assert ours == hf_generate(model, tok, [text], tr.cfg.lang_ids[tgt_lang], limit, **settings)[0], text


# ------------------------------------------------------------------------- the checkpoint


def test_converted_config_files_and_card(family):
    kind, tr, model, tok = family
    folder = tr.directory
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["README.md", "config.json", "model.safetensors", "tokenizer.json"]
    cfg = json.loads((folder / "config.json").read_text())
    assert (cfg["positional_table"], cfg["position_offset"], cfg["norm_placement"], cfg["activation"]) == (
        "fairseq",
        2,
        "pre",
        "relu",
    )
    assert (cfg["src_sos_id"], cfg["tgt_sos_id"], cfg["tgt_banned_ids"], cfg["tie_embeddings"]) == (None, 2, [1], "all")
    assert (cfg["src_lang"], cfg["tgt_lang"]) == FAMILY_LANGS[kind]
    assert len(cfg["lang_ids"]) == (100 if kind == "m2m100" else 202)
    token = "__it__" if kind == "m2m100" else "ita_Latn"
    assert cfg["lang_ids"][FAMILY_LANGS[kind][1]] == tok.convert_tokens_to_ids(token) == tr.tgt_tok.token_to_id(token)
    # the embedding rows past the tokenizer are tokens too, so every id the model emits decodes
    assert tr.tgt_tok.get_vocab_size() == cfg["tgt_vocab_size"] == model.config.vocab_size
    licence = "mit" if kind == "m2m100" else "cc-by-nc-4.0"
    assert cfg["extra"] == {"converted_from": str(folder.parent / "hf"), "license": licence}
    card = (folder / "README.md").read_text()
    assert f"license: {licence}" in card and "transformer.cli.convert" in card
    assert ("M2M100" if kind == "m2m100" else "NLLB-200") in card


def test_other_languages_by_flag(nllb_like, tmp_path):
    """--src-lang / --tgt-lang set the pair a multilingual checkpoint translates by default."""
    from transformer.cli import convert
    from transformer import load_translator

    out = tmp_path / "fr"
    args = [str(nllb_like.parent / "hf"), "--out", str(out), "--src-lang", "ita_Latn", "--tgt-lang", "fra_Latn"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert convert.main(args) == 0
    tr = load_translator(out)
    assert (tr.cfg.src_lang, tr.cfg.tgt_lang) == ("ita_Latn", "fra_Latn")
    with single_thread():
        ids = greedy_decode(tr.model, torch.tensor([tr.encode_source("Ciao").ids]), max_steps=3).ids[0]
    assert ids[0] == tr.cfg.lang_ids["fra_Latn"]
