"""What the converters of published models share (``transformer.cli.convert`` and its families:
``from_marian``, ``from_m2m100``, ``from_mbart``).

A family is a config map, a weight map and a tokenizer; around them every conversion does the
same things: check ``--out`` before any slow work, find the source folder (a hub id is fetched
with ``huggingface_hub.snapshot_download``), read its JSON files and weights with one-line errors,
map the encoder and decoder layers (the same BART-style names in all three families), and turn
SentencePiece models or a transformers ``tokenizer.json`` into our ``tokenizers`` JSON, which
encodes text without specials (the config says how a source is framed).

Nothing here imports transformers: converting needs ``safetensors``, ``tokenizers`` and, for a
SentencePiece model file, ``sentencepiece`` (for its protobuf format).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

# the weight files a transformers folder may hold, the first one found is read
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
# a score no unigram path ever prefers to a piece of the SentencePiece model: the longest
# sentence sums at most a few thousand of SentencePiece's log-probabilities
UNREACHABLE_SCORE = -1e6
# transformers' ACT2FN names of the FFN nonlinearities the model runs exactly ("gelu" is the erf one)
ACTIVATIONS = {"swish": "swish", "silu": "swish", "relu": "relu", "gelu": "gelu"}
# SentencePiece piece types (sentencepiece_model.proto)
NORMAL, USER_DEFINED = 1, 4
# transformers' clean_up_tokenization: spaces its decode takes out when a tokenizer asks for it
CLEAN_UP = [(" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'")]
CLEAN_UP += [(" n't", "n't"), (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")]


class ConversionError(ValueError):
    """The source is not a model this converter can run exactly; the message is one line."""


# ---------------------------------------------------------------- the source and the output


def check_out(out: Path, force: bool) -> str | None:
    """Why ``out`` cannot be written, or None."""
    if out.exists() and not out.is_dir():
        return f"--out {out}: is a file; give a folder"
    if out.is_dir() and any(out.iterdir()) and not force:
        return f"--out {out}: exists and is not empty (pass --force to replace it)"
    if not out.parent.exists():
        return f"--out {out}: no such directory {out.parent}"
    return None


def locate_source(src: str, revision: str | None, patterns: list[str]) -> Path:
    """The local folder of ``src``: the folder itself, or the files of hub id ``src`` that match
    ``patterns``, downloaded. Raises :class:`ConversionError` with a one-line reason."""
    from transformer.core.checkpoint import is_hub_id

    path = Path(src).expanduser()
    if path.exists():
        return path
    if not is_hub_id(src):
        raise ConversionError(f"{src}: no such folder")
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id=src, revision=revision, allow_patterns=patterns))
    except Exception as exc:  # offline, no such repo, gated...: any hub failure is one line
        raise ConversionError(
            f"{src}: no such folder, and it could not be downloaded from the hub ({type(exc).__name__}: {exc})"
        ) from exc


def read_json(path: Path, required: bool = True) -> dict:
    """The JSON object in ``path`` ({} for a missing file that is not ``required``)."""
    if not path.is_file():
        if required:
            raise ConversionError(f"{path}: missing")
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConversionError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ConversionError(f"{path}: not a JSON object")
    return data


def model_type_of(folder: Path) -> str | None:
    """config.json's ``model_type``; :class:`ConversionError` when the folder has no readable config."""
    if not folder.is_dir():
        raise ConversionError(f"{folder}: not a folder")
    if not (folder / "config.json").is_file():
        raise ConversionError(f"{folder}: no config.json (not a model saved with save_pretrained)")
    return read_json(folder / "config.json").get("model_type")


def missing_files(folder: Path, required: tuple[str, ...]) -> list[str]:
    """The files of ``required`` (and a weight file) that ``folder`` lacks."""
    missing = [name for name in required if not (folder / name).is_file()]
    if not any((folder / name).is_file() for name in WEIGHT_FILES):
        missing.append(" or ".join(WEIGHT_FILES))
    return missing


def source_licence(folder: Path, config: dict, fallback: str) -> tuple[str, bool]:
    """(licence, stated): from the README's front matter or config.json, else ``fallback`` (the
    licence the family's authors publish under)."""
    readme = folder / "README.md"
    if readme.is_file():
        text = readme.read_text(encoding="utf-8", errors="replace")
        front = re.match(r"---\n(.*?)\n---", text, re.S)
        if front:
            found = re.search(r"^license:\s*(\S+)", front.group(1), re.M)
            if found:
                return found.group(1).strip("'\""), True
    if isinstance(config.get("license"), str):
        return config["license"], True
    return fallback, False


