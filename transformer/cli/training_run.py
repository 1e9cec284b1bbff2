"""``python train.py``: its flags, made from ``RunOptions`` and the preset's dataclasses
(``transformer.cli.flags``), and the run they start: the checks, the data, the trainer,
the start-up lines and the last line. ``train.py`` calls :func:`start` and turns errors
into exit codes; the processes are planned and launched by ``transformer.training.distributed``,
and what a run shows comes from ``transformer.training.progress``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from dataclasses import fields, replace
from pathlib import Path

import torch
from tqdm import tqdm

from transformer.cli import ArgumentParser, fail, load_translator_or_exit
from transformer.cli.flags import add_field_flags, add_option_flags, apply_flags, field_flags, value_of
from transformer.cli.modelcard import trainer_card
from transformer.core.config import TransformerConfig
from transformer.core.tokenizer import SPECIAL_TOKENS, SYNTHETIC_TAG, min_vocab_size
from transformer.training import progress
from transformer.training.data import DataError
from transformer.training.distill import DistillError, add_distilled, check_teacher
from transformer.training.distributed import (
    StopSignals,
    init_distributed,
    launch_processes,
    launched_by_torchrun,
    launched_by_train_py,
    pick_device,
    plan_processes,
    rank,
)
from transformer.cli.run_options import (
    DEFAULT_DATASET,
    DEFAULT_EXTRA_TRAIN,
    DEFAULT_FINE_TUNE_TRAIN,
    PRESET_EXTRA_TRAIN,
    RECORDED,
    RunOptions,
)
from transformer.training.loop import Trainer
from transformer.training.errors import TrainingError
from transformer.training.presets import PRESETS, Preset, TrainSettings
from transformer.training.progress import RunStart
from transformer.training.stages import Budget, Stage, StagePlan, plan_stages, run_stages
from transformer.training.run_folder import check_out_dir, clear_run, read_run_record, run_items, write_run_record
from transformer.training.setup import (
    build_fresh,
    build_from_checkpoint,
    check_fine_tune,
    load_run_data,
    run_tags_synthetic,
)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Show '(default: X)' only for real defaults; options a preset fills in say so
    in their help instead of printing '(default: None)'."""

    def _get_help_string(self, action):
        if action.default is None or isinstance(action, argparse._StoreTrueAction):
            return action.help
        if isinstance(action.default, (list, tuple)):  # as it is typed: --flag A B
            return f"{action.help} (default: {' '.join(map(str, action.default))})"
        return super()._get_help_string(action)


# the flags that set a preset's fields, made from the dataclasses' metadata (transformer.cli.flags)
PRESET_FLAGS = [
    *field_flags(TransformerConfig, ("model",)),
    *field_flags(Preset),
    *field_flags(TrainSettings, ("train",)),
]
# what --resume may change: it extends the run and sets a new budget
EXTENDS_RUN = {"epochs", "max_minutes", "save_every_minutes"}
# what a flag's value does to the explorer, said beside its help
VIEWER_ADVICE = {"heads": "8 or fewer keeps the viewer readable"}


def build_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="python train.py",
        description="Train a from-scratch Transformer translation model.",
        formatter_class=HelpFormatter,
    )
    add_option_flags(p, RunOptions, "data")  # what the run reads and where it writes
    add_field_flags(p, PRESET_FLAGS, _preset_note)
    add_option_flags(p, RunOptions)
    return p


def _preset_note(flag) -> str:
    """'(preset: base 36, real-only 31, tiny 2)' for one flag, read from every preset, after
    what its value does to the viewer when that matters."""
    presets = (
        "(preset: " + ", ".join(f"{name} {_shown(value_of(p, flag))}" for name, p in sorted(PRESETS.items())) + ")"
    )
    advice = VIEWER_ADVICE.get(flag.dest)
    return f"({advice}) {presets}" if advice else presets


def parse_args(argv=None) -> argparse.Namespace:
    """The flags of ``argv`` (None: ``sys.argv``), defaults filled in; ``args.given`` names the
    flags that were typed: --resume compares them with the run's own, and --init-from
    refuses the shape's."""
    args = build_parser().parse_args(argv)
    args.given = frozenset(given_flags(argv))
    return args


def preset_from_args(args) -> Preset:
    """The chosen preset with every flag that was given applied on top."""
    return apply_flags(PRESETS[args.preset], PRESET_FLAGS, args)


