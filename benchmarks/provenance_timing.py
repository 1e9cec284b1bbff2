"""Timings of "where did this word come from?" on one 10-word sentence: ALTI+, Kobayashi norms,
DecoderLens and a scored reference (``transformer.interpret``), each to answer within 1 s.

    python benchmarks/provenance_timing.py [--checkpoint checkpoints/en-it] [--repeat 5] [--threads 2]

Each figure is the median of ``--repeat`` runs after one warm-up: wall-clock milliseconds and
this process's CPU milliseconds (on a shared machine the wall clock also counts the time other
work held the cores). ``trace`` (``Translator.trace``) is given for scale: ALTI+ and the norms
read a trace the app already has. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from transformer.cli import load_translator_or_exit  # noqa: E402
from transformer.interpret import alti_contributions, decoder_lens, score_reference, value_norms  # noqa: E402

SENTENCE = "My sister bought a beautiful red dress for the party."  # 10 words
REFERENCE = "Mia sorella ha comprato un bel vestito rosso per la festa."


def median_ms(fn, repeat: int) -> tuple[float, float]:
    fn()  # warm-up
    wall, cpu = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return round(1000 * statistics.median(wall), 1), round(1000 * statistics.median(cpu), 1)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", default="checkpoints/en-it")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    tr = load_translator_or_exit(args.checkpoint)
    trace = tr.trace(SENTENCE)
    runs = {
        "trace": lambda: tr.trace(SENTENCE),
        "alti_contributions": lambda: alti_contributions(tr, trace),
        "value_norms": lambda: value_norms(tr, trace),
        "decoder_lens": lambda: decoder_lens(tr, SENTENCE),
        "score_reference": lambda: score_reference(tr, SENTENCE, REFERENCE),
    }
    out = {"sentence": SENTENCE, "steps": trace.steps, "threads": args.threads}
    for name, fn in runs.items():
        wall, cpu = median_ms(fn, args.repeat)
        out[name] = {"wall_ms": wall, "cpu_ms": cpu}
        print(f"{name:20s} wall {wall:8.1f} ms   cpu {cpu:8.1f} ms", file=sys.stderr)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
