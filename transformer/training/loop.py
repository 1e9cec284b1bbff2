"""The Trainer: a training run's epochs and steps, its callbacks, and how it stops and resumes.

    model, src_tok, tgt_tok = build_fresh(PRESETS["tiny"], data, "en", "it")   # training.setup
    trainer = Trainer(model, src_tok, tgt_tok, data, PRESETS["tiny"].train, "runs/tiny")
    trainer.add_callback("on_evaluate", lambda tr, evaluation: print(evaluation.record))
    result = trainer.fit()

    trainer = Trainer.resume("runs/tiny", data, PRESETS["tiny"].train)   # continue a run

Beside it: the folder a run writes (``run_folder``), what goes into it (``saving``), how the
model is measured (``evaluation``), one optimiser step (``optim``) and what a run starts
from (``setup``).

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

import json
import math
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import torch
from tokenizers import Tokenizer

from transformer.core.model import Transformer, count_parameters
from transformer.training.data import ParallelData, encode_pairs, make_batch, token_budget_batches
from transformer.training.distributed import DistContext, StopSignals, shard_batches
from transformer.training.evaluation import Evaluation, EvaluationStopped, Validation
from transformer.training.optim import float32_unless_bf16_is_fast, make_optimizer, make_scheduler, restore_rng_state
from transformer.training.optim import rng_state, train_step
from transformer.training.errors import TrainingError
from transformer.training.presets import TrainSettings, resume_settings
from transformer.training.run_folder import DEFAULT_SNAPSHOTS, STATE_FILE, latest_epoch_dir, resume_dir
from transformer.training.saving import RunWriter, load_resume_point
from transformer.training.setup import StartPoint, check_options, record_processes

EVENTS = ("on_epoch_start", "on_batch_end", "on_evaluate", "on_time_budget", "on_stop", "on_end")


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
    out: Path | None = None  # the run's folder

    def __str__(self) -> str:
        return f"stopped by signal {self.signum} at epoch {self.epoch}; saved {self.directory}"


@dataclass
class FitResult:
    best_chrf: float
    minutes: float
    best_dir: Path
    history: list[dict]
    # set when the time budget ended the run: (epoch, batches done, batches in the epoch)
    stopped_at: tuple[int, int, int] | None = None


class Stopwatch:
    """Wall-clock budget that survives --resume (elapsed time is carried over)."""

    def __init__(self, already: float = 0.0) -> None:
        self.start = time.monotonic() - already

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.start


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
        start: StartPoint | None = None,
    ) -> None:
        check_options(settings, keep_epochs, val_limit, data)
        self.dist = dist or DistContext(device=device)
        self.device = self.dist.device if self.dist.enabled else device
        settings = float32_unless_bf16_is_fast(record_processes(settings, state, self.dist), self.device, self.dist)
        self.settings, self.out, self.data, self.val_limit, self.command = settings, Path(out), data, val_limit, command
        # a fine-tune's start (``--init-from``); a resumed run reads its own back from its state
        self.start_point = StartPoint.from_state((state or {}).get("start")) if state else start
        self.files = RunWriter(self.out, src_tok, tgt_tok, self.device, snapshots, keep_epochs, self.start_point)
        self.best_dir = self.files.best_dir
        self.model_card = model_card  # (trainer, metrics, samples) -> the README.md written into best/
        self.model, self.src_tok, self.tgt_tok, self.cfg = model.to(self.device), src_tok, tgt_tok, model.cfg
        self.n_params = count_parameters(model)
        self.callbacks: dict[str, list[Callable]] = defaultdict(list)

        self.train_enc = encode_pairs(data.train, src_tok, tgt_tok, self.cfg)
        self.validation = Validation(
            data.validation, src_tok, tgt_tok, self.cfg, val_limit, settings.batch_tokens, self.device
        )
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
        self.train_module = self.dist.wrap(model)
        self.clock = Stopwatch(self.elapsed0)
        self._last_save = self.elapsed0  # clock time of the last checkpoint, for save_every_minutes

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
        if state and restore_rng_state(state, self.dist.rank, self.device):
            return
        if self.dist.enabled and not self.dist.is_main:
            # different dropout masks per rank; rank 0 keeps the single-process stream
            torch.manual_seed(self.settings.seed + 1_000_003 * self.dist.rank + self.epoch)

    @classmethod
    def resume(cls, out: str | Path, data: ParallelData, settings: TrainSettings, **kwargs) -> "Trainer":
        """Continue the run in ``out`` from its last checkpoint (``resume_dir``: an epoch's,
        or a mid-epoch one): weights, optimiser, schedule, RNG, data position, clock and
        history all pick up where they stopped. ``settings`` only contributes ``epochs`` (at
        least the epochs begun), ``max_minutes`` and ``save_every_minutes``."""
        last = resume_dir(out)
        if last is None:
            raise TrainingError(f"cannot resume: no epoch checkpoint or mid-epoch state with {STATE_FILE} under {out}")
        model, src_tok, tgt_tok, state = load_resume_point(last)
        try:
            begun = state["epoch"] + (1 if state.get("batches_done") else 0)
            settings = resume_settings(TrainSettings(**state["settings"]), settings, begun)
        except (KeyError, TypeError) as exc:
            raise TrainingError(f"cannot resume from {last}: {exc}") from exc
        return cls(model, src_tok, tgt_tok, data, settings, out, state=state, **kwargs)

    def add_callback(self, event: str, fn: Callable) -> None:
        if event not in EVENTS:
            raise ValueError(f"unknown event {event!r}; one of {', '.join(EVENTS)}")
        self.callbacks[event].append(fn)

    def _fire(self, event: str, **info) -> None:
        if self.dist.is_main:
            for fn in self.callbacks[event]:
                fn(self, **info)

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
                    self._fire("on_time_budget", epoch=self.epoch, batches_done=done, n_batches=n_batches)
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
            speed = tokens / max(1e-9, time.monotonic() - t0)
            self._fire("on_batch_end", loss=loss, grad_norm=gnorm, lr=self.sched.get_last_lr()[0], tokens_per_s=speed)
            # one all-reduce for the three things every rank must do together
            late, signum, save = self.dist.maximum(
                int(self.clock.elapsed + self.finish_seconds > budget), self.stop.signum, int(self._save_due())
            )
            if signum or save:
                directory = self.save_resume_point(epoch, done, len(batches), loss)
                if signum:
                    raise self._stopped(signum, directory, epoch + 1, done, len(batches))
            if late:
                return loss, done, len(batches), True
        return loss, len(batches), len(batches), False

    def _stopped(self, signum: int, directory: Path, epoch: int, done: int, n: int, at_end=False) -> TrainingStopped:
        """The :class:`TrainingStopped` to raise, once this rank has noted its signal (a rank
        stopped by another's signal must not take a later one for a new stop) and ``on_stop``
        has fired."""
        stopped = TrainingStopped(signum, directory, epoch, done, n, self.step, at_epoch_end=at_end, out=self.out)
        self.stop.request(signum)  # inside ``fit``, only noted
        self._fire("on_stop", stopped=stopped)
        return stopped

    def _save_due(self) -> bool:
        return self.clock.elapsed - self._last_save >= self.settings.save_every_minutes * 60

    # -------------------------------------------------------------- saving where the run stands

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
            "start": self.start_point.state() if self.start_point else None,
        }

    def save_resume_point(self, epoch: int, batches_done: int, n_batches: int, loss: float) -> Path:
        """Write ``OUT/mid-epoch``: everything ``Trainer.resume`` needs to go on after
        ``batches_done`` of the ``n_batches`` batches of ``epoch`` (0-based), as if the run had
        never stopped. Replaced atomically, so a kill during the save leaves the previous
        one whole. Every rank calls this (they share their random-number states)."""
        rngs = self.dist.gather(rng_state(self.device))
        if self.dist.is_main:
            state = {**self._train_state(rngs), "epoch": epoch, "batches_done": batches_done, "train_loss": loss}
            self.files.save_mid_epoch(self.model, state, n_batches)
        self._last_save = self.clock.elapsed
        self.dist.barrier()
        return self.files.mid_epoch_dir

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
                self.files.save_epoch(self.epoch, self.model, self._train_state(rngs), evaluation.metrics, final)
        self._last_save = self.clock.elapsed
        given_up, signum = self.dist.maximum(given_up, self.stop.signum)
        done, n_batches = position or (self.steps_per_epoch, self.steps_per_epoch)
        if given_up:
            directory = self.save_resume_point(self.epoch - 1, done, n_batches, train_loss)
            raise self._stopped(signum, directory, self.epoch, done, n_batches)
        if signum:
            raise self._stopped(signum, self.files.epoch_dir(self.epoch), self.epoch, done, n_batches, at_end=True)
        return evaluation

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
                self.files.write_history(self.history)
        given_up, signum = self.dist.maximum(given_up, self.stop.signum)
        if given_up:
            n = self.steps_per_epoch
            raise self._stopped(signum, latest_epoch_dir(self.out), self.epoch, n, n, at_end=True)

    # -------------------------------------------------------------- evaluate and save

    def average(self) -> Evaluation | None:
        """Average the last ``average_last`` epoch checkpoints on disk into the model (a
        cheap ensemble that usually beats each one) and evaluate-and-save it. The model
        keeps the averaged weights afterwards."""
        averaged = self.files.average_into(self.model, self.settings.average_last)
        return self.evaluate_and_save({"averaged": averaged}) if averaged else None

    def evaluate_and_save(self, tag: dict, train_loss: float | None = None) -> Evaluation:
        """The one evaluation step: validation loss, greedy BLEU/chrF on the first
        ``val_limit`` validation pairs, a history record, and best/ rewritten (with its
        model card and snapshots) when chrF beats every earlier evaluation of the run.

        ``tag`` says what was evaluated: ``{"epoch": n}`` or ``{"averaged": [dirs]}``."""
        measured = self.validation.measure(self.model.eval(), self.stop)
        minutes = round(self.clock.elapsed / 60, 2)
        record = measured.record(tag, self.step, minutes, train_loss)
        self.history.append(record)
        metrics = {**measured.metrics(tag, self.step, minutes, self.n_params), **StartPoint.tag(self.start_point)}
        is_best = measured.scores["chrf"] > self.best_chrf
        if is_best:
            self.best_chrf = measured.scores["chrf"]
            card = self.model_card(self, metrics, measured.samples[:10]) if self.model_card else None
            self.files.save_best(self.model, {**metrics, "history": self.history}, card)
        evaluation = Evaluation(record, metrics, measured.samples, is_best)
        self._fire("on_evaluate", evaluation=evaluation)
        return evaluation
