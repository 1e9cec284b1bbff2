"""Training-step time of model shapes side by side: what a shape costs per update decides how
many epochs fit in the 90-minute budget (``--max-minutes``).

    python benchmarks/train_step.py [--d-ff 1024 512] [--vocab-size 2000] [--steps 55] [--rounds 2] [--threads 2]

Each shape gets a fresh model from the ``base`` preset with its ``--d-ff`` (and the
vocabulary of ``--vocab-size`` trained on the corpus), then the same first batches of epoch 1
(token-budget batches, float32, ``--threads`` torch threads). The shapes take turns, round
after round, so that a change in the host's load hits all of them; each shape's figure is its
best round. The last stdout line is one JSON object with every figure and the ratios to the
first shape.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from transformer.cli import fail  # noqa: E402
from transformer.data import DataError, encode_pairs, load_parallel, make_batch, token_budget_batches  # noqa: E402
from transformer.trainer import build_fresh  # noqa: E402
from transformer.training import PRESETS, make_optimizer, make_scheduler, train_step  # noqa: E402

WARMUP_STEPS = 5  # untimed: first calls allocate and pick kernels


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=str(ROOT / "data" / "tatoeba-en-it"),
                   help="local directory with train.jsonl and validation.jsonl")
    p.add_argument("--d-ff", type=int, nargs="+", default=[1024, 512], help="feed-forward widths to compare")
    p.add_argument("--vocab-size", type=int, default=2000, help="joint vocabulary size of every shape")
    p.add_argument("--steps", type=int, default=55, help="timed training steps per shape and round")
    p.add_argument("--rounds", type=int, default=2, help="rounds; each shape's best round is reported")
    p.add_argument("--batch-tokens", type=int, default=PRESETS["base"].train.batch_tokens,
                   help="tokens per batch (default: the base preset's)")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    args = p.parse_args(argv)
    if min(args.steps, args.rounds, args.threads, args.batch_tokens, *args.d_ff) < 1:
        fail("--steps, --rounds, --threads, --batch-tokens and every --d-ff must be positive")
    torch.set_num_threads(args.threads)
    try:
        data = load_parallel(args.data, "en", "it")
    except DataError as exc:
        fail(str(exc))
    base = PRESETS["base"]
    settings = replace(base.train, bf16=False, batch_tokens=args.batch_tokens)
    seconds: dict[int, list[float]] = {d: [] for d in args.d_ff}
    for rnd in range(args.rounds):
        for d_ff in args.d_ff:
            preset = replace(base, vocab_size=args.vocab_size, model=replace(base.model, d_ff=d_ff))
            model, src_tok, tgt_tok = build_fresh(preset, data, "en", "it", seed=settings.seed)
            enc = encode_pairs(data.train, src_tok, tgt_tok, model.cfg)
            batches = token_budget_batches(enc, settings.batch_tokens, settings.seed, 0)
            if len(batches) < WARMUP_STEPS + args.steps:
                fail(f"{args.data}: one epoch has {len(batches)} batches of {settings.batch_tokens} tokens, fewer "
                     f"than the {WARMUP_STEPS} untimed + {args.steps} timed steps asked for: lower --steps")
            batches = batches[: WARMUP_STEPS + args.steps]
            opt = make_optimizer(model, settings)
            sched = make_scheduler(opt, settings, len(batches))
            for i, idx in enumerate(batches):
                if i == WARMUP_STEPS:
                    t0 = time.perf_counter()
                train_step(model, make_batch([enc[j] for j in idx], model.cfg), opt, sched, settings, "cpu")
            seconds[d_ff].append((time.perf_counter() - t0) / (len(batches) - WARMUP_STEPS))
            print(f"round {rnd + 1}: d_ff {d_ff}: {seconds[d_ff][-1] * 1000:.1f} ms/step", flush=True)
    best = {d: min(v) for d, v in seconds.items()}
    first = args.d_ff[0]
    print(json.dumps({"vocab_size": args.vocab_size, "threads": args.threads, "steps": args.steps,
                      "ms_per_step": {str(d): round(s * 1000, 1) for d, s in best.items()},
                      f"speedup_vs_d_ff_{first}": {str(d): round(best[first] / s, 2) for d, s in best.items()}}))


if __name__ == "__main__":
    main()
