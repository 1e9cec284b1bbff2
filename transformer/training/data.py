"""Parallel data through ``datasets``, and batches built by token budget.

``load_parallel_dataset`` accepts a hub dataset id (``Helsinki-NLP/opus_books`` with config
``en-it``) or local JSONL in the same schema (``{"translation": {"en": ..., "it": ...}}``):
a directory holding ``train.jsonl`` (and optionally ``validation.jsonl``/``test.jsonl``)
or one file, each possibly gzipped (``train.jsonl.gz``). After loading, both take the same
path: pick the two languages, drop empty pairs, and carve a validation split with a fixed
seed when the source has none.

Everything stays in Arrow tables (memory-mapped from the ``datasets`` cache) so a corpus of
millions of pairs never becomes millions of Python objects: the language columns are picked
with a batched, cached ``map`` of pyarrow compute kernels, tokenizers train from batches of
text (:func:`text_batches`) and :func:`encode_dataset` encodes with ``encode_batch`` in a
cached batched ``map``, keeping the ids as flat numpy arrays (:class:`EncodedPairs`).
``load_parallel`` is the small-corpus convenience on top: the same data as Python lists.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from transformer.core import stepping

if TYPE_CHECKING:
    import datasets

SPLIT_NAMES = ("train", "validation", "test")
# the endings of a local split file, in the order a folder is searched; ``datasets`` unzips
# ``.gz`` itself, inferring the compression from the name
JSON_SUFFIXES = (".jsonl", ".json", ".jsonl.gz", ".json.gz")
# bytes read at a time when checking that a file is UTF-8
CHECK_BYTES = 1 << 24
# rows per batch for the Arrow maps and tokenizer iterators: big enough that per-batch
# overhead vanishes, small enough that one batch of Python strings stays a few MB
BATCH_ROWS = 10_000
# the ``origin`` of a synthetic pair starts with this (``bt:sample``, ``bt:beam``...)
SYNTHETIC_ORIGIN = "bt"
# the ``origin`` of a forward-translated pair (real source, a model's target) starts with this
FORWARD_ORIGIN = "ft"


class DataError(ValueError):
    """The dataset cannot be used as asked (missing, empty, wrong language...)."""


@dataclass
class ParallelData:
    train: list[tuple[str, str]]
    validation: list[tuple[str, str]]
    test: list[tuple[str, str]]
    source: str
    # corpora whose train pairs were appended to ``train`` (e.g. back-translated pairs)
    extra: tuple[str, ...] = ()


@dataclass
class ParallelDatasets:
    """The Arrow-backed splits: ``datasets.Dataset`` objects with string columns ``src`` and
    ``tgt`` (no empty pairs). ``test`` is None when the source has no test split."""

    train: datasets.Dataset
    validation: datasets.Dataset
    test: datasets.Dataset | None
    source: str

    def to_lists(self) -> ParallelData:
        return ParallelData(
            train=as_pairs(self.train),
            validation=as_pairs(self.validation),
            test=as_pairs(self.test) if self.test is not None else [],
            source=self.source,
        )


def local_data_files(path: Path, split: str = "train") -> dict[str, str]:
    """The split files of a local dataset; ``split`` is the one the caller reads, which
    must be there (a single file is its own "train" split). A folder holding one split
    twice (``train.jsonl`` and ``train.jsonl.gz``) is refused: either could be stale."""
    if path.is_file():
        return {"train": str(path)}
    files = {}
    for name in SPLIT_NAMES:
        found = [path / f"{name}{ext}" for ext in JSON_SUFFIXES if (path / f"{name}{ext}").is_file()]
        if len(found) > 1:
            raise DataError(f"{path}: both {' and '.join(f.name for f in found)}: keep one")
        if found:
            files[name] = str(found[0])
    if split not in files:
        raise DataError(f"{path}: no {split}.jsonl in this directory")
    return files


def _open_bytes(path: str):
    """``path`` opened for reading bytes, unzipped when its name ends in ``.gz`` (as
    ``datasets`` reads it)."""
    import gzip

    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def _not_utf8(path: str, data: bytes, line: int, exc: UnicodeDecodeError) -> str:
    """``path: line N: ...`` for the first bad byte of ``data``, whole lines that start at
    line ``line``; the column counts characters, as an editor does."""
    start = data.rfind(b"\n", 0, exc.start) + 1
    column = len(data[start : exc.start].decode("utf-8")) + 1  # every byte before exc.start decodes
    line += data.count(b"\n", 0, exc.start)
    return f"{path}: line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at column {column})"


def check_utf8(path: str) -> None:
    """Raise :class:`DataError` naming the line and column of the first byte of ``path`` that
    is not UTF-8, or saying why it cannot be read. ``datasets`` loads such bytes without a
    word and pyarrow fails much later, inside a map, naming neither file nor line. The file
    is read in blocks of whole lines, so memory stays small whatever its size."""
    import gzip
    import zlib

    line, carry = 1, b""
    try:
        with _open_bytes(path) as f:
            while True:
                block = f.read(CHECK_BYTES)
                data = carry + block
                cut = data.rfind(b"\n") + 1 if block else len(data)  # the last line may go on in the next block
                data, carry = data[:cut], data[cut:]
                try:
                    data.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise DataError(_not_utf8(path, data, line, exc)) from None
                line += data.count(b"\n")
                if not block:
                    return
    except gzip.BadGzipFile:
        raise DataError(f"{path}: not a gzip file, though its name ends in .gz") from None
    except (EOFError, zlib.error) as exc:
        raise DataError(f"{path}: the gzip data is damaged or cut short ({exc})") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _kind(value) -> str | dict | None:
    """The JSON shape of ``value`` as Arrow sees it: objects by field, numbers as one kind
    (Arrow widens int to float), null as None (it fits any kind)."""
    if isinstance(value, dict):
        return {k: _kind(v) for k, v in value.items()}
    if value is None:
        return None
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "a string" if isinstance(value, str) else "a list"


def _kind_words(kind) -> str:
    return "an object" if isinstance(kind, dict) else kind


def _clash(seen: dict, row: dict, where: str = "") -> str | None:
    """The first field whose kind in ``row`` differs from its kind in earlier rows
    (``seen``, updated with the fields met for the first time), described; None if none."""
    for key, value in row.items():
        kind, name = _kind(value), f"{where}.{key}" if where else key
        if kind is None:
            continue
        before = seen.get(key)
        if before is None:
            seen[key] = kind
            continue
        if isinstance(kind, dict) and isinstance(before, dict):
            clash = _clash(before, value, name)
            if clash:
                return clash
        elif isinstance(kind, dict) != isinstance(before, dict) or kind != before:
            return f"{name!r} is {_kind_words(kind)} here, {_kind_words(before)} in the lines before"
    return None


def _find_bad_line(path: str) -> str | None:
    """``path: line N: what is wrong`` for the first line of a JSON-lines file that cannot
    be read as part of one table (not JSON, not an object, a field of another
    kind than in the lines before); None when every line reads. Only called once
    ``datasets`` has failed, whose own message gives no line number (pyarrow counts rows
    within a block)."""
    import json

    seen: dict = {}
    with _open_bytes(path) as f:
        for number, raw in enumerate(f, 1):
            text = raw.decode("utf-8")  # check_utf8 has passed
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as exc:
                if number == 1 and path.endswith((".json", ".json.gz")):
                    return None  # a whole-file JSON document, not JSON lines: nothing to say per line
                return f"{path}: line {number}: not valid JSON ({exc.msg}, column {exc.colno})"
            if not isinstance(row, dict):
                return f"{path}: line {number}: expected one JSON object per line, got {_kind(row) or 'null'}"
            clash = _clash(seen, row)
            if clash:
                return f"{path}: line {number}: {clash}"
    return None


def _innermost(exc: BaseException) -> BaseException:
    while exc.__cause__ is not None or (exc.__context__ is not None and not exc.__suppress_context__):
        exc = exc.__cause__ or exc.__context__
    return exc


@contextlib.contextmanager
def _quiet(logger_name: str):
    """Hold back one library logger's lines while a call runs: the DataError raised after it
    says the same in one line."""
    import logging

    logger = logging.getLogger(logger_name)
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


# datasets' JSON builder logs its own error line before raising (the DataError names the line)
_JSON_LOGGER = "datasets.packaged_modules.json.json"
# huggingface_hub logs each of its retries when the hub cannot be reached
_HUB_LOGGER = "huggingface_hub"


def _hub_failure(dataset: str, config: str | None, exc: BaseException) -> str:
    """One line for a dataset that is neither a local path nor loadable from the hub
    (``datasets``' own messages span several lines of hub detail)."""
    from datasets.exceptions import DataFilesNotFoundError, DatasetNotFoundError

    gone = f"no dataset at {dataset} (not a local folder, and"
    # FileNotFoundError is what datasets raises when neither a local file nor a hub repo
    # exists; DataFilesNotFoundError (one too) is a repo that exists without data files
    if isinstance(exc, (DatasetNotFoundError, FileNotFoundError)) and not isinstance(exc, DataFilesNotFoundError):
        return f"{gone} not found on the hub)"
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return f"{gone} the hub could not be reached)"
    return " ".join(f"could not load dataset {dataset!r} (config {config!r}): {type(exc).__name__}: {exc}".split())


def load_raw(
    dataset: str, config: str | None = None, cache_dir: str | None = None, split: str = "train", only: bool = False
):
    """A ``datasets.DatasetDict`` from a local path or the hub (``cache_dir``: where
    ``datasets`` keeps its Arrow files; default its own cache). ``split`` is the split the
    caller needs: a local folder without its file is refused by name. ``only``: read just
    that split's file of a local folder (scoring the test split need not convert, or
    check, a corpus of millions of training pairs)."""
    import datasets

    path = Path(dataset).expanduser()
    if path.exists():
        files = local_data_files(path, split)
        if only and split in files:
            files = {split: files[split]}
        for f in files.values():
            if Path(f).stat().st_size == 0:
                raise DataError(f"{f}: file is empty")
            check_utf8(f)
        try:
            with _quiet(_JSON_LOGGER):
                return datasets.load_dataset("json", data_files=files, cache_dir=cache_dir)
        except Exception as exc:  # datasets wraps JSON errors in several exception types
            for f in files.values():
                bad = _find_bad_line(f)
                if bad:
                    raise DataError(bad) from exc
            inner = _innermost(exc)
            raise DataError(
                " ".join(f"{path}: could not read as JSON lines ({type(inner).__name__}: {inner})".split())
            ) from exc
    if dataset.startswith((".", "/", "~")) or dataset.endswith(JSON_SUFFIXES):
        raise DataError(f"{dataset}: no such file or directory")
    try:
        with _quiet(_HUB_LOGGER):
            return datasets.load_dataset(dataset, config, cache_dir=cache_dir)
    except Exception as exc:
        raise DataError(_hub_failure(dataset, config, exc)) from exc


def _languages(split, where: str) -> list[str]:
    """The language codes the ``translation`` column holds, read from the schema (so a
    wrong language is reported before any row is read)."""
    import datasets

    if "translation" not in split.column_names:
        raise DataError(f"{where}: no 'translation' column (expected the OPUS Books schema)")
    feature = split.features["translation"]
    if isinstance(feature, datasets.Translation):
        return list(feature.languages)
    if isinstance(feature, dict):
        return list(feature)
    raise DataError(
        f"{where}: the 'translation' column is {type(feature).__name__}, expected one "
        "{language: sentence} object per row (OPUS Books schema)"
    )


def _check_languages(split, src: str, tgt: str, where: str) -> None:
    langs = _languages(split, where)
    missing = [lang for lang in dict.fromkeys((src, tgt)) if lang not in langs]
    if missing:
        names = " and ".join(repr(m) for m in missing)
        plural = "s" if len(missing) > 1 else ""
        raise DataError(f"{where}: language{plural} {names} not found; this dataset has {sorted(langs)}")


def _origins(table):
    """The batch's ``origin`` column as strings (missing ones empty), or None without one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if "origin" not in table.column_names:
        return None
    origin = table.column("origin")
    if not pa.types.is_string(origin.type) and not pa.types.is_large_string(origin.type):
        origin = pc.cast(origin, pa.string())
    return pc.fill_null(origin, "")


def noised_source(text: str, seed: int) -> str:
    """``text`` with Edunov et al.'s word noise (``synthetic.noise_words``: words dropped,
    blanked to ``[UNK]`` and shuffled locally). The noise is drawn from ``seed`` and the
    sentence itself, so every process, and every rebuild of the run, noises a sentence the
    same way whatever its row."""
    from transformer.core.tokenizer import UNK
    from transformer.training.synthetic import noise_words

    return noise_words(text, random.Random(f"{seed}:{text}"), blank=UNK)


def _pick_languages(
    table,
    src: str,
    tgt: str,
    tag: str | None = None,
    noise_seed: int | None = None,
    tag_origins: tuple[str, ...] = (SYNTHETIC_ORIGIN,),
):
    """Arrow batch -> table of stripped (src, tgt) strings, empty or missing pairs dropped.
    With ``tag``, the source of every row whose ``origin`` starts with one of ``tag_origins``
    starts with ``tag`` and a space: by default the back-translated rows (``bt...``), whose
    source a model wrote; forward-translated rows (``ft...``) have a model-written source
    when they are read the other way round. With ``noise_seed``, the source of every forward-translated row
    (``ft...``) is noised (:func:`noised_source`): He et al. (2020) found that self-training
    gains most when the student sees its real inputs perturbed. Runs inside ``Dataset.map``
    on whole Arrow batches: only the noise loops over rows in Python."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = table.column("translation")
    out = {}
    for name, lang in (("src", src), ("tgt", tgt)):
        text = pc.struct_field(column, lang)
        if not pa.types.is_string(text.type) and not pa.types.is_large_string(text.type):
            text = pc.cast(text, pa.string())
        out[name] = pc.utf8_trim_whitespace(pc.fill_null(text, ""))
    keep = pc.and_(pc.greater(pc.utf8_length(out["src"]), 0), pc.greater(pc.utf8_length(out["tgt"]), 0))
    origin = _origins(table)
    if noise_seed is not None and origin is not None:
        forward = pc.starts_with(origin, FORWARD_ORIGIN).to_pylist()
        sources = out["src"].to_pylist()
        out["src"] = pa.array(
            [noised_source(s, noise_seed) if f and s else s for s, f in zip(sources, forward)], pa.string()
        )
    if tag and origin is not None and tag_origins:
        synthetic = pc.starts_with(origin, tag_origins[0])
        for prefix in tag_origins[1:]:
            synthetic = pc.or_(synthetic, pc.starts_with(origin, prefix))
        out["src"] = pc.if_else(synthetic, pc.binary_join_element_wise(tag, out["src"], " "), out["src"])
    return pa.table(out).filter(keep)


