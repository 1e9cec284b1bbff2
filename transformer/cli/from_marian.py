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

Needs ``sentencepiece`` (``pip install -e ".[marian]"``), imported only here, for its model
file format; transformers itself is not needed to convert.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

from transformer.cli import ArgumentParser, fail, one_line

# what a Marian folder must hold (one of the weight files)
REQUIRED_FILES = ("config.json", "source.spm", "target.spm", "vocab.json")
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
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
# a score no unigram path ever prefers to a piece of the SentencePiece model (pieces of the
# shared vocabulary that this side's model lacks): the longest source sums at most a few
# thousand of SentencePiece's log-probabilities
UNREACHABLE_SCORE = -1e6
ACTIVATIONS = {"swish": "swish", "silu": "swish", "relu": "relu", "gelu": "gelu"}


class MarianError(ValueError):
    """The source is not a Marian model this converter can run exactly."""


def parse_args(argv=None):
    p = ArgumentParser(prog="python -m transformer.cli.from_marian", description=__doc__.split("\n")[0])
    p.add_argument(
        "src", metavar="SRC", help="a Marian folder (save_pretrained) or a hub id such as Helsinki-NLP/opus-mt-en-it"
    )
    p.add_argument("--out", required=True, help="checkpoint folder to write")
    p.add_argument("--force", action="store_true", help="replace --out if it exists and is not empty")
    p.add_argument("--revision", default=None, help="hub revision (branch, tag or commit) of a hub id")
    return p.parse_args(argv)


# ---------------------------------------------------------------- checks (before slow work)


def check_out(out: Path, force: bool) -> str | None:
    """Why ``out`` cannot be written, or None."""
    if out.exists() and not out.is_dir():
        return f"--out {out}: is a file; give a folder"
    if out.is_dir() and any(out.iterdir()) and not force:
        return f"--out {out}: exists and is not empty (pass --force to replace it)"
    if not out.parent.exists():
        return f"--out {out}: no such directory {out.parent}"
    return None


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
    missing = [name for name in REQUIRED_FILES if not (folder / name).is_file()]
    if not any((folder / name).is_file() for name in WEIGHT_FILES):
        missing.append(" or ".join(WEIGHT_FILES))
    if missing:
        return f"{folder}: a Marian folder needs {', '.join(missing)} (save the tokenizer there too)"
    return None


def locate_source(src: str, revision: str | None = None) -> Path:
    """The local folder of ``src``: the folder itself, or the hub download of a hub id.
    Raises :class:`MarianError` with a one-line reason."""
    from transformer.core.checkpoint import is_hub_id

    path = Path(src).expanduser()
    if path.exists():
        return path
    if not is_hub_id(src):
        raise MarianError(f"{src}: no such folder")
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id=src, revision=revision, allow_patterns=HUB_PATTERNS))
    except Exception as exc:  # offline, no such repo, gated...: any hub failure is one line
        raise MarianError(
            f"{src}: no such folder, and it could not be downloaded from the hub ({type(exc).__name__}: {exc})"
        ) from exc


# ---------------------------------------------------------------- config


def check_shapes(marian: dict) -> tuple[set, set, str]:
    """The head counts, FFN widths and activation of a Marian config, where one model class can
    run them (one head count, one width, a known activation); else :class:`MarianError`."""
    heads = {marian.get("encoder_attention_heads"), marian.get("decoder_attention_heads")}
    widths = {marian.get("encoder_ffn_dim"), marian.get("decoder_ffn_dim")}
    if len(heads) != 1 or len(widths) != 1:
        raise MarianError("encoder and decoder with different head counts or FFN widths are not supported")
    activation = ACTIVATIONS.get(str(marian.get("activation_function", "gelu")))
    if activation is None:
        raise MarianError(
            f"activation_function {marian.get('activation_function')!r} is not supported "
            f"(supported: {', '.join(ACTIVATIONS)})"
        )
    return heads, widths, activation


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

    heads, widths, activation = check_shapes(marian)
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
        h=heads.pop(),
        d_ff=widths.pop(),
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
    import torch
    from safetensors.torch import load_file

    if (folder / "model.safetensors").is_file():
        return load_file(str(folder / "model.safetensors"))
    return torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True)


