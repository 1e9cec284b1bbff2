"""Training pieces: presets, the optimiser and schedule, one training step, validation,
and checkpoint averaging. ``trainer.Trainer`` puts them together into a run;
``train.py`` parses the command line and prints."""

from __future__ import annotations

import contextlib
import math
import random
import time
from dataclasses import dataclass, field, replace

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from transformer.core.config import TransformerConfig
from transformer.training.data import Batch, make_batch, token_budget_batches
from transformer.core.model import Transformer


@dataclass(frozen=True)
class TrainSettings:
    """Optimisation settings (model shape lives in ``TransformerConfig``).

    Saved as a dict in every ``train_state.pt``, so ``--resume`` continues with the
    settings the run started with: add fields with defaults, never rename or remove one.
    """

    # a field whose metadata has "help" is a flag of `python train.py` (transformer.cli.flags)
    epochs: int = field(default=20, metadata={"help": "number of epochs (sets the length of the LR schedule)"})
    batch_tokens: int = field(default=6000, metadata={"help": "padded source+target tokens per batch (per process)"})
    lr: float = field(default=1e-3, metadata={"help": "peak learning rate after warmup"})
    warmup_steps: int = field(default=800, metadata={"help": "linear warmup steps"})
    min_lr_ratio: float = 0.05
    weight_decay: float = 0.01
    label_smoothing: float = field(default=0.1, metadata={"fraction": True, "help": "label smoothing epsilon"})
    word_dropout: float = field(
        default=0.0,
        metadata={
            "fraction": True,
            "help": "probability that a source token is replaced by the unknown token during training",
        },
    )
    clip_norm: float = 1.0
    bf16: bool = field(
        default=True,
        metadata={
            "help": "bf16 autocast (used only where the hardware runs it natively; elsewhere the run falls back to "
            "float32 with a warning); --no-bf16 trains in float32"
        },
    )
    seed: int = field(default=0, metadata={"min": None, "help": "seed for splits, shuffling and initialisation"})
    max_minutes: float | None = field(
        default=None,
        metadata={
            "help": "wall-clock budget for the whole run: training stops cleanly in time for the last evaluation and "
            "the checkpoint average (none: no budget)"
        },
    )
    average_last: int = field(
        default=5, metadata={"min": 0, "help": "average the last N epoch checkpoints at the end (0 or 1: off)"}
    )
    # data-parallel training processes; each trains on ``batch_tokens`` per step, so one
    # optimiser step sees ``processes * batch_tokens`` tokens
    processes: int = field(
        default=1,
        metadata={
            "help": "data-parallel training processes that train.py starts itself, as torchrun --nproc_per_node would: "
            "each trains on its own share of every epoch with --batch-tokens per step, so one optimiser step "
            "sees N times the tokens. On a CPU, 2 processes of 1 thread each make epochs faster than 1 process "
            "of 2 threads (docs/experiments.md). With fewer GPUs than N, one process per GPU with "
            "--batch-tokens scaled up to the same tokens per step; --resume takes the run's own"
        },
    )
    # a mid-epoch checkpoint every this many minutes of training (and at every stop), so
    # that a crash or a kill loses at most this much
    save_every_minutes: float = field(
        default=10.0,
        metadata={
            "help": "save a mid-epoch checkpoint this often, as well as at every stop (Ctrl-C or SIGTERM), so that "
            "--resume loses at most this much (a resumed run keeps its own unless given)"
        },
    )


@dataclass(frozen=True)
class Preset:
    """Everything a fresh run starts from: model shape, vocabulary and optimisation.

    ``model`` gives the shape (``d_model``, ``h``, layers, dropout...); its vocabulary sizes,
    special-token ids and languages are placeholders that the run's tokenizers replace."""

    model: TransformerConfig
    vocab_size: int = field(metadata={"help": "BPE vocabulary size (per tokenizer)"})
    joint_vocab: bool = field(
        metadata={
            "help": "one tokenizer for both languages; --no-joint-vocab trains one per language (and disables full "
            "weight tying)"
        }
    )
    train: TrainSettings
    description: str = ""
    # the tokenizer cuts punctuation off words (``transformer.core.tokenizer``)
    split_punctuation: bool = field(
        default=False, metadata={"help": "the tokenizer cuts punctuation off words ('car.' is 'car' + '.')"}
    )
    # synthetic (back-translated) sources start with a tag token, so the model can tell
    # them from real ones; the tag lives in the run's tokenizer, which is how --resume knows
    tag_synthetic: bool = field(
        default=False, metadata={"help": "start every synthetic (back-translated) source with a [BT] tag token"}
    )
    # forward-translated sources are real text whose target a model wrote: He et al. (2020)
    # noised them (Edunov et al. 2018's word noise) so that the student learns more than to
    # copy its teacher. Off by default: on Tatoeba's short sentences it removes a content word
    # from most of them, and a short run lost 4.9 BLEU with it (docs/experiments.md)
    noise_forward: bool = field(
        default=False,
        metadata={
            "help": "noise the source of every forward-translated pair (origin 'ft'): 10%% of words dropped, 10%% "
            "blanked to [UNK], the rest shuffled within 3 places; each sentence's noise is fixed by --seed"
        },
    )