def select_pairs(
    split,
    src: str,
    tgt: str,
    where: str,
    tag: str | None = None,
    noise_seed: int | None = None,
    tag_origins: tuple[str, ...] = (SYNTHETIC_ORIGIN,),
):
    """``split`` reduced to string columns ``src``/``tgt``, empty pairs dropped (cached);
    ``tag``, ``noise_seed`` and ``tag_origins``: see :func:`_pick_languages`."""
    _check_languages(split, src, tgt, where)
    picked = split.with_format("arrow").map(
        _pick_languages,
        batched=True,
        batch_size=BATCH_ROWS,
        fn_kwargs={"src": src, "tgt": tgt, "tag": tag, "noise_seed": noise_seed, "tag_origins": tuple(tag_origins)},
        remove_columns=split.column_names,
        desc=f"{where}: picking {src}-{tgt}",
    )
    return picked.with_format(None)


def as_pairs(ds, limit: int | None = None) -> list[tuple[str, str]]:
    """``(src, tgt)`` tuples of a picked dataset (the first ``limit`` rows)."""
    if limit is not None:
        ds = ds.select(range(min(limit, len(ds))))
    cols = ds.with_format("arrow")[:]
    return list(zip(cols.column("src").to_pylist(), cols.column("tgt").to_pylist()))


