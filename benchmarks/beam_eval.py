"""Beam search on the test set: BLEU, chrF and speed per beam size, and the beam tree's server time.

    python benchmarks/beam_eval.py [--checkpoint checkpoints/en-it] \
        [--data data/tatoeba-en-it/test.jsonl] [--beam-sizes 1,4,8] [--limit N] [--save]

- one row for greedy decoding (``transformer.cli.evaluate.translate_all``, the baseline: the
  batches and so the scores of ``python -m transformer.cli.evaluate``) and one per beam size k
  (``transformer.core.beam.translate_beam``): sacrebleu BLEU and chrF against the references,
  wall-clock seconds and sentences per second;
- ``beam_tree`` (what the app's ``/beam`` endpoint runs) on a 10-word sentence at k=4:
  median wall-clock and CPU milliseconds over ``--repeat`` runs after one warm-up
  (target: <= 500 ms wall-clock; CPU time tells what it costs when the machine is shared).
Progress goes to stderr; the table to stdout; the last line is one JSON object. ``--save``
also records the table in the checkpoint (metrics.json ``beam``, model card section).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from _repo import ROOT  # the clone, first on sys.path

import torch  # noqa: E402

from transformer.core.beam import translate_beam  # noqa: E402
from transformer.interpret.beam_tree import beam_tree  # noqa: E402
from transformer.cli import data_split_or_exit, load_translator_or_exit  # noqa: E402
from transformer.training.data import DataError, load_split  # noqa: E402
from transformer.cli.evaluate import translate_all  # noqa: E402
from transformer.core.metrics import corpus_scores  # noqa: E402
from transformer.cli.modelcard import display_source  # noqa: E402

SENTENCE = "My sister bought a beautiful red dress for the party."  # 10 words
TREE_TARGET_MS = 500


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--checkpoint", default=str(ROOT / "checkpoints" / "en-it"), help="checkpoint directory or hub repo id"
    )
    p.add_argument(
        "--data",
        default=str(ROOT / "data" / "tatoeba-en-it" / "test.jsonl"),
        help="JSONL file (read whole), or a folder: its test.jsonl; OPUS Books schema, .jsonl.gz too",
    )
    p.add_argument("--beam-sizes", default="1,4,8", help="comma-separated beam sizes to score")
    p.add_argument("--limit", type=int, default=None, help="score only the first N pairs")
    p.add_argument("--batch-size", type=int, default=64, help="sentences per decoding batch")
    p.add_argument("--length-penalty", type=float, default=0.6, help="GNMT alpha of the length penalty")
    p.add_argument("--repeat", type=int, default=10, help="timed runs of beam_tree (median reported)")
    p.add_argument("--sentence", default=SENTENCE, help="sentence for the beam_tree timing")
    p.add_argument(
        "--save",
        action="store_true",
        help="record the table in the checkpoint: metrics.json gains a 'beam' entry and the "
        "model card (README.md) a 'Beam search' section (local checkpoint folders only)",
    )
    return p.parse_args(argv)


def save_to_checkpoint(directory: Path, beam: dict) -> list[Path]:
    """Write ``beam`` into ``directory``'s metrics.json and model card; returns the files
    written. Each file is replaced whole (written beside it, then renamed), so an
    interrupted run leaves the old file, never half a file."""
    from transformer.core.checkpoint import write_file_atomic
    from transformer.cli.modelcard import BEAM_HEADING, beam_section, with_section

    written = []
    metrics_path = directory / "metrics.json"
    metrics = json.loads(metrics_path.read_text(encoding="utf-8")) if metrics_path.is_file() else {}
    metrics["beam"] = beam
    card_path = directory / "README.md"
    updates = [(metrics_path, json.dumps(metrics, indent=2, ensure_ascii=False) + "\n")]
    if card_path.is_file():
        card = card_path.read_text(encoding="utf-8")
        updates.append((card_path, with_section(card, BEAM_HEADING, beam_section(beam)).rstrip("\n") + "\n"))
    for path, text in updates:
        written.append(write_file_atomic(path, text))
    return written


def fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def flag_problem(args) -> str | None:
    """What is wrong with the flags, or None; asked before the model loads."""
    if not args.beam_sizes or min(args.beam_sizes) < 1:
        return "--beam-sizes needs at least one beam size, each >= 1"
    if args.limit is not None and args.limit <= 0:
        return "--limit must be positive"
    if args.batch_size <= 0 or args.repeat <= 0:
        return "--batch-size and --repeat must be positive"
    if args.length_penalty < 0:
        return "--length-penalty must be >= 0"
    if args.save and not (Path(args.checkpoint) / "config.json").is_file():
        return f"--save needs a local checkpoint folder, and {args.checkpoint} is not one"
    if args.save and not os.access(args.checkpoint, os.W_OK):
        return f"--save: not allowed to write into {args.checkpoint}"
    return None


def decode_rows(tr, sources: list[str], refs: list[str], args) -> list[dict]:
    """One row per decoder: greedy (as ``transformer.cli.evaluate`` decodes), then each beam size."""

    def run(name, k, fn):
        print(f"decoding {len(sources)} sentences: {name}", file=sys.stderr)
        start = time.perf_counter()
        hyps = fn()
        seconds = time.perf_counter() - start
        return {
            "decoder": name,
            "k": k,
            **corpus_scores(hyps, refs),
            "seconds": round(seconds, 2),
            "sentences_per_s": round(len(sources) / seconds, 2),
        }, hyps

    greedy_row, greedy_hyps = run("greedy", 1, lambda: translate_all(tr, sources, args.batch_size))
    rows = [greedy_row]
    for k in args.beam_sizes:
        row, hyps = run(
            f"beam k={k}",
            k,
            lambda k=k: translate_beam(
                tr, sources, beam_size=k, batch_size=args.batch_size, length_penalty=args.length_penalty
            ),
        )
        if k == 1:
            row["equals_greedy"] = hyps == greedy_hyps
        rows.append(row)
    return rows


def time_beam_tree(tr, sentence: str, repeat: int, length_penalty: float) -> dict:
    """Median wall-clock and CPU milliseconds of ``beam_tree`` at k=4, after one warm-up."""
    print(f"timing beam_tree at k=4 on: {sentence!r}", file=sys.stderr)
    beam_tree(tr, sentence, 4, length_penalty=length_penalty)  # warm-up
    times, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        _, tree = beam_tree(tr, sentence, 4, length_penalty=length_penalty)
        times.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return {
        "k": 4,
        "words": len(sentence.split()),
        "median_ms": round(statistics.median(times), 1),
        "min_ms": round(min(times), 1),
        "median_cpu_ms": round(statistics.median(cpu), 1),
        "target_ms": TREE_TARGET_MS,
        "meets_target": statistics.median(times) <= TREE_TARGET_MS,
        "nodes": len(tree["nodes"]),
        "json_bytes": len(json.dumps(tree)),
    }


def print_table(rows: list[dict], tree_ms: dict, heading: str) -> None:
    base = rows[0]
    print(f"\n{heading}, torch threads {torch.get_num_threads()}")
    print(f"{'decoder':<12} {'BLEU':>6} {'chrF':>6} {'dBLEU':>6} {'sent/s':>8} {'seconds':>8} {'time x':>7}")
    for r in rows:
        print(
            f"{r['decoder']:<12} {r['bleu']:>6.2f} {r['chrf']:>6.2f} {r['bleu'] - base['bleu']:>+6.2f} "
            f"{r['sentences_per_s']:>8.2f} {r['seconds']:>8.2f} {r['seconds'] / max(base['seconds'], 1e-9):>7.2f}"
        )
    print(
        f"beam_tree k=4, {tree_ms['words']} words: median {tree_ms['median_ms']} ms (min {tree_ms['min_ms']}, "
        f"CPU {tree_ms['median_cpu_ms']} ms, target <= {TREE_TARGET_MS} ms), {tree_ms['nodes']} nodes, "
        f"{tree_ms['json_bytes']} bytes of JSON"
    )


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        args.beam_sizes = [int(k) for k in args.beam_sizes.split(",") if k.strip()]
    except ValueError:
        return fail(f"--beam-sizes must be comma-separated integers, got {args.beam_sizes!r}")
    problem = flag_problem(args)
    if problem:
        return fail(problem)
    path, split, data_file = data_split_or_exit(args.data, None)
    tr = load_translator_or_exit(args.checkpoint)
    try:
        pairs = load_split(str(path), split, tr.cfg.src_lang, tr.cfg.tgt_lang)
    except DataError as exc:
        return fail(str(exc))
    pairs = pairs[: args.limit] if args.limit else pairs
    if not pairs:
        return fail(f"{path}: no {tr.cfg.src_lang}-{tr.cfg.tgt_lang} pairs")
    sources, refs = [s for s, _ in pairs], [t for _, t in pairs]
    try:
        rows = decode_rows(tr, sources, refs, args)
        tree_ms = time_beam_tree(tr, args.sentence, args.repeat, args.length_penalty)
    except ValueError as exc:  # e.g. a source that is only control characters
        return fail(f"{path}: {exc}")
    print_table(
        rows,
        tree_ms,
        f"{len(sources)} sentences from {path}, checkpoint {args.checkpoint}, length penalty {args.length_penalty}",
    )
    if args.save:
        beam = {
            "data": display_source(str(data_file)),
            "n": len(sources),
            "length_penalty": args.length_penalty,
            "torch_threads": torch.get_num_threads(),
            "batch_size": args.batch_size,
            "command": " ".join(["python benchmarks/beam_eval.py", *(argv if argv is not None else sys.argv[1:])]),
            "rows": rows,
        }
        try:
            for f in save_to_checkpoint(Path(args.checkpoint), beam):
                print(f"wrote {f}", file=sys.stderr)
        except (OSError, ValueError) as exc:
            return fail(f"could not save to {args.checkpoint}: {exc}")
    print(
        json.dumps(
            {
                "checkpoint": str(args.checkpoint),
                "data": str(data_file),
                "n": len(sources),
                "length_penalty": args.length_penalty,
                "torch_threads": torch.get_num_threads(),
                "results": rows,
                "beam_tree": tree_ms,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
