"""What ``train.py`` shows of a run: the start-up lines (output folder, time budget,
forecast), progress bars, one JSON line per evaluation, TensorBoard scalars, and the one
line a stop ends with.

    announce(trainer, RunStart(out, command, ...), sys.stderr)   # before trainer.fit(): the start-up
                                                                 # lines, then a ProgressPrinter

The rest of the package prints nothing; this module is the command line's view of a run,
and writes only to the stream it is given.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from tqdm import tqdm

from transformer.core.tokenizer import SYNTHETIC_TAG
from transformer.training.data import ParallelData, ParallelDatasets
from transformer.training.loop import Trainer, TrainingStopped
from transformer.training.run_folder import resume_dir

# steps timed (after the first, which warms up) for the forecast of a run that has no
# finished epoch to go by
FORECAST_AFTER_STEPS = 20


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


def output_line(out: Path, command: str, resumed: bool, replaced: bool) -> str:
    """Where the run writes, and how to stop and continue it."""
    what = "continuing its run" if resumed else "replacing the run that was there" if replaced else "a new run"
    return f"output: {out} ({what}); Ctrl-C saves and stops, then continue with: {command}"


def budget_line(t: Trainer) -> str | None:
    """When --max-minutes ends the run (None without a budget)."""
    s = t.settings
    if not s.max_minutes:
        return None
    left = max(0.0, s.max_minutes * 60 - t.clock.elapsed)
    end = time.strftime("%H:%M", time.localtime(time.time() + left))
    return (
        f"time budget: --max-minutes {s.max_minutes:g} ends the run by {end}, {left / 60:.0f} minutes from now "
        "(training stops in time for the last evaluation)"
    )


def forecast_line(t: Trainer, seconds_per_epoch: float, basis: str, finish_seconds: float | None = None) -> str:
    """When the whole run will end (every epoch's evaluation included), and whether
    --max-minutes cuts it short. ``finish_seconds``: the end's evaluations, when the
    trainer has not timed one yet."""
    s = t.settings
    done = t.epoch + t.batches_done / t.steps_per_epoch
    finish = t.finish_seconds or finish_seconds or 0.0
    f = forecast(t.clock.elapsed, done, s.epochs, seconds_per_epoch, s.max_minutes, finish)
    end = time.strftime("%H:%M", time.localtime(time.time() + f.seconds_left))
    line = (
        f"forecast: {seconds_per_epoch / 60:.1f} min/epoch ({basis}); the run ends about {end}, "
        f"{f.seconds_left / 60:.0f} minutes from now"
    )
    if f.cut_by_budget:
        line += f"; --max-minutes {s.max_minutes:g} cuts it during epoch {f.last_epoch} of {s.epochs}"
    return line


def history_seconds_per_epoch(history: list[dict]) -> tuple[float, int] | None:
    """(seconds per epoch, evaluation included, epochs it is measured on) from a run's
    history: the clock at the evaluations of its epochs. None before its first epoch ends."""
    epochs = [r for r in history if "epoch" in r]
    if not epochs:
        return None
    first, last = epochs[0], epochs[-1]
    if len(epochs) == 1:
        return last["minutes"] * 60 / last["epoch"], 1
    return (last["minutes"] - first["minutes"]) * 60 / (last["epoch"] - first["epoch"]), len(epochs) - 1


def stop_line(stopped: TrainingStopped, out: Path, command: str) -> str:
    """The one line a stopped run ends with: what was saved, and the command that goes on."""
    if stopped.at_epoch_end:
        where = f"after epoch {stopped.epoch}"
    else:
        where = f"at epoch {stopped.epoch}, step {stopped.batches_done} of {stopped.n_batches}"
        if stopped.batches_done == stopped.n_batches:
            where += " (before its evaluation)"
    return f"stopped: saved {out} {where}; continue with: {command}"


def _epochs_text(names) -> str:
    """'1-5' for epoch-001..epoch-005, '2, 4' when they are not consecutive."""
    epochs = [int(name.rsplit("-", 1)[1]) for name in names]
    if epochs == list(range(epochs[0], epochs[-1] + 1)) and len(epochs) > 1:
        return f"{epochs[0]}-{epochs[-1]}"
    return ", ".join(map(str, epochs))


def average_verdict(t: Trainer, evaluation) -> str:
    """One line after the checkpoint average is evaluated: its chrF and whether it became
    best/ (the trainer keeps the average only when it beats every epoch of the run)."""
    record = evaluation.record
    line = f"averaged epochs {_epochs_text(record['averaged'])}: chrF {record['chrf']}, "
    if evaluation.is_best:
        return line + "kept as best/"
    best = next((r for r in t.history if r.get("chrf") == t.best_chrf), None)
    if best is None:
        which = ""
    elif "epoch" in best:
        which = f" (epoch {best['epoch']})"
    else:
        which = f" (an earlier average of epochs {_epochs_text(best['averaged'])})"
    return line + f"not kept: best/ keeps chrF {t.best_chrf}{which}"


def resume_line(t: Trainer, directory: Path) -> str:
    """Which checkpoint (``directory``) a resumed run continues from, and what is left to train."""
    s, done = t.settings, t.epoch
    if t.batches_done:
        return f"resuming from epoch {done + 1}, step {t.batches_done} of {t.steps_per_epoch} ({directory}): " + (
            f"epoch {s.epochs} to go" if done + 1 == s.epochs else f"epochs {done + 1}-{s.epochs} to go"
        )
    if done >= s.epochs:
        todo = "no epochs left to train (a larger --epochs trains more)"
    elif done + 1 == s.epochs:
        todo = f"epoch {s.epochs} to go"
    else:
        todo = f"epochs {done + 1}-{s.epochs} to go"
    return f"resuming from epoch {done} ({directory}): {todo}"


@dataclass(frozen=True)
class RunStart:
    """What the start-up lines say besides the trainer: the output folder, the command that
    continues the run, whether it resumes or replaces a run, its data, the --extra-train
    corpora, and whether synthetic sources are tagged."""

    out: Path
    command: str
    resumed: bool
    replaced: bool
    data: ParallelData | ParallelDatasets
    extra: tuple[str, ...]
    tags: bool


def announce(trainer: Trainer, run: RunStart, file: TextIO) -> ProgressPrinter:
    """The start-up lines (main rank): what resumes, the data, the model, where it all goes,
    when the budget ends the run; then the progress printer, installed on ``trainer``."""
    cfg, s, data = trainer.cfg, trainer.settings, run.data
    if run.resumed:
        print(resume_line(trainer, resume_dir(run.out)), file=file)
    tagged = run.tags and any(src.startswith(f"{SYNTHETIC_TAG} ") for src, _ in reversed(data.train))
    print(
        f"data: {len(data.train)} train / {len(data.validation)} validation pairs from {data.source}"
        + "".join(f" + {path}" for path in run.extra)
        + (" (synthetic sources tagged)" if tagged else ""),
        file=file,
    )
    print(
        f"model: {trainer.n_params:,} parameters; vocab {cfg.src_vocab_size}/{cfg.tgt_vocab_size}; "
        f"device {trainer.device} ({'bf16 autocast' if s.bf16 else 'float32'}); "
        f"{trainer.steps_per_epoch} steps/epoch x {s.epochs} epochs"
        + (f" on each of {trainer.dist.world_size} processes" if trainer.dist.enabled else ""),
        file=file,
    )
    for line in (output_line(run.out, run.command, run.resumed, run.replaced), budget_line(trainer)):
        if line:
            print(line, file=file)
    return ProgressPrinter(trainer, run.out, file)


class ProgressPrinter:
    """Progress bars, forecasts, one JSON line per evaluation, and TensorBoard scalars of a
    run (main rank), through the trainer's callbacks. The first forecast comes at once from
    a resumed run's history; a run with no finished epoch times an evaluation now and its
    first steps, and forecasts then (``FORECAST_AFTER_STEPS``)."""

    def __init__(self, trainer: Trainer, out: Path, file: TextIO) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.file, self.writer, self.bar = file, SummaryWriter(log_dir=str(out / "tensorboard")), None
        self.epochs, self.seconds, self.first_elapsed = 0, 0.0, None  # whole epochs measured in this process
        self.start, self.eval_seconds, self.told = None, 0.0, False
        measured = history_seconds_per_epoch(trainer.history)
        if measured is not None:
            self.write(forecast_line(trainer, measured[0], f"from the run's {measured[1]} epoch(s) so far"))
            self.told = True
        else:
            self.eval_seconds = trainer.validation.seconds(trainer.model)
        for event in ("on_epoch_start", "on_batch_end", "on_evaluate", "on_time_budget", "on_stop", "on_end"):
            trainer.add_callback(event, getattr(self, event))

    def write(self, line: str) -> None:
        tqdm.write(line, file=self.file)  # above a progress bar that may be drawing

    def on_epoch_start(self, t: Trainer, epoch: int, n_batches: int, batches_done: int = 0) -> None:
        if not batches_done and self.first_elapsed is None:  # an epoch resumed part-way is no measure of one
            self.first_elapsed = t.clock.elapsed
        if self.epochs:  # here rather than after the evaluation: an epoch the budget cut ends the run
            self.write(forecast_line(t, self.seconds / self.epochs, f"from {self.epochs} epoch(s) here"))
        self.bar = tqdm(
            total=n_batches,
            initial=batches_done,
            desc=f"epoch {epoch}/{t.settings.epochs}",
            unit="batch",
            dynamic_ncols=True,
            file=self.file,
            mininterval=0.5 if self.file.isatty() else 10,
        )

    def on_batch_end(self, t: Trainer, loss: float, grad_norm: float, lr: float, tokens_per_s: float) -> None:
        if self.start is None:  # the first step warms up: time from its end
            self.start = (time.monotonic(), t.step)
        elif t.step - self.start[1] == FORECAST_AFTER_STEPS and not self.told:
            self.told = True
            per_step = (time.monotonic() - self.start[0]) / FORECAST_AFTER_STEPS
            ends = self.eval_seconds * (2 if t.settings.average_last > 1 else 1)  # the cut epoch's, the average's
            self.write(
                forecast_line(
                    t,
                    per_step * t.steps_per_epoch + self.eval_seconds,
                    f"training timed on {FORECAST_AFTER_STEPS} steps, evaluation "
                    f"{self.eval_seconds / 60:.1f} min timed on a sample",
                    ends,
                )
            )
        self.bar.update(1)
        self.bar.set_postfix(loss=f"{loss:.3f}", lr=f"{lr:.2e}", tok_s=f"{tokens_per_s:,.0f}", refresh=False)
        if t.step % 20 == 0:
            for name, value in (("loss", loss), ("lr", lr), ("grad_norm", grad_norm), ("tokens_per_s", tokens_per_s)):
                self.writer.add_scalar(f"train/{name}", value, t.step)

    def on_evaluate(self, t: Trainer, evaluation) -> None:
        self.close_bar()
        record = evaluation.record
        print(json.dumps(record), file=self.file)
        for src, ref, hyp in evaluation.samples[:3]:
            print(f"  src: {src}\n  ref: {ref}\n  hyp: {hyp}", file=self.file)
        if "averaged" in record:
            print(average_verdict(t, evaluation), file=self.file)
        if "epoch" in record:
            for name in ("val_loss", "bleu", "chrf"):
                self.writer.add_scalar(f"val/{name.removeprefix('val_')}", record[name], t.step)
            if self.first_elapsed is None:  # the end of an epoch resumed part-way: measure from here
                self.first_elapsed = t.clock.elapsed
                return
            self.epochs += 1
            self.seconds = t.clock.elapsed - self.first_elapsed

    def on_time_budget(self, t: Trainer, epoch: int, batches_done: int, n_batches: int) -> None:
        where = (
            f"after epoch {epoch}"
            if batches_done == n_batches
            else f"after {batches_done} of {n_batches} batches of epoch {epoch}"
        )
        print(f"time budget of {t.settings.max_minutes} minutes spent; stopped {where}", file=self.file)

    def on_stop(self, t: Trainer, stopped: TrainingStopped) -> None:
        self.close_bar()
        self.writer.close()

    def on_end(self, t: Trainer, result) -> None:
        self.writer.close()

    def close_bar(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
