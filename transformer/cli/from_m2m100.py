"""The M2M100 and NLLB-200 family (transformers' model_type "m2m_100") for ``transformer.cli.convert``.

    python -m transformer.cli.convert facebook/m2m100_418M --out models/m2m100-418M
    python -m transformer.cli.convert facebook/nllb-200-distilled-600M --out models/nllb-200-600M

The mapping: pre-LN with a final LayerNorm in each stack (eps 1e-5), ReLU FFN, fairseq's
sinusoids (``positional_table="fairseq"``: [sin | cos] with frequencies 10000^(-i/(d/2-1))),
read from row padding_idx + 1 = 2 on (``position_offset``), embeddings scaled by sqrt(d_model)
(``scale_embedding``), one vocabulary shared by both stacks and the output projection, no logits
bias. A source is ``lang x </s>``; the decoder starts from </s> (decoder_start_token_id) and is
forced to emit the target language's token first (generate's forced_bos_token_id).

Transformers' M2M100 gives padding positions a zero vector where we add the table's row: they
are never attended to (masked keys), so every real position's output is the same.

Tokenizers. NLLB's ``tokenizer.json`` is used as it is, without its post-processor (which adds
the language token and </s>); language codes are its tokens like ``eng_Latn``. M2M100's tokenizer
is a SentencePiece model (``sentencepiece.bpe.model``, BPE or unigram) whose pieces are looked up
in ``vocab.json``, followed by the language tokens ``__en__`` in fairseq's order of its
``language_codes`` (ids len(vocab.json) + i); it becomes a ``tokenizers`` model over vocab.json's
ids, and the code of ``__en__`` is "en". The embedding matrix has rows past the tokenizer's last
id (fairseq's "madeupword" padding): they become tokens no text reaches.
"""

from __future__ import annotations

from pathlib import Path

from transformer.cli.conversion import (
    WEIGHT_FILES,
    ConversionError,
    embedding_weights,
    final_norms,
    first,
    hf_tokenizer_json,
    layer_weights,
    missing_files,
    model_card,
    multilingual_config,
    padded_vocabulary,
    pick_languages,
    read_json,
    read_spm,
    read_weights,
    source_licence,
    spm_bpe,
    spm_missing,
    spm_unigram,
    token_text,
    with_clean_up,
    write_checkpoint,
)

MODEL_TYPE = "m2m_100"
HUB_PATTERNS = [
    "config.json",
    "generation_config.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "tokenizer.json",
    "vocab.json",
    "sentencepiece.bpe.model",
    "README.md",
    *WEIGHT_FILES,
]
# M2M100Tokenizer's language codes (transformers' FAIRSEQ_LANGUAGE_CODES), by tokenizer_config's
# language_codes: the tokens __xx__ follow vocab.json in this order
M2M100_CODES = {
    "m2m100": "af am ar ast az ba be bg bn br bs ca ceb cs cy da de el en es et fa ff fi fr fy ga gd gl gu ha he "
    "hi hr ht hu hy id ig ilo is it ja jv ka kk km kn ko lb lg ln lo lt lv mg mk ml mn mr ms my ne nl no ns oc or "
    "pa pl ps pt ro ru sd si sk sl so sq sr ss su sv sw ta th tl tn tr uk ur uz vi wo xh yi yo zh zu".split(),
    "wmt21": "en ha is ja cs ru zh de".split(),
}
# language tokens in a tokenizer.json: NLLB's eng_Latn, or M2M100's __en__ (code "en")
CODE_PATTERN = r"[a-z]{3}_[A-Z][a-z]{3}|__([a-z]{2,3})__"
FAMILIES = {
    "m2m100": {
        "name": "M2M100",
        "tags": ["m2m_100", "multilingual"],
        "credit": "Fan et al., 2020, Facebook AI",
        "licence": "mit",
        "preferred": ("en", "it"),
        "tests": "tests/test_convert_m2m100.py",
    },
    "nllb": {
        "name": "NLLB-200",
        "tags": ["m2m_100", "nllb", "multilingual"],
        "credit": "NLLB Team et al., 2022, Meta AI",
        "licence": "cc-by-nc-4.0",
        "preferred": ("eng_Latn", "ita_Latn"),
        "tests": "tests/test_convert_m2m100.py",
    },
}


def folder_problem(folder: Path) -> str | None:
    """Why ``folder`` is not an M2M100 or NLLB folder this converter reads, or None."""
    tokenizer = (
        ("tokenizer.json",) if (folder / "tokenizer.json").is_file() else ("vocab.json", "sentencepiece.bpe.model")
    )
    missing = missing_files(folder, ("config.json", *tokenizer))
    if missing:
        return f"{folder}: an M2M100 or NLLB folder needs {', '.join(missing)} (save the tokenizer there too)"
    return None