def _own_corpus(args) -> bool:
    """The run trains on the default corpus in its own direction (so its further pairs apply)."""
    return Path(args.dataset).resolve() == Path(DEFAULT_DATASET) and (args.src, args.tgt) == ("en", "it")


def extra_train(args) -> tuple[str, ...]:
    """The --extra-train corpora; by default the further pairs that belong to the default
    corpus, when the run uses that corpus in its own direction."""
    if args.extra_train is not None:
        return tuple(args.extra_train)
    return PRESET_EXTRA_TRAIN.get(args.preset, DEFAULT_EXTRA_TRAIN) if _own_corpus(args) else ()


def fine_tune_train(args) -> tuple[str, ...]:
    """The --fine-tune-train corpora of the preset's second stage: by default the long joined
    pairs of the default corpus, as --extra-train's, except for a run that is itself a
    fine-tune (--init-from)."""
    if args.fine_tune_train is not None:
        return tuple(args.fine_tune_train)
    return DEFAULT_FINE_TUNE_TRAIN if _own_corpus(args) and not args.init_from else ()


def options_of(args) -> RunOptions:
    """``RunOptions`` as the flags give them, with the further and fine-tuning pairs the run
    reads (``extra_train``, ``fine_tune_train``) in place of "the default"."""
    values = {f.name: getattr(args, f.name) for f in fields(RunOptions)}
    values.update(
        extra_train=extra_train(args),
        fine_tune_train=fine_tune_train(args),
        tag_origins=tuple(args.tag_origins),
        snapshots=tuple(args.snapshots),
    )
    return RunOptions(**values)


def stage_of(args) -> Stage:
    """The run the flags ask for, as the first stage of its plan; its budget is what
    --epochs, --max-minutes and --save-every-minutes say (what a --resume changes)."""
    budget = Budget(args.epochs, args.max_minutes, args.save_every_minutes)
    return Stage(options_of(args), preset_from_args(args), budget=budget)


def plan_of(args) -> StagePlan:
    """The stages the flags ask for (``transformer.training.stages.plan_stages``). The
    processes of a torchrun train the first stage only: the second trains in one process."""
    first = stage_of(args)
    return StagePlan((first,)) if launched_by_torchrun() else plan_stages(first)


def run_flags(stage: Stage) -> dict:
    """The flags that make a stage what it is (``RunOptions``' recorded fields and the
    preset's), as in effect: run.json keeps them, and --resume goes on with them."""
    options = stage.options
    return {
        **{name: _as_json(getattr(options, name)) for name in RECORDED},
        **{flag.dest: value_of(stage.preset, flag) for flag in PRESET_FLAGS if flag.dest not in EXTENDS_RUN},
    }


def _as_json(value):
    return list(value) if isinstance(value, tuple) else value


# where a --distill-from run keeps its teacher's translations (``distill.distill_pairs``' cache)
DISTILLED_FILE = "distilled.jsonl"
# run.json keys of runs recorded when these flags were --no-bf16 and --separate-vocab (negated now)
NEGATED_RUN_KEYS = {"no_bf16": "bf16", "separate_vocab": "joint_vocab"}


def _shown(value) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value)) or "none"
    return "none" if value is None else str(value)


def take_run_flags(args) -> None:
    """For --resume: set ``args`` to the run's own flags (run.json). A flag given now with
    another value than the run's is refused in one line (``TrainingError``), except
    --threads: a run resumes with its own unless told otherwise (the same threads give the
    very same numbers; others only change the speed and the last bits)."""
    recorded = {
        NEGATED_RUN_KEYS.get(name, name): (not value if name in NEGATED_RUN_KEYS else value)
        for name, value in read_run_record(args.out).items()
    }
    given, now = args.given, run_flags(stage_of(args))
    recorded = {name: value for name, value in recorded.items() if not (name == "threads" and name in given)}
    if recorded and "fine_tune_train" not in recorded:  # a run recorded before runs had a second stage
        recorded["fine_tune_train"] = []
    for name in sorted(given & recorded.keys()):
        if json.loads(json.dumps(now.get(name))) != recorded[name]:
            flag = "--" + name.replace("_", "-")
            raise TrainingError(
                f"{flag} {_shown(now.get(name))}: {args.out} was trained with {flag} "
                f"{_shown(recorded[name])}; --resume goes on with the run's own (leave the flag out)"
            )
    for name, value in recorded.items():
        tuples = ("extra_train", "fine_tune_train", "snapshots", "tag_origins")
        setattr(args, name, tuple(value) if name in tuples else value)


