"""Side-by-side speed benchmark, all in one run on the same weights and data.

    python benchmarks/speed.py [--checkpoint checkpoints/en-it] [--data data/tatoeba-en-it/train.jsonl]

Decoding (same sentences, same weights):
  trace  our cached greedy trace (KV cache, attention recorded)
  naive  the textbook loop: source padded to a fixed length, the whole prefix
         re-decoded at every step, explicit attention
Training (same dims, same pairs; real non-pad tokens per second over timed steps):
  ours   our train step: token-budget batches, fused attention, the model's own CPU
         dropout mask
  seed   every pair padded to 350 tokens, batch size 8, float32, explicit attention
         (built from our modules, so it shares that dropout mask)
  torch  torch's nn.Transformer on the same token-budget batches, with torch's own
         dropout (benchmarks/train_step.py times the two masks alone)
Ours and torch are timed in both float32 and bf16 autocast, side by side in the same
rounds, and reported per dtype. The headline figures are those of the dtype the trainer
would train in on this CPU: it asks ``bf16_is_fast``, which keeps bf16 only where the
hardware has bf16 arithmetic (emulated bf16 is many times slower than float32).
The last stdout line is one JSON object with every figure and the ratios.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from dataclasses import replace

import torch
import torch.nn as nn
import torch.nn.functional as F

from _repo import ROOT  # the clone, first on sys.path

from transformer.cli import fail, load_translator_or_exit  # noqa: E402
from transformer.training.data import DataError, Batch, encode_pairs, load_split, make_batch, token_budget_batches  # noqa: E402
from transformer.core.decoding import naive_greedy_decode  # noqa: E402
from transformer.core.model import build_model, sinusoidal_table  # noqa: E402
from transformer.training.optim import autocast, bf16_is_fast, make_optimizer, make_scheduler, train_step  # noqa: E402
from transformer.training.presets import TrainSettings  # noqa: E402

DEFAULT_CHECKPOINT = ROOT / "checkpoints" / "en-it"
DEFAULT_DATA = ROOT / "data" / "tatoeba-en-it" / "train.jsonl"

SENTENCES = [
    "The black cat sleeps.",
    "I don't know where he lives.",
    "Tom bought a new car last week for his daughter.",
    "She said that she would come back tomorrow morning after work.",
    "We were very tired, so we went to bed early and slept until noon.",
    "My brother and I used to play football in the park near our house every Sunday afternoon.",
    "If you had told me the truth from the beginning, I would have helped you with all my heart "
    "and we would be friends.",
]
TEN_WORDS = "My sister bought a beautiful red dress for the party."
SEED_SEQ_LEN, SEED_BATCH = 350, 8
DTYPES = {"float32": False, "bfloat16": True}  # name -> bf16 autocast on


def _ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def bench_decode(tr, repeat: int, pad_to: int) -> dict:
    """The seed pads every source to its dataset's fixed length (350). Our checkpoint's
    positional table may be shorter, so the naive side runs a copy of the same weights
    whose (non-persistent, weight-free) PE table is long enough: outputs are identical."""
    model = tr.model
    if pad_to > tr.cfg.max_positions:
        model = build_model(replace(tr.cfg, max_positions=pad_to)).eval()
        model.load_state_dict(tr.model.state_dict())
    trace_ms, naive_ms = [], []
    for s in SENTENCES:
        src = tr.encode_source(s).ids
        trace = tr.trace(s)  # warm-up, and the number of steps both paths will run
        steps = trace.steps
        padded = torch.full((1, max(pad_to, len(src))), tr.cfg.src_pad_id, dtype=torch.long)
        padded[0, : len(src)] = torch.tensor(src)
        trace_ms.append(_ms(lambda: tr.trace(s), repeat))
        naive_ms.append(_ms(lambda: naive_greedy_decode(model, padded, steps), repeat))
    ten = _ms(lambda: tr.trace(TEN_WORDS), repeat)
    t, n = statistics.mean(trace_ms), statistics.mean(naive_ms)
    return {
        "trace_ms": round(t, 2),
        "naive_ms": round(n, 2),
        "decode_speedup": round(n / t, 2),
        "trace_10_words_ms": round(ten, 2),
    }


class TorchBaseline(nn.Module):
    """The same model dims on torch's nn.Transformer: the practical speed limit here."""

    def __init__(self, cfg) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.src_vocab_size, cfg.d_model)
        self.tgt_embed = self.embed if cfg.tie_embeddings == "all" else nn.Embedding(cfg.tgt_vocab_size, cfg.d_model)
        self.register_buffer("pe", sinusoidal_table(cfg.max_positions, cfg.d_model), persistent=False)
        self.core = nn.Transformer(
            cfg.d_model,
            cfg.h,
            cfg.n_encoder_layers,
            cfg.n_decoder_layers,
            cfg.d_ff,
            cfg.dropout,
            batch_first=True,
            norm_first=cfg.norm_placement == "pre",
        )
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, src, tgt):
        scale = math.sqrt(self.cfg.d_model)
        s = self.drop(self.embed(src) * scale + self.pe[: src.shape[1]])
        t = self.drop(self.tgt_embed(tgt) * scale + self.pe[: tgt.shape[1]])
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1], dtype=s.dtype)
        h = self.core(
            s,
            t,
            tgt_mask=causal,
            src_key_padding_mask=src == self.cfg.src_pad_id,
            tgt_key_padding_mask=tgt == self.cfg.tgt_pad_id,
            memory_key_padding_mask=src == self.cfg.src_pad_id,
            tgt_is_causal=True,
        )
        return F.linear(h, self.tgt_embed.weight)