# ---------------------------------------------------------------- config


def check_shapes(config: dict) -> tuple[int, int, str]:
    """(h, d_ff, activation) of a BART-style config.json, where one model class can run it (one
    head count, one FFN width, a known activation); else :class:`ConversionError`."""
    heads = {config.get("encoder_attention_heads"), config.get("decoder_attention_heads")}
    widths = {config.get("encoder_ffn_dim"), config.get("decoder_ffn_dim")}
    if len(heads) != 1 or len(widths) != 1:
        raise ConversionError("encoder and decoder with different head counts or FFN widths are not supported")
    activation = ACTIVATIONS.get(str(config.get("activation_function", "gelu")))
    if activation is None:
        raise ConversionError(
            f"activation_function {config.get('activation_function')!r} is not supported "
            f"(supported: {', '.join(ACTIVATIONS)})"
        )
    return int(heads.pop()), int(widths.pop()), activation


def banned_ids(generation: dict, config: dict, pad: int) -> list[int]:
    """What generate never emits: the bad_words_ids of one token, and the pad id, which our decoders
    read as "after the end" (greedy decoding stops at it, beam search never proposes it)."""
    bad = generation.get("bad_words_ids", config.get("bad_words_ids")) or []
    return sorted({int(ids[0]) for ids in bad if len(ids) == 1} | {pad})


# ---------------------------------------------------------------- weights


def read_weights(folder: Path) -> dict:
    """The tensors by transformers' names, without the ``model.`` prefix (safetensors preferred;
    a .bin is read with ``weights_only=True``, nothing unpickled)."""
    import torch
    from safetensors.torch import load_file

    if (folder / "model.safetensors").is_file():
        w = load_file(str(folder / "model.safetensors"))
    else:
        w = torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True)
    return {k.removeprefix("model."): v for k, v in w.items()}


def first(w: dict, *names: str):
    """The first of ``names`` that ``w`` holds."""
    for name in names:
        if name in w:
            return w[name]
    raise ConversionError(f"the weights lack {names[0]}")


def layer_weights(w: dict, cfg) -> dict:
    """Our encoder and decoder layers' tensors from transformers' BART-style names (Marian, M2M100
    and mBART name them alike): attention, its norm, the FFN and its norm, in each layer."""
    out = {}

    def attention(ours: str, theirs: str):
        for a, b in (("q_proj", "q_proj"), ("k_proj", "k_proj"), ("v_proj", "v_proj"), ("o_proj", "out_proj")):
            for p in ("weight", "bias"):
                out[f"{ours}.{a}.{p}"] = first(w, f"{theirs}.{b}.{p}")

    def norm(ours: str, theirs: str):
        out[f"{ours}.norm.gain"] = first(w, f"{theirs}.weight")
        out[f"{ours}.norm.bias"] = first(w, f"{theirs}.bias")

    def ffn(ours: str, theirs: str):
        for a, b in (("linear1", "fc1"), ("linear2", "fc2")):
            for p in ("weight", "bias"):
                out[f"{ours}.ffn.{a}.{p}"] = first(w, f"{theirs}.{b}.{p}")

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
    return out


def embedding_weights(w: dict, cfg) -> dict:
    """Token embeddings, output projection and logits bias by ``cfg.tie_embeddings``: each stack's
    own embedding when the file has it (transformers ties them to ``shared`` only when
    tie_word_embeddings is true, else they are apart)."""
    src_embed = first(w, "encoder.embed_tokens.weight", "shared.weight")
    out = {"src_embed.weight": src_embed}
    tgt_embed = src_embed
    if cfg.tie_embeddings != "all":
        tgt_embed = out["tgt_embed.weight"] = first(w, "decoder.embed_tokens.weight", "shared.weight")
    if cfg.tie_embeddings == "none":
        out["proj.weight"] = first(w, "lm_head.weight")
    if cfg.final_logits_bias:
        bias = w.get("final_logits_bias")
        out["logits_bias"] = bias.reshape(-1) if bias is not None else tgt_embed.new_zeros(cfg.tgt_vocab_size)
    return out


def final_norms(w: dict) -> dict:
    """The pre-norm stacks' final LayerNorms (``encoder.layer_norm``, ``decoder.layer_norm``)."""
    return {
        f"{ours}_norm.{p}": first(w, f"{ours}.layer_norm.{q}")
        for ours in ("encoder", "decoder")
        for p, q in (("gain", "weight"), ("bias", "bias"))
    }