# what a checkpoint fixes for a run that starts from it (--init-from)
CHECKPOINT_FIXES = ("d_model", "heads", "d_ff", "layers", "dropout", "attn_dropout", "vocab_size", "joint_vocab")


def given_flags(argv) -> dict:
    """The flags typed on the command line (``argv``; None: ``sys.argv``), without defaults."""
    strict = build_parser()
    for action in strict._actions:
        action.default = argparse.SUPPRESS
    return vars(strict.parse_args(argv))


def refuse_shape_flags(args) -> None:
    """--init-from takes the checkpoint's shape, dropout and vocabularies: a flag that would
    set one of them is refused in one line rather than silently ignored."""
    clash = [name for name in CHECKPOINT_FIXES if name in args.given]
    if clash:
        flags = ", ".join("--" + name.replace("_", "-") for name in clash)
        raise TrainingError(f"{flags}: --init-from takes the checkpoint's shape, dropout and vocabularies")


def _launch_command() -> str:
    """``python train.py`` (also when train.py started the processes itself), or the torchrun
    line that started this process."""
    if launched_by_torchrun() and not launched_by_train_py():
        return f"torchrun --nproc_per_node={os.environ.get('LOCAL_WORLD_SIZE', os.environ['WORLD_SIZE'])} train.py"
    return "python train.py"


def command_line(argv) -> str:
    """The command that started this run, as its checkpoints record it."""
    return " ".join([_launch_command(), *(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))])


def resume_command(out) -> str:
    """The command that continues the run in ``out`` (under a torchrun that train.py did not
    start itself, that torchrun again: it decides the processes)."""
    return f"{_launch_command()} --out {shlex.quote(str(out))} --resume"


def check_before_loading(stage: Stage) -> str | None:
    """What can be checked before the data loads: the vocabulary size against the
    tokenizer's special tokens, the --init-from checkpoint (it exists and loads), and the
    --distill-from teacher (it exists, loads, and translates this run's direction). Returns
    the teacher's local folder (a hub id is downloaded here), or None without --distill-from."""
    args, preset = stage.options, stage.preset
    extra = [SYNTHETIC_TAG] if preset.tag_synthetic else []
    specials, least = SPECIAL_TOKENS + extra, min_vocab_size(extra)
    if not args.resume and not args.init_from and preset.vocab_size < least:
        raise TrainingError(
            f"--vocab-size {preset.vocab_size} is too small: the {len(specials)} special tokens "
            f"({' '.join(specials)}) and one character need {least}, and every distinct "
            f"character of the corpus one id more"
        )
    if args.init_from and not args.resume:
        start = load_translator_or_exit(args.init_from, flag="--init-from")
        try:
            check_fine_tune(start.model.cfg, start.src_tok, args.src, args.tgt, preset.tag_synthetic, start.directory)
        except TrainingError as exc:
            raise TrainingError(f"--init-from: {exc}") from None
    if not args.distill_from:
        return None
    teacher = load_translator_or_exit(args.distill_from, flag="--distill-from")
    try:
        check_teacher(teacher, args.src, args.tgt)
    except DistillError as exc:
        raise DistillError(f"--distill-from: {exc}") from None
    return str(teacher.directory)


def distill(data, args: RunOptions, dist, teacher: str) -> None:
    """``add_distilled`` with a progress bar and a summary line (main rank); ``teacher``
    is the --distill-from checkpoint's local folder. The translations are kept in
    OUT/distilled.jsonl as they are made, so a stop during the hours a big teacher can take
    loses at most one chunk, and --resume reads them back."""
    bar = tqdm(
        total=len(data.train),
        desc=f"distilling (beam {args.distill_beam})",
        unit="sentence",
        disable=not dist.is_main,
        mininterval=0.5 if sys.stderr.isatty() else 10,
    )
    n_train, t0, cache = len(data.train), time.monotonic(), Path(args.out) / DISTILLED_FILE
    added = add_distilled(
        data,
        teacher,
        args.distill_beam,
        args.src,
        args.tgt,
        dist=dist,
        progress=lambda done, total: bar.update(done - bar.n),
        cache=cache,
    )
    bar.close()
    if dist.is_main:
        print(
            f"distillation: {added} of {n_train} teacher translations differ from their reference and were "
            f"added as training pairs ({(time.monotonic() - t0) / 60:.1f} minutes; kept in {cache})",
            file=sys.stderr,
        )


