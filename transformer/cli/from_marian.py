"""Convert a published Marian (OPUS-MT) model into one of our checkpoints.

    python -m transformer.cli.from_marian Helsinki-NLP/opus-mt-en-it --out checkpoints/opus-mt-en-it
    python -m transformer.cli.from_marian path/to/saved --out checkpoints/mine --force

SRC is a folder written by transformers' ``MarianMTModel.save_pretrained`` and
``MarianTokenizer.save_pretrained`` (config.json, model.safetensors or pytorch_model.bin,
source.spm, target.spm, vocab.json), or a hub id, downloaded with
``huggingface_hub.snapshot_download``. The result opens as ours do (``load_translator``, the
evaluate command, the app): config.json, model.safetensors, the two tokenizers as
``tokenizers`` JSON and a model card crediting the source and its licence.

The mapping (docs/marian.md has the reasons): Marian is post-LN with no final norm, swish
FFN, the [sin | cos] sinusoidal table, embeddings scaled by sqrt(d_model), a final logits
bias, one shared vocabulary (vocab.json) with tied embeddings or a separate target one, and
no start-of-sentence token: sources end with ``</s>``, the decoder starts from ``<pad>``.
Each SentencePiece model becomes a ``tokenizers`` unigram model over vocab.json's ids.

Needs ``sentencepiece`` (``pip install -e ".[marian]"``), for its model file format;
transformers itself is not needed to convert. ``python -m transformer.cli.convert`` converts
Marian models the same way, and the other families (``transformer.cli.conversion`` holds what
they share).
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

from transformer.cli import conversion, fail, one_line
from transformer.cli.conversion import WEIGHT_FILES, ConversionError, check_out, layer_weights, read_json

MODEL_TYPE = "marian"
# what a Marian folder must hold (one of the weight files)
REQUIRED_FILES = ("config.json", "source.spm", "target.spm", "vocab.json")
# what a hub download fetches: the files above, the tokenizer's settings and the card
HUB_PATTERNS = [
    *REQUIRED_FILES,
    *WEIGHT_FILES,
    "target_vocab.json",
    "tokenizer_config.json",
    "generation_config.json",
    "README.md",
]
# OPUS-MT's licence, said on every model card of Helsinki-NLP; used when the source names none
OPUS_MT_LICENSE = "cc-by-4.0"


class MarianError(ConversionError):
    """The source is not a Marian model this converter can run exactly."""


def parse_args(argv=None):
    p = conversion.converter_parser(
        "python -m transformer.cli.from_marian",
        __doc__.split("\n")[0],
        "a Marian folder (save_pretrained) or a hub id such as Helsinki-NLP/opus-mt-en-it",
    )
    return p.parse_args(argv)


# ---------------------------------------------------------------- checks (before slow work)


def marian_problem(folder: Path) -> str | None:
    """Why ``folder`` is not a Marian model folder, or None."""
    if not folder.is_dir():
        return f"{folder}: not a folder"
    config = folder / "config.json"
    if not config.is_file():
        return f"{folder}: no config.json (not a model saved with save_pretrained)"
    try:
        model_type = json.loads(config.read_text(encoding="utf-8")).get("model_type")
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError) as exc:
        return f"{config}: not valid JSON ({exc})"
    if model_type != "marian":
        return f"{folder}: not a Marian model (config.json model_type is {model_type!r}, not 'marian')"
    missing = conversion.missing_files(folder, REQUIRED_FILES)
    if missing:
        return f"{folder}: a Marian folder needs {', '.join(missing)} (save the tokenizer there too)"
    return None


def locate_source(src: str, revision: str | None = None) -> Path:
    """The local folder of ``src``: the folder itself, or the hub download of a hub id.
    Raises :class:`MarianError` with a one-line reason."""
    try:
        return conversion.locate_source(src, revision, HUB_PATTERNS)
    except ConversionError as exc:
        raise MarianError(str(exc)) from exc


folder_problem = marian_problem  # the name transformer.cli.convert asks every family for


# ---------------------------------------------------------------- config


def check_shapes(marian: dict) -> tuple[int, int, str]:
    """(h, d_ff, activation) of a Marian config, where one model class can run it (one head
    count, one width, a known activation); else :class:`MarianError`."""
    try:
        return conversion.check_shapes(marian)
    except ConversionError as exc:
        raise MarianError(str(exc)) from exc


def check_vocabs(src_vocab: dict, tgt_vocab: dict, vocab_size: int, tgt_size: int, eos: int) -> None:
    """The vocabularies have the sizes config.json says, and the specials where it says."""
    if len(src_vocab) != vocab_size or len(tgt_vocab) != tgt_size:
        raise MarianError(
            f"vocabularies of {len(src_vocab)} and {len(tgt_vocab)} tokens, but config.json says "
            f"{vocab_size} and {tgt_size}"
        )
    for side, vocab in (("source", src_vocab), ("target", tgt_vocab)):
        if vocab.get("</s>") != eos or "<unk>" not in vocab or "<pad>" not in vocab:
            raise MarianError(f"the {side} vocabulary lacks <unk> or <pad>, or its </s> is not eos_token_id={eos}")


def convert_config(
    marian: dict, src_vocab: dict[str, int], tgt_vocab: dict[str, int], langs: tuple[str, str], generation: dict
):
    """Our ``TransformerConfig`` for a Marian config.json and generation_config.json (as
    dicts; the latter may be empty) and its vocabularies."""
    from transformer.core.config import TransformerConfig

    def get(key, default=None):
        return marian.get(key, default)

    h, d_ff, activation = check_shapes(marian)
    shared = bool(get("share_encoder_decoder_embeddings", True))
    tied = bool(get("tie_word_embeddings", True))
    vocab_size = int(get("vocab_size"))
    tgt_size = vocab_size if shared else int(get("decoder_vocab_size") or vocab_size)
    pad, eos = int(get("pad_token_id")), int(get("eos_token_id"))
    start = int(get("decoder_start_token_id", pad))
    check_vocabs(src_vocab, tgt_vocab, vocab_size, tgt_size, eos)
    # what generate never emits: the bad_words_ids of one token (OPUS-MT's generation configs
    # ban <pad>, the start token, whose zero embedding row would otherwise often win)
    bad = generation.get("bad_words_ids", marian.get("bad_words_ids")) or [[pad]]
    banned = sorted({int(ids[0]) for ids in bad if len(ids) == 1})
    if src_vocab["<pad>"] != pad:
        raise MarianError(f"the source vocabulary's <pad> is {src_vocab['<pad>']}, not pad_token_id={pad}")
    return TransformerConfig(
        d_model=int(get("d_model")),
        h=h,
        d_ff=d_ff,
        n_encoder_layers=int(get("encoder_layers")),
        n_decoder_layers=int(get("decoder_layers")),
        dropout=float(get("dropout", 0.1)),
        attn_dropout=float(get("attention_dropout", 0.0)),
        max_positions=int(get("max_position_embeddings")),
        # transformers' Marian: post-LN (BART style), nn.LayerNorm's eps, no final or embedding norm
        norm_placement="post",
        layer_norm_eps=1e-5,
        activation=activation,
        positional_table="halves",
        scale_embedding=bool(get("scale_embedding", False)),
        final_logits_bias=True,
        src_vocab_size=vocab_size,
        tgt_vocab_size=tgt_size,
        src_pad_id=pad,
        src_unk_id=src_vocab["<unk>"],
        src_sos_id=None,
        src_eos_id=eos,
        # the target vocabulary's own <pad>: with separate vocabularies transformers' decoder still
        # starts from config.json's pad_token_id, a source id, which then is a target piece
        tgt_pad_id=tgt_vocab["<pad>"],
        tgt_unk_id=tgt_vocab["<unk>"],
        tgt_sos_id=start,
        tgt_eos_id=eos,
        tie_embeddings="all" if shared and tied else ("decoder" if tied else "none"),
        tgt_banned_ids=banned,
        src_lang=langs[0],
        tgt_lang=langs[1],
        storage_dtype="float32",
    )


def ignored_switches(marian: dict) -> list[str]:
    """Keys of older OPUS-MT config.json files that transformers' Marian ignores (it is always
    post-LN with static sinusoids, no final or embedding norm): listed in the card when they
    say otherwise, since the converted model runs as transformers does."""
    expected = {
        "normalize_before": False,
        "normalize_embedding": False,
        "add_final_layer_norm": False,
        "static_position_embeddings": True,
        "add_bias_logits": False,
    }
    return [f"{k}={marian[k]!r}" for k, v in expected.items() if k in marian and marian[k] != v]


# ---------------------------------------------------------------- weights


def read_marian_weights(folder: Path) -> dict:
    """Marian's tensors by transformers' names (safetensors preferred; a .bin is read with
    ``weights_only=True``, nothing unpickled)."""
    return conversion.read_weights(folder)


def convert_weights(w: dict, cfg, marian: dict) -> dict:
    """Our state dict from Marian's tensors (names: ``Transformer.state_dict``)."""
    w = {k.removeprefix("model."): v for k, v in w.items()}
    extra = [
        k
        for k in w
        if k.startswith(("encoder.layernorm", "decoder.layernorm", "encoder.layer_norm", "decoder.layer_norm"))
    ]
    if extra:
        raise MarianError(f"the weights have norms transformers' Marian does not use ({', '.join(extra)})")
    try:
        return {**conversion.embedding_weights(w, cfg), **layer_weights(w, cfg)}
    except ConversionError as exc:
        raise MarianError(str(exc)) from exc


