"""A training run as one unit: epochs, per-epoch evaluation, checkpoints, resume,
checkpoint averaging and training snapshots.

    model, src_tok, tgt_tok = build_fresh(PRESETS["tiny"], data, "en", "it")
    trainer = Trainer(model, src_tok, tgt_tok, data, PRESETS["tiny"].train, "runs/tiny")
    trainer.add_callback("on_evaluate", lambda tr, evaluation: print(evaluation.record))
    result = trainer.fit()

    trainer = Trainer.resume("runs/tiny", data, PRESETS["tiny"].train)   # continue a run

Output directory layout:
    OUT/epochs/epoch-NNN/     checkpoint after each epoch + train_state.pt (for resume)
    OUT/best/                 the best validation chrF so far (what ships), with a copy of
    OUT/best/snapshots/       ... the snapshots below, up to best/'s own epoch
    OUT/snapshots/epoch-NNN/  small fp16 checkpoints (no tokenizer) after chosen epochs and the last
    OUT/history.json          one record per evaluation

The package never prints: progress goes to callbacks (``add_callback``), which fire on
the main rank only. Under ``torchrun`` every rank trains on its own shard of each epoch's
batches (see :func:`transformer.distributed.shard_batches`); only rank 0 evaluates and
writes files while the others wait at a barrier.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
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

from .checkpoint import (
    WEIGHTS_FILE, CheckpointError, assign_weights, load_checkpoint, read_metrics, replace_dir, save_checkpoint,
    weights_state_dict,
)
from .config import TransformerConfig
from .data import ParallelData, encode_pairs, load_extra_train, load_parallel, make_batch, token_budget_batches
from .distributed import DistContext, shard_batches
from .metrics import corpus_scores
from .model import Transformer, build_model, count_parameters
from .modelcard import model_card
from .tokenizer import SYNTHETIC_TAG, load_tokenizer, special_ids, train_tokenizer
from .training import (
    Preset, Stopwatch, TrainSettings, average_checkpoints, bf16_is_fast, make_optimizer, make_scheduler,
    seed_everything, train_step, validation_loss,
)
from .translator import Translator

STATE_FILE = "train_state.pt"
# three snapshots and the model keep a 4 + 4-layer checkpoint folder (16.8 MB each in
# float16) under the repository's 80 MB for checkpoints/
DEFAULT_SNAPSHOTS = (1, 4, 8)
SNAPSHOT_DTYPE = "float16"
EVENTS = ("on_epoch_start", "on_batch_end", "on_evaluate", "on_time_budget", "on_end")


class TrainingError(ValueError):
    """A run cannot start or continue as asked (bad settings, nothing to resume...)."""


class TrainingWarning(UserWarning):
    """A run goes ahead differently from what was asked (e.g. float32 instead of bf16);
    its own category so that a command line can print it as one plain line."""


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
    may be given more epochs and a new time budget. A falsy ``requested.epochs`` or
    ``requested.max_minutes`` keeps the run's own: a bare ``--resume`` must not take the
    preset's epoch count, which would stretch the LR schedule of a run started with
    ``--epochs``."""
    return replace(saved, epochs=max(requested.epochs or saved.epochs, epochs_done),
                   max_minutes=requested.max_minutes or saved.max_minutes)


@dataclass(frozen=True)
class Forecast:
    """When a run will end, from the time its epochs take."""

    seconds_left: float  # from now to the end of the run, last evaluation and average included
    last_epoch: int  # the epoch the run will end after (or during, when the budget cuts it)
    cut_by_budget: bool  # --max-minutes ends the run before its last epoch


