"""Two checkpoints side by side on the app's model budget: what a new model must keep to ship.

    python benchmarks/model_budget.py --old runs/r4-shipped --new checkpoints/en-it [--rounds 15]

Per checkpoint, in alternating rounds so that both meet the same machine:
- trace: ``Translator.trace`` of a 10-word sentence (greedy decoding with every weight kept,
  what one Translate asks of the model), median over the rounds;
- payload: the viewer's payload of that sentence as the page receives it (``encode_trace``
  as JSON), in KB;
- sizes: the weights file, the snapshots under ``snapshots/`` and the whole folder, in MB.

The budget (the app's): trace <= 100 ms on 2 cores, payload <= 100 KB, weights <= 50 MB in
fp16, the snapshots within the repository's 80 MB. Translate -> paint in a browser is
benchmarks/ui_latency.py's (run it against an app of each). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path


SENTENCE = "My sister bought a beautiful red dress for the party."  # 10 words
BUDGET = {"trace_ms": 100, "payload_kb": 100, "weights_mb": 50, "snapshots_mb": 80}


def folder_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6 if path.is_dir() else 0.0


def sizes(directory: Path) -> dict:
    return {
        "weights_mb": round((directory / "model.safetensors").stat().st_size / 1e6, 1),
        "snapshots_mb": round(folder_mb(directory / "snapshots"), 1),
        "folder_mb": round(folder_mb(directory), 1),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--old", required=True, help="the shipped checkpoint folder")
    p.add_argument("--new", required=True, help="the candidate checkpoint folder")
    p.add_argument("--rounds", type=int, default=15, help="alternating timed rounds")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads (the Space has 2 cores)")
    args = p.parse_args(argv)
    for flag, path in (("--old", args.old), ("--new", args.new)):
        if not (Path(path) / "model.safetensors").is_file():
            print(f"error: {flag} {path}: no model.safetensors there", file=sys.stderr)
            return 2

    import torch

    from explorer.payload import encode_trace
    from transformer import load_translator

    torch.set_num_threads(args.threads)
    models = {"old": load_translator(args.old), "new": load_translator(args.new)}
    times: dict[str, list[float]] = {name: [] for name in models}
    for tr in models.values():  # warm-up
        tr.trace(SENTENCE)
    for _ in range(args.rounds):
        for name, tr in models.items():
            t0 = time.perf_counter()
            tr.trace(SENTENCE)
            times[name].append((time.perf_counter() - t0) * 1000)
    result = {}
    for name, tr in models.items():
        trace = tr.trace(SENTENCE)
        payload = json.dumps(encode_trace(trace), separators=(",", ":"))
        result[name] = {
            "checkpoint": getattr(args, name),
            "trace_ms": round(statistics.median(times[name]), 1),
            "payload_kb": round(len(payload.encode()) / 1000, 1),
            "translation": trace.translation,
            **sizes(Path(getattr(args, name))),
        }
    print(f'"{SENTENCE}", {args.rounds} alternating rounds, torch threads {args.threads}')
    print(f"{'':12}{'old':>10}{'new':>10}{'new/old':>9}{'budget':>8}")
    for key in ("trace_ms", "payload_kb", "weights_mb", "snapshots_mb", "folder_mb"):
        old, new = result["old"][key], result["new"][key]
        ratio = f"{new / old:.2f}" if old else "-"
        print(f"{key:12}{old:>10}{new:>10}{ratio:>9}{BUDGET.get(key, ''):>8}")
    result["within_budget"] = all(result["new"][k] <= v for k, v in BUDGET.items())
    print(json.dumps(result, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
