"""Score a checkpoint on a JSONL test file with batched greedy decoding and sacrebleu.

    python -m transformer.evaluate --checkpoint checkpoints/en-it \
        --data ../shared/data/tatoeba-en-it/test.jsonl

Progress goes to stderr; the last stdout line is one JSON object with at least
``bleu``, ``chrf``, ``n`` and ``seconds``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tqdm import tqdm

from .checkpoint import CheckpointError
from .data import DataError, load_split
from .training import corpus_scores
from .translator import load_translator


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m transformer.evaluate", description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", default="checkpoints/en-it", help="checkpoint directory or hub repo id")
    p.add_argument("--data", required=True, help="JSONL file (or directory with test.jsonl) in the OPUS Books schema")
    p.add_argument("--split", default=None, help="split to score when --data is a directory (default: test; a single file is read whole)")
    p.add_argument("--src", default=None, help="source language (default: the checkpoint's)")
    p.add_argument("--tgt", default=None, help="target language (default: the checkpoint's)")
    p.add_argument("--limit", type=int, default=None, help="score only the first N pairs")
    p.add_argument("--batch-size", type=int, default=64, help="sentences per decoding batch")
    p.add_argument("--output", default=None, help="write the hypotheses here, one per line")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.limit is not None and args.limit <= 0:
        print("error: --limit must be positive", file=sys.stderr)
        return 2
    if args.batch_size <= 0:
        print("error: --batch-size must be positive", file=sys.stderr)
        return 2
    try:
        tr = load_translator(args.checkpoint)
    except (CheckpointError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    src, tgt = args.src or tr.cfg.src_lang, args.tgt or tr.cfg.tgt_lang
    path = Path(args.data)
    if not path.exists():
        print(f"error: {path}: no such file or directory", file=sys.stderr)
        return 2
    split = args.split or ("train" if path.is_file() else "test")
    try:
        pairs = load_split(str(path), split, src, tgt)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not pairs:
        print(f"error: {path}: no {src}-{tgt} pairs to score in split {split!r}", file=sys.stderr)
        return 2
    pairs = pairs[: args.limit] if args.limit else pairs

    start = time.perf_counter()
    hyps: list[str] = []
    with tqdm(total=len(pairs), desc="translating", unit="sent", file=sys.stderr) as bar:
        for i in range(0, len(pairs), args.batch_size):
            chunk = pairs[i : i + args.batch_size]
            try:
                hyps.extend(tr.translate([s for s, _ in chunk], batch_size=args.batch_size))
            except ValueError as exc:  # e.g. a source that is only control characters
                print(f"error: {path}: pair {i + 1}+: {exc}", file=sys.stderr)
                return 2
            bar.update(len(chunk))
    seconds = time.perf_counter() - start
    scores = corpus_scores(hyps, [t for _, t in pairs])
    if args.output:
        Path(args.output).write_text("\n".join(hyps) + "\n", encoding="utf-8")
    print(json.dumps({**scores, "n": len(pairs), "seconds": round(seconds, 2), "checkpoint": str(args.checkpoint),
                      "data": str(path), "src": src, "tgt": tgt}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