def load(stage: Stage, dist) -> tuple:
    """The checks that need no data, then the data (and the distilled pairs): (data,
    whether synthetic sources are tagged)."""
    args, preset = stage.options, stage.preset
    if dist.is_main:
        check_out_dir(args.out, args.resume, args.overwrite)
    # rank 0 checks the teacher (and only it decodes with it)
    teacher = check_before_loading(stage) if dist.is_main else args.distill_from
    check_paths_exist(args.extra_train)
    tags = run_tags_synthetic(args.out) if args.resume else preset.tag_synthetic
    if dist.is_main and not Path(args.dataset).expanduser().exists():
        # the hub's own retries can take half a minute when it cannot be reached
        print(f"data: looking up {args.dataset} on the hub", file=sys.stderr)
    data = load_run_data(
        args.dataset,
        args.src,
        args.tgt,
        config=args.dataset_config,
        seed=preset.train.seed,
        max_train_pairs=args.max_train_pairs,
        dist=dist,
        extra_train=args.extra_train,
        tag=SYNTHETIC_TAG if tags else None,
        noise_seed=preset.train.seed if preset.noise_forward else None,
        tag_origins=args.tag_origins,
    )
    if args.distill_from:
        distill(data, args, dist, teacher)
    return data, tags


def make_trainer(stage: Stage, command: str, data, device: str, dist, stop: StopSignals, tags: bool) -> Trainer:
    """The stage's trainer: a new model (or the --init-from one), or the run it resumes."""
    args, preset, budget = stage.options, stage.preset, stage.budget
    options = dict(
        device=device,
        val_limit=args.val_limit,
        keep_epochs=args.keep_epochs,
        snapshots=args.snapshots,
        command=command,
        dist=dist,
        stop=stop,
        model_card=trainer_card,
    )
    if args.resume:
        # only the budget asked for now changes the run's own (0 / None keep them)
        requested = replace(
            preset.train,
            epochs=budget.epochs or 0,
            max_minutes=budget.max_minutes,
            save_every_minutes=budget.save_every_minutes or 0,
        )
        return Trainer.resume(args.out, data, requested, **options)
    if args.init_from:
        model, src_tok, tgt_tok, options["start"] = build_from_checkpoint(
            args.init_from, args.src, args.tgt, args.storage_dtype, tags_synthetic=tags
        )
    else:
        model, src_tok, tgt_tok = build_fresh(
            preset, data, args.src, args.tgt, args.storage_dtype, seed=preset.train.seed, dist=dist
        )
    return Trainer(model, src_tok, tgt_tok, data, preset.train, args.out, **options)


def announce(trainer: Trainer, stage: Stage, data, tags: bool) -> None:
    """A new run first clears what --overwrite replaces, and records its flags; then the
    start-up lines and the progress printer (``transformer.training.progress.announce``)."""
    out, resumed = stage.out, stage.options.resume
    replaced = bool(run_items(out))
    if not resumed:
        clear_run(out)
        write_run_record(out, {**run_flags(stage), "processes": trainer.settings.processes})
    facts = RunStart(out, resume_command(out), resumed, replaced, data, stage.options.extra_train, tags)
    progress.announce(trainer, facts, sys.stderr)


def run(stage: Stage, command: str, stop: StopSignals, last: bool) -> int:
    """Train ``stage`` in this process (one rank of it, under a launcher); ``command`` is
    what its checkpoints record, and the ``last`` stage is the one that pushes to the hub."""
    if stage.options.threads:
        torch.set_num_threads(stage.options.threads)
    device = pick_device(stage.options.device)
    dist = init_distributed(device)
    try:
        data, tags = load(stage, dist)
        trainer = make_trainer(stage, command, data, device, dist, stop, tags)
        if dist.is_main:
            announce(trainer, stage, data, tags)
        result = trainer.fit()
    finally:
        dist.close()
    with stop.deferred():  # the run is over: a signal now does not undo its report
        return report(result, stage.options.push_to_hub if last else None) if dist.is_main else 0


