"""A training run as one unit: epochs, per-epoch evaluation, checkpoints, resume,
checkpoint averaging and training snapshots.

    model, src_tok, tgt_tok = build_fresh(PRESETS["tiny"], data, "en", "it")
    trainer = Trainer(model, src_tok, tgt_tok, data, PRESETS["tiny"].train, "runs/tiny")
    trainer.add_callback("on_evaluate", lambda tr, evaluation: print(evaluation.record))
    result = trainer.fit()

    trainer = Trainer.resume("runs/tiny", data, PRESETS["tiny"].train)   # continue a run

Output directory layout:
    OUT/epochs/epoch-NNN/     checkpoint after each epoch + train_state.pt (for resume)
    OUT/mid-epoch/            the same within an epoch: at a stop and every few minutes
    OUT/run.json              the settings the run was started with (``write_run_record``)
    OUT/best/                 the best validation chrF so far (what ships), with a copy of
    OUT/best/snapshots/       ... the snapshots below, up to best/'s own epoch
    OUT/snapshots/epoch-NNN/  small fp16 checkpoints (no tokenizer) after chosen epochs and the last
    OUT/history.json          one record per evaluation

The package never prints: progress goes to callbacks (``add_callback``), which fire on
the main rank only. Under ``torchrun`` every rank trains on its own shard of each epoch's
batches (see :func:`transformer.training.distributed.shard_batches`); only rank 0 evaluates and
writes files while the others wait at a barrier.

A stop request (SIGINT or SIGTERM through :class:`transformer.training.distributed.StopSignals`,
or ``trainer.stop.request()``) ends ``fit`` after the current optimiser step on every rank
at once: the position is saved in ``OUT/mid-epoch/`` and ``fit`` raises
:class:`TrainingStopped`. ``Trainer.resume`` continues from there, bit-identical to a run
that never stopped.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import shutil
import tempfile
import time
import warnings
from collections import defaultdict
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

import torch
from tokenizers import Tokenizer

from transformer.core.checkpoint import (
    WEIGHTS_FILE,
    CheckpointError,
    assign_weights,
    load_checkpoint,
    read_metrics,
    replace_dir,
    resolve_checkpoint_dir,
    save_checkpoint,
    weights_state_dict,
    write_file_atomic,
)
from transformer.core.config import TransformerConfig
from transformer.training.data import (
    SYNTHETIC_ORIGIN,
    ParallelData,
    encode_pairs,
    load_extra_train,
    load_parallel,
    make_batch,
    token_budget_batches,
)
from transformer.core.decoding import greedy_decode
from transformer.training.distributed import DistContext, StopSignals, shard_batches
from transformer.core.metrics import corpus_scores
from transformer.core.model import Transformer, build_model, count_parameters
from transformer.core.tokenizer import SYNTHETIC_TAG, load_tokenizer, special_ids, train_tokenizer
from transformer.training.presets import (
    Preset,
    Stopwatch,
    TrainSettings,
    average_checkpoints,
    bf16_is_fast,
    make_optimizer,
    make_scheduler,
    rng_state,
    seed_everything,
    set_rng_state,
    train_step,
    validation_loss,
)
from transformer.core.translator import Translator

STATE_FILE = "train_state.pt"
MID_EPOCH_DIR = "mid-epoch"
RUN_FILE = "run.json"
# what makes OUT hold a run that a new one must not replace unasked
RUN_ITEMS = ("epochs", "best", "snapshots", "history.json", MID_EPOCH_DIR)
# sentences per greedy batch in an evaluation (``Translator.translate``'s batch); a stop
# request is looked at between batches
EVAL_BATCH = 64
# three snapshots and the model keep a 4 + 4-layer checkpoint folder (16.8 MB each in
# float16) under the repository's 80 MB for checkpoints/
DEFAULT_SNAPSHOTS = (1, 4, 8)
SNAPSHOT_DTYPE = "float16"
EVENTS = ("on_epoch_start", "on_batch_end", "on_evaluate", "on_time_budget", "on_stop", "on_end")


class TrainingError(ValueError):
    """A run cannot start or continue as asked (bad settings, nothing to resume...)."""


class TrainingWarning(UserWarning):
    """A run goes ahead differently from what was asked (e.g. float32 instead of bf16);
    its own category so that a command line can print it as one plain line."""


@dataclass
class TrainingStopped(Exception):
    """``fit`` stopped on request, on every rank, after saving where it was.

    ``directory`` is the checkpoint ``Trainer.resume`` continues from: ``OUT/mid-epoch``
    (``batches_done`` of ``n_batches`` of ``epoch`` trained, its evaluation not yet made)
    or, when the stop came at an epoch's end, that epoch's checkpoint (``at_epoch_end``)."""

    signum: int
    directory: Path
    epoch: int  # 1-based: the epoch in progress, or the one just ended
    batches_done: int
    n_batches: int
    step: int
    at_epoch_end: bool = False

    def __str__(self) -> str:
        return f"stopped by signal {self.signum} at epoch {self.epoch}; saved {self.directory}"


class EvaluationStopped(Exception):
    """A stop request arrived during an evaluation, which is given up (see ``Trainer._translate``)."""


# ---------------------------------------------------------------- settings and schedule


def check_settings(s: TrainSettings) -> None:
    """Reject settings that would crash later or silently do nothing."""
    for name in ("epochs", "batch_tokens", "warmup_steps"):
        if getattr(s, name) <= 0:
            raise TrainingError(f"{name.replace('_', '-')} must be positive, got {getattr(s, name)}")
    if s.lr <= 0:
        raise TrainingError(f"lr must be positive, got {s.lr}")
    if s.max_minutes is not None and s.max_minutes <= 0:
        raise TrainingError(f"max-minutes must be positive, got {s.max_minutes}")
    if not 0 <= s.label_smoothing < 1:
        raise TrainingError(f"label-smoothing must be in [0, 1), got {s.label_smoothing}")
    if not 0 <= s.word_dropout < 1:
        raise TrainingError(f"word-dropout must be in [0, 1), got {s.word_dropout}")
    if s.average_last < 0:
        raise TrainingError(f"average-last must be 0 or more, got {s.average_last}")


def parse_snapshots(text: str) -> tuple[int, ...]:
    """'1,2,4,8' -> (1, 2, 4, 8); 'none' (or '') -> (). Raises ``ValueError`` on anything else."""
    text = text.strip().lower()
    if text in ("", "none"):
        return ()
    try:
        epochs = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise ValueError(f"expected comma-separated epoch numbers or 'none', got {text!r}") from None
    if not epochs or epochs[0] < 1:
        raise ValueError(f"epoch numbers start at 1, got {text!r}")
    return tuple(epochs)


def is_snapshot_epoch(epoch: int, schedule: tuple[int, ...], final: bool) -> bool:
    """Snapshots are kept after the scheduled epochs and after the run's final epoch
    (the last one trained, including one cut short by the time budget), unless the
    schedule is empty (snapshots off)."""
    return bool(schedule) and (epoch in schedule or final)


def snapshot_epoch(name: str) -> float:
    """The epoch of a snapshot folder named ``epoch-NNN`` (infinity for any other name)."""
    prefix, _, number = name.partition("-")
    return int(number) if prefix == "epoch" and number.isdigit() else math.inf


def best_epoch(best_dir: Path) -> float:
    """The epoch a best/ folder holds; infinity for an average of the last epochs (it comes
    after every epoch) or a folder without that record."""
    epoch = read_metrics(best_dir).get("epoch")
    return epoch if isinstance(epoch, int) else math.inf


def resume_settings(saved: TrainSettings, requested: TrainSettings, epochs_done: int) -> TrainSettings:
    """A resumed run keeps the settings it started with (same batches, same schedule), but
    may be given more epochs, a new time budget and a new interval between mid-epoch saves.
    A falsy ``requested.epochs``, ``requested.max_minutes`` or ``save_every_minutes`` keeps
    the run's own: a bare ``--resume`` must not take the preset's epoch count, which would
    stretch the LR schedule of a run started with ``--epochs``."""
    return replace(
        saved,
        epochs=max(requested.epochs or saved.epochs, epochs_done),
        max_minutes=requested.max_minutes or saved.max_minutes,
        save_every_minutes=requested.save_every_minutes or saved.save_every_minutes,
    )


@dataclass(frozen=True)
class Forecast:
    """When a run will end, from the time its epochs take."""

    seconds_left: float  # from now to the end of the run, last evaluation and average included
    last_epoch: int  # the epoch the run will end after (or during, when the budget cuts it)
    cut_by_budget: bool  # --max-minutes ends the run before its last epoch


def forecast(
    elapsed: float,
    epochs_done: float,
    epochs: int,
    seconds_per_epoch: float,
    max_minutes: float | None,
    finish_seconds: float = 0.0,
) -> Forecast:
    """Forecast the end of a run that has trained ``epochs_done`` of ``epochs`` epochs in
    ``elapsed`` seconds, if each remaining epoch takes ``seconds_per_epoch`` and the end
    (last evaluation and checkpoint average) ``finish_seconds``. A budget of
    ``max_minutes`` stops training early enough for that end (as ``Trainer.fit`` does).
    ``epochs_done`` may be fractional: a run resumed within an epoch."""
    left = (epochs - epochs_done) * seconds_per_epoch + finish_seconds
    if max_minutes is None or elapsed + left <= max_minutes * 60:
        return Forecast(left, epochs, False)
    room = max(0.0, max_minutes * 60 - elapsed - finish_seconds)
    last = min(epochs, int(epochs_done) + 1 + int(room // seconds_per_epoch))
    return Forecast(max(0.0, max_minutes * 60 - elapsed), last, True)


def latest_epoch_dir(out: Path) -> Path | None:
    dirs = sorted(d for d in (Path(out) / "epochs").glob("epoch-*") if d.is_dir() and (d / STATE_FILE).is_file())
    return dirs[-1] if dirs else None


def resume_dir(out: str | Path) -> Path | None:
    """The checkpoint a resumed run continues from: ``OUT/mid-epoch`` when it is further on
    than the last epoch checkpoint (a stop or a periodic save after it), else that one.
    Both record their global step in metrics.json; on a tie the epoch checkpoint, which
    holds the epoch's evaluation, wins."""
    last = latest_epoch_dir(Path(out))
    mid = resolve_checkpoint_dir(Path(out) / MID_EPOCH_DIR)  # or the copy a kill during a save left aside
    if not (mid / STATE_FILE).is_file():
        return last
    if last is None or read_metrics(mid).get("step", -1) > read_metrics(last).get("step", -1):
        return mid
    return last


