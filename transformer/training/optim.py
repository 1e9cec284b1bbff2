"""One optimisation step and what it is made of: AdamW and its learning-rate schedule, bf16
autocast (where the hardware has it), word dropout, the label-smoothed loss; and the seeds and
random-number state that make a resumed run draw the numbers an unbroken one would.

    opt = make_optimizer(model, settings)
    sched = make_scheduler(opt, settings, total_steps)
    loss, grad_norm = train_step(model, batch, opt, sched, settings, device)
"""

from __future__ import annotations

import contextlib
import math
import random
import time
import warnings
from dataclasses import replace

import numpy as np
import torch
import torch.nn.functional as F

from transformer.core.model import Transformer
from transformer.training.data import Batch
from transformer.training.distributed import DistContext
from transformer.training.errors import TrainingWarning
from transformer.training.presets import TrainSettings


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def rng_state(device: str = "cpu") -> dict:
    """Every random-number stream training draws from (dropout, word dropout), in types
    that ``torch.load(weights_only=True)`` reads back: a resumed run draws the same numbers
    as one that never stopped."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    state = {
        "python": random.getstate(),
        "torch": torch.get_rng_state(),
        "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, gauss],
    }
    if torch.device(device).type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def set_rng_state(state: dict, device: str = "cpu") -> None:
    """Put back what :func:`rng_state` saved."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.device(device).type == "cuda":
        torch.cuda.set_rng_state(state["cuda"], device)


def restore_rng_state(state: dict, rank: int, device: str = "cpu") -> bool:
    """Put back the streams a training state saved: every rank's (``rng``, in rank order), or,
    in a state saved before those were kept, rank 0's torch stream alone (``torch_rng``).
    Returns whether this rank's own streams were there."""
    if "rng" in state:
        set_rng_state(state["rng"][rank], device)
        return True
    torch.set_rng_state(state["torch_rng"])
    if "cuda_rng" in state and torch.device(device).type == "cuda":
        torch.cuda.set_rng_state(state["cuda_rng"], device)
    return False


def make_optimizer(model: Transformer, s: TrainSettings) -> torch.optim.Optimizer:
    """AdamW with the paper's betas; no weight decay on biases, norms or embeddings."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (decay if p.dim() == 2 and "embed" not in name else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": s.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=s.lr, betas=(0.9, 0.98), eps=1e-9)


def make_scheduler(opt, s: TrainSettings, total_steps: int) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warmup, then cosine decay to ``min_lr_ratio * lr`` at ``total_steps``."""

    def factor(step: int) -> float:
        if step < s.warmup_steps:
            return (step + 1) / s.warmup_steps
        progress = min(1.0, (step - s.warmup_steps) / max(1, total_steps - s.warmup_steps))
        return s.min_lr_ratio + (1 - s.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    return torch.optim.lr_scheduler.LambdaLR(opt, factor)


def _matmul_seconds(dtype: torch.dtype, n: int = 256, repeat: int = 3) -> float:
    """Fastest of ``repeat`` (n, n) @ (n, n) products in ``dtype`` on the CPU, after one warm-up."""
    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    a @ b
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return best


def bf16_is_fast(device: str) -> bool:
    """Whether bf16 autocast is worth using for training on ``device``.

    bf16 halves the cost of a matmul only where the hardware has bf16 arithmetic (CUDA
    from Ampere, CPUs with AVX512-BF16 or AMX). Elsewhere PyTorch emulates it in
    software: on an AVX2-only AMD EPYC a 256x256 bf16 matmul took 35 ms against
    0.65 ms in float32, and the ``base`` run went from 0.45 s to 12 s per batch. CPU
    flags are not exposed publicly and differ by architecture (x86, ARM), so on the CPU
    this times one small matmul each way (a few ms, or about 0.1 s where bf16 is
    emulated) and keeps bf16 only if it is not slower by more than half.
    """
    kind = torch.device(device).type
    if kind == "cuda":
        return torch.cuda.is_bf16_supported()
    if kind != "cpu":  # MPS: autocast to bf16 is not reliably supported there
        return False
    return _matmul_seconds(torch.bfloat16) <= 1.5 * _matmul_seconds(torch.float32)


def float32_unless_bf16_is_fast(settings: TrainSettings, device: str, dist: DistContext) -> TrainSettings:
    """``settings``, with bf16 turned off (and a :class:`TrainingWarning`) where it would be
    emulated. Under torchrun rank 0 decides for every rank, so a timing that differs by noise
    cannot leave the ranks on different dtypes."""
    if not settings.bf16:
        return settings
    fast = bf16_is_fast(device) if dist.is_main else None
    if dist.broadcast_text(str(fast)) == "True":  # the text as is when not distributed
        return settings
    warnings.warn(
        f"bf16 autocast would be emulated in software on this {device} (many times slower "
        "than float32), so this run trains in float32; the results are the same kind, only "
        "the speed differs",
        TrainingWarning,
        stacklevel=3,
    )
    return replace(settings, bf16=False)


def autocast(enabled: bool, device: str):
    if not enabled:
        return contextlib.nullcontext()
    # torch.autocast wants the device *type* ("cuda"), not "cuda:1"
    return torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16)


def unwrap(model: torch.nn.Module) -> Transformer:
    """The Transformer inside a DistributedDataParallel wrapper (or the model itself)."""
    return getattr(model, "module", model)


def batch_loss(model: Transformer, batch: Batch, label_smoothing: float) -> torch.Tensor:
    """Mean label-smoothed cross-entropy over real target tokens (the *target* pad id is
    ignored, never the source's). ``model`` may be wrapped in DistributedDataParallel:
    calling the wrapper is what synchronises the gradients."""
    out = model(batch.src, batch.tgt_in)
    return F.cross_entropy(
        out.logits.float().reshape(-1, out.logits.shape[-1]),
        batch.tgt_out.reshape(-1),
        ignore_index=unwrap(model).cfg.tgt_pad_id,
        label_smoothing=label_smoothing,
    )


def train_step(model, batch: Batch, opt, sched, s: TrainSettings, device: str) -> tuple[float, float]:
    """One optimiser step; returns (loss, grad norm). Under DistributedDataParallel the
    backward pass averages the gradients over ranks before they are clipped."""
    model.train()
    batch = to_device(batch, device)
    if s.word_dropout > 0:
        batch = replace(batch, src=drop_source_words(batch.src, unwrap(model).cfg, s.word_dropout))
    with autocast(s.bf16, device):
        loss = batch_loss(model, batch, s.label_smoothing)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), s.clip_norm)
    opt.step()
    sched.step()
    return loss.item(), norm.item()


def drop_source_words(src: torch.Tensor, cfg, p: float) -> torch.Tensor:
    """Word dropout (Sennrich & Zhang 2019, section 3): each real source token becomes
    the *source* unknown id with probability ``p``, so the decoder cannot lean on any one
    source word and learns more from a small corpus. Padding, <s> and </s> are kept.
    Draws from torch's global RNG, which the run seeds."""
    special = (src == cfg.src_pad_id) | (src == cfg.src_eos_id)
    if cfg.src_sos_id is not None:  # a Marian model's sources have no start token
        special |= src == cfg.src_sos_id
    drop = (torch.rand(src.shape, device=src.device) < p) & ~special  # (B, S)
    return src.masked_fill(drop, cfg.src_unk_id)


def to_device(batch: Batch, device: str) -> Batch:
    if torch.device(device).type == "cpu":
        return batch
    return Batch(
        batch.src.to(device), batch.tgt_in.to(device), batch.tgt_out.to(device), batch.n_tgt_tokens, batch.n_src_tokens
    )