def report(result, push_to_hub: str | None) -> int:
    """The stage's last line, on stdout (JSON), after pushing best/ to the hub when asked
    (by the last stage: a first stage whose fine-tuning follows pushes nothing)."""
    summary = {"best_chrf": result.best_chrf, "minutes": result.minutes, "best": str(result.best_dir)}
    if push_to_hub:
        try:
            from transformer.core.hub import push_checkpoint

            url = push_checkpoint(result.best_dir, push_to_hub, private=False, token=None)
        except Exception as exc:  # HubError, CheckpointError, auth, network...: all end the same way
            print(json.dumps(summary))
            fail(
                f"--push-to-hub {push_to_hub} failed ({type(exc).__name__}: {exc}); "
                f"the checkpoint is kept at {result.best_dir}"
            )
        print(f"pushed {result.best_dir} to {url}", file=sys.stderr)
        summary["hub"] = str(url)
    print(json.dumps(summary))
    return 0


def check_paths_exist(extra: tuple[str, ...], flag: str = "--extra-train") -> None:
    for path in extra:
        if not Path(path).exists():
            raise DataError(f"{flag} {path}: no such file or directory")


def check_before_launch(stage: Stage) -> None:
    """The checks ``run`` makes before any slow work, made once in the launching process
    so that bad input gets one line instead of one per training process."""
    check_out_dir(stage.out, stage.options.resume, stage.options.overwrite)
    check_before_loading(stage)
    check_paths_exist(stage.options.extra_train)


def launch_plan(stage: Stage) -> tuple[Stage, list[str]]:
    """The processes ``stage`` trains on (--processes, else the preset's, fitted to the device
    by ``plan_processes``): the stage with that count and the batch that fitting needs (said in
    one line), and the flags the launched processes need on top of the command line."""
    settings = stage.preset.train
    plan = plan_processes(settings.processes, stage.options.device, settings.batch_tokens)
    if plan.note:
        print(plan.note, file=sys.stderr)
    settings = replace(settings, processes=plan.processes, batch_tokens=plan.batch_tokens)
    fitted = replace(stage, preset=replace(stage.preset, train=settings))
    return fitted, ["--batch-tokens", str(plan.batch_tokens)] if plan.note else []


def train_stage(stage: Stage, plan: StagePlan, argv, stop: StopSignals, script: str) -> int:
    """One stage of ``plan``, in this process or in the processes it launches (each runs
    ``script`` with this command line: they train the first stage)."""
    index = [s.name for s in plan.stages].index(stage.name)
    if index:
        line = f"stage {index + 1} of {len(plan.stages)} ({stage.name}): from {stage.options.init_from} in {stage.out}"
        print(line, file=sys.stderr)
    if not launched_by_torchrun():
        stage, extra_args = launch_plan(stage)
        if stage.preset.train.processes > 1:
            check_before_launch(stage)
            script_args = [*(sys.argv[1:] if argv is None else argv), *extra_args]  # the last of a flag wins
            return launch_processes(script, script_args, stage.preset.train.processes, stage.options.threads)
    return run(stage, command_line(argv), stop, last=stage.name == plan.last.name)


def start(args, argv, stop: StopSignals, script: str) -> int:
    """This process's part: the flags mapped onto a plan of stages (``plan_of``), which
    ``run_stages`` trains in order, each by ``train_stage``. ``--resume`` of a run whose
    first stage has finished goes on with the second (unless it extends the first with
    --epochs or --max-minutes)."""
    if args.resume:
        take_run_flags(args)
    elif args.init_from:
        refuse_shape_flags(args)
    plan = plan_of(args)
    if len(plan.stages) > 1:
        check_paths_exist(plan.stages[0].options.fine_tune_train, "--fine-tune-train")
    code = run_stages(plan, lambda stage: train_stage(stage, plan, argv, stop, script))
    if code == 0 and launched_by_torchrun() and not launched_by_train_py() and rank() == 0:
        if plan_stages(plan.stages[0]).stages[1:]:  # a torchrun of one's own trains the first stage only
            line = f"python train.py --out {shlex.quote(str(args.out))} --resume"
            print(f"the second, fine-tuning stage runs in one process: {line}", file=sys.stderr)
    return code