def tokens_per_s(step_fn, batches: list[Batch]) -> float:
    """Real (non-pad) tokens per second over ``batches``."""
    tokens, t0 = 0, time.perf_counter()
    for b in batches:
        step_fn(b)
        tokens += b.n_src_tokens + b.n_tgt_tokens
    return tokens / (time.perf_counter() - t0)


def side_by_side(steps: dict, batches: dict, rounds: int) -> dict[str, float]:
    """Median tokens/s of each approach over ``rounds`` interleaved rounds.

    Every approach first runs once, untimed, over its own batches: oneDNN builds and
    caches kernels per shape on first use, and the approach timed second would otherwise
    inherit the first one's warm caches. Interleaving spreads machine noise evenly.
    """
    for name, fn in steps.items():
        for b in batches[name]:
            fn(b)
    results: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, fn in steps.items():
            results[name].append(tokens_per_s(fn, batches[name]))
    return {name: statistics.median(v) for name, v in results.items()}


def bench_train(cfg, encoded, steps: int, batch_tokens: int, rounds: int = 3) -> dict:
    """Tokens/s of ours and torch in each of ``DTYPES`` and of the seed (float32), all in
    the same interleaved rounds; the top-level figures are those of ``train_dtype``, the
    dtype the trainer would choose here, and ``by_dtype`` holds both."""
    train_dtype = "bfloat16" if bf16_is_fast("cpu") else "float32"
    cfg = replace(cfg, dropout=0.1, attn_dropout=0.1)
    budget_batches = [
        make_batch([encoded[i] for i in idx], cfg)
        for idx in token_budget_batches(encoded, batch_tokens, seed=0, epoch=0)[:steps]
    ]
    s = TrainSettings(warmup_steps=10)

    torch.manual_seed(0)
    ours = build_model(cfg)
    opt = make_optimizer(ours, s)
    sched = make_scheduler(opt, s, 1000)

    # the seed: fixed 350-token padding, 8 pairs a batch, fp32, attention computed explicitly
    seed_cfg = replace(cfg, max_positions=SEED_SEQ_LEN)
    seed_model = build_model(seed_cfg).train()
    seed_opt = torch.optim.Adam(seed_model.parameters(), lr=1e-4, eps=1e-9)
    seed_batches = []
    for k in range(steps):
        ex = encoded[k * SEED_BATCH : (k + 1) * SEED_BATCH]
        b = make_batch(ex, seed_cfg)
        src = F.pad(b.src, (0, SEED_SEQ_LEN - b.src.shape[1]), value=cfg.src_pad_id)
        tin = F.pad(b.tgt_in, (0, SEED_SEQ_LEN - b.tgt_in.shape[1]), value=cfg.tgt_pad_id)
        tout = F.pad(b.tgt_out, (0, SEED_SEQ_LEN - b.tgt_out.shape[1]), value=cfg.tgt_pad_id)
        seed_batches.append(Batch(src, tin, tout, b.n_tgt_tokens, b.n_src_tokens))

    def seed_step(b: Batch):
        out = seed_model(b.src, b.tgt_in, need_weights=True)  # explicit softmax(QK^T)V path
        loss = F.cross_entropy(
            out.logits.reshape(-1, out.logits.shape[-1]),
            b.tgt_out.reshape(-1),
            ignore_index=cfg.tgt_pad_id,
            label_smoothing=0.1,
        )
        seed_opt.zero_grad(set_to_none=True)
        loss.backward()
        seed_opt.step()

    torch.manual_seed(0)
    base = TorchBaseline(cfg).train()
    base_opt = torch.optim.AdamW(base.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)

    def torch_step(b: Batch, bf16: bool):
        with autocast(bf16, "cpu"):
            logits = base(b.src, b.tgt_in)
            loss = F.cross_entropy(
                logits.float().reshape(-1, logits.shape[-1]),
                b.tgt_out.reshape(-1),
                ignore_index=cfg.tgt_pad_id,
                label_smoothing=0.1,
            )
        base_opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(base.parameters(), 1.0)
        base_opt.step()

    step_fns, batches = {"seed": seed_step}, {"seed": seed_batches}
    for name, bf16 in DTYPES.items():
        settings = replace(s, bf16=bf16)
        step_fns[f"ours/{name}"] = lambda b, settings=settings: train_step(ours, b, opt, sched, settings, "cpu")
        step_fns[f"torch/{name}"] = lambda b, bf16=bf16: torch_step(b, bf16)
        batches[f"ours/{name}"] = batches[f"torch/{name}"] = budget_batches
    tps = side_by_side(step_fns, batches, rounds)

    seed_tps = tps["seed"]
    by_dtype = {}
    for name in DTYPES:
        ours_tps, torch_tps = tps[f"ours/{name}"], tps[f"torch/{name}"]
        by_dtype[name] = {
            "ours_tok_s": round(ours_tps, 1),
            "torch_tok_s": round(torch_tps, 1),
            "train_speedup": round(ours_tps / seed_tps, 2),
            "vs_torch": round(ours_tps / torch_tps, 3),
        }
    return {
        "train_dtype": train_dtype,
        **by_dtype[train_dtype],
        "seed_tok_s": round(seed_tps, 1),
        "bf16_speedup": round(tps["ours/bfloat16"] / tps["ours/float32"], 2),
        "by_dtype": by_dtype,
    }


