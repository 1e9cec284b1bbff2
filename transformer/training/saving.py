"""What a run writes into its folder (layout in ``transformer.training.run_folder``): checkpoints
with the training state a resume needs, small float16 snapshots and their copy in best/, the
pruning of old epoch checkpoints, and the average of the last ones.

Every write goes through ``transformer.core.checkpoint.save_checkpoint``, which replaces a
folder atomically: a run killed during a save leaves the previous checkpoint whole.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer

from transformer.core.checkpoint import (
    WEIGHTS_FILE,
    CheckpointError,
    assign_weights,
    load_checkpoint,
    replace_dir,
    save_checkpoint,
    weights_state_dict,
    write_file_atomic,
)
from transformer.core.model import Transformer
from transformer.training.errors import TrainingError
from transformer.training.run_folder import (
    HISTORY_FILE,
    MID_EPOCH_DIR,
    STATE_FILE,
    best_epoch,
    epoch_dir_name,
    is_snapshot_epoch,
    snapshot_epoch,
)

SNAPSHOT_DTYPE = "float16"

if TYPE_CHECKING:
    from transformer.training.setup import StartPoint


@contextlib.contextmanager
def on_cpu(model: Transformer, device: str):
    """The model as save_checkpoint needs it: itself on CPU, else a CPU copy (moving
    the trained model itself would pull its parameters from under the optimiser and DDP)."""
    if torch.device(device).type == "cpu":
        yield model
    else:
        yield copy.deepcopy(model).cpu()


@contextlib.contextmanager
def stored_as(model: Transformer, storage_dtype: str):
    """Save ``model`` with another on-disk dtype (config.json says which) without
    touching the weights in memory."""
    cfg = model.cfg
    model.cfg = replace(cfg, storage_dtype=storage_dtype)
    try:
        yield model
    finally:
        model.cfg = cfg


def load_resume_point(directory: Path) -> tuple[Transformer, Tokenizer, Tokenizer, dict]:
    """The model, tokenizers and training state saved in checkpoint ``directory``; a model
    stored in a lower precision gets back the exact float32 weights its state keeps.
    ``TrainingError`` when any of it cannot be read."""
    try:
        model, src_tok, tgt_tok, _ = load_checkpoint(directory)
        state = torch.load(directory / STATE_FILE, weights_only=True)
        if "weights" in state:
            assign_weights(model, state["weights"], directory / STATE_FILE)
    except (CheckpointError, RuntimeError, OSError) as exc:
        raise TrainingError(f"cannot resume from {directory}: {exc}") from exc
    return model, src_tok, tgt_tok, state


class RunWriter:
    """Every file a run writes in its folder ``out`` (on the main rank; ``model`` lives on
    ``device``, and is copied to the CPU to be saved when it is not there)."""

    def __init__(
        self,
        out: Path,
        src_tok: Tokenizer,
        tgt_tok: Tokenizer,
        device: str,
        snapshots: tuple[int, ...],
        keep_epochs: int,
        start: StartPoint | None = None,
    ) -> None:
        self.out, self.src_tok, self.tgt_tok, self.device = Path(out), src_tok, tgt_tok, device
        self.snapshots, self.keep_epochs = snapshots, keep_epochs
        # a fine-tune (``start``: its ``setup.StartPoint``) that keeps no snapshots of its own
        # carries those of the model it started from
        self.inherited_snapshots = None if snapshots or start is None else start.snapshots
        self.best_dir = self.out / "best"
        self.epochs_dir = self.out / "epochs"
        self.snapshots_dir = self.out / "snapshots"
        self.mid_epoch_dir = self.out / MID_EPOCH_DIR

    def epoch_dir(self, epoch: int) -> Path:
        return self.epochs_dir / epoch_dir_name(epoch)

    def save_with_state(self, directory: Path, model: Transformer, state: dict, metrics: dict) -> None:
        """A checkpoint folder with the training ``state`` beside the weights (``train_state.pt``).
        A model stored in a lower precision also keeps its float32 weights there: resume needs the
        exact ones, not model.safetensors' rounded copy."""
        with on_cpu(model, self.device) as model:
            if model.cfg.storage_dtype != "float32":
                state["weights"] = weights_state_dict(model)
            save_checkpoint(
                directory, model, self.src_tok, self.tgt_tok, metrics=metrics, extra_files={STATE_FILE: state}
            )

    def save_mid_epoch(self, model: Transformer, state: dict, n_batches: int) -> None:
        """``OUT/mid-epoch``: the position ``state`` holds (``batches_done`` of the ``n_batches``
        batches of its 0-based ``epoch``), replaced atomically."""
        metrics = {
            "epoch": state["epoch"],
            "batches_done": state["batches_done"],
            "n_batches": n_batches,
            "step": state["step"],
            "train_minutes": round(state["elapsed"] / 60, 2),
        }
        self.save_with_state(self.mid_epoch_dir, model, state, metrics)

    def save_epoch(self, epoch: int, model: Transformer, state: dict, metrics: dict, final: bool) -> None:
        """The checkpoint of 1-based ``epoch`` (then the mid-epoch one, and any copy a kill
        during its save left aside, is out of date), its snapshot when the schedule says so,
        and no more than ``keep_epochs`` epoch checkpoints."""
        self.save_with_state(self.epoch_dir(epoch), model, state, metrics)
        for stale in (self.mid_epoch_dir, *self.out.glob(f".{MID_EPOCH_DIR}.old-*")):
            shutil.rmtree(stale, ignore_errors=True)
        if is_snapshot_epoch(epoch, self.snapshots, final):
            with on_cpu(model, self.device) as model, stored_as(model, SNAPSHOT_DTYPE):
                save_checkpoint(
                    self.snapshots_dir / epoch_dir_name(epoch), model, None, None, metrics, include_tokenizers=False
                )
            copy_snapshots_to_best(self.snapshots_dir, self.best_dir)
        for old in sorted(self.epochs_dir.glob("epoch-*"))[: -self.keep_epochs]:
            shutil.rmtree(old, ignore_errors=True)

    def save_best(self, model: Transformer, metrics: dict, card: str | None) -> None:
        """best/: the model, its metrics (with the run's history, so that its card can be
        rebuilt from the folder), its model card and the snapshots up to its epoch."""
        with on_cpu(model, self.device) as model:
            save_checkpoint(self.best_dir, model, self.src_tok, self.tgt_tok, metrics=metrics, model_card=card)
        copy_snapshots_to_best(self.snapshots_dir, self.best_dir, self.inherited_snapshots)

    def write_history(self, history: list[dict]) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        write_file_atomic(self.out / HISTORY_FILE, json.dumps(history, indent=2) + "\n")

    def average_into(self, model: Transformer, n: int) -> list[str]:
        """Put the average of the last ``n`` epoch checkpoints on disk into ``model`` (a cheap
        ensemble that usually beats each one); the names of the folders averaged, none (and
        ``model`` untouched) when fewer than two are there to average."""
        recent = sorted(self.epochs_dir.glob("epoch-*"))[-n:] if n > 1 else []
        if len(recent) < 2:
            return []
        assign_weights(model, average_checkpoints([d / WEIGHTS_FILE for d in recent]), "averaged weights")
        return [d.name for d in recent]


