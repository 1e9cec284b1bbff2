"""Head diagnostics of a checkpoint over a test set, written as ``head_stats.json``.

    python -m transformer.analyze --checkpoint checkpoints/en-it \
        --data data/tatoeba-en-it/test.jsonl [--limit N] [--out FILE]

Every source sentence is decoded greedily with the full trace; ``analysis.head_stats``
measures each head on it and ``analysis.aggregate_head_stats`` averages head by head.
The JSON goes to ``<checkpoint>/head_stats.json`` unless ``--out`` says otherwise, so it
ships with the model. Progress goes to stderr; the last stdout line is one JSON object
with ``n``, ``seconds`` and ``out``. Bad paths or flags: a message and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tqdm import tqdm

from .analysis import aggregate_head_stats
from .checkpoint import CheckpointError
from .data import DataError, load_split
from .translator import load_translator


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m transformer.analyze", description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", default="checkpoints/en-it", help="checkpoint directory or hub repo id")
    p.add_argument("--data", required=True, help="JSONL file in the OPUS Books schema (its source side is used)")
    p.add_argument("--limit", type=int, default=None, help="analyse only the first N sentences")
    p.add_argument("--out", default=None, help="where to write the JSON (default: <checkpoint>/head_stats.json)")
    return p.parse_args(argv)


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.limit is not None and args.limit <= 0:
        return _fail("--limit must be positive")
    path = Path(args.data)
    if not path.is_file():
        return _fail(f"{path}: no such file")
    try:
        tr = load_translator(args.checkpoint)
    except (CheckpointError, OSError) as exc:
        return _fail(str(exc))
    if args.out is not None:
        out = Path(args.out)
    elif tr.directory is not None:
        out = Path(tr.directory) / "head_stats.json"
    else:
        return _fail("no checkpoint folder to write into: pass --out")
    if not out.parent.is_dir():
        return _fail(f"{out.parent}: no such directory for --out")
    try:
        pairs = load_split(str(path), "train", tr.cfg.src_lang, tr.cfg.tgt_lang)  # a single file is "train"
    except DataError as exc:
        return _fail(str(exc))
    sentences = [s for s, _ in pairs][: args.limit]
    if not sentences:
        return _fail(f"{path}: no {tr.cfg.src_lang}-{tr.cfg.tgt_lang} pairs to analyse")

    start = time.perf_counter()
    stats = []
    for i, text in enumerate(tqdm(sentences, desc="analysing", unit="sent", file=sys.stderr)):
        try:
            stats.append(tr.trace(text).head_stats)  # analysis.head_stats of the trace
        except ValueError as exc:  # e.g. a source that is only control characters
            return _fail(f"{path}: sentence {i + 1}: {exc}")
    result = aggregate_head_stats(stats)
    result.update({"checkpoint": str(args.checkpoint), "data": str(path)})
    try:
        out.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        return _fail(f"{out}: cannot write ({exc})")
    seconds = time.perf_counter() - start
    print(json.dumps({"n": len(sentences), "seconds": round(seconds, 2), "out": str(out)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
