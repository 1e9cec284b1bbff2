"""Does a forced wrong word make the model lean on its own prefix? ALTI+ source share after a What-if.

    python benchmarks/whatif_source_share.py [--checkpoint checkpoints/en-it]
        [--data data/tatoeba-en-it/test.jsonl] [--n 40] [--after 3]

For each of the first ``--n`` test sentences whose greedy translation has at least 6 steps, step
t = T // 3 (0-based) is forced, as the app's What-if does (``explorer.texts.whatif_prefix``: the
greedy outputs of steps 0..t-1, then candidate ``rank`` at step t), with the 2nd candidate
(rank 1, often a plausible alternative) and with the 10th (rank 9, the least likely of the
app's list: usually wrong). The source share of ALTI+ (``transformer.interpret.contributions``)
of the step that follows (t+1, which reads the forced word) and of the ``--after`` steps that
follow (t+1 .. t+after) is compared with the same steps of the greedy translation. Step t itself
is computed before the forced word is read, so its share is the same in both. The last line is
one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import torch

from _repo import ROOT  # the clone, first on sys.path

from transformer.cli import load_translator_or_exit  # noqa: E402
from transformer.interpret.contributions import alti_contributions  # noqa: E402
from transformer.training.data import load_split  # noqa: E402

RANKS = {"2nd candidate": 1, "10th candidate": 9}


def forced(trace, t: int, rank: int) -> list[int]:
    """The app's What-if prefix: greedy outputs of steps 0..t-1, then candidate ``rank`` at step t."""
    return [*trace.tgt_ids[1 : t + 1], int(trace.topk_ids[t][rank])]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", default="checkpoints/en-it")
    p.add_argument("--data", default=str(ROOT / "data/tatoeba-en-it/test.jsonl"))
    p.add_argument("--n", type=int, default=40)
    p.add_argument("--after", type=int, default=3)
    args = p.parse_args(argv)
    torch.set_num_threads(1)  # a shared machine: one thread never waits on another
    tr = load_translator_or_exit(args.checkpoint)
    pairs = load_split(args.data, "train", tr.cfg.src_lang, tr.cfg.tgt_lang)
    start, cpu = time.perf_counter(), time.process_time()
    rows = []
    for src, _ in pairs:
        if len(rows) >= args.n:
            break
        g = tr.trace(src)
        if g.steps < 6:
            continue
        t = g.steps // 3
        g_share = alti_contributions(tr, g).source_share
        row = {
            "src": src,
            "step": t,
            "greedy": g.translation,
            "greedy_next": float(g_share[t + 1]),
            "greedy_after": float(g_share[t + 1 : t + 1 + args.after].mean()),
        }
        for name, rank in RANKS.items():
            f = tr.trace(src, forced_prefix=forced(g, t, rank))
            f_share = alti_contributions(tr, f).source_share
            assert abs(f_share[t] - g_share[t]) < 1e-4  # the forced step itself reads nothing new
            after = f_share[t + 1 : t + 1 + args.after]
            if len(after) < args.after:  # a forced [EOS], or an ending too soon to compare
                break
            row[name] = {
                "translation": f.translation,
                "token": f.tgt_tokens[t + 1],
                "next": float(after[0]),
                "after": float(after.mean()),
            }
        else:
            rows.append(row)
            print(json.dumps(row, ensure_ascii=False), file=sys.stderr)
            continue
        print(f"skipped (forced continuation too short): {src}", file=sys.stderr)
    summary = {"n": len(rows), "after_steps": args.after}
    for span, key in (("next step", "next"), (f"next {args.after} steps", "after")):
        greedy = np.array([r[f"greedy_{key}"] for r in rows])
        summary[span] = {"greedy_mean_source_share": round(float(greedy.mean()), 4)}
        for name in RANKS:
            forced_share = np.array([r[name][key] for r in rows])
            d = forced_share - greedy
            summary[span][name] = {
                "mean_source_share": round(float(forced_share.mean()), 4),
                "mean_change": round(float(d.mean()), 4),
                "standard_error": round(float(d.std(ddof=1) / np.sqrt(len(d))), 4),
                "median_change": round(float(np.median(d)), 4),
                "lower_in": f"{int((d < 0).sum())}/{len(d)}",
            }
    summary["seconds"] = round(time.perf_counter() - start, 1)
    summary["cpu_seconds"] = round(time.process_time() - cpu, 1)
    print(json.dumps(summary, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
