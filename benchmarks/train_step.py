"""Training-step time of model variants side by side: what a variant costs per update decides
how many epochs fit in the 90-minute budget (``--max-minutes``).

    python benchmarks/train_step.py [--d-ff 1024 512] [--dropout-impl fast torch] [--vocab-size 2000]
                                    [--steps 55] [--rounds 2] [--threads 2]

A variant is a feed-forward width (``--d-ff``) and a dropout implementation: ``fast`` is the
model's own CPU mask (``transformer.core.model.dropout``), ``torch`` puts ``nn.Dropout`` back in
every dropout slot (torch's per-element ``bernoulli_``). One joint tokenizer of
``--vocab-size`` is trained on the corpus; each variant then gets a fresh model of the ``base``
preset's shape, and all of them train on the same first batches of epoch 1 (token-budget
batches, float32). ``speed.side_by_side`` runs them: one untimed pass each, then interleaved
rounds, so a change in the host's load hits every variant. Each figure is the median over the
rounds. The last stdout line is one JSON object with every figure and the ratios to the first
variant.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import torch
import torch.nn as nn

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from speed import side_by_side  # noqa: E402
from transformer.cli import fail  # noqa: E402
from transformer.training.data import DataError, encode_pairs, load_parallel, make_batch, token_budget_batches  # noqa: E402
from transformer.core.model import Dropout, build_model  # noqa: E402
from transformer.training.optim import make_optimizer, make_scheduler, seed_everything, train_step  # noqa: E402
from transformer.training.presets import PRESETS  # noqa: E402
from transformer.training.setup import build_fresh  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--data",
        default=str(HERE.parent / "data" / "tatoeba-en-it"),
        help="local directory with train.jsonl and validation.jsonl",
    )
    p.add_argument("--d-ff", type=int, nargs="+", default=[1024, 512], help="feed-forward widths to compare")
    p.add_argument(
        "--dropout-impl",
        nargs="+",
        choices=["fast", "torch"],
        default=["fast"],
        help="dropout implementations to compare: the model's fast CPU mask, torch's nn.Dropout",
    )
    p.add_argument("--vocab-size", type=int, default=2000, help="joint vocabulary size of every shape")
    p.add_argument("--steps", type=int, default=55, help="timed training steps per shape and round")
    p.add_argument("--rounds", type=int, default=2, help="interleaved rounds; each figure is their median")
    p.add_argument(
        "--batch-tokens",
        type=int,
        default=PRESETS["base"].train.batch_tokens,
        help="tokens per batch (default: the base preset's)",
    )
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
    model, tok, _ = build_fresh(replace(base, vocab_size=args.vocab_size), data, "en", "it", seed=settings.seed)
    enc = encode_pairs(data.train, tok, tok, model.cfg)
    index_batches = token_budget_batches(enc, settings.batch_tokens, settings.seed, 0)
    if len(index_batches) < args.steps:
        fail(
            f"{args.data}: one epoch has {len(index_batches)} batches of {settings.batch_tokens} tokens, fewer "
            f"than the {args.steps} steps asked for: lower --steps"
        )
    batches = [make_batch([enc[i] for i in idx], model.cfg) for idx in index_batches[: args.steps]]

    def step_fn(d_ff: int, impl: str):
        seed_everything(settings.seed)
        m = build_model(replace(model.cfg, d_ff=d_ff))
        if impl == "torch":  # the same modules and p, with torch's own forward
            for mod in m.modules():
                if isinstance(mod, Dropout):
                    mod.__class__ = nn.Dropout
        opt = make_optimizer(m, settings)
        sched = make_scheduler(opt, settings, (args.rounds + 1) * args.steps)
        return lambda b: train_step(m, b, opt, sched, settings, "cpu")

    # a variant's name is its d_ff alone when one dropout implementation is compared (as before)
    variants = {
        (f"{d}" if len(args.dropout_impl) == 1 else f"{d}/{impl}"): (d, impl)
        for d in args.d_ff
        for impl in args.dropout_impl
    }
    names = list(variants)
    tok_s = side_by_side({n: step_fn(*variants[n]) for n in names}, {n: batches for n in names}, args.rounds)
    tokens = sum(b.n_src_tokens + b.n_tgt_tokens for b in batches)
    ms = {n: round(tokens / tok_s[n] / args.steps * 1000, 1) for n in names}
    for n in names:
        d, impl = variants[n]
        print(f"d_ff {d}, {impl} dropout: {ms[n]} ms/step, {tok_s[n]:,.0f} tokens/s", flush=True)
    print(
        json.dumps(
            {
                "vocab_size": args.vocab_size,
                "threads": args.threads,
                "steps": args.steps,
                "ms_per_step": ms,
                f"speedup_vs_d_ff_{names[0]}": {n: round(tok_s[n] / tok_s[names[0]], 2) for n in names},
            }
        )
    )


if __name__ == "__main__":
    main()