def forecast(elapsed: float, epochs_done: int, epochs: int, seconds_per_epoch: float,
             max_minutes: float | None, finish_seconds: float = 0.0) -> Forecast:
    """Forecast the end of a run that has trained ``epochs_done`` of ``epochs`` epochs in
    ``elapsed`` seconds, if each remaining epoch takes ``seconds_per_epoch`` and the end
    (last evaluation and checkpoint average) ``finish_seconds``. A budget of
    ``max_minutes`` stops training early enough for that end (as ``Trainer.fit`` does)."""
    left = (epochs - epochs_done) * seconds_per_epoch + finish_seconds
    if max_minutes is None or elapsed + left <= max_minutes * 60:
        return Forecast(left, epochs, False)
    room = max(0.0, max_minutes * 60 - elapsed - finish_seconds)
    last = min(epochs, epochs_done + 1 + int(room // seconds_per_epoch))
    return Forecast(max(0.0, max_minutes * 60 - elapsed), last, True)


def latest_epoch_dir(out: Path) -> Path | None:
    dirs = sorted(d for d in (Path(out) / "epochs").glob("epoch-*") if d.is_dir() and (d / STATE_FILE).is_file())
    return dirs[-1] if dirs else None


# ---------------------------------------------------------------- data and a fresh model


def load_run_data(dataset: str, src_lang: str, tgt_lang: str, config: str | None = None, seed: int = 0,
                  max_train_pairs: int | None = None, dist: DistContext | None = None,
                  extra_train: tuple[str, ...] = (), tag: str | None = None) -> ParallelData:
    """The run's splits (``load_parallel``), optionally cut to the first ``max_train_pairs``,
    then the train splits of the ``extra_train`` corpora appended (synthetic sources
    prefixed with ``tag`` when given; see ``data.load_extra_train``).

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
    extra = [pair for path in extra_train for pair in load_extra_train(path, src_lang, tgt_lang, tag=tag)]
    if dist.is_main:
        dist.barrier()
    if max_train_pairs:
        data.train = data.train[:max_train_pairs]
    data.train = data.train + extra
    data.extra = tuple(str(path) for path in extra_train)
    return data


def run_tags_synthetic(out: str | Path) -> bool:
    """Whether the run in ``out`` tags its synthetic sources: its tokenizer has the tag."""
    last = latest_epoch_dir(Path(out))
    if last is None:
        return False
    cfg = TransformerConfig.from_json(last / "config.json")
    return load_tokenizer(last / cfg.src_tokenizer_file).token_to_id(SYNTHETIC_TAG) is not None



def build_fresh(preset: Preset, data: ParallelData, src_lang: str, tgt_lang: str, storage_dtype: str = "float32",
                seed: int = 0, dist: DistContext | None = None) -> tuple[Transformer, Tokenizer, Tokenizer]:
    """Tokenizers trained on the training split, and a new model sized from ``preset``.

    Under torchrun only rank 0 trains the tokenizers and sends them to the others as JSON,
    so every rank maps text to exactly the same ids. The model is initialised from
    ``seed`` (DistributedDataParallel then copies rank 0's weights to every rank anyway).
    """
    dist = dist or DistContext()
    m = asdict(preset.model)

    specials = [SYNTHETIC_TAG] if preset.tag_synthetic else []

    def tokenizer(texts_fn) -> Tokenizer:
        text = (train_tokenizer(texts_fn(), preset.vocab_size, split_punctuation=preset.split_punctuation,
                                extra_special_tokens=specials).to_str() if dist.is_main else None)
        return Tokenizer.from_str(dist.broadcast_text(text)) if dist.enabled else Tokenizer.from_str(text)

    if preset.joint_vocab:
        src_tok = tgt_tok = tokenizer(lambda: [s for s, _ in data.train] + [t for _, t in data.train])
        files = {"src_tokenizer_file": "tokenizer.json", "tgt_tokenizer_file": "tokenizer.json"}
    else:
        src_tok = tokenizer(lambda: [s for s, _ in data.train])
        tgt_tok = tokenizer(lambda: [t for _, t in data.train])
        files = {}
        if m["tie_embeddings"] == "all":  # one shared matrix needs one shared vocabulary
            m["tie_embeddings"] = "decoder"
    ids = {f"src_{k}_id": v for k, v in special_ids(src_tok).items()}
    ids.update({f"tgt_{k}_id": v for k, v in special_ids(tgt_tok).items()})
    try:
        cfg = TransformerConfig(**m, **ids, **files, src_vocab_size=src_tok.get_vocab_size(),
                                tgt_vocab_size=tgt_tok.get_vocab_size(), src_lang=src_lang, tgt_lang=tgt_lang,
                                storage_dtype=storage_dtype)
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


class Trainer:
    """Trains ``model`` on ``data`` and writes everything under ``out``.

    Callbacks (``add_callback(event, fn)``, called as ``fn(trainer, **info)`` on the main
    rank only):
      on_epoch_start  epoch (1-based), n_batches (this rank's)
      on_batch_end    loss, grad_norm, lr, tokens_per_s; ``trainer.step`` is the global step
      on_evaluate     evaluation (an :class:`Evaluation`), after every epoch and after averaging
      on_time_budget  epoch, batches_done, n_batches: the budget ended the run
      on_end          result (a :class:`FitResult`)
    """

    def __init__(self, model: Transformer, src_tok: Tokenizer, tgt_tok: Tokenizer, data: ParallelData,
                 settings: TrainSettings, out: str | Path, *, device: str = "cpu", val_limit: int = 1000,
                 keep_epochs: int = 6, snapshots: tuple[int, ...] = DEFAULT_SNAPSHOTS, command: str = "",
                 dist: DistContext | None = None, state: dict | None = None) -> None:
        check_settings(settings)
        if keep_epochs < 1:
            raise TrainingError(f"keep-epochs must be at least 1 (resume and averaging read them), got {keep_epochs}")
        if val_limit < 1:
            raise TrainingError(f"val-limit must be positive, got {val_limit}")
        if not data.validation:
            raise TrainingError(f"{data.source}: no validation pairs to evaluate on")
        self.dist = dist or DistContext(device=device)
        self.device = self.dist.device if self.dist.enabled else device
        settings = self._record_processes(settings, state)
        if settings.bf16 and not self._bf16_is_fast():
            warnings.warn(f"bf16 autocast would be emulated in software on this {self.device} (many times slower "
                          "than float32), so this run trains in float32; the results are the same kind, only "
                          "the speed differs", TrainingWarning, stacklevel=2)
            settings = replace(settings, bf16=False)
        self.settings, self.out, self.data = settings, Path(out), data
        self.val_limit, self.keep_epochs, self.snapshots, self.command = val_limit, keep_epochs, snapshots, command
        self.model, self.src_tok, self.tgt_tok, self.cfg = model.to(self.device), src_tok, tgt_tok, model.cfg
        self.n_params = count_parameters(model)
        self.callbacks: dict[str, list[Callable]] = defaultdict(list)

        self.train_enc = encode_pairs(data.train, src_tok, tgt_tok, self.cfg)
        self.val_enc = encode_pairs(data.validation, src_tok, tgt_tok, self.cfg)
        self.steps_per_epoch = len(self.epoch_batches(0))
        if self.steps_per_epoch == 0:
            raise TrainingError(f"{len(data.train)} training pairs make fewer batches than the "
                                f"{self.dist.world_size} processes: use more data or fewer processes")
        self.opt = make_optimizer(model, settings)
        self.sched = make_scheduler(self.opt, settings, settings.epochs * self.steps_per_epoch)
        self.epoch, self.step, self.best_chrf, self.elapsed0 = 0, 0, -1.0, 0.0
        # seconds the end of a run takes (evaluate-and-save of the cut epoch, then of the
        # average), learned from the last epoch's end, so that --max-minutes bounds the whole run
        self.finish_seconds = 0.0
        self.history: list[dict] = []
        if state is not None:
            self.opt.load_state_dict(state["optimizer"])
            self.sched.load_state_dict(state["scheduler"])
            torch.set_rng_state(state["torch_rng"])
            if "cuda_rng" in state and torch.device(self.device).type == "cuda":
                torch.cuda.set_rng_state(state["cuda_rng"], self.device)
            self.epoch, self.step, self.best_chrf = state["epoch"], state["step"], state["best_chrf"]
            self.elapsed0, self.history = state["elapsed"], json.loads(state["history"])
            self.finish_seconds = state.get("finish_seconds", 0.0)  # absent in runs saved before it was kept
        if self.dist.enabled and not self.dist.is_main:
            # different dropout masks per rank; rank 0 keeps the single-process stream
            torch.manual_seed(settings.seed + 1_000_003 * self.dist.rank + self.epoch)
        self.train_module: torch.nn.Module = model
        if self.dist.enabled:
            from torch.nn.parallel import DistributedDataParallel

            ids = [self.dist.local_rank] if torch.device(self.device).type == "cuda" else None
            # the positional table is a constant buffer: synced once at init, not every step
            self.train_module = DistributedDataParallel(model, device_ids=ids, forward_sync_buffers=False)
        self.clock = Stopwatch(self.elapsed0)

    def _bf16_is_fast(self) -> bool:
        """``bf16_is_fast`` on this device; under torchrun rank 0 decides for every rank,
        so a timing that differs by noise cannot leave the ranks on different dtypes."""
        fast = bf16_is_fast(self.device) if self.dist.is_main else None
        return self.dist.broadcast_text(str(fast)) == "True"  # the text as is when not distributed

    # -------------------------------------------------------------- construction

    @classmethod
    def resume(cls, out: str | Path, data: ParallelData, settings: TrainSettings, **kwargs) -> "Trainer":
        """Continue the run in ``out`` from its last epoch checkpoint: weights, optimiser,
        schedule, RNG, clock and history all pick up where they stopped. ``settings``
        only contributes ``epochs`` (at least the epochs done) and ``max_minutes``."""
        last = latest_epoch_dir(Path(out))
        if last is None:
            raise TrainingError(f"cannot resume: no epoch checkpoint with {STATE_FILE} under {Path(out) / 'epochs'}")
        try:
            model, src_tok, tgt_tok, _ = load_checkpoint(last)
            state = torch.load(last / STATE_FILE, weights_only=True)
            if "weights" in state:  # the float32 weights of a run stored in a lower precision
                assign_weights(model, state["weights"], last / STATE_FILE)
            settings = resume_settings(TrainSettings(**state["settings"]), settings, state["epoch"])
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
            raise TrainingError(f"this run trained with {recorded} process(es), not {world}: resume it with "
                                f"--processes {recorded}")
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
        end took (so a run that has not finished an epoch yet reserves nothing)."""
        s = self.settings
        budget = s.max_minutes * 60 if s.max_minutes else None
        self.clock = Stopwatch(self.elapsed0)
        stopped_at = None
        for epoch in range(self.epoch, s.epochs):
            batches = self.epoch_batches(epoch)
            self._fire("on_epoch_start", epoch=epoch + 1, n_batches=len(batches))
            tokens, t0, done, loss = 0, time.monotonic(), 0, float("nan")
            for idx in batches:
                batch = make_batch([self.train_enc[i] for i in idx], self.cfg)
                loss, gnorm = train_step(self.train_module, batch, self.opt, self.sched, s, self.device)
                self.step += 1
                done += 1
                tokens += batch.n_tgt_tokens + batch.n_src_tokens
                self._fire("on_batch_end", loss=loss, grad_norm=gnorm, lr=self.sched.get_last_lr()[0],
                           tokens_per_s=tokens / max(1e-9, time.monotonic() - t0))
                if budget is not None and self.dist.any(self.clock.elapsed + self.finish_seconds > budget):
                    stopped_at = (epoch + 1, done, len(batches))
                    break
            self.epoch = epoch + 1
            before = self.clock.elapsed
            self.end_epoch(loss, final=stopped_at is not None or self.epoch == s.epochs)
            self.finish_seconds = (self.clock.elapsed - before) * (2 if s.average_last > 1 else 1)
            if stopped_at is not None:
                self._fire("on_time_budget", epoch=stopped_at[0], batches_done=stopped_at[1],
                           n_batches=stopped_at[2])
                break
        if self.dist.is_main:
            self.average()
            self.out.mkdir(parents=True, exist_ok=True)
            (self.out / "history.json").write_text(json.dumps(self.history, indent=2) + "\n", encoding="utf-8")
        self.dist.barrier()
        result = FitResult(self.best_chrf, round(self.clock.elapsed / 60, 2), self.best_dir, self.history, stopped_at)
        self._fire("on_end", result=result)
        return result

    def end_epoch(self, train_loss: float, final: bool) -> Evaluation | None:
        """Evaluate, save the epoch checkpoint with its training state, keep a snapshot if
        the schedule says so, and drop old epoch checkpoints (main rank; the others wait)."""
        evaluation = None
        if self.dist.is_main:
            evaluation = self.evaluate_and_save({"epoch": self.epoch}, train_loss=train_loss)
            state = {
                "optimizer": self.opt.state_dict(), "scheduler": self.sched.state_dict(),
                "torch_rng": torch.get_rng_state(), "epoch": self.epoch, "step": self.step,
                "best_chrf": self.best_chrf, "elapsed": self.clock.elapsed, "settings": asdict(self.settings),
                "history": json.dumps(self.history),
                # the reserve in force during this epoch (the previous end's), so that a resumed
                # run keeps room for its last evaluation from its first batch on
                "finish_seconds": self.finish_seconds,
            }
            if torch.device(self.device).type == "cuda":
                state["cuda_rng"] = torch.cuda.get_rng_state(self.device)
            with self._on_cpu() as model:
                if model.cfg.storage_dtype != "float32":
                    # model.safetensors holds rounded weights; resume needs the exact ones
                    state["weights"] = weights_state_dict(model)
                save_checkpoint(self.epochs_dir / f"epoch-{self.epoch:03d}", model, self.src_tok, self.tgt_tok,
                                metrics=evaluation.metrics, extra_files={STATE_FILE: state})
                if is_snapshot_epoch(self.epoch, self.snapshots, final):
                    with _stored_as(model, SNAPSHOT_DTYPE):
                        save_checkpoint(self.snapshots_dir / f"epoch-{self.epoch:03d}", model, self.src_tok,
                                        self.tgt_tok, metrics=evaluation.metrics, include_tokenizers=False)
                    self.copy_snapshots_to_best()
            for old in sorted(self.epochs_dir.glob("epoch-*"))[: -self.keep_epochs]:
                shutil.rmtree(old, ignore_errors=True)
        self.dist.barrier()
        return evaluation

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
        hyps = Translator(model, self.src_tok, self.tgt_tok).translate([s for s, _ in pairs])
        scores = corpus_scores(hyps, [t for _, t in pairs])
        samples = [(s, t, h) for (s, t), h in zip(pairs, hyps)]
        minutes = round(self.clock.elapsed / 60, 2)
        if "epoch" in tag:
            record = {"epoch": tag["epoch"], "step": self.step, "minutes": minutes,
                      "train_loss": round(train_loss, 4) if train_loss is not None else None,
                      "val_loss": round(val_loss, 4), **scores}
        else:
            record = {**tag, "val_loss": round(val_loss, 4), **scores, "minutes": minutes}
        self.history.append(record)
        metrics = {"validation": scores, "val_loss": val_loss, **tag, "step": self.step, "train_minutes": minutes,
                   "parameters": self.n_params}
        is_best = scores["chrf"] > self.best_chrf
        if is_best:
            self.best_chrf = scores["chrf"]
            card = model_card(self.cfg, self.n_params, self.command, self.history, metrics, samples[:10],
                              self.data.source, extra_data=self.data.extra)
            with self._on_cpu() as cpu_model:
                # best/ carries the run's history, so that its card can be rebuilt from the folder
                save_checkpoint(self.best_dir, cpu_model, self.src_tok, self.tgt_tok,
                                metrics={**metrics, "history": self.history}, model_card=card)
            self.copy_snapshots_to_best()
        evaluation = Evaluation(record, metrics, samples, is_best)
        self._fire("on_evaluate", evaluation=evaluation)
        return evaluation

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