def write_checkpoint(folder: Path, out: Path, cfg, tensors: dict, tokenizers: tuple, card: str) -> Path:
    """Build the model of ``cfg``, fill it with ``tensors`` (every parameter, checked by name and
    shape) and save it at ``out`` (replaced whole, atomically) with its tokenizers and card."""
    from transformer.core.checkpoint import assign_weights, save_checkpoint
    from transformer.core.model import build_model

    model = build_model(cfg)  # every parameter is then overwritten with the source's
    assign_weights(model, {k: v.float() for k, v in tensors.items()}, folder)
    return save_checkpoint(out, model.eval(), *tokenizers, model_card=card)


# ---------------------------------------------------------------- tokenizers


def read_spm(path: Path):
    """The SentencePiece ``ModelProto`` in ``path``."""
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto()
    try:
        proto.ParseFromString(path.read_bytes())
    except Exception as exc:  # protobuf's DecodeError and friends
        raise ConversionError(f"{path}: not a SentencePiece model ({type(exc).__name__})") from exc
    return proto


def check_ids(vocab: dict[str, int]) -> list[str]:
    """The tokens of ``vocab`` in id order; its ids must be 0..n-1."""
    by_id = sorted(vocab.items(), key=lambda kv: kv[1])
    if [i for _, i in by_id] != list(range(len(by_id))):
        raise ConversionError(f"vocabulary ids are not 0..{len(by_id) - 1}")
    return [t for t, _ in by_id]


def spm_normalizer(proto):
    """SentencePiece's normalisation: its precompiled character map, then (unless the model says
    otherwise) runs of spaces collapsed and the ends stripped."""
    from tokenizers import Regex, normalizers

    steps = []
    if proto.normalizer_spec.precompiled_charsmap:
        steps.append(normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap))
    if proto.normalizer_spec.remove_extra_whitespaces:
        steps += [normalizers.Replace(Regex(" {2,}"), " "), normalizers.Strip()]
    return normalizers.Sequence(steps)


def spm_decoder(unk: str = "<unk>"):
    """SentencePiece's decoding as transformers' SentencePiece tokenizers end it: the pieces
    joined, "▁" made a space, the ends stripped, and ``unk`` dropped."""
    from tokenizers import decoders

    return decoders.Sequence(
        [decoders.Replace(unk, ""), decoders.Replace("▁", " "), decoders.Fuse(), decoders.Strip(" ", 10**6, 10**6)]
    )


def spm_unigram(proto, vocab: dict[str, int], unk: str = "<unk>"):
    """A ``tokenizers`` unigram model that splits text as the unigram SentencePiece ``proto``
    does, with ``vocab``'s ids (a transformers vocab.json over the pieces).

    Every token of ``vocab`` is a piece at its id. Pieces of the SentencePiece model keep their
    scores; the others (another language's pieces of a shared vocabulary, the specials) get
    :data:`UNREACHABLE_SCORE`, so no segmentation uses them while the model's own pieces can spell
    the text, except single characters, which stand where SentencePiece sees an unknown character
    (it scores those min - 10, and transformers then looks the character up in the vocabulary).
    Known difference: a run of several characters SentencePiece does not know is one unknown
    piece to it, while here a character of another language in the run keeps its id.
    """
    from tokenizers import Tokenizer, models, pre_tokenizers

    if proto.trainer_spec.model_type != 1:  # 1 = UNIGRAM
        raise ConversionError(f"not a unigram SentencePiece model (model_type {proto.trainer_spec.model_type})")
    normal = {p.piece: p.score for p in proto.pieces if p.type in (NORMAL, USER_DEFINED)}
    unknown = min(normal.values()) - 10
    pieces = [
        (piece, normal[piece] if piece in normal else unknown if len(piece) == 1 else UNREACHABLE_SCORE)
        for piece in check_ids(vocab)
    ]
    tok = Tokenizer(models.Unigram(pieces, unk_id=vocab[unk], byte_fallback=False))
    tok.normalizer = spm_normalizer(proto)
    prepend = "always" if proto.normalizer_spec.add_dummy_prefix else "never"
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme=prepend, split=False)
    tok.decoder = spm_decoder(unk)
    return tok