def print_train(train: dict) -> None:
    """One line per dtype, the trainer's choice marked."""
    print(f"train: seed (float32) {train['seed_tok_s']} tok/s; the trainer would use {train['train_dtype']} here")
    for name, r in train["by_dtype"].items():
        mark = "  <- the trainer's dtype" if name == train["train_dtype"] else ""
        print(
            f"  {name:8}: ours {r['ours_tok_s']} tok/s, torch {r['torch_tok_s']} tok/s; "
            f"ours/seed {r['train_speedup']}x, ours/torch {r['vs_torch']}{mark}"
        )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python benchmarks/speed.py", description="Decode and training speed, side by side."
    )
    p.add_argument(
        "--checkpoint",
        default=str(DEFAULT_CHECKPOINT),
        help="checkpoint directory or hub repo id (default: the shipped checkpoints/en-it)",
    )
    p.add_argument(
        "--data",
        default=str(DEFAULT_DATA),
        help="JSONL pairs for the training benchmark (default: the corpus in the repo, data/tatoeba-en-it/train.jsonl)",
    )
    p.add_argument("--repeat", type=int, default=5, help="timed repeats per sentence (median is kept)")
    p.add_argument("--train-steps", type=int, default=3, help="timed training steps per approach and round")
    p.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds (the median is kept)")
    p.add_argument("--batch-tokens", type=int, default=3000, help="token budget of our batches")
    p.add_argument(
        "--pad-to",
        type=int,
        default=SEED_SEQ_LEN,
        help="fixed source length of the naive decode (the seed's dataset pads to 350)",
    )
    p.add_argument("--skip-train", action="store_true", help="only the decoding benchmark")
    args = p.parse_args(argv)
    if min(args.repeat, args.train_steps, args.rounds, args.batch_tokens) < 1:
        fail("--repeat, --train-steps, --rounds and --batch-tokens must be at least 1")
    tr = load_translator_or_exit(args.checkpoint)
    print(
        f"threads: {torch.get_num_threads()}; model: d_model {tr.cfg.d_model}, h {tr.cfg.h}, "
        f"{tr.cfg.n_encoder_layers}+{tr.cfg.n_decoder_layers} layers",
        file=sys.stderr,
    )
    result = bench_decode(tr, args.repeat, args.pad_to)
    print(
        f"decode: trace {result['trace_ms']} ms/sentence, naive {result['naive_ms']} ms/sentence, "
        f"speedup {result['decode_speedup']}x; 10-word trace {result['trace_10_words_ms']} ms"
    )
    if not args.skip_train:
        try:
            pairs = load_split(args.data, "train", tr.cfg.src_lang, tr.cfg.tgt_lang)
        except DataError as exc:
            fail(str(exc))
        encoded = encode_pairs(pairs[:20000], tr.src_tok, tr.tgt_tok, tr.cfg)
        train = bench_train(tr.cfg, encoded, args.train_steps, args.batch_tokens, args.rounds)
        print_train(train)
        result.update(train)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