def text_batches(ds, columns: Sequence[str] = ("src", "tgt"), batch_size: int = BATCH_ROWS) -> Iterator[list[str]]:
    """Lists of sentences, column after column, for ``train_tokenizer`` (the ``tokenizers``
    trainer takes batches and works on each one in parallel)."""
    for column in columns:
        for batch in ds.select_columns([column]).with_format("arrow").iter(batch_size=batch_size):
            yield batch.column(column).to_pylist()


def load_split(dataset: str, split: str, src: str, tgt: str, config: str | None = None) -> list[tuple[str, str]]:
    """Every pair of one split, in order (a single local file is its own "train" split)."""
    raw = load_raw(dataset, config, split=split, only=True)
    if split not in raw:
        raise DataError(f"{dataset}: no {split!r} split (has {sorted(raw)})")
    return as_pairs(select_pairs(raw[split], src, tgt, f"{dataset} [{split}]"))


def load_extra_train(
    dataset: str,
    src: str,
    tgt: str,
    tag: str | None = None,
    noise_seed: int | None = None,
    tag_origins: tuple[str, ...] = (SYNTHETIC_ORIGIN,),
) -> list[tuple[str, str]]:
    """The train split of one more corpus (e.g. back-translated pairs), as ``(src, tgt)``
    tuples; its validation and test splits, if any, are ignored: a run is always measured
    on its main corpus. ``tag``, ``noise_seed`` and ``tag_origins``: see :func:`_pick_languages`."""
    raw = load_raw(dataset, only=True)
    if "train" not in raw:
        raise DataError(f"{dataset}: no train split (has {sorted(raw)})")
    where = f"{dataset} [train]"
    return as_pairs(
        select_pairs(raw["train"], src, tgt, where, tag=tag, noise_seed=noise_seed, tag_origins=tag_origins)
    )