def spm_bpe(proto, vocab: dict[str, int], unk: str = "<unk>"):
    """A ``tokenizers`` BPE model that splits text as the BPE SentencePiece ``proto`` does, with
    ``vocab``'s ids. SentencePiece merges the adjacent pair whose joined piece scores highest (its
    pieces are in score order); the merges here are every split of each piece into two pieces,
    ranked by the joined piece's place, so the same pairs merge in the same order. Consecutive
    characters it does not know become one <unk>, as SentencePiece's one unknown piece does."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

    if proto.trainer_spec.model_type != 2:  # 2 = BPE
        raise ConversionError(f"not a BPE SentencePiece model (model_type {proto.trainer_spec.model_type})")
    check_ids(vocab)
    ranked = [p.piece for p in proto.pieces if p.type == NORMAL and p.piece in vocab]
    rank = {piece: i for i, piece in enumerate(ranked)}
    merges = []
    for piece in ranked:
        splits = [(piece[:i], piece[i:]) for i in range(1, len(piece))]
        merges += sorted(
            ((a, b) for a, b in splits if a in rank and b in rank), key=lambda ab: (rank[ab[0]], rank[ab[1]])
        )
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token=unk, fuse_unk=True, byte_fallback=False))
    tok.normalizer = spm_normalizer(proto)
    prepend = "always" if proto.normalizer_spec.add_dummy_prefix else "never"
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme=prepend, split=True)
    tok.decoder = spm_decoder(unk)
    user = [p.piece for p in proto.pieces if p.type == USER_DEFINED and p.piece in vocab]
    if user:  # matched whole before BPE, as SentencePiece does
        tok.add_tokens([AddedToken(t, normalized=False) for t in user])
    return tok


def spm_missing(proto, vocab: dict[str, int]) -> int:
    """How many pieces of the SentencePiece model the vocabulary lacks (transformers maps them to
    <unk> after SentencePiece chose them; here other pieces spell that text)."""
    return sum(p.type == NORMAL and p.piece not in vocab for p in proto.pieces)


def with_clean_up(tok) -> None:
    """Append transformers' ``clean_up_tokenization`` to ``tok``'s decoder (the whole text, after
    the pieces are joined), for tokenizers whose config asks for it."""
    from tokenizers import decoders

    steps = [tok.decoder] if tok.decoder is not None else []
    tok.decoder = decoders.Sequence([*steps, decoders.Fuse(), *(decoders.Replace(a, b) for a, b in CLEAN_UP)])


def padded_vocabulary(tok, size: int, names: str = "madeupword{:04d}"):
    """``tok`` with tokens appended until it has ``size`` ids: a model's embedding matrix may have
    rows no token of its tokenizer reaches (fairseq pads its dictionaries to a multiple of 8 with
    "madeupword" tokens). The new tokens are pieces of the model that no text ever becomes (a BPE
    token without merges, a unigram piece scored :data:`UNREACHABLE_SCORE`), so every id the model
    can emit decodes, and the vocabulary has the model's size."""
    from tokenizers import Tokenizer

    have = tok.get_vocab_size()
    if have > size:
        raise ConversionError(f"the tokenizer has {have} tokens but the model's vocabulary only {size}")
    if have == size:
        return tok
    data = json.loads(tok.to_str())
    model, added = data["model"], {a["id"]: a["content"] for a in data["added_tokens"]}
    # the added tokens past the model's pieces become pieces at their ids too, so that the model's
    # vocabulary runs 0..size-1 without a gap (the tokenizer renumbers added tokens after a gap)
    tail = [added[i] for i in range(len(model["vocab"]), have)]
    new = tail + [names.format(i) for i in range(size - have)]
    if model["type"] == "BPE":
        if sorted(model["vocab"].values()) != list(range(len(model["vocab"]))):
            raise ConversionError("the tokenizer's BPE vocabulary has gaps; it cannot be padded")
        model["vocab"].update({token: len(model["vocab"]) + i for i, token in enumerate(new)})
    elif model["type"] == "Unigram":
        model["vocab"] += [[token, UNREACHABLE_SCORE] for token in new]
    else:
        raise ConversionError(f"a {model['type']} tokenizer cannot be padded to the model's {size} tokens")
    padded = Tokenizer.from_str(json.dumps(data))
    if padded.get_vocab_size() != size or any(padded.id_to_token(i) != tok.id_to_token(i) for i in range(have)):
        raise ConversionError(f"the tokenizer could not be padded to the model's {size} tokens with its ids kept")
    return padded


def tokens_matching(tok, pattern: str) -> dict[str, int]:
    """{token: id} of the added tokens of ``tok`` whose text matches ``pattern`` whole."""
    return {t.content: i for i, t in tok.get_added_tokens_decoder().items() if re.fullmatch(pattern, t.content)}