# ---------------------------------------------------------------- tokenizers


def spm_tokenizer(spm_path: Path, vocab: dict[str, int]):
    """A ``tokenizers`` unigram tokenizer that splits text as SentencePiece model ``spm_path``
    does, with vocab.json's ids: what ``MarianTokenizer`` gives (its input_ids without the
    final </s>, which ``stepping.frame_source`` adds); see ``conversion.spm_unigram``.

    The normaliser is the model's own (its precompiled character map), then SentencePiece's
    whitespace rules: runs of spaces collapse, the ends are stripped, and "▁" marks each word
    start. Decoding joins the pieces, turns "▁" into spaces and strips the ends, and drops
    <unk>, as ``MarianTokenizer.decode`` with ``skip_special_tokens=True`` does. Language tokens
    (``>>ita<<``) of multilingual models are split off as they are.
    """
    from tokenizers import AddedToken

    proto = conversion.read_spm(spm_path)
    try:
        tok = conversion.spm_unigram(proto, vocab)
    except ConversionError as exc:
        raise MarianError(f"{spm_path}: {exc}") from exc
    tok.add_special_tokens([AddedToken(t, normalized=False) for t in ("</s>", "<unk>", "<pad>") if t in vocab])
    codes = [t for t in vocab if re.fullmatch(r">>.+<<", t)]
    if codes:
        tok.add_tokens([AddedToken(t, normalized=False) for t in codes])
    return tok


