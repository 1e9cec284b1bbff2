"""Server-side timings of direct logit attribution, activation patching and gradient attribution.

    python benchmarks/attribution_timing.py [--checkpoint checkpoints/en-it] [--repeat 5] [--threads N]

On one 10-word sentence A: attribution and saliency at its last step (the longest decoder
prefix, the costliest step); patching between A and a sentence B that differs in one word,
at the first step where their translations differ:

- greedy: plain greedy translation of the sentence (the unit the others are compared with);
- dla / dla_given: ``attribution.direct_logit_attribution`` against the runner-up, from the
  text alone (greedy translation included) and with the translation given (``target_ids``,
  as a panel that already holds the trace would call it);
- patching / patching_given: ``attribution.activation_patching``, every decoder head and FFN
  block in one batched pass, from the texts and with both translations given; target 1 s;
- saliency / saliency_given: ``saliency.saliency`` at 16 integration panels; target 1 s;
- saliency_tol: the same refined until the completeness gap is within 1e-2 (``tolerance``).
Each figure is the median of ``--repeat`` runs after one warm-up; ``*_over_greedy`` divides
it by the greedy figure. The machine's load average is printed with them: on a shared
machine every figure grows with it (the ratios less so). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch

from _repo import ROOT  # the clone, first on sys.path

from benchmarks.timing import SENTENCE, median_ms  # noqa: E402

from transformer.interpret.attribution import activation_patching, direct_logit_attribution, greedy_targets
from transformer.cli import load_translator_or_exit
from transformer.interpret.saliency import saliency

OTHER = "My sister bought a beautiful red dress for the wedding."  # one word changed (two more subwords)


def first_difference(a: list[int], b: list[int]) -> int:
    return next((t for t, (x, y) in enumerate(zip(a, b)) if x != y), -1)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", default=str(ROOT / "checkpoints" / "en-it"), help="checkpoint directory")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per figure (median reported)")
    p.add_argument("--sentence", default=SENTENCE, help="sentence A to analyse")
    p.add_argument("--other", default=OTHER, help="sentence B of the patching pair (one word changed)")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own choice)")
    args = p.parse_args(argv)
    if args.repeat < 1:
        print("error: --repeat must be positive", file=sys.stderr)
        return 2
    if args.threads is not None and args.threads < 1:
        print("error: --threads must be positive", file=sys.stderr)
        return 2
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    tr = load_translator_or_exit(args.checkpoint)
    a, b, r = args.sentence, args.other, args.repeat
    ya, yb = greedy_targets(tr, [a, b])
    step, last = first_difference(ya, yb), len(ya) - 1
    if step < 0:
        print("error: the two sentences translate to the same tokens; change --other", file=sys.stderr)
        return 2
    figures = {
        "greedy_ms": median_ms(lambda: tr.translate([a]), r),
        "dla_ms": median_ms(lambda: direct_logit_attribution(tr, a, last, versus="runner-up"), r),
        "dla_given_ms": median_ms(lambda: direct_logit_attribution(tr, a, last, ya, versus="runner-up"), r),
        "patching_ms": median_ms(lambda: activation_patching(tr, a, b, step), r),
        "patching_given_ms": median_ms(lambda: activation_patching(tr, a, b, step, ya, yb), r),
        "saliency_ms": median_ms(lambda: saliency(tr, a, last), r),
        "saliency_given_ms": median_ms(lambda: saliency(tr, a, last, ya), r),
        "saliency_tol_ms": median_ms(lambda: saliency(tr, a, last, ya, tolerance=1e-2), r),
    }
    for name in ("dla", "dla_given", "patching", "patching_given", "saliency", "saliency_given", "saliency_tol"):
        figures[f"{name}_over_greedy"] = round(figures[f"{name}_ms"] / figures["greedy_ms"], 2)
    sal, sal_tol = saliency(tr, a, last, ya), saliency(tr, a, last, ya, tolerance=1e-2)
    patch = activation_patching(tr, a, b, step, ya, yb)
    info = {
        "sentence": a,
        "other": b,
        "words": len(a.split()),
        "last_step": last,
        "patching_step": step,
        "token_a": patch.token_a,
        "token_b": patch.token_b,
        "src_tokens": len(tr.encode_source(a).ids),
        "src_tokens_b": len(tr.encode_source(b).ids),
        "patched_rows": 1 + 2 * tr.cfg.n_decoder_layers * tr.cfg.h + tr.cfg.n_decoder_layers + 1,
        "patch_all_fraction": round(patch.fraction("all"), 6),
        "gap_16": round(sal.completeness_gap, 4),
        "tol_panels": sal_tol.n_steps,
        "gap_tol": round(sal_tol.completeness_gap, 4),
        "threads": torch.get_num_threads(),
        "repeat": r,
        "load_average_1min": round(os.getloadavg()[0], 2),
        "patching_target_met": figures["patching_ms"] <= 1000,
        "saliency_target_met": figures["saliency_ms"] <= 1000,
    }
    for name, value in {**figures, **info}.items():
        print(f"{name:>22}: {value}")
    print(json.dumps({**figures, **info}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