def m2m100_tokenizer(folder: Path, tok_config: dict):
    """(tokenizer, {code: id}, notes) for M2M100Tokenizer's files: the SentencePiece model over
    vocab.json's ids, its specials, then the language tokens."""
    from tokenizers import AddedToken

    vocab = read_json(folder / "vocab.json")
    proto = read_spm(folder / "sentencepiece.bpe.model")
    unk = token_text(tok_config.get("unk_token"), "<unk>")
    if unk not in vocab:
        raise ConversionError(f"{folder / 'vocab.json'}: no {unk} token")
    build = spm_bpe if proto.trainer_spec.model_type == 2 else spm_unigram
    tok = build(proto, vocab, unk)
    codes = M2M100_CODES.get(str(tok_config.get("language_codes", "m2m100")))
    if codes is None:
        raise ConversionError(f"language_codes {tok_config.get('language_codes')!r} is not one of {list(M2M100_CODES)}")
    tok.add_special_tokens([AddedToken(t, normalized=False) for t in ("<s>", "<pad>", "</s>", unk) if t in vocab])
    tok.add_special_tokens([AddedToken(f"__{code}__", normalized=False) for code in codes])
    lang_ids = {code: len(vocab) + i for i, code in enumerate(codes)}
    if any(tok.token_to_id(f"__{code}__") != i for code, i in lang_ids.items()):
        raise ConversionError(f"{folder / 'vocab.json'}: already holds language tokens (__xx__)")
    if tok_config.get("clean_up_tokenization_spaces"):
        with_clean_up(tok)
    lacking = spm_missing(proto, vocab)
    notes = []
    if lacking:
        notes.append(
            f"Known difference: {lacking} pieces of sentencepiece.bpe.model are not in vocab.json; transformers "
            "reads them as <unk> where SentencePiece chooses them, this tokenizer spells that text with other pieces."
        )
    return tok, lang_ids, notes


def convert_weights(w: dict, cfg) -> dict:
    """Our state dict from M2M100's tensors (names: ``Transformer.state_dict``); its sinusoids are
    not weights (the config makes them)."""
    return {**embedding_weights(w, cfg), **layer_weights(w, cfg), **final_norms(w)}


def convert(folder: Path, out: Path, src_name: str, argv: list[str] | None = None, langs=(None, None)) -> Path:
    """Write our checkpoint for the M2M100 or NLLB folder ``folder`` at ``out`` (replaced whole);
    ``langs``: the default (source, target) codes, None for the tokenizer's or this project's."""
    hf = read_json(folder / "config.json")
    generation = read_json(folder / "generation_config.json", required=False)
    tok_config = read_json(folder / "tokenizer_config.json", required=False)
    notes = []
    if (folder / "tokenizer.json").is_file():
        tok, lang_ids = hf_tokenizer_json(folder, tok_config, CODE_PATTERN)
    else:
        tok, lang_ids, notes = m2m100_tokenizer(folder, tok_config)
    family = FAMILIES["nllb" if any("_" in code for code in lang_ids) else "m2m100"]
    unk = tok.token_to_id(token_text(tok_config.get("unk_token"), "<unk>"))
    if unk is None:
        raise ConversionError(f"{folder}: the tokenizer has no unknown token")
    tok = padded_vocabulary(tok, int(hf.get("vocab_size", 0)))
    langs = pick_languages(lang_ids, langs, tok_config, generation, family["preferred"])
    cfg = multilingual_config(
        hf,
        generation,
        unk,
        lang_ids,
        langs,
        positional_table="fairseq",
        position_offset=int(hf["pad_token_id"]) + 1,  # fairseq numbers positions from padding_idx + 1
        scale_embedding=bool(hf.get("scale_embedding", True)),  # M2M100Config's default
    )
    cfg.extra["converted_from"] = src_name  # the app says where the model comes from
    licence = source_licence(folder, hf, family["licence"])
    cfg.extra["license"] = licence[0]  # a model fine-tuned from these weights is under it too
    w = read_weights(folder)
    first(w, "encoder.layer_norm.weight")  # pre-LN with final norms: what the mapping assumes
    card = model_card(src_name, cfg, family, licence, argv or [src_name, "--out", str(out)], notes)
    return write_checkpoint(folder, out, cfg, convert_weights(w, cfg), (tok, tok), card)