def run_items(out: str | Path) -> list[str]:
    """What of a run ``out`` holds (checkpoints, best/, history...): what a new run would replace."""
    return [name for name in RUN_ITEMS if (Path(out) / name).exists()]


def check_out_dir(out: str | Path, resume: bool = False, overwrite: bool = False) -> None:
    """Refuse an ``out`` that cannot be written, one that holds a run when neither
    ``resume`` nor ``overwrite`` is asked (one mistyped command must not throw away hours
    of training), and a ``resume`` with nothing to resume from."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".write-test-{os.getpid()}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise TrainingError(f"{out}: output directory is not writable ({exc.strerror or exc})") from None
    held = run_items(out)
    if resume and resume_dir(out) is None:
        raise TrainingError(f"cannot resume: no epoch checkpoint or mid-epoch state with {STATE_FILE} under {out}")
    if held and not (resume or overwrite):
        raise TrainingError(
            f"{out} already holds a run ({', '.join(held)}): continue it with --resume, or replace it with --overwrite"
        )


def clear_run(out: str | Path) -> None:
    """Remove the run in ``out`` (what ``run_items`` lists, its run.json and TensorBoard
    logs) before a new run starts there; anything else in ``out`` stays."""
    for name in (*RUN_ITEMS, RUN_FILE, "tensorboard"):
        path = Path(out) / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


def write_run_record(out: str | Path, record: dict) -> None:
    """Keep what a run was started with (``train.py`` records its flags) as ``OUT/run.json``:
    ``--resume`` reads it before anything starts, e.g. how many processes to launch."""
    write_file_atomic(Path(out) / RUN_FILE, json.dumps(record, indent=2) + "\n")


def read_run_record(out: str | Path) -> dict:
    """``write_run_record``'s record; for a run saved without one, what its training state
    knows of it: ``{"processes": n}`` (or nothing)."""
    path = Path(out) / RUN_FILE
    try:
        if path.is_file():
            record = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(record, dict):
                raise ValueError("not a JSON object")
            return record
        last = resume_dir(out)
        if last is None:
            return {}
        settings = torch.load(last / STATE_FILE, weights_only=True, mmap=True).get("settings", {})
    except (OSError, ValueError, RuntimeError) as exc:  # JSONDecodeError is a ValueError
        raise TrainingError(f"cannot read the run in {out}: {exc}") from None
    return {"processes": settings["processes"]} if "processes" in settings else {}


# ---------------------------------------------------------------- data and a fresh model


def load_run_data(
    dataset: str,
    src_lang: str,
    tgt_lang: str,
    config: str | None = None,
    seed: int = 0,
    max_train_pairs: int | None = None,
    dist: DistContext | None = None,
    extra_train: tuple[str, ...] = (),
    tag: str | None = None,
    noise_seed: int | None = None,
    tag_origins: tuple[str, ...] = (SYNTHETIC_ORIGIN,),
) -> ParallelData:
    """The run's splits (``load_parallel``), optionally cut to the first ``max_train_pairs``,
    then the train splits of the ``extra_train`` corpora appended (the sources of rows whose
    origin starts with one of ``tag_origins`` prefixed with ``tag`` when given,
    forward-translated sources noised with ``noise_seed`` when given; see
    ``data.load_extra_train``).

    A hub dataset without an explicit config gets '<src>-<tgt>' (e.g. opus_books' 'en-it').
    Under torchrun rank 0 loads first, so the others read the ``datasets`` cache it
    wrote instead of all preparing it at once.
    """
    dist = dist or DistContext()
    if config is None and not Path(dataset).expanduser().exists():
        config = f"{src_lang}-{tgt_lang}"
    if not dist.is_main:
        dist.barrier()
    data = load_parallel(dataset, src_lang, tgt_lang, config=config, seed=seed)
    extra = [
        pair
        for path in extra_train
        for pair in load_extra_train(path, src_lang, tgt_lang, tag=tag, noise_seed=noise_seed, tag_origins=tag_origins)
    ]
    if dist.is_main:
        dist.barrier()
    if max_train_pairs:
        data.train = data.train[:max_train_pairs]
    data.train = data.train + extra
    data.extra = tuple(str(path) for path in extra_train)
    return data


def run_tags_synthetic(out: str | Path) -> bool:
    """Whether the run in ``out`` tags its synthetic sources: its tokenizer has the tag."""
    last = resume_dir(out)
    if last is None:
        return False
    cfg = TransformerConfig.from_json(last / "config.json")
    return load_tokenizer(last / cfg.src_tokenizer_file).token_to_id(SYNTHETIC_TAG) is not None


def build_fresh(
    preset: Preset,
    data: ParallelData,
    src_lang: str,
    tgt_lang: str,
    storage_dtype: str = "float32",
    seed: int = 0,
    dist: DistContext | None = None,
) -> tuple[Transformer, Tokenizer, Tokenizer]:
    """Tokenizers trained on the training split, and a new model sized from ``preset``.

    Under torchrun only rank 0 trains the tokenizers and sends them to the others as JSON,
    so every rank maps text to exactly the same ids. The model is initialised from
    ``seed`` (DistributedDataParallel then copies rank 0's weights to every rank anyway).
    """
    dist = dist or DistContext()
    tie = preset.model.tie_embeddings

    specials = [SYNTHETIC_TAG] if preset.tag_synthetic else []

    def tokenizer(texts_fn) -> Tokenizer:
        text = (
            train_tokenizer(
                texts_fn(), preset.vocab_size, split_punctuation=preset.split_punctuation, extra_special_tokens=specials
            ).to_str()
            if dist.is_main
            else None
        )
        return Tokenizer.from_str(dist.broadcast_text(text)) if dist.enabled else Tokenizer.from_str(text)

    if preset.joint_vocab:
        src_tok = tgt_tok = tokenizer(lambda: [s for s, _ in data.train] + [t for _, t in data.train])
        files = {"src_tokenizer_file": "tokenizer.json", "tgt_tokenizer_file": "tokenizer.json"}
    else:
        src_tok = tokenizer(lambda: [s for s, _ in data.train])
        tgt_tok = tokenizer(lambda: [t for _, t in data.train])
        files = {}
        if tie == "all":  # one shared matrix needs one shared vocabulary
            tie = "decoder"
    ids = {f"src_{k}_id": v for k, v in special_ids(src_tok).items()}
    ids.update({f"tgt_{k}_id": v for k, v in special_ids(tgt_tok).items()})
    try:
        # the preset's shape, with what the tokenizers and the run decide
        cfg = replace(
            preset.model,
            **ids,
            **files,
            tie_embeddings=tie,
            src_vocab_size=src_tok.get_vocab_size(),
            tgt_vocab_size=tgt_tok.get_vocab_size(),
            src_lang=src_lang,
            tgt_lang=tgt_lang,
            storage_dtype=storage_dtype,
        )
    except ValueError as exc:
        raise TrainingError(str(exc)) from exc
    seed_everything(seed)
    return build_model(cfg), src_tok, tgt_tok


# ---------------------------------------------------------------- the trainer


@dataclass
class Evaluation:
    """One evaluate-and-save step: the history record, the metrics written beside the
    weights, validation samples (source, reference, hypothesis) and whether it became best/."""

    record: dict
    metrics: dict
    samples: list[tuple[str, str, str]]
    is_best: bool


@dataclass
class FitResult:
    best_chrf: float
    minutes: float
    best_dir: Path
    history: list[dict]
    # set when the time budget ended the run: (epoch, batches done, batches in the epoch)
    stopped_at: tuple[int, int, int] | None = None


@contextlib.contextmanager
def _stored_as(model: Transformer, storage_dtype: str):
    """Save ``model`` with another on-disk dtype (config.json says which) without
    touching the weights in memory."""
    cfg = model.cfg
    model.cfg = replace(cfg, storage_dtype=storage_dtype)
    try:
        yield model
    finally:
        model.cfg = cfg


def check_options(settings: TrainSettings, keep_epochs: int, val_limit: int, data: ParallelData) -> None:
    """The Trainer's arguments that no run could go far with, refused before any work."""
    check_settings(settings)
    if keep_epochs < 1:
        raise TrainingError(f"keep-epochs must be at least 1 (resume and averaging read them), got {keep_epochs}")
    if val_limit < 1:
        raise TrainingError(f"val-limit must be positive, got {val_limit}")
    if not data.validation:
        raise TrainingError(f"{data.source}: no validation pairs to evaluate on")


class Trainer:
    """Trains ``model`` on ``data`` and writes everything under ``out``.

    Callbacks (``add_callback(event, fn)``, called as ``fn(trainer, **info)`` on the main
    rank only):
      on_epoch_start  epoch (1-based), n_batches (this rank's), batches_done (>0 when resumed within it)
      on_batch_end    loss, grad_norm, lr, tokens_per_s; ``trainer.step`` is the global step
      on_evaluate     evaluation (an :class:`Evaluation`), after every epoch and after averaging
      on_time_budget  epoch, batches_done, n_batches: the budget ended the run
      on_stop         stopped (a :class:`TrainingStopped`), just before ``fit`` raises it
      on_end          result (a :class:`FitResult`)

    ``stop`` is what ``fit`` looks at between steps: a :class:`StopSignals` the caller has
    installed for SIGINT and SIGTERM, or by default one that only ``trainer.stop.request()`` sets.
    """

    def __init__(
        self,
        model: Transformer,
        src_tok: Tokenizer,
        tgt_tok: Tokenizer,
        data: ParallelData,
        settings: TrainSettings,
        out: str | Path,
        *,
        device: str = "cpu",
        val_limit: int = 1000,
        keep_epochs: int = 6,
        snapshots: tuple[int, ...] = DEFAULT_SNAPSHOTS,
        command: str = "",
        dist: DistContext | None = None,
        state: dict | None = None,
        stop: StopSignals | None = None,
        model_card: Callable[["Trainer", dict, list], str] | None = None,
    ) -> None:
        check_options(settings, keep_epochs, val_limit, data)
        self.dist = dist or DistContext(device=device)
        self.device = self.dist.device if self.dist.enabled else device
        settings = self._float32_unless_bf16_is_fast(self._record_processes(settings, state))
        self.settings, self.out, self.data = settings, Path(out), data
        self.val_limit, self.keep_epochs, self.snapshots, self.command = val_limit, keep_epochs, snapshots, command
        self.model_card = model_card  # (trainer, metrics, samples) -> the README.md written into best/
        self.model, self.src_tok, self.tgt_tok, self.cfg = model.to(self.device), src_tok, tgt_tok, model.cfg
        self.n_params = count_parameters(model)
        self.callbacks: dict[str, list[Callable]] = defaultdict(list)

        self.train_enc = encode_pairs(data.train, src_tok, tgt_tok, self.cfg)
        self.val_enc = encode_pairs(data.validation, src_tok, tgt_tok, self.cfg)
        self.steps_per_epoch = len(self.epoch_batches(0))
        if self.steps_per_epoch == 0:
            raise TrainingError(
                f"{len(data.train)} training pairs make fewer batches than the "
                f"{self.dist.world_size} processes: use more data or fewer processes"
            )
        self.opt = make_optimizer(model, settings)
        self.sched = make_scheduler(self.opt, settings, settings.epochs * self.steps_per_epoch)
        self.stop = stop or StopSignals()  # not installed: only ``stop.request()`` sets it
        self._load_state(state)
        self.train_module = self._parallel(model)
        self.clock = Stopwatch(self.elapsed0)
        self._last_save = self.elapsed0  # clock time of the last checkpoint, for save_every_minutes

    def _float32_unless_bf16_is_fast(self, settings: TrainSettings) -> TrainSettings:
        if settings.bf16 and not self._bf16_is_fast():
            warnings.warn(
                f"bf16 autocast would be emulated in software on this {self.device} (many times slower "
                "than float32), so this run trains in float32; the results are the same kind, only "
                "the speed differs",
                TrainingWarning,
                stacklevel=3,
            )
            return replace(settings, bf16=False)
        return settings

    def _parallel(self, model: Transformer) -> torch.nn.Module:
        """The module the steps run: ``model`` itself, or wrapped for data-parallel training."""
        if not self.dist.enabled:
            return model
        from torch.nn.parallel import DistributedDataParallel

        ids = [self.dist.local_rank] if torch.device(self.device).type == "cuda" else None
        # the positional table is a constant buffer: synced once at init, not every step
        return DistributedDataParallel(model, device_ids=ids, forward_sync_buffers=False)

    def _load_state(self, state: dict | None) -> None:
        """Where training stands: from ``state`` (a saved train_state.pt) when resuming,
        else at the start. States saved before a field existed lack it: each has a default."""
        self.epoch, self.step, self.best_chrf, self.elapsed0 = 0, 0, -1.0, 0.0
        # batches of epoch ``self.epoch + 1`` already trained (a mid-epoch checkpoint), and
        # the loss of the last of them (what that epoch's history record reports)
        self.batches_done, self.last_loss = 0, math.nan
        # seconds the end of a run takes (evaluate-and-save of the cut epoch, then of the
        # average), learned from the last epoch's end, so that --max-minutes bounds the whole run
        self.finish_seconds = 0.0
        self.history: list[dict] = []
        state = state or {}
        if state:
            self.opt.load_state_dict(state["optimizer"])
            self.sched.load_state_dict(state["scheduler"])
            self.epoch, self.step, self.best_chrf = state["epoch"], state["step"], state["best_chrf"]
            self.elapsed0, self.history = state["elapsed"], json.loads(state["history"])
            self.finish_seconds = state.get("finish_seconds", 0.0)
            self.batches_done, self.last_loss = state.get("batches_done", 0), state.get("train_loss", math.nan)
        if "rng" in state:  # every rank's streams, in rank order
            set_rng_state(state["rng"][self.dist.rank], self.device)
            return
        if state:  # saved with rank 0's torch stream only
            torch.set_rng_state(state["torch_rng"])
            if "cuda_rng" in state and torch.device(self.device).type == "cuda":
                torch.cuda.set_rng_state(state["cuda_rng"], self.device)
        if self.dist.enabled and not self.dist.is_main:
            # different dropout masks per rank; rank 0 keeps the single-process stream
            torch.manual_seed(self.settings.seed + 1_000_003 * self.dist.rank + self.epoch)

    def _bf16_is_fast(self) -> bool:
        """``bf16_is_fast`` on this device; under torchrun rank 0 decides for every rank,
        so a timing that differs by noise cannot leave the ranks on different dtypes."""
        fast = bf16_is_fast(self.device) if self.dist.is_main else None
        return self.dist.broadcast_text(str(fast)) == "True"  # the text as is when not distributed

    # -------------------------------------------------------------- construction

    @classmethod
    def resume(cls, out: str | Path, data: ParallelData, settings: TrainSettings, **kwargs) -> "Trainer":
        """Continue the run in ``out`` from its last checkpoint (``resume_dir``: an epoch's,
        or a mid-epoch one): weights, optimiser, schedule, RNG, data position, clock and
        history all pick up where they stopped. ``settings`` only contributes ``epochs`` (at
        least the epochs begun), ``max_minutes`` and ``save_every_minutes``."""
        last = resume_dir(out)
        if last is None:
            raise TrainingError(f"cannot resume: no epoch checkpoint or mid-epoch state with {STATE_FILE} under {out}")
        try:
            model, src_tok, tgt_tok, _ = load_checkpoint(last)
            state = torch.load(last / STATE_FILE, weights_only=True)
            if "weights" in state:  # the float32 weights of a run stored in a lower precision
                assign_weights(model, state["weights"], last / STATE_FILE)
            begun = state["epoch"] + (1 if state.get("batches_done") else 0)
            settings = resume_settings(TrainSettings(**state["settings"]), settings, begun)
        except (CheckpointError, RuntimeError, OSError, KeyError, TypeError) as exc:
            raise TrainingError(f"cannot resume from {last}: {exc}") from exc
        return cls(model, src_tok, tgt_tok, data, settings, out, state=state, **kwargs)

    def _record_processes(self, settings: TrainSettings, state: dict | None) -> TrainSettings:
        """``settings`` with ``processes`` set to the processes that train. A resumed run
        must keep the count it recorded: its steps per epoch, and so its schedule, depend on
        it (a run saved before the count was recorded takes the one it resumes with)."""
        world = self.dist.world_size
        recorded = (state or {}).get("settings", {}).get("processes")
        if recorded is not None and recorded != world:
            raise TrainingError(
                f"this run trained with {recorded} process(es), not {world}: resume it with as many "
                f"(train.py --resume starts them itself; torchrun needs --nproc_per_node={recorded})"
            )
        return replace(settings, processes=world)

    def add_callback(self, event: str, fn: Callable) -> None:
        if event not in EVENTS:
            raise ValueError(f"unknown event {event!r}; one of {', '.join(EVENTS)}")
        self.callbacks[event].append(fn)

    def _fire(self, event: str, **info) -> None:
        if self.dist.is_main:
            for fn in self.callbacks[event]:
                fn(self, **info)

    # -------------------------------------------------------------- paths

    @property
    def best_dir(self) -> Path:
        return self.out / "best"

    @property
    def epochs_dir(self) -> Path:
        return self.out / "epochs"

    @property
    def snapshots_dir(self) -> Path:
        return self.out / "snapshots"

    # -------------------------------------------------------------- the loop

    def epoch_batches(self, epoch: int) -> list[list[int]]:
        """This rank's batches (example indices) for ``epoch`` (0-based). The same (seed,
        epoch) always gives the same batches, so a resumed run sees the same data."""
        batches = token_budget_batches(self.train_enc, self.settings.batch_tokens, self.settings.seed, epoch)
        return shard_batches(batches, self.dist.rank, self.dist.world_size)

    def fit(self) -> FitResult:
        """Train the remaining epochs, evaluating and saving after each, then average the
        last ``average_last`` epoch checkpoints and keep that if it scores better.

        ``max_minutes`` bounds the whole run: training stops early enough to leave time for
        the last evaluation and the average, estimated from how long the previous epoch's
        end took (so a run that has not finished an epoch yet reserves nothing).

        A stop request (``self.stop``) raises :class:`TrainingStopped` once every rank has
        finished the same step and the position is saved."""
        s = self.settings
        self.clock = Stopwatch(self.elapsed0)
        self._last_save = self.clock.elapsed
        stopped_at = None
        with self.stop.deferred():
            for epoch in range(self.epoch, s.epochs):
                loss, done, n_batches, late = self._train_epoch(epoch)
                if late:
                    stopped_at = (epoch + 1, done, n_batches)
                self.epoch = epoch + 1
                before = self.clock.elapsed
                self.end_epoch(loss, final=stopped_at is not None or self.epoch == s.epochs, position=(done, n_batches))
                self.finish_seconds = (self.clock.elapsed - before) * (2 if s.average_last > 1 else 1)
                if stopped_at is not None:
                    self._fire(
                        "on_time_budget", epoch=stopped_at[0], batches_done=stopped_at[1], n_batches=stopped_at[2]
                    )
                    break
            self._finish()
        result = FitResult(self.best_chrf, round(self.clock.elapsed / 60, 2), self.best_dir, self.history, stopped_at)
        self._fire("on_end", result=result)
        return result

    def _train_epoch(self, epoch: int) -> tuple[float, int, int, bool]:
        """Train ``epoch`` (0-based) from where the run stands in it until its end, the time
        budget or a stop request. Returns (the last batch's loss, batches done, batches,
        whether the time budget ended it)."""
        s = self.settings
        budget = s.max_minutes * 60 if s.max_minutes else math.inf
        batches = self.epoch_batches(epoch)
        start, self.batches_done = self.batches_done, 0  # > 0 only in the epoch a run resumed within
        self._fire("on_epoch_start", epoch=epoch + 1, n_batches=len(batches), batches_done=start)
        loss, tokens, t0 = (self.last_loss if start else math.nan), 0, time.monotonic()
        for done in range(start + 1, len(batches) + 1):
            batch = make_batch([self.train_enc[i] for i in batches[done - 1]], self.cfg)
            loss, gnorm = train_step(self.train_module, batch, self.opt, self.sched, s, self.device)
            self.step += 1
            tokens += batch.n_tgt_tokens + batch.n_src_tokens
            self._fire(
                "on_batch_end",
                loss=loss,
                grad_norm=gnorm,
                lr=self.sched.get_last_lr()[0],
                tokens_per_s=tokens / max(1e-9, time.monotonic() - t0),
            )
            # one all-reduce for the three things every rank must do together
            late, signum, save = self.dist.maximum(
                int(self.clock.elapsed + self.finish_seconds > budget), self.stop.signum, int(self._save_due())
            )
            if signum or save:
                directory = self.save_resume_point(epoch, done, len(batches), loss)
                if signum:
                    raise self._stopped(TrainingStopped(signum, directory, epoch + 1, done, len(batches), self.step))
            if late:
                return loss, done, len(batches), True
        return loss, len(batches), len(batches), False

    def _stopped(self, stopped: TrainingStopped) -> TrainingStopped:
        """``stopped``, once this rank has noted its signal (a rank stopped by another's
        signal must not take a later one for a new stop) and ``on_stop`` has fired."""
        self.stop.request(stopped.signum)  # inside ``fit``, only noted
        self._fire("on_stop", stopped=stopped)
        return stopped

    def _save_due(self) -> bool:
        return self.clock.elapsed - self._last_save >= self.settings.save_every_minutes * 60

    def _train_state(self, rngs: list[dict]) -> dict:
        """What ``Trainer.resume`` needs besides the weights, for a checkpoint written now;
        ``rngs`` is every rank's ``rng_state`` (``DistContext.gather``)."""
        return {
            "optimizer": self.opt.state_dict(),
            "scheduler": self.sched.state_dict(),
            "rng": rngs,
            "epoch": self.epoch,
            "step": self.step,
            "best_chrf": self.best_chrf,
            "elapsed": self.clock.elapsed,
            "settings": asdict(self.settings),
            "history": json.dumps(self.history),
            # the reserve in force during this epoch (the previous end's), so that a resumed
            # run keeps room for its last evaluation from its first batch on
            "finish_seconds": self.finish_seconds,
        }

    def _save_state_dir(self, directory: Path, state: dict, metrics: dict) -> None:
        """A checkpoint folder with ``state`` beside the weights (main rank)."""
        with self._on_cpu() as model:
            if model.cfg.storage_dtype != "float32":
                # model.safetensors holds rounded weights; resume needs the exact ones
                state["weights"] = weights_state_dict(model)
            save_checkpoint(
                directory, model, self.src_tok, self.tgt_tok, metrics=metrics, extra_files={STATE_FILE: state}
            )

    def save_resume_point(self, epoch: int, batches_done: int, n_batches: int, loss: float) -> Path:
        """Write ``OUT/mid-epoch``: everything ``Trainer.resume`` needs to go on after
        ``batches_done`` of the ``n_batches`` batches of ``epoch`` (0-based), as if the run had
        never stopped. Replaced atomically, so a kill during the save leaves the previous
        one whole. Every rank calls this (they share their random-number states)."""
        rngs = self.dist.gather(rng_state(self.device))
        if self.dist.is_main:
            state = {**self._train_state(rngs), "epoch": epoch, "batches_done": batches_done, "train_loss": loss}
            metrics = {
                "epoch": epoch,
                "batches_done": batches_done,
                "n_batches": n_batches,
                "step": self.step,
                "train_minutes": round(self.clock.elapsed / 60, 2),
            }
            self._save_state_dir(self.out / MID_EPOCH_DIR, state, metrics)
        self._last_save = self.clock.elapsed
        self.dist.barrier()
        return self.out / MID_EPOCH_DIR

    def end_epoch(self, train_loss: float, final: bool, position: tuple[int, int] | None = None) -> Evaluation | None:
        """Evaluate, save the epoch checkpoint with its training state, keep a snapshot if
        the schedule says so, and drop old epoch checkpoints (main rank; the others wait).

        A stop request ends the run here (:class:`TrainingStopped`): after the checkpoint,
        or, when it came during the evaluation, which is then given up, with a mid-epoch
        checkpoint at ``position`` (batches done, batches) from which resume evaluates."""
        rngs = self.dist.gather(rng_state(self.device))  # evaluation draws no random numbers
        evaluation, given_up = None, 0
        if self.dist.is_main:
            try:
                evaluation = self.evaluate_and_save({"epoch": self.epoch}, train_loss=train_loss)
            except EvaluationStopped:
                given_up = 1
            else:
                self._save_epoch(self._train_state(rngs), evaluation, final)
        self._last_save = self.clock.elapsed
        given_up, signum = self.dist.maximum(given_up, self.stop.signum)
        done, n_batches = position or (self.steps_per_epoch, self.steps_per_epoch)
        if given_up:
            directory = self.save_resume_point(self.epoch - 1, done, n_batches, train_loss)
            raise self._stopped(TrainingStopped(signum, directory, self.epoch, done, n_batches, self.step))
        if signum:
            raise self._stopped(
                TrainingStopped(
                    signum,
                    self.epochs_dir / f"epoch-{self.epoch:03d}",
                    self.epoch,
                    done,
                    n_batches,
                    self.step,
                    at_epoch_end=True,
                )
            )
        return evaluation

    def _save_epoch(self, state: dict, evaluation: Evaluation, final: bool) -> None:
        """The epoch checkpoint (then the mid-epoch one is out of date), its snapshot when
        the schedule says so, and no more than ``keep_epochs`` epoch checkpoints (main rank)."""
        self._save_state_dir(self.epochs_dir / f"epoch-{self.epoch:03d}", state, evaluation.metrics)
        for stale in (self.out / MID_EPOCH_DIR, *self.out.glob(f".{MID_EPOCH_DIR}.old-*")):
            shutil.rmtree(stale, ignore_errors=True)
        if is_snapshot_epoch(self.epoch, self.snapshots, final):
            with self._on_cpu() as model, _stored_as(model, SNAPSHOT_DTYPE):
                save_checkpoint(
                    self.snapshots_dir / f"epoch-{self.epoch:03d}",
                    model,
                    self.src_tok,
                    self.tgt_tok,
                    metrics=evaluation.metrics,
                    include_tokenizers=False,
                )
            self.copy_snapshots_to_best()
        for old in sorted(self.epochs_dir.glob("epoch-*"))[: -self.keep_epochs]:
            shutil.rmtree(old, ignore_errors=True)

    def _finish(self) -> None:
        """The checkpoint average and history.json (main rank). A stop request during the
        average's evaluation gives it up: the run resumes from its last epoch checkpoint
        and averages then (a stop after it finished does not undo a finished run)."""
        given_up = 0
        if self.dist.is_main:
            try:
                self.average()
            except EvaluationStopped:
                given_up = 1
            else:
                self.out.mkdir(parents=True, exist_ok=True)
                write_file_atomic(self.out / "history.json", json.dumps(self.history, indent=2) + "\n")
        given_up, signum = self.dist.maximum(given_up, self.stop.signum)
        if given_up:
            n = self.steps_per_epoch
            raise self._stopped(
                TrainingStopped(signum, latest_epoch_dir(self.out), self.epoch, n, n, self.step, at_epoch_end=True)
            )

    def average(self) -> Evaluation | None:
        """Average the last ``average_last`` epoch checkpoints on disk into the model (a
        cheap ensemble that usually beats each one) and evaluate-and-save it. The model
        keeps the averaged weights afterwards."""
        n = self.settings.average_last
        recent = sorted(self.epochs_dir.glob("epoch-*"))[-n:] if n > 1 else []
        if len(recent) < 2:
            return None
        assign_weights(self.model, average_checkpoints([d / WEIGHTS_FILE for d in recent]), "averaged weights")
        return self.evaluate_and_save({"averaged": [d.name for d in recent]})

    # -------------------------------------------------------------- evaluate and save

    def evaluate_and_save(self, tag: dict, train_loss: float | None = None) -> Evaluation:
        """The one evaluation step: validation loss, greedy BLEU/chrF on the first
        ``val_limit`` validation pairs, a history record, and best/ rewritten (with its
        model card and snapshots) when chrF beats every earlier evaluation of the run.

        ``tag`` says what was evaluated: ``{"epoch": n}`` or ``{"averaged": [dirs]}``."""
        model = self.model.eval()
        val_loss = validation_loss(model, self.val_enc, self.cfg, self.settings.batch_tokens, self.device)
        pairs = self.data.validation[: self.val_limit]
        hyps = self._translate(model, [s for s, _ in pairs])
        scores = corpus_scores(hyps, [t for _, t in pairs])
        samples = [(s, t, h) for (s, t), h in zip(pairs, hyps)]
        minutes = round(self.clock.elapsed / 60, 2)
        if "epoch" in tag:
            record = {
                "epoch": tag["epoch"],
                "step": self.step,
                "minutes": minutes,
                "train_loss": round(train_loss, 4) if train_loss is not None else None,
                "val_loss": round(val_loss, 4),
                **scores,
            }
        else:
            record = {**tag, "val_loss": round(val_loss, 4), **scores, "minutes": minutes}
        self.history.append(record)
        metrics = {
            "validation": scores,
            "val_loss": val_loss,
            **tag,
            "step": self.step,
            "train_minutes": minutes,
            "parameters": self.n_params,
        }
        is_best = scores["chrf"] > self.best_chrf
        if is_best:
            self.best_chrf = scores["chrf"]
            card = self.model_card(self, metrics, samples[:10]) if self.model_card else None
            with self._on_cpu() as cpu_model:
                # best/ carries the run's history, so that its card can be rebuilt from the folder
                save_checkpoint(
                    self.best_dir,
                    cpu_model,
                    self.src_tok,
                    self.tgt_tok,
                    metrics={**metrics, "history": self.history},
                    model_card=card,
                )
            self.copy_snapshots_to_best()
        evaluation = Evaluation(record, metrics, samples, is_best)
        self._fire("on_evaluate", evaluation=evaluation)
        return evaluation

    def _translate(self, model: Transformer, sources: list[str]) -> list[str]:
        """Greedy translations of ``sources`` in the very batches ``Translator.translate``
        makes (sorted by length, so the scores are the same), handed to it one batch at a
        time: between batches a stop request gives up the evaluation
        (:class:`EvaluationStopped`) instead of keeping every rank waiting until it ends."""
        translator = Translator(model, self.src_tok, self.tgt_tok)
        order = sorted(range(len(sources)), key=lambda i: len(translator.encode_source(sources[i]).ids))
        hyps = [""] * len(sources)
        for start in range(0, len(order), EVAL_BATCH):
            if self.stop.signum:
                raise EvaluationStopped
            part = order[start : start + EVAL_BATCH]
            for i, hyp in zip(part, translator.translate([sources[i] for i in part], batch_size=EVAL_BATCH)):
                hyps[i] = hyp
        return hyps

    @torch.no_grad()
    def time_evaluation(self, sample: int = EVAL_BATCH) -> float:
        """Seconds one evaluation will take, timed on ``sample`` validation pairs before
        training (no random numbers drawn, no weights changed): the validation loss over
        them, scaled to the split, and greedy decoding of one batch of them for as many steps
        as its longest reference, scaled to every batch of the evaluation. An untrained model
        would decode each sentence to the length limit; a trained one stops about where its
        reference does, and that is what most of the run's evaluations cost."""
        model = self.model.eval()
        pairs = self.val_enc[: self.val_limit]
        t0 = time.perf_counter()
        validation_loss(model, pairs[:sample], self.cfg, self.settings.batch_tokens, self.device)
        loss_seconds = (time.perf_counter() - t0) * len(self.val_enc) / min(sample, len(pairs))
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]))  # as the evaluation batches them
        batches = [order[i : i + EVAL_BATCH] for i in range(0, len(order), EVAL_BATCH)]
        steps = [max(len(pairs[i][1]) for i in b) + 1 for b in batches]  # the longest reference and </s>
        timed = batches[len(batches) // 2][:sample]
        src = torch.full((len(timed), max(len(pairs[i][0]) for i in timed) + 2), self.cfg.src_pad_id)  # (B, S)
        for row, i in enumerate(timed):
            ids = pairs[i][0]
            src[row, : len(ids) + 2] = torch.tensor([self.cfg.src_sos_id, *ids, self.cfg.src_eos_id])
        t0 = time.perf_counter()
        out = greedy_decode(model, src.to(self.device), max_steps=steps[len(batches) // 2])
        per_step = (time.perf_counter() - t0) / max(1, max(len(ids) for ids in out.ids))
        return loss_seconds + per_step * sum(steps)

    def copy_snapshots_to_best(self) -> None:
        """best/snapshots/ mirrors OUT/snapshots/ up to best/'s own epoch, so the shipped
        folder carries how that model formed and nothing trained after it (the epoch panel
        ends with the model itself). Called whenever either changes (saving best/ replaces
        the whole folder)."""
        if not self.snapshots_dir.is_dir() or not self.best_dir.is_dir():
            return
        last = best_epoch(self.best_dir)

        def ignore(folder: str, names: list[str]) -> list[str]:
            later = [n for n in names if Path(folder) == self.snapshots_dir and snapshot_epoch(n) > last]
            return [n for n in names if n.startswith(".")] + later

        tmp = Path(tempfile.mkdtemp(prefix=".snapshots.tmp-", dir=self.best_dir))
        try:
            shutil.copytree(self.snapshots_dir, tmp, dirs_exist_ok=True, ignore=ignore)
            replace_dir(tmp, self.best_dir / "snapshots")
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    @contextlib.contextmanager
    def _on_cpu(self):
        """The model as save_checkpoint needs it: itself on CPU, else a CPU copy (moving
        the trained model itself would pull its parameters from under the optimiser and DDP)."""
        if torch.device(self.device).type == "cpu":
            yield self.model
        else:
            yield copy.deepcopy(self.model).cpu()
