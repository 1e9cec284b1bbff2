"""The output projection of a decoding step, F.linear against the (D, V) copy, in one run.

    python benchmarks/projection.py [--checkpoint DIR] [--repeat 7]

``Transformer.project`` multiplies decoder states by a contiguous (D, V) copy of the output
matrix when no gradient is wanted; training and anything with gradients uses F.linear on the
(V, D) matrix. This times the 10-word trace both ways, alternating, in one process (the copy's
path is the model's own; the other is the same method with F.linear put back), and prints the
median of each and their ratio. The last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from contextlib import nullcontext
from unittest import mock

import torch
import torch.nn.functional as F

from _repo import ROOT  # the clone, first on sys.path

from transformer.cli import load_translator_or_exit  # noqa: E402
from transformer.core.model import Transformer  # noqa: E402

TEN_WORDS = "My sister bought a beautiful red dress for the party."


def f_linear(self, hidden):
    weight = self.proj.weight if self.proj is not None else self.tgt_embed.weight
    return F.linear(hidden, weight, self.logits_bias)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", default=str(ROOT / "checkpoints" / "en-it"))
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--steps", type=int, default=13, help="hold the trace to this many steps (forced, then [EOS])")
    args = p.parse_args(argv)
    tr = load_translator_or_exit(args.checkpoint)
    first = tr.trace(TEN_WORDS)
    forced = [*first.tgt_ids[1 : args.steps], tr.cfg.tgt_eos_id]
    run = lambda: tr.trace(TEN_WORDS, forced_prefix=forced)  # noqa: E731
    times = {"copy": [], "f_linear": []}
    with mock.patch.object(Transformer, "project", f_linear):
        run()
    run()
    for _ in range(args.repeat):
        for name in times:
            with mock.patch.object(Transformer, "project", f_linear) if name == "f_linear" else nullcontext():
                t0 = time.perf_counter()
                trace = run()
                times[name].append((time.perf_counter() - t0) * 1000)
    ms = {k: round(statistics.median(v), 1) for k, v in times.items()}
    threads = torch.get_num_threads()
    print(f"{args.checkpoint}: {trace.steps}-step trace, median of {args.repeat}, torch threads {threads}")
    print(f"  F.linear on (V, D): {ms['f_linear']:8.1f} ms")
    print(f"  the (D, V) copy:    {ms['copy']:8.1f} ms   ({ms['f_linear'] / ms['copy']:.2f}x)")
    print(json.dumps({"steps": trace.steps, "ms": ms, "speedup": round(ms["f_linear"] / ms["copy"], 2)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