def token_text(value, default: str) -> str:
    """A special token as tokenizer_config.json gives it: a string, or a dict with its content."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else default


def hf_tokenizer_json(folder: Path, tok_config: dict, code_pattern: str):
    """(tokenizer, {language code: id}) from a transformers ``tokenizer.json`` (NLLB's, mBART-50's).

    The file is used as it is, except that its post-processor, which adds the source language's
    token and </s> (``lang x </s>``), is taken off, as are any truncation and padding: our
    tokenizers encode the text alone, and ``stepping.frame_source`` frames it from the config.
    Language tokens are its added tokens whose text matches ``code_pattern`` whole (the code is
    the token, or the pattern's group that matched: "en" for "__en__"). A tokenizer that frames
    sources the other way, ``x </s> lang`` (NLLB's legacy_behaviour, mBART-25's MBartTokenizer),
    is refused: the config cannot say that framing.
    """
    from tokenizers import Tokenizer

    path = folder / "tokenizer.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        Tokenizer.from_str(json.dumps(data))
    except Exception as exc:  # bad JSON, or JSON the Rust side refuses
        raise ConversionError(f"{path}: not a tokenizers JSON file ({type(exc).__name__}: {exc})") from exc
    template = (data.get("post_processor") or {}).get("single") or []
    kinds = ["SpecialToken" if "SpecialToken" in part else "Sequence" for part in template]
    if template and kinds != ["SpecialToken", "Sequence", "SpecialToken"]:
        raise ConversionError(
            f"{path}: the tokenizer frames sources as {' '.join(kinds)}, not as 'language x </s>' "
            "(a tokenizer with the language code last, such as mBART-25's or NLLB's legacy one, is not supported)"
        )
    data.update(post_processor=None, truncation=None, padding=None)
    tok = Tokenizer.from_str(json.dumps(data))
    lang_ids = {}
    for token, i in tokens_matching(tok, code_pattern).items():
        m = re.fullmatch(code_pattern, token)
        lang_ids[next((g for g in m.groups() if g), token)] = i
    if not lang_ids:
        raise ConversionError(f"{path}: no language tokens (added tokens like {code_pattern})")
    bpe = data["model"]["type"] == "BPE"
    forced = tok_config.get("clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output")
    if tok_config.get("clean_up_tokenization_spaces") and (not bpe or forced):
        with_clean_up(tok)  # as transformers' TokenizersBackend decodes: never on BPE unless forced
    return tok, lang_ids


def pick_languages(lang_ids: dict, asked: tuple, tok_config: dict, generation: dict, preferred: tuple) -> tuple:
    """(source, target) language codes the checkpoint translates by default: the ones ``asked``
    for (--src-lang, --tgt-lang), else the tokenizer's src_lang and tgt_lang, else (target) the
    language generation forces, else ``preferred`` (this project's pair), else the first codes."""
    by_id = {i: code for code, i in lang_ids.items()}
    forced = by_id.get(generation.get("forced_bos_token_id"))
    picked = []
    for side, want, saved, extra, fallback in zip(
        ("--src-lang", "--tgt-lang"),
        asked,
        (tok_config.get("src_lang"), tok_config.get("tgt_lang")),
        (None, forced),
        preferred,
    ):
        if want is not None:
            if want not in lang_ids:
                some = ", ".join(sorted(lang_ids)[:8])
                raise ConversionError(f"{side} {want}: not one of the model's {len(lang_ids)} languages ({some}, ...)")
            picked.append(want)
            continue
        found = [c for c in (saved, extra, fallback) if c in lang_ids]
        picked.append(found[0] if found else sorted(lang_ids)[len(picked) % len(lang_ids)])
    return tuple(picked)


def multilingual_config(hf: dict, generation: dict, unk: int, lang_ids: dict, langs: tuple, **switches):
    """Our ``TransformerConfig`` for a BART-style multilingual model (M2M100, NLLB-200, mBART-50):
    pre-LN with a final LayerNorm in each stack (nn.LayerNorm's eps), one shared vocabulary, no
    source start token (``lang x </s>``), the decoder starting from decoder_start_token_id (</s>)
    and forced to emit the target language's token first; ``switches`` are the family's own."""
    from transformer.core.config import TransformerConfig

    h, d_ff, activation = check_shapes(hf)
    try:
        vocab_size, pad, eos = int(hf["vocab_size"]), int(hf["pad_token_id"]), int(hf["eos_token_id"])
        d_model, max_positions = int(hf["d_model"]), int(hf["max_position_embeddings"])
        layers = int(hf["encoder_layers"]), int(hf["decoder_layers"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ConversionError(f"config.json lacks a usable {exc}") from exc
    start = generation.get("decoder_start_token_id", hf.get("decoder_start_token_id"))
    tied = bool(hf.get("tie_word_embeddings", True))
    return TransformerConfig(
        d_model=d_model,
        h=h,
        d_ff=d_ff,
        n_encoder_layers=layers[0],
        n_decoder_layers=layers[1],
        dropout=float(hf.get("dropout", 0.1)),
        attn_dropout=float(hf.get("attention_dropout", 0.0)),
        max_positions=max_positions,
        norm_placement="pre",
        layer_norm_eps=1e-5,
        activation=activation,
        src_vocab_size=vocab_size,
        tgt_vocab_size=vocab_size,
        src_pad_id=pad,
        src_unk_id=unk,
        src_sos_id=None,
        src_eos_id=eos,
        tgt_pad_id=pad,
        tgt_unk_id=unk,
        # BART-style training shifts the labels right, </s> first: the start token when none is said
        tgt_sos_id=eos if start is None else int(start),
        tgt_eos_id=eos,
        # transformers shares one embedding between the stacks; untied, the output projection is apart
        tie_embeddings="all" if tied else "none",
        tgt_banned_ids=banned_ids(generation, hf, pad),
        lang_ids=dict(sorted(lang_ids.items(), key=lambda kv: kv[1])),
        src_lang=langs[0],
        tgt_lang=langs[1],
        src_tokenizer_file="tokenizer.json",
        tgt_tokenizer_file="tokenizer.json",
        storage_dtype="float32",
        **switches,
    )


def model_card(src: str, cfg, family: dict, licence: tuple, argv: list[str], notes: list[str]) -> str:
    """The converted checkpoint's README.md: where it comes from, its licence (``licence``:
    (name, stated by the source)), the command that made it and what it translates.
    ``family``: its name, tags, credit line and fallback licence."""
    hub = not Path(src).expanduser().exists()
    name = f"[{src}](https://huggingface.co/{src})" if hub else f"`{src}`"
    note = (
        ""
        if licence[1]
        else f" (the source names no licence; {licence[0]} is what {family['name']} is published under)"
    )
    lines = ["---", f"license: {licence[0]}", "language:", f"- {cfg.src_lang}", f"- {cfg.tgt_lang}"]
    lines += ["pipeline_tag: translation", "tags:", "- translation", *(f"- {t}" for t in family["tags"])]
    lines += [*([f"base_model: {src}"] if hub else []), "---", ""]
    lines += [
        f"# {Path(src).name}, converted",
        "",
        f"The {family['name']} translation model {name}, converted to this project's checkpoint format: the",
        "same weights, run by its own Transformer class, so the explorer can show what happens inside it.",
        "Token ids, teacher-forced logits, attention weights and greedy output match transformers'",
        f"({family['tests']} checks this on small models).",
        "",
        "## Credit and licence",
        "",
        f"The weights and tokenizer are the work of the model's authors ({family['credit']}), released under",
        f"**{licence[0]}**{note}. The conversion changes no number; cite and credit the original model.",
        "",
        "## Conversion",
        "",
        "```",
        "python -m transformer.cli.convert " + " ".join(argv),
        "```",
        "",
        f"{cfg.d_model}-wide, {cfg.n_encoder_layers}+{cfg.n_decoder_layers} layers, {cfg.h} heads, FFN {cfg.d_ff} "
        f"({cfg.activation}), one vocabulary of {cfg.src_vocab_size} tokens with {len(cfg.lang_ids)} languages; "
        f"it translates {cfg.src_lang} to {cfg.tgt_lang} unless asked for other languages.",
    ]
    return "\n".join([*lines, *(["", *notes] if notes else [])]) + "\n"


def converter_parser(prog: str, description: str, source: str):
    """The flags every converter takes: SRC (``source`` says what it may be), --out, --force and
    --revision; a converter adds its own."""
    from transformer.cli import ArgumentParser

    p = ArgumentParser(prog=prog, description=description)
    p.add_argument("src", metavar="SRC", help=source)
    p.add_argument("--out", required=True, help="checkpoint folder to write")
    p.add_argument("--force", action="store_true", help="replace --out if it exists and is not empty")
    p.add_argument("--revision", default=None, help="hub revision (branch, tag or commit) of a hub id")
    return p