PRESETS: dict[str, Preset] = {
    # a smoke run: on the default corpus about a minute on 2 CPU cores
    "tiny": Preset(
        model=TransformerConfig(
            d_model=32,
            h=2,
            d_ff=64,
            n_encoder_layers=1,
            n_decoder_layers=1,
            dropout=0.1,
            attn_dropout=0.0,
            max_positions=64,
        ),
        vocab_size=1000,
        joint_vocab=True,
        train=TrainSettings(epochs=2, batch_tokens=4000, lr=3e-3, warmup_steps=10, bf16=False, average_last=2),
        description="a smoke run (about a minute on 2 CPU cores with the default corpus)",
    ),
    # the shipped en->it model: the real pairs plus the back-translated, further real,
    # forward-translated and joined ones (nine times the real pairs alone), so one more layer
    # on each side than `real-only`; the [BT] tag lets the model tell the back-translated
    # sources apart, and punctuation is its own token so that "car" and "car." share one. On
    # that much data 15 epochs fit the 4-hour budget. The last two epochs are averaged, and the
    # average is kept only when it beats every epoch on validation chrF (for the shipped model it
    # did not). docs/experiments.md has the runs behind each choice.
    "base": Preset(
        model=TransformerConfig(
            d_model=256,
            h=8,
            d_ff=1024,
            n_encoder_layers=4,
            n_decoder_layers=4,
            dropout=0.2,
            attn_dropout=0.1,
            max_positions=128,
            norm_placement="pre",
            tie_embeddings="all",
        ),
        vocab_size=4000,
        joint_vocab=True,
        split_punctuation=True,
        tag_synthetic=True,
        train=TrainSettings(
            epochs=15,
            batch_tokens=2000,
            lr=2e-3,
            warmup_steps=300,
            bf16=True,
            max_minutes=240,
            average_last=2,
            processes=2,
        ),
        description="the shipped model's recipe: real + back-translated + further real + forward-translated + "
        "joined pairs, 4+4 layers, 4k joint vocabulary with punctuation split off, [BT]-tagged back-translated "
        "sources, 2 data-parallel processes, 15 epochs in a 4-hour budget",
    ),
}
# the recipe for the real pairs alone (run it with `--extra-train` and no path): 3+3 layers,
# 31 epochs in a 90-minute budget
PRESETS["real-only"] = replace(
    PRESETS["base"],
    model=replace(PRESETS["base"].model, n_encoder_layers=3, n_decoder_layers=3),
    split_punctuation=False,
    tag_synthetic=False,
    train=replace(PRESETS["base"].train, epochs=31, max_minutes=90, average_last=5, processes=1),
    description="the recipe for the real pairs alone (with --extra-train and no path): 3+3 layers, "
    "4k joint vocabulary, 31 epochs in a 90-minute budget",
)


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
    special = (src == cfg.src_pad_id) | (src == cfg.src_sos_id) | (src == cfg.src_eos_id)
    drop = (torch.rand(src.shape, device=src.device) < p) & ~special  # (B, S)
    return src.masked_fill(drop, cfg.src_unk_id)


def to_device(batch: Batch, device: str) -> Batch:
    if torch.device(device).type == "cpu":
        return batch
    return Batch(
        batch.src.to(device), batch.tgt_in.to(device), batch.tgt_out.to(device), batch.n_tgt_tokens, batch.n_src_tokens
    )


@torch.no_grad()
def validation_loss(model, encoded, cfg, batch_tokens: int, device: str) -> float:
    """Token-averaged cross-entropy (no label smoothing) over a whole split, in the same
    token-budget batches as training. The sum over tokens does not depend on how the pairs
    are grouped, so any fixed seed gives the same loss (up to float rounding)."""
    model.eval()
    total, count = 0.0, 0
    for idx in token_budget_batches(encoded, batch_tokens, seed=0, epoch=0):
        batch = to_device(make_batch([encoded[i] for i in idx], cfg), device)
        logits = model(batch.src, batch.tgt_in).logits
        loss = F.cross_entropy(
            logits.float().reshape(-1, logits.shape[-1]),
            batch.tgt_out.reshape(-1),
            ignore_index=cfg.tgt_pad_id,
            reduction="sum",
        )
        total += float(loss)
        count += batch.n_tgt_tokens
    return total / max(1, count)


def average_checkpoints(paths: list) -> dict[str, torch.Tensor]:
    """Element-wise mean of several safetensors weight files (float32)."""
    avg: dict[str, torch.Tensor] = {}
    for p in paths:
        for k, v in load_file(str(p)).items():
            v = v.float()
            avg[k] = avg[k] + v if k in avg else v.clone()
    return {k: v / len(paths) for k, v in avg.items()}


class Stopwatch:
    """Wall-clock budget that survives --resume (elapsed time is carried over)."""

    def __init__(self, already: float = 0.0) -> None:
        self.start = time.monotonic() - already

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.start
