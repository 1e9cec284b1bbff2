"""Score a checkpoint on a JSONL test file with batched greedy or beam decoding and sacrebleu.

    python -m transformer.evaluate --checkpoint checkpoints/en-it --data data/tatoeba-en-it/test.jsonl
    python -m transformer.evaluate --data data/tatoeba-en-it/test.jsonl --beam-size 4
    python -m transformer.evaluate --checkpoint runs/base/best --data data/tatoeba-en-it/test.jsonl --save

Progress goes to stderr; the last stdout line is one JSON object with at least
``bleu``, ``chrf``, ``n`` and ``seconds``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tqdm import tqdm

from .checkpoint import METRICS_FILE, write_file_atomic
from .cli import ArgumentParser, fail, load_translator_or_exit, whole_number
from .data import DataError, load_split, local_data_files
from .metrics import corpus_scores
from .modelcard import display_source


def parse_args(argv=None):
    p = ArgumentParser(prog="python -m transformer.evaluate", description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", default="checkpoints/en-it", help="checkpoint directory or hub repo id")
    p.add_argument("--data", required=True, help="JSONL file (or directory with test.jsonl) in the OPUS Books schema")
    p.add_argument("--split", default=None, help="split to score when --data is a directory (default: test; a single file is read whole)")
    p.add_argument("--src", default=None, help="source language (default: the checkpoint's)")
    p.add_argument("--tgt", default=None, help="target language (default: the checkpoint's)")
    p.add_argument("--limit", type=whole_number(1), default=None, help="score only the first N pairs")
    p.add_argument("--batch-size", type=whole_number(1), default=64, help="sentences per decoding batch")
    p.add_argument("--beam-size", type=whole_number(1), default=1, help="beam width k (1: greedy decoding)")
    p.add_argument("--output", default=None, help="write the hypotheses here, one per line")
    p.add_argument("--save", action="store_true",
                   help="record the greedy scores in the checkpoint's metrics.json as its 'test' entry, which its "
                        "model card shows once rebuilt (python -m transformer.modelcard); local folders only")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    path = Path(args.data)
    if not path.exists():
        fail(f"{path}: no such file or directory")
    split = args.split or ("train" if path.is_file() else "test")
    if args.save and args.beam_size != 1:
        fail("--save records greedy scores: leave out --beam-size (benchmarks/beam_eval.py --save records beam search)")
    if args.save and not (Path(args.checkpoint) / METRICS_FILE).is_file():
        fail(f"--save: {args.checkpoint} is not a local checkpoint folder with a {METRICS_FILE}")
    try:
        local_data_files(path, split)  # the split's file is there, before the model loads
    except DataError as exc:
        fail(str(exc))
    tr = load_translator_or_exit(args.checkpoint)
    src, tgt = args.src or tr.cfg.src_lang, args.tgt or tr.cfg.tgt_lang
    try:
        pairs = load_split(str(path), split, src, tgt)
    except DataError as exc:
        fail(str(exc))
    if not pairs:
        fail(f"{path}: no {src}-{tgt} pairs to score in split {split!r}")
    pairs = pairs[: args.limit] if args.limit else pairs

    start = time.perf_counter()
    hyps: list[str] = []
    with tqdm(total=len(pairs), desc="translating", unit="sent", file=sys.stderr) as bar:
        for i in range(0, len(pairs), args.batch_size):
            chunk = pairs[i : i + args.batch_size]
            try:
                hyps.extend(tr.translate([s for s, _ in chunk], batch_size=args.batch_size,
                                         beam_size=args.beam_size))
            except ValueError as exc:  # e.g. a source that is only control characters
                fail(f"{path}: pair {i + 1}+: {exc}")
            bar.update(len(chunk))
    seconds = time.perf_counter() - start
    scores = corpus_scores(hyps, [t for _, t in pairs])
    if args.output:
        Path(args.output).write_text("\n".join(hyps) + "\n", encoding="utf-8")
    if args.save:
        metrics_path = Path(args.checkpoint) / METRICS_FILE
        metrics = json.loads(metrics_path.read_text(encoding="utf-8"))
        metrics["test"] = {**scores, "n": len(pairs), "data": display_source(str(path))}
        write_file_atomic(metrics_path, json.dumps(metrics, indent=2) + "\n")
    print(json.dumps({**scores, "n": len(pairs), "beam_size": args.beam_size, "seconds": round(seconds, 2),
                      "checkpoint": str(args.checkpoint), "data": str(path), "src": src, "tgt": tgt}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