def load_vocabs(folder: Path, marian: dict) -> tuple[dict, dict]:
    src = read_json(folder / "vocab.json")
    if marian.get("share_encoder_decoder_embeddings", True):
        return src, src
    target = folder / "target_vocab.json"
    if not target.is_file():
        raise MarianError(f"{folder}: share_encoder_decoder_embeddings is false but there is no target_vocab.json")
    return src, read_json(target)


# ---------------------------------------------------------------- model card


def source_licence(folder: Path, marian: dict) -> tuple[str, bool]:
    """(licence, stated): from the README's front matter or config.json, else OPUS-MT's."""
    return conversion.source_licence(folder, marian, OPUS_MT_LICENSE)


def languages(folder: Path, src: str) -> tuple[str, str]:
    """(source, target) languages: tokenizer_config.json's, else the opus-mt-XX-YY name."""
    config = folder / "tokenizer_config.json"
    if config.is_file():
        data = read_json(config)
        if data.get("source_lang") and data.get("target_lang"):
            return str(data["source_lang"]), str(data["target_lang"])
    m = re.search(r"opus-mt-(?:tc-[a-z]+-)?([A-Za-z_]+)-([A-Za-z_]+)", src)
    return (m.group(1), m.group(2)) if m else ("src", "tgt")


def model_card(src: str, cfg, licence: str, stated: bool, ignored: list[str], argv: list[str]) -> str:
    hub = not Path(src).expanduser().exists()
    name = f"[{src}](https://huggingface.co/{src})" if hub else f"`{src}`"
    note = "" if stated else f" (the source names no licence; {OPUS_MT_LICENSE} is OPUS-MT's)"
    lines = [
        "---",
        f"license: {licence}",
        "language:",
        f"- {cfg.src_lang}",
        f"- {cfg.tgt_lang}",
        "pipeline_tag: translation",
        "tags:",
        "- translation",
        "- marian",
        "- opus-mt",
        *([f"base_model: {src}"] if hub else []),
        "---",
        "",
        f"# {Path(src).name} ({cfg.src_lang}-{cfg.tgt_lang}), converted",
        "",
        f"The Marian translation model {name}, converted to this project's checkpoint format: the same",
        "weights, run by its own Transformer class, so the explorer can show what happens inside it.",
        "Teacher-forced logits, greedy and beam-search output and cross-attention match transformers'",
        "`MarianMTModel` (tests/test_marian.py checks this on small models).",
        "",
        "## Credit and licence",
        "",
        "The weights and tokenizers are the work of the model's authors (OPUS-MT, Helsinki-NLP: Tiedemann",
        f"and Thottingal, 2020), released under **{licence}**{note}. The conversion changes no number; cite",
        "and credit the original model.",
        "",
        "## Conversion",
        "",
        "```",
        "python -m transformer.cli.from_marian " + " ".join(argv),
        "```",
        "",
        f"{cfg.d_model}-wide, {cfg.n_encoder_layers}+{cfg.n_decoder_layers} layers, {cfg.h} heads, FFN {cfg.d_ff} "
        f"({cfg.activation}), vocabularies of {cfg.src_vocab_size} / {cfg.tgt_vocab_size} tokens "
        f"(embeddings tied: {cfg.tie_embeddings}). See docs/marian.md for how Marian's switches map to ours.",
    ]
    if ignored:
        lines += [
            "",
            f"config.json also says {', '.join(ignored)}; transformers' Marian ignores these, and so does this.",
        ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- conversion


def convert(folder: Path, out: Path, src_name: str, argv: list[str] | None = None) -> Path:
    """Write our checkpoint for the Marian folder ``folder`` at ``out`` (replaced whole)."""
    marian = read_json(folder / "config.json")
    src_vocab, tgt_vocab = load_vocabs(folder, marian)
    generation = read_json(folder / "generation_config.json", required=False)
    cfg = convert_config(marian, src_vocab, tgt_vocab, languages(folder, src_name), generation)
    cfg.extra["converted_from"] = src_name  # the app says where the model comes from
    licence, stated = source_licence(folder, marian)
    # the licence travels with the weights: a model fine-tuned from them is under it too (its card says so)
    cfg.extra["license"] = licence
    src_tok = spm_tokenizer(folder / "source.spm", src_vocab)
    tgt_tok = spm_tokenizer(folder / "target.spm", tgt_vocab)
    tensors = convert_weights(read_marian_weights(folder), cfg, marian)
    card = model_card(src_name, cfg, licence, stated, ignored_switches(marian), argv or [src_name, "--out", str(out)])
    return conversion.write_checkpoint(folder, out, cfg, tensors, (src_tok, tgt_tok), card)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    out = Path(args.out).expanduser()
    problem = check_out(out, args.force)
    if problem:
        fail(problem)
    try:
        import sentencepiece  # noqa: F401
    except ImportError:
        fail('converting a Marian model needs sentencepiece: pip install -e ".[marian]"')
    try:
        folder = locate_source(args.src, args.revision)
    except MarianError as exc:
        fail(str(exc))
    problem = marian_problem(folder)
    if problem:
        fail(problem)
    t0 = time.perf_counter()
    try:
        convert(folder, out, args.src, argv)
    except (MarianError, ValueError, OSError) as exc:
        fail(f"{args.src}: {one_line(str(exc))}")
    print(f"converted {args.src} to {out} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


__all__ = ["convert", "main", "spm_tokenizer", "convert_config", "convert_weights", "MarianError", "check_out"]

if __name__ == "__main__":
    raise SystemExit(main())
