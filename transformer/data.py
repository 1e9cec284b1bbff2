"""Parallel data through ``datasets``, and batches built by token budget.

``load_parallel`` accepts a hub dataset id (``Helsinki-NLP/opus_books`` with config
``en-it``) or local JSONL in the same schema (``{"translation": {"en": ..., "it": ...}}``):
a directory holding ``train.jsonl`` (and optionally ``validation.jsonl``/``test.jsonl``)
or one file. After loading, both take the same path: pick the two languages, drop empty
pairs, and carve a validation split with a fixed seed when the source has none.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import torch

SPLIT_NAMES = ("train", "validation", "test")


class DataError(ValueError):
    """The dataset cannot be used as asked (missing, empty, wrong language...)."""


@dataclass
class ParallelData:
    train: list[tuple[str, str]]
    validation: list[tuple[str, str]]
    test: list[tuple[str, str]]
    source: str


def _local_data_files(path: Path) -> dict[str, str]:
    if path.is_file():
        return {"train": str(path)}
    files = {}
    for split in SPLIT_NAMES:
        for ext in ("jsonl", "json"):
            candidate = path / f"{split}.{ext}"
            if candidate.is_file():
                files[split] = str(candidate)
                break
    if "train" not in files:
        raise DataError(f"{path}: no train.jsonl in this directory")
    return files


def load_raw(dataset: str, config: str | None = None):
    """A ``datasets.DatasetDict`` from a local path or the hub."""
    import datasets

    path = Path(dataset).expanduser()
    if path.exists():
        files = _local_data_files(path)
        for f in files.values():
            if Path(f).stat().st_size == 0:
                raise DataError(f"{f}: file is empty")
        try:
            return datasets.load_dataset("json", data_files=files)
        except Exception as exc:  # datasets wraps JSON errors in several exception types
            raise DataError(f"{path}: could not read as JSON lines ({type(exc).__name__}: {exc})") from exc
    if dataset.startswith((".", "/", "~")) or dataset.endswith((".jsonl", ".json")):
        raise DataError(f"{dataset}: no such file or directory")
    try:
        return datasets.load_dataset(dataset, config)
    except Exception as exc:
        raise DataError(f"could not load dataset {dataset!r} (config {config!r}): {exc}") from exc


def _pairs(split, src: str, tgt: str, where: str) -> list[tuple[str, str]]:
    if "translation" not in split.column_names:
        raise DataError(f"{where}: no 'translation' column (expected the OPUS Books schema)")
    pairs = []
    for row in split["translation"]:
        if not isinstance(row, dict) or src not in row or tgt not in row:
            langs = sorted(row) if isinstance(row, dict) else []
            raise DataError(f"{where}: language {src!r} or {tgt!r} not found; this dataset has {langs}")
        s, t = (row[src] or "").strip(), (row[tgt] or "").strip()
        if s and t:
            pairs.append((s, t))
    return pairs


def load_split(dataset: str, split: str, src: str, tgt: str, config: str | None = None) -> list[tuple[str, str]]:
    """Every pair of one split, in order (a single local file is its own "train" split)."""
    raw = load_raw(dataset, config)
    if split not in raw:
        raise DataError(f"{dataset}: no {split!r} split (has {sorted(raw)})")
    return _pairs(raw[split], src, tgt, f"{dataset} [{split}]")


def load_parallel(
    dataset: str,
    src: str = "en",
    tgt: str = "it",
    config: str | None = None,
    val_size: int = 1000,
    seed: int = 0,
) -> ParallelData:
    if src == tgt:
        raise DataError(f"source and target language are both {src!r}")
    raw = load_raw(dataset, config)
    if "train" not in raw:
        raise DataError(f"{dataset}: no train split (has {sorted(raw)})")
    train = _pairs(raw["train"], src, tgt, f"{dataset} [train]")
    if not train:
        raise DataError(f"{dataset}: the train split has no non-empty {src}-{tgt} pairs")
    test = _pairs(raw["test"], src, tgt, f"{dataset} [test]") if "test" in raw else []
    if "validation" in raw:
        validation = _pairs(raw["validation"], src, tgt, f"{dataset} [validation]")
    else:
        # carve a validation split out of train, the same one every time for this seed
        rng = random.Random(seed)
        order = list(range(len(train)))
        rng.shuffle(order)
        n_val = min(val_size, max(1, len(train) // 10))
        val_idx = set(order[:n_val])
        validation = [train[i] for i in sorted(val_idx)]
        train = [p for i, p in enumerate(train) if i not in val_idx]
    return ParallelData(train=train, validation=validation, test=test, source=str(dataset))


@dataclass
class Batch:
    src: torch.Tensor  # (B, S)  [SOS] x [EOS] [PAD]...
    tgt_in: torch.Tensor  # (B, T)  [SOS] y
    tgt_out: torch.Tensor  # (B, T)  y [EOS]
    n_tgt_tokens: int  # real (non-pad) target tokens
    n_src_tokens: int


def encode_pairs(pairs, src_tok, tgt_tok, cfg) -> list[tuple[list[int], list[int]]]:
    """Token ids per pair, truncated to fit the positional table."""
    limit = cfg.max_positions - 2
    src_ids = src_tok.encode_batch([s for s, _ in pairs], add_special_tokens=False)
    tgt_ids = tgt_tok.encode_batch([t for _, t in pairs], add_special_tokens=False)
    out = []
    for s, t in zip(src_ids, tgt_ids):
        out.append((s.ids[:limit], t.ids[: cfg.max_positions - 1]))
    return out


def make_batch(examples, cfg) -> Batch:
    B = len(examples)
    S = max(len(s) for s, _ in examples) + 2
    T = max(len(t) for _, t in examples) + 1
    src = torch.full((B, S), cfg.src_pad_id, dtype=torch.long)
    tgt_in = torch.full((B, T), cfg.tgt_pad_id, dtype=torch.long)
    tgt_out = torch.full((B, T), cfg.tgt_pad_id, dtype=torch.long)
    n_src = n_tgt = 0
    for i, (s, t) in enumerate(examples):
        src[i, : len(s) + 2] = torch.tensor([cfg.src_sos_id, *s, cfg.src_eos_id])
        tgt_in[i, : len(t) + 1] = torch.tensor([cfg.tgt_sos_id, *t])
        tgt_out[i, : len(t) + 1] = torch.tensor([*t, cfg.tgt_eos_id])
        n_src += len(s) + 2
        n_tgt += len(t) + 1
    return Batch(src, tgt_in, tgt_out, n_tgt, n_src)


def token_budget_batches(encoded, batch_tokens: int, seed: int, epoch: int) -> list[list[int]]:
    """Index batches with about ``batch_tokens`` (padded src + tgt) tokens each.

    Examples are sorted by length with a little seeded noise, so each batch holds similar
    lengths and pads little, then cut greedily and the batch order shuffled. The same
    (seed, epoch) always gives the same batches, so a resumed run sees the same data.
    """
    rng = random.Random(seed * 1_000_003 + epoch)
    keyed = sorted(range(len(encoded)), key=lambda i: (len(encoded[i][1]) + len(encoded[i][0]) + rng.random() * 2))
    batches, current, max_s, max_t = [], [], 0, 0
    for i in keyed:
        s, t = len(encoded[i][0]) + 2, len(encoded[i][1]) + 1
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
