"""A run as stages: a typed plan, and the function that runs it in order.

    plan = plan_stages(Stage(options, preset))  # the first stage, then the preset's fine-tuning one
    code = run_stages(plan, train_stage)        # each stage fresh, resumed, or done already

A preset with a second stage (``Preset.fine_tune``) trains its first stage in OUT, then
fine-tunes OUT/best in OUT/fine-tune on the pairs the first stage names
(``fine_tune_train``), with the preset's fine-tuning settings. Both stages are values of one
type, :class:`Stage`, and the second is derived from the first here (:func:`fine_tune_stage`),
so no command line is built or read again between them.

What trains one stage is the caller's (``train_stage``): the command line launches processes
for it, or runs it in its own. This module decides what each stage is and in which state it
starts: a first stage whose ``history.json`` is written is done, and ``--resume`` of the whole
run goes on in whichever stage stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from transformer.training.errors import TrainingError
from transformer.training.presets import Preset
from transformer.training.run_folder import HISTORY_FILE, RUN_FILE, check_out_dir, resume_dir, run_items

# the second, fine-tuning stage's run folder, inside the first stage's
FINE_TUNE_DIR = "fine-tune"


class StageOptions(Protocol):
    """What a stage is besides its preset: the fields this module reads and sets. The command
    line's ``RunOptions`` (a frozen dataclass) is one; its other fields (the data, the device,
    the bookkeeping) pass through to the fine-tuning stage unchanged."""

    out: str
    resume: bool
    overwrite: bool
    init_from: str | None
    extra_train: tuple[str, ...]
    fine_tune_train: tuple[str, ...]
    snapshots: tuple[int, ...]
    distill_from: str | None
    max_train_pairs: int | None


@dataclass(frozen=True)
class Budget:
    """What a resumed stage may change of its own training settings: None keeps the run's."""

    epochs: int | None = None
    max_minutes: float | None = None
    save_every_minutes: float | None = None

    @property
    def extends(self) -> bool:
        """More training for a stage that had ended: more epochs or more minutes."""
        return self.epochs is not None or self.max_minutes is not None


@dataclass(frozen=True)
class Stage:
    """One training run of a plan: its options, its preset (flags applied; ``preset.train``
    is what this stage trains with), its name in lines and errors, and, when it resumes, the
    budget asked for now."""

    options: StageOptions
    preset: Preset
    name: str = "first"
    budget: Budget = Budget()

    @property
    def out(self) -> Path:
        return Path(self.options.out)

    @property
    def finished(self) -> bool:
        """The stage has trained to its end: its history is written at the end only."""
        return (self.out / HISTORY_FILE).is_file()


@dataclass(frozen=True)
class StagePlan:
    """The stages of a run, in the order they train; each later one starts from the one before."""

    stages: tuple[Stage, ...]

    @property
    def last(self) -> Stage:
        return self.stages[-1]


# what a budget given for the run sets in every stage (the preset's ``fine_tune`` settles the rest)
SHARED_BY_STAGES = ("save_every_minutes",)


def fine_tune_stage(first: Stage) -> Stage | None:
    """The stage after ``first``: the preset's ``fine_tune`` settings, from OUT/best, on all
    the real pairs plus ``first.options.fine_tune_train`` (no teacher's: the distilled pairs
    taught the first stage), in OUT/fine-tune, with no snapshots of its own (its best/ carries
    the first stage's). Of the budget asked for the run (``first.budget``), the fine-tuning
    takes only what ``SHARED_BY_STAGES`` names. None when the preset has no second stage or
    there are no such pairs."""
    settings, pairs = first.preset.fine_tune, tuple(first.options.fine_tune_train)
    if settings is None or not pairs:
        return None
    if settings.processes != 1:  # its processes would be launched with the first stage's command line
        raise TrainingError(f"a preset's fine-tuning stage trains in one process, not {settings.processes}")
    budget = first.budget
    shared = {name: getattr(budget, name) for name in SHARED_BY_STAGES if getattr(budget, name) is not None}
    options = replace(
        first.options,
        out=str(first.out / FINE_TUNE_DIR),
        init_from=str(first.out / "best"),
        extra_train=pairs,
        fine_tune_train=(),
        snapshots=(),
        distill_from=None,
        max_train_pairs=None,
        resume=False,
        overwrite=False,
    )
    preset = replace(first.preset, train=replace(settings, **shared), fine_tune=None)
    return Stage(options, preset, name="fine-tune", budget=Budget(**shared))


def plan_stages(first: Stage) -> StagePlan:
    """``first``, then its fine-tuning stage when the preset has one (``fine_tune_stage``)."""
    second = fine_tune_stage(first)
    return StagePlan((first,) if second is None else (first, second))


def check_plan(plan: StagePlan) -> None:
    """Before any training: a new first stage must not end on a later stage's folder that it
    was not told to replace (one mistyped command must not lose a fine-tune)."""
    first = plan.stages[0]
    if not first.options.resume:
        for later in plan.stages[1:]:
            check_out_dir(later.out, overwrite=first.options.overwrite)


def _as_it_stands(stage: Stage, fresh: bool) -> Stage:
    """A later stage as its folder holds it: resumed where it stopped, unless the stage before
    it has just trained (``fresh``); else new, replacing what an unfinished start left there."""
    if not fresh and resume_dir(stage.out) is not None:
        return replace(stage, options=replace(stage.options, resume=True, overwrite=False))
    leftover = bool(run_items(stage.out)) or (stage.out / RUN_FILE).exists()
    return replace(stage, options=replace(stage.options, resume=False, overwrite=leftover))


def run_stages(plan: StagePlan, train_stage: Callable[[Stage], int]) -> int:
    """Train each stage of ``plan`` in order with ``train_stage`` (which returns an exit code),
    stopping at the first that does not end with 0. A resumed first stage that has finished
    is done, unless its budget extends it; the stages after it then resume where they
    stopped, or start."""
    check_plan(plan)
    first, later = plan.stages[0], plan.stages[1:]
    fresh = True
    if later and first.options.resume and first.finished and not first.budget.extends:
        fresh = False
    else:
        code = train_stage(first)
        if code:
            return code
    for stage in later:
        code = train_stage(_as_it_stands(stage, fresh))
        if code:
            return code
        fresh = True
    return 0
