"""The folder a training run writes (``OUT``): its layout, which checkpoint a resumed run
continues from, the checks before a run starts there, and the record of its flags.

    OUT/epochs/epoch-NNN/     checkpoint after each epoch + train_state.pt (for resume)
    OUT/mid-epoch/            the same within an epoch: at a stop and every few minutes
    OUT/run.json              the settings the run was started with (``write_run_record``)
    OUT/best/                 the best validation chrF so far (what ships), with a copy of
    OUT/best/snapshots/       ... the snapshots below, up to best/'s own epoch
    OUT/snapshots/epoch-NNN/  small fp16 checkpoints (no tokenizer) after chosen epochs and the last
    OUT/history.json          one record per evaluation

Only paths and small files here: what goes into the checkpoints is in
``transformer.training.saving``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import torch

from transformer.core.checkpoint import read_metrics, resolve_checkpoint_dir, write_file_atomic
from transformer.training.errors import TrainingError

STATE_FILE = "train_state.pt"
MID_EPOCH_DIR = "mid-epoch"
RUN_FILE = "run.json"
HISTORY_FILE = "history.json"
# what makes OUT hold a run that a new one must not replace unasked
RUN_ITEMS = ("epochs", "best", "snapshots", HISTORY_FILE, MID_EPOCH_DIR)
# three snapshots and the model keep a 4 + 4-layer checkpoint folder (16.8 MB each in
# float16) under the repository's 80 MB for checkpoints/
DEFAULT_SNAPSHOTS = (1, 4, 8)


def epoch_dir_name(epoch: int) -> str:
    """``epoch-NNN``: the folder of 1-based ``epoch`` under ``epochs/`` and ``snapshots/``."""
    return f"epoch-{epoch:03d}"


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
