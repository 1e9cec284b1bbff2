"""``transformer.training.stages``: a run as a typed plan of stages, and ``run_stages``, which
decides for each stage whether it starts, resumes where it stopped, or is done already. The
stages here are trained by a stand-in that writes what a real stage leaves in its folder."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from transformer.training.errors import TrainingError
from transformer.training.presets import PRESETS
from transformer.training.run_folder import HISTORY_FILE, MID_EPOCH_DIR, RUN_FILE, STATE_FILE
from transformer.training.stages import FINE_TUNE_DIR, Budget, Stage, plan_stages, run_stages


@dataclass(frozen=True)
class Options:
    """The least a stage's options hold (the command line's ``RunOptions`` holds more)."""

    out: str
    resume: bool = False
    overwrite: bool = False
    init_from: str | None = None
    extra_train: tuple[str, ...] = ("more",)
    fine_tune_train: tuple[str, ...] = ("long",)
    snapshots: tuple[int, ...] = (1, 4, 8)
    distill_from: str | None = None
    max_train_pairs: int | None = None


class Trainer:
    """Stands in for the command line's ``train_stage``: records each stage it is given and
    leaves what a stage leaves (run.json; history.json when it ends; a mid-epoch state when
    it is told to stop)."""

    def __init__(self, stop_in: str | None = None):
        self.calls: list[Stage] = []
        self.stop_in = stop_in

    def __call__(self, stage: Stage) -> int:
        self.calls.append(stage)
        stage.out.mkdir(parents=True, exist_ok=True)
        (stage.out / RUN_FILE).write_text(json.dumps({"init_from": stage.options.init_from}))
        if stage.name == self.stop_in:
            (stage.out / MID_EPOCH_DIR).mkdir(exist_ok=True)
            (stage.out / MID_EPOCH_DIR / STATE_FILE).write_bytes(b"state")
            (stage.out / MID_EPOCH_DIR / "metrics.json").write_text('{"step": 3}')
            return 130
        (stage.out / HISTORY_FILE).write_text("[]")
        return 0

    def seen(self) -> list[tuple[str, bool, bool]]:
        return [(s.name, s.options.resume, s.options.overwrite) for s in self.calls]


def first_stage(out: Path, **options) -> Stage:
    return Stage(Options(out=str(out), **options), PRESETS["base"])


def test_the_plan_fine_tunes_the_first_stages_best_in_a_folder_of_its_own(tmp_path):
    first, tuned = plan_stages(first_stage(tmp_path, distill_from="teacher")).stages
    assert tuned.out == tmp_path / FINE_TUNE_DIR and tuned.options.init_from == str(tmp_path / "best")
    assert tuned.options.extra_train == ("long",) and tuned.options.fine_tune_train == ()
    assert tuned.options.snapshots == () and tuned.options.distill_from is None
    assert tuned.preset.train == PRESETS["base"].fine_tune and tuned.preset.model == first.preset.model
    alone = replace(first, options=replace(first.options, fine_tune_train=()))
    assert plan_stages(alone).stages == (alone,)
    one_stage = replace(first, preset=PRESETS["quick"])
    assert plan_stages(one_stage).stages == (one_stage,)


def test_a_run_trains_its_stages_in_order_and_stops_at_the_first_that_fails(tmp_path):
    trainer = Trainer()
    assert run_stages(plan_stages(first_stage(tmp_path)), trainer) == 0
    assert trainer.seen() == [("first", False, False), ("fine-tune", False, False)]
    stopped = Trainer(stop_in="first")
    assert run_stages(plan_stages(first_stage(tmp_path / "b")), stopped) == 130
    assert stopped.seen() == [("first", False, False)]


def test_resuming_a_finished_first_stage_goes_on_in_the_fine_tune_where_it_stopped(tmp_path):
    assert run_stages(plan_stages(first_stage(tmp_path)), Trainer(stop_in="fine-tune")) == 130
    resumed = Trainer()
    assert run_stages(plan_stages(first_stage(tmp_path, resume=True)), resumed) == 0
    assert resumed.seen() == [("fine-tune", True, False)]


def test_a_fine_tune_that_never_saved_starts_again_over_what_it_left(tmp_path):
    Trainer()(first_stage(tmp_path))  # the first stage ended; the process stopped before the fine-tune saved
    (tmp_path / FINE_TUNE_DIR).mkdir()
    (tmp_path / FINE_TUNE_DIR / RUN_FILE).write_text("{}")
    resumed = Trainer()
    assert run_stages(plan_stages(first_stage(tmp_path, resume=True)), resumed) == 0
    assert resumed.seen() == [("fine-tune", False, True)]


def test_extending_a_finished_first_stage_trains_it_on_and_fine_tunes_again(tmp_path):
    assert run_stages(plan_stages(first_stage(tmp_path)), Trainer()) == 0
    more = replace(first_stage(tmp_path, resume=True), budget=Budget(epochs=20))
    extended = Trainer()
    assert run_stages(plan_stages(more), extended) == 0
    # the fine-tune of the old best is replaced by one of the new best, not resumed
    assert extended.seen() == [("first", True, False), ("fine-tune", False, True)]


def test_a_new_run_is_refused_before_training_over_a_fine_tune_it_was_not_told_to_replace(tmp_path):
    (tmp_path / FINE_TUNE_DIR / "best").mkdir(parents=True)
    trainer = Trainer()
    with pytest.raises(TrainingError, match="already holds a run"):
        run_stages(plan_stages(first_stage(tmp_path)), trainer)
    assert trainer.calls == []
    assert run_stages(plan_stages(first_stage(tmp_path, overwrite=True)), trainer) == 0


def test_the_runs_save_interval_reaches_the_fine_tune_and_its_other_budget_does_not(tmp_path):
    budget = Budget(epochs=30, max_minutes=5.0, save_every_minutes=2.0)
    tuned = plan_stages(replace(first_stage(tmp_path), budget=budget)).stages[1]
    assert tuned.budget == Budget(save_every_minutes=2.0)
    assert tuned.preset.train == replace(PRESETS["base"].fine_tune, save_every_minutes=2.0)
