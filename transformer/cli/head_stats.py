"""Head diagnostics of a checkpoint over a test set, written as ``head_stats.json``.

    python -m transformer.cli.head_stats --checkpoint checkpoints/en-it \
        --data data/tatoeba-en-it [--split test] [--limit N] [--out FILE]

Every source sentence is decoded greedily with the full trace, which measures each head on
it (``transformer.core.readings.head_stats``); ``aggregate_head_stats`` averages them head by
head, and ``transformer.interpret.habits.with_habits`` names each head's habit from the averages.
The JSON goes to ``<checkpoint>/head_stats.json`` unless ``--out`` says otherwise, so it
ships with the model. Progress goes to stderr; the last stdout line is one JSON object
with ``n``, ``seconds`` and ``out``. Bad paths or flags: a message and exit code 2.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tqdm import tqdm

from transformer.core.readings import aggregate_head_stats
from transformer.interpret.habits import with_habits
from transformer.cli import (
    ArgumentParser,
    add_checkpoint_and_data,
    check_output_or_exit,
    data_split_or_exit,
    fail,
    load_translator_or_exit,
    whole_number,
)
from transformer.training.data import DataError, load_split


def parse_args(argv=None):
    p = ArgumentParser(prog="python -m transformer.cli.head_stats", description=__doc__.split("\n")[0])
    add_checkpoint_and_data(p, "analyse", "; only the source side is used")
    p.add_argument("--limit", type=whole_number(1), default=None, help="analyse only the first N sentences")
    p.add_argument("--out", default=None, help="where to write the JSON (default: <checkpoint>/head_stats.json)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    """0 when the file is written; bad input exits with code 2 and a one-line message
    (``transformer.cli.fail``)."""
    args = parse_args(argv)
    check_output_or_exit(args.out, "--out")
    path, split, data_file = data_split_or_exit(args.data, args.split)
    tr = load_translator_or_exit(args.checkpoint)
    if args.out is not None:
        out = Path(args.out).expanduser()
    elif tr.directory is not None:
        out = Path(tr.directory) / "head_stats.json"
        check_output_or_exit(out, "the default --out")
    else:
        fail("no checkpoint folder to write into: pass --out")
    try:
        pairs = load_split(str(path), split, tr.cfg.src_lang, tr.cfg.tgt_lang)
    except DataError as exc:
        fail(str(exc))
    sentences = [s for s, _ in pairs][: args.limit]
    if not sentences:
        fail(f"{path}: no {tr.cfg.src_lang}-{tr.cfg.tgt_lang} pairs to analyse")

    start = time.perf_counter()
    stats = []
    for i, text in enumerate(tqdm(sentences, desc="analysing", unit="sent", file=sys.stderr)):
        try:
            stats.append(tr.trace(text).head_stats)  # readings.head_stats of the sentence
        except ValueError as exc:  # e.g. a source that is only control characters
            fail(f"{path}: sentence {i + 1}: {exc}")
    result = with_habits(aggregate_head_stats(stats))
    result.update({"checkpoint": str(args.checkpoint), "data": str(data_file)})
    try:
        out.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        fail(f"{out}: cannot write ({exc})")
    seconds = time.perf_counter() - start
    print(json.dumps({"n": len(sentences), "seconds": round(seconds, 2), "out": str(out)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