def copy_snapshots_to_best(snapshots_dir: Path, best_dir: Path, inherited: Path | None = None) -> None:
    """best/snapshots/ mirrors OUT/snapshots/ up to best/'s own epoch, so the shipped folder
    carries how that model formed and nothing trained after it (the epoch panel ends with
    the model itself). Called whenever either changes (saving best/ replaces the whole folder).
    Without OUT/snapshots, a fine-tune's ``inherited`` snapshots (the folder of the checkpoint it
    started from): every one of them comes before best/."""
    if not best_dir.is_dir():
        return
    if snapshots_dir.is_dir():
        source, last = snapshots_dir, best_epoch(best_dir)
    elif inherited is not None and inherited.is_dir():
        source, last = inherited, math.inf
    else:
        return

    def ignore(folder: str, names: list[str]) -> list[str]:
        later = [n for n in names if Path(folder) == source and snapshot_epoch(n) > last]
        return [n for n in names if n.startswith(".")] + later

    tmp = Path(tempfile.mkdtemp(prefix=".snapshots.tmp-", dir=best_dir))
    try:
        shutil.copytree(source, tmp, dirs_exist_ok=True, ignore=ignore)
        replace_dir(tmp, best_dir / "snapshots")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def average_checkpoints(paths: list) -> dict[str, torch.Tensor]:
    """Element-wise mean of several safetensors weight files (float32)."""
    avg: dict[str, torch.Tensor] = {}
    for p in paths:
        for k, v in load_file(str(p)).items():
            v = v.float()
            avg[k] = avg[k] + v if k in avg else v.clone()
    return {k: v / len(paths) for k, v in avg.items()}
