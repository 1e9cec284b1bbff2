"""The mBART-50 family (transformers' model_type "mbart") for ``transformer.cli.convert``.

    python -m transformer.cli.convert facebook/mbart-large-50-many-to-many-mmt --out models/mbart-50

The mapping: pre-LN with a final LayerNorm in each stack (eps 1e-5), GELU FFN (the exact, erf
one), a learned positional table per stack (``positional_table="learned"``; transformers keeps
two unused rows before position 0, which are dropped), a LayerNorm on each stack's input
(``embedding_norm``: mBART's layernorm_embedding), embeddings scaled by sqrt(d_model) when
config.json's scale_embedding says so (mBART-50's does), one vocabulary shared by both stacks and
the output projection, and the final logits bias. A source is ``lang x </s>`` (MBart50Tokenizer's
framing); the decoder starts from </s> (decoder_start_token_id) and is forced to emit the target
language's token first (generate's forced_bos_token_id).

The tokenizer is MBart50Tokenizer's ``tokenizer.json``, used as it is without its post-processor
(which adds the language token and </s>); language codes are its tokens like ``en_XX``. mBART-25
models (MBartTokenizer: ``x </s> en_XX``, the decoder starting from the target language) frame
sources the other way and are refused.
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
    read_weights,
    source_licence,
    token_text,
    write_checkpoint,
)

MODEL_TYPE = "mbart"
HUB_PATTERNS = [
    "config.json",
    "generation_config.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "tokenizer.json",
    "README.md",
    *WEIGHT_FILES,
]
CODE_PATTERN = r"[a-z]{2}_[A-Z]{2}"
# the rows transformers' MBartLearnedPositionalEmbedding keeps before position 0
POSITION_ROWS_BEFORE = 2
FAMILY = {
    "name": "mBART-50",
    "tags": ["mbart", "mbart-50", "multilingual"],
    "credit": "Tang et al., 2020, Facebook AI",
    "licence": "mit",
    "preferred": ("en_XX", "it_IT"),
    "tests": "tests/test_convert_mbart.py",
}


def folder_problem(folder: Path) -> str | None:
    """Why ``folder`` is not an mBART-50 folder this converter reads, or None."""
    missing = missing_files(folder, ("config.json", "tokenizer.json"))
    if missing:
        return f"{folder}: an mBART-50 folder needs {', '.join(missing)} (save the tokenizer there too)"
    return None


def convert_weights(w: dict, cfg) -> dict:
    """Our state dict from mBART's tensors (names: ``Transformer.state_dict``)."""
    out = {**embedding_weights(w, cfg), **layer_weights(w, cfg), **final_norms(w)}
    for theirs, ours in (("encoder", "pos_encoding"), ("decoder", "tgt_pos_encoding")):
        table = first(w, f"{theirs}.embed_positions.weight")
        if table.shape[0] != cfg.max_positions + POSITION_ROWS_BEFORE:
            raise ConversionError(
                f"{theirs}.embed_positions has {table.shape[0]} rows, not max_position_embeddings + "
                f"{POSITION_ROWS_BEFORE} = {cfg.max_positions + POSITION_ROWS_BEFORE}"
            )
        out[f"{ours}.weight"] = table[POSITION_ROWS_BEFORE:]  # row p: what position p reads
        out[f"{theirs}_embed_norm.gain"] = first(w, f"{theirs}.layernorm_embedding.weight")
        out[f"{theirs}_embed_norm.bias"] = first(w, f"{theirs}.layernorm_embedding.bias")
    return out


def convert(folder: Path, out: Path, src_name: str, argv: list[str] | None = None, langs=(None, None)) -> Path:
    """Write our checkpoint for the mBART-50 folder ``folder`` at ``out`` (replaced whole);
    ``langs``: the default (source, target) codes, None for the tokenizer's or this project's."""
    hf = read_json(folder / "config.json")
    generation = read_json(folder / "generation_config.json", required=False)
    tok_config = read_json(folder / "tokenizer_config.json", required=False)
    if str(tok_config.get("tokenizer_class", "")).startswith("MBartTokenizer"):
        raise ConversionError(
            f"{folder}: an mBART-25 tokenizer (MBartTokenizer, 'x </s> lang') is not supported; mBART-50 is"
        )
    tok, lang_ids = hf_tokenizer_json(folder, tok_config, CODE_PATTERN)
    unk = tok.token_to_id(token_text(tok_config.get("unk_token"), "<unk>"))
    if unk is None:
        raise ConversionError(f"{folder}: the tokenizer has no unknown token")
    tok = padded_vocabulary(tok, int(hf.get("vocab_size", 0)))
    langs = pick_languages(lang_ids, langs, tok_config, generation, FAMILY["preferred"])
    cfg = multilingual_config(
        hf,
        generation,
        unk,
        lang_ids,
        langs,
        positional_table="learned",
        embedding_norm=True,
        final_logits_bias=True,
        scale_embedding=bool(hf.get("scale_embedding", False)),  # MBartConfig's default
    )
    cfg.extra["converted_from"] = src_name  # the app says where the model comes from
    licence = source_licence(folder, hf, FAMILY["licence"])
    cfg.extra["license"] = licence[0]  # a model fine-tuned from these weights is under it too
    card = model_card(src_name, cfg, FAMILY, licence, argv or [src_name, "--out", str(out)], [])
    return write_checkpoint(folder, out, cfg, convert_weights(read_weights(folder), cfg), (tok, tok), card)