def carve_validation(n: int, val_size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train indices, validation indices) of a seeded validation split carved out of ``n``
    training rows: the same split every time for this seed (and the same as before the
    Arrow path existed, so old runs stay reproducible)."""
    rng = random.Random(seed)
    order = list(range(n))
    rng.shuffle(order)
    n_val = min(val_size, max(1, n // 10))
    val_idx = np.sort(np.asarray(order[:n_val], dtype=np.int64))
    keep = np.ones(n, dtype=bool)
    keep[val_idx] = False
    return np.flatnonzero(keep), val_idx


def load_parallel_dataset(
    dataset: str,
    src: str = "en",
    tgt: str = "it",
    config: str | None = None,
    val_size: int = 1000,
    seed: int = 0,
    cache_dir: str | None = None,
) -> ParallelDatasets:
    """The splits as Arrow-backed datasets; scales to millions of pairs (see module doc)."""
    if src == tgt:
        raise DataError(f"source and target language are both {src!r}")
    raw = load_raw(dataset, config, cache_dir=cache_dir)
    if "train" not in raw:
        raise DataError(f"{dataset}: no train split (has {sorted(raw)})")
    train = select_pairs(raw["train"], src, tgt, f"{dataset} [train]")
    if len(train) == 0:
        raise DataError(f"{dataset}: the train split has no non-empty {src}-{tgt} pairs")
    test = select_pairs(raw["test"], src, tgt, f"{dataset} [test]") if "test" in raw else None
    if "validation" in raw:
        validation = select_pairs(raw["validation"], src, tgt, f"{dataset} [validation]")
    else:
        train_idx, val_idx = carve_validation(len(train), val_size, seed)
        validation = train.select(val_idx)
        train = train.select(train_idx)
    return ParallelDatasets(train=train, validation=validation, test=test, source=str(dataset))


def load_parallel(
    dataset: str, src: str = "en", tgt: str = "it", config: str | None = None, val_size: int = 1000, seed: int = 0
) -> ParallelData:
    """:func:`load_parallel_dataset` as lists of ``(src, tgt)`` pairs (small corpora)."""
    return load_parallel_dataset(dataset, src, tgt, config=config, val_size=val_size, seed=seed).to_lists()


@dataclass
class Batch:
    src: torch.Tensor  # (B, S)  [SOS] x [EOS] [PAD]... (a Marian model's: x </s> <pad>...)
    tgt_in: torch.Tensor  # (B, T)  [SOS] y
    tgt_out: torch.Tensor  # (B, T)  y [EOS]
    n_tgt_tokens: int  # real (non-pad) target tokens
    n_src_tokens: int


def encode_pairs(pairs, src_tok, tgt_tok, cfg) -> list[tuple[list[int], list[int]]]:
    """Token ids per pair, truncated to fit the positional table."""
    limit = cfg.max_positions - cfg.src_frame_len
    src_ids = src_tok.encode_batch([s for s, _ in pairs], add_special_tokens=False)
    tgt_ids = tgt_tok.encode_batch([t for _, t in pairs], add_special_tokens=False)
    out = []
    for s, t in zip(src_ids, tgt_ids):
        out.append((s.ids[:limit], t.ids[: cfg.max_positions - 1]))
    return out


class EncodedPairs(Sequence):
    """Token ids of many pairs as four flat numpy arrays (ids and offsets per side).

    A drop-in for the list that :func:`encode_pairs` returns (``enc[i]`` is a pair of id
    lists, ``len(enc)`` the number of pairs), so :func:`token_budget_batches` and
    :func:`make_batch` take either; a million pairs cost ~100 MB here instead of the
    gigabytes of two million Python lists.
    """

    def __init__(self, src_ids: np.ndarray, src_offsets: np.ndarray, tgt_ids: np.ndarray, tgt_offsets: np.ndarray):
        if len(src_offsets) != len(tgt_offsets):
            raise ValueError("source and target offsets differ in length")
        self.src_ids, self.src_offsets = src_ids, src_offsets
        self.tgt_ids, self.tgt_offsets = tgt_ids, tgt_offsets

    @classmethod
    def from_pairs(cls, encoded) -> EncodedPairs:
        def flat(seqs):
            lengths = np.fromiter((len(x) for x in seqs), dtype=np.int64, count=len(seqs))
            offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            ids = np.fromiter((i for x in seqs for i in x), dtype=np.int32, count=int(offsets[-1]))
            return ids, offsets

        return cls(*flat([s for s, _ in encoded]), *flat([t for _, t in encoded]))

    def __len__(self) -> int:
        return len(self.src_offsets) - 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"pair index {i} out of range for {n} pairs")
        i %= n
        so, to = self.src_offsets, self.tgt_offsets
        return (self.src_ids[so[i] : so[i + 1]].tolist(), self.tgt_ids[to[i] : to[i + 1]].tolist())

    def lengths(self) -> tuple[np.ndarray, np.ndarray]:
        """(source lengths, target lengths) without the specials."""
        return np.diff(self.src_offsets), np.diff(self.tgt_offsets)


def _encode_batch(batch, src_tok, tgt_tok, src_limit: int, tgt_limit: int) -> dict:
    # encode_batch_fast skips the character offsets we never use
    enc_s = getattr(src_tok, "encode_batch_fast", src_tok.encode_batch)
    enc_t = getattr(tgt_tok, "encode_batch_fast", tgt_tok.encode_batch)
    src = enc_s(batch["src"], add_special_tokens=False)
    tgt = enc_t(batch["tgt"], add_special_tokens=False)
    return {"src_ids": [e.ids[:src_limit] for e in src], "tgt_ids": [e.ids[:tgt_limit] for e in tgt]}


def _list_column(table, name: str) -> tuple[np.ndarray, np.ndarray]:
    import pyarrow.compute as pc

    column = table.column(name).combine_chunks()
    lengths = pc.list_value_length(column).to_numpy(zero_copy_only=False).astype(np.int64)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ids = pc.list_flatten(column).to_numpy(zero_copy_only=False).astype(np.int32, copy=False)
    return ids, offsets


def encode_dataset(ds, src_tok, tgt_tok, cfg, batch_size: int = BATCH_ROWS) -> EncodedPairs:
    """Encode a picked dataset (columns ``src``/``tgt``) in a batched ``map``.

    Same ids and truncation as :func:`encode_pairs`. The map is cached by ``datasets``
    under a fingerprint of (data, both tokenizers, limits), so re-encoding the same corpus
    with the same tokenizer reads the Arrow cache instead of tokenizing again.
    """
    import datasets

    src_limit, tgt_limit = cfg.max_positions - cfg.src_frame_len, cfg.max_positions - 1
    digest = hashlib.sha256()
    for part in (ds._fingerprint, src_tok.to_str(), tgt_tok.to_str(), f"{src_limit}/{tgt_limit}/v1"):
        digest.update(part.encode("utf-8"))
    ids = datasets.List(datasets.Value("int32"))
    encoded = ds.map(
        _encode_batch,
        batched=True,
        batch_size=batch_size,
        remove_columns=ds.column_names,
        fn_kwargs={"src_tok": src_tok, "tgt_tok": tgt_tok, "src_limit": src_limit, "tgt_limit": tgt_limit},
        features=datasets.Features({"src_ids": ids, "tgt_ids": ids}),
        new_fingerprint=digest.hexdigest()[:32],
        desc="encoding",
    )
    table = encoded.with_format("arrow")[:]
    return EncodedPairs(*_list_column(table, "src_ids"), *_list_column(table, "tgt_ids"))


def make_batch(examples, cfg) -> Batch:
    """Pairs of subword ids framed as the model reads them (``stepping.frame_source``; the
    decoder reads its start token, then the target after the model's forced start, if it
    has one) and padded into one batch."""
    examples = [(s, stepping.with_forced_start(cfg, t)) for s, t in examples]
    B = len(examples)
    S = max(len(s) for s, _ in examples) + cfg.src_frame_len
    T = max(len(t) for _, t in examples) + 1
    src = torch.full((B, S), cfg.src_pad_id, dtype=torch.long)
    tgt_in = torch.full((B, T), cfg.tgt_pad_id, dtype=torch.long)
    tgt_out = torch.full((B, T), cfg.tgt_pad_id, dtype=torch.long)
    n_src = n_tgt = 0
    for i, (s, t) in enumerate(examples):
        framed = stepping.frame_source(cfg, s)
        src[i, : len(framed)] = torch.tensor(framed)
        tgt_in[i, : len(t) + 1] = torch.tensor(stepping.decoder_inputs(cfg, t))
        tgt_out[i, : len(t) + 1] = torch.tensor([*t, cfg.tgt_eos_id])
        n_src += len(framed)
        n_tgt += len(t) + 1
    return Batch(src, tgt_in, tgt_out, n_tgt, n_src)


def token_budget_batches(encoded, batch_tokens: int, seed: int, epoch: int) -> list[list[int]]:
    """Index batches with about ``batch_tokens`` (padded src + tgt) tokens each.

    Examples are sorted by length with a little seeded noise, so each batch holds similar
    lengths and pads little, then cut greedily and the batch order shuffled. The same
    (seed, epoch) always gives the same batches, so a resumed run sees the same data.
    """
    rng = random.Random(seed * 1_000_003 + epoch)
    if isinstance(encoded, EncodedPairs):
        src_len, tgt_len = (a.tolist() for a in encoded.lengths())
    else:
        src_len, tgt_len = [len(s) for s, _ in encoded], [len(t) for _, t in encoded]
    # one random draw per pair, in index order: the same batches as ever for a (seed, epoch)
    keys = [tgt_len[i] + src_len[i] + rng.random() * 2 for i in range(len(src_len))]
    keyed = sorted(range(len(keys)), key=keys.__getitem__)
    batches, current, max_s, max_t = [], [], 0, 0
    for i in keyed:
        s, t = src_len[i] + 2, tgt_len[i] + 1
        new_s, new_t = max(max_s, s), max(max_t, t)
        if current and (len(current) + 1) * (new_s + new_t) > batch_tokens:
            batches.append(current)
            current, new_s, new_t = [], s, t
        current.append(i)
        max_s, max_t = new_s, new_t
    if current:
        batches.append(current)
    rng.shuffle(batches)
    return batches