def convert_weights(w: dict, cfg, marian: dict) -> dict:
    """Our state dict from Marian's tensors (names: ``Transformer.state_dict``)."""
    w = {k.removeprefix("model.") if k.startswith("model.") else k: v for k, v in w.items()}

    def first(*names):
        for name in names:
            if name in w:
                return w[name]
        raise MarianError(f"the weights lack {names[0]}")

    # each stack's own embedding when the file has it: transformers ties encoder.embed_tokens and
    # decoder.embed_tokens to shared only when tie_word_embeddings is true, else all three are apart
    src_embed = first("encoder.embed_tokens.weight", "shared.weight")
    out = {"src_embed.weight": src_embed}
    if cfg.tie_embeddings == "all":
        tgt_embed = src_embed
    else:
        tgt_embed = out["tgt_embed.weight"] = first("decoder.embed_tokens.weight", "shared.weight")
    if cfg.tie_embeddings == "none":
        out["proj.weight"] = first("lm_head.weight")
    bias = w.get("final_logits_bias")
    out["logits_bias"] = bias.reshape(-1) if bias is not None else tgt_embed.new_zeros(cfg.tgt_vocab_size)

    def attention(ours: str, theirs: str):
        for a, b in (("q_proj", "q_proj"), ("k_proj", "k_proj"), ("v_proj", "v_proj"), ("o_proj", "out_proj")):
            for p in ("weight", "bias"):
                out[f"{ours}.{a}.{p}"] = first(f"{theirs}.{b}.{p}")

    def norm(ours: str, theirs: str):
        out[f"{ours}.norm.gain"] = first(f"{theirs}.weight")
        out[f"{ours}.norm.bias"] = first(f"{theirs}.bias")

    def ffn(ours: str, theirs: str):
        for a, b in (("linear1", "fc1"), ("linear2", "fc2")):
            for p in ("weight", "bias"):
                out[f"{ours}.ffn.{a}.{p}"] = first(f"{theirs}.{b}.{p}")

    for i in range(cfg.n_encoder_layers):
        ours, theirs = f"encoder_layers.{i}", f"encoder.layers.{i}"
        attention(f"{ours}.self_attn", f"{theirs}.self_attn")
        norm(f"{ours}.self_attn_block", f"{theirs}.self_attn_layer_norm")
        ffn(ours, theirs)
        norm(f"{ours}.ffn_block", f"{theirs}.final_layer_norm")
    for i in range(cfg.n_decoder_layers):
        ours, theirs = f"decoder_layers.{i}", f"decoder.layers.{i}"
        attention(f"{ours}.self_attn", f"{theirs}.self_attn")
        norm(f"{ours}.self_attn_block", f"{theirs}.self_attn_layer_norm")
        attention(f"{ours}.cross_attn", f"{theirs}.encoder_attn")
        norm(f"{ours}.cross_attn_block", f"{theirs}.encoder_attn_layer_norm")
        ffn(ours, theirs)
        norm(f"{ours}.ffn_block", f"{theirs}.final_layer_norm")
    extra = [
        k
        for k in w
        if k.startswith(("encoder.layernorm", "decoder.layernorm", "encoder.layer_norm", "decoder.layer_norm"))
    ]
    if extra:
        raise MarianError(f"the weights have norms transformers' Marian does not use ({', '.join(extra)})")
    return out


# ---------------------------------------------------------------- tokenizers


def spm_tokenizer(spm_path: Path, vocab: dict[str, int]):
    """A ``tokenizers`` unigram tokenizer that splits text as SentencePiece model ``spm_path``
    does, with vocab.json's ids: what ``MarianTokenizer`` gives (its input_ids without the
    final </s>, which ``Translator.encode_source`` adds).

    The unigram model holds every piece of ``vocab`` at its id. Pieces of the SentencePiece
    model keep their scores; the others (the other language's pieces of a shared vocabulary,
    and the specials) get :data:`UNREACHABLE_SCORE`, so no segmentation of this side uses
    them while the model's own pieces can spell the text, except single characters, which
    stand where SentencePiece sees an unknown character. Known difference: a run of several
    characters SentencePiece does not know is one unknown piece to it (one id, usually
    <unk>), while here a character of the other language in the run keeps its id.

    The normaliser is the model's own (its precompiled character map), then SentencePiece's
    whitespace rules: runs of spaces collapse, the ends are stripped, and "▁" marks each word
    start. Decoding joins the pieces,
    turns "▁" into spaces and strips the ends, and drops <unk>, as ``MarianTokenizer.decode``
    with ``skip_special_tokens=True`` does. Language tokens (``>>ita<<``) of multilingual
    models are split off as they are.
    """
    from sentencepiece import sentencepiece_model_pb2
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(spm_path.read_bytes())
    if proto.trainer_spec.model_type != 1:  # 1 = UNIGRAM (OPUS-MT's)
        raise MarianError(f"{spm_path}: not a unigram SentencePiece model (model_type {proto.trainer_spec.model_type})")
    normal = {p.piece: p.score for p in proto.pieces if p.type in (1, 4)}  # NORMAL, USER_DEFINED
    by_id = sorted(vocab.items(), key=lambda kv: kv[1])
    if [i for _, i in by_id] != list(range(len(by_id))):
        raise MarianError(f"vocabulary ids are not 0..{len(by_id) - 1}")
    # SentencePiece reads a character it has no piece for as an unknown piece scored
    # min - 10, whose text MarianTokenizer then looks up in vocab.json: a character of the
    # other language's pieces gets that score here, so it is chosen where SentencePiece's
    # unknown would be, with the id MarianTokenizer finds for it
    unknown = min(normal.values()) - 10
    pieces = [
        (piece, normal[piece] if piece in normal else unknown if len(piece) == 1 else UNREACHABLE_SCORE)
        for piece, _ in by_id
    ]
    tok = Tokenizer(models.Unigram(pieces, unk_id=vocab["<unk>"], byte_fallback=False))
    steps = []
    if proto.normalizer_spec.precompiled_charsmap:
        steps.append(normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap))
    steps += [normalizers.Replace(Regex(" {2,}"), " "), normalizers.Strip()]
    tok.normalizer = normalizers.Sequence(steps)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=False)
    tok.decoder = decoders.Sequence(
        [decoders.Replace("<unk>", ""), decoders.Replace("▁", " "), decoders.Fuse(), decoders.Strip(" ", 10**6, 10**6)]
    )
    tok.add_special_tokens([AddedToken(t, normalized=False) for t in ("</s>", "<unk>", "<pad>") if t in vocab])
    codes = [t for t in vocab if re.fullmatch(r">>.+<<", t)]
    if codes:
        tok.add_tokens([AddedToken(t, normalized=False) for t in codes])
    return tok


def load_vocabs(folder: Path, marian: dict) -> tuple[dict, dict]:
    src = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
    if marian.get("share_encoder_decoder_embeddings", True):
        return src, src
    target = folder / "target_vocab.json"
    if not target.is_file():
        raise MarianError(f"{folder}: share_encoder_decoder_embeddings is false but there is no target_vocab.json")
    return src, json.loads(target.read_text(encoding="utf-8"))


# ---------------------------------------------------------------- model card


def source_licence(folder: Path, marian: dict) -> tuple[str, bool]:
    """(licence, stated): from the README's front matter or config.json, else OPUS-MT's."""
    readme = folder / "README.md"
    if readme.is_file():
        text = readme.read_text(encoding="utf-8", errors="replace")
        front = re.match(r"---\n(.*?)\n---", text, re.S)
        if front:
            found = re.search(r"^license:\s*(\S+)", front.group(1), re.M)
            if found:
                return found.group(1).strip("'\""), True
    if isinstance(marian.get("license"), str):
        return marian["license"], True
    return OPUS_MT_LICENSE, False


def languages(folder: Path, src: str) -> tuple[str, str]:
    """(source, target) languages: tokenizer_config.json's, else the opus-mt-XX-YY name."""
    config = folder / "tokenizer_config.json"
    if config.is_file():
        data = json.loads(config.read_text(encoding="utf-8"))
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
    from transformer.core.checkpoint import assign_weights, save_checkpoint
    from transformer.core.model import build_model

    marian = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    src_vocab, tgt_vocab = load_vocabs(folder, marian)
    gen_file = folder / "generation_config.json"
    generation = json.loads(gen_file.read_text(encoding="utf-8")) if gen_file.is_file() else {}
    cfg = convert_config(marian, src_vocab, tgt_vocab, languages(folder, src_name), generation)
    cfg.extra["converted_from"] = src_name  # the app says where the model comes from
    licence, stated = source_licence(folder, marian)
    # the licence travels with the weights: a model fine-tuned from them is under it too (its card says so)
    cfg.extra["license"] = licence
    src_tok = spm_tokenizer(folder / "source.spm", src_vocab)
    tgt_tok = spm_tokenizer(folder / "target.spm", tgt_vocab)
    model = build_model(cfg)  # every parameter is then overwritten with Marian's
    tensors = convert_weights(read_marian_weights(folder), cfg, marian)
    assign_weights(model, {k: v.float() for k, v in tensors.items()}, folder)
    card = model_card(src_name, cfg, licence, stated, ignored_switches(marian), argv or [src_name, "--out", str(out)])
    return save_checkpoint(out, model.eval(), src_tok, tgt_tok, model_card=card)


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


__all__ = ["convert", "main", "spm_tokenizer", "convert_config", "convert_weights", "MarianError"]

if __name__ == "__main__":
    raise SystemExit(main())
