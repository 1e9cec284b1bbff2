"""Train an encoder-decoder Transformer for translation.

    python train.py                                           # the shipped en->it model (preset base)
    python train.py --preset tiny --out runs/tiny             # a smoke run
    python train.py --out runs/base --resume                  # continue the run in runs/base where it stopped
    python train.py --processes 2 --out runs/two              # data-parallel over 2 processes of 1 thread each
    torchrun --nproc_per_node=2 train.py --out runs/ddp       # the same, started by torchrun (or on 2 GPUs)

Output directory layout:
    OUT/epochs/epoch-NNN/     checkpoint after each epoch (+ train_state.pt for --resume)
    OUT/mid-epoch/            checkpoint within an epoch: at a stop, and every --save-every-minutes
    OUT/best/                 the checkpoint with the best validation chrF (this is what ships)
    OUT/snapshots/epoch-NNN/  small fp16 checkpoints after chosen epochs (copied into best/snapshots/)
    OUT/tensorboard/          TensorBoard scalars
    OUT/history.json          one record per evaluation
    OUT/run.json              the flags the run was started with (what --resume goes on with)

Ctrl-C (or SIGTERM) stops every process after the step in progress, saves, and ends with
one line that says how to continue (exit code 130, or 143 for SIGTERM).

The loop itself lives in ``transformer.training.trainer`` and what it shows in
``transformer.training.progress``; this file parses arguments and turns errors into exit code 2.
"""

from __future__ import annotations

import signal
import sys

if __name__ == "__main__":  # until main() takes over, a stop ends as quietly as one later on
    for _signal in (signal.SIGINT, signal.SIGTERM):
        signal.signal(_signal, lambda signum, frame: sys.exit(128 + signum))

import argparse
import contextlib
import json
import os
import re
import shlex
import time
import traceback
from dataclasses import replace
from pathlib import Path

import torch
import torch.distributed
from tqdm import tqdm

from transformer.core.checkpoint import CheckpointError
from transformer.cli import (
    EXIT_USAGE, ArgumentParser, fail, load_translator_or_exit, one_line_warnings, whole_number,
)
from transformer.training.data import DataError
from transformer.training.distill import DistillError, add_distilled, check_teacher
from transformer.training.distributed import (
    DistributedError, Stopped, StopSignals, fit_processes, init_distributed, launch_processes, launched_by_torchrun,
    launched_by_train_py, leave_to_rank_0, rank,
)
from transformer.training.progress import ProgressPrinter, budget_line, output_line, resume_line, stop_line
from transformer.core.tokenizer import SPECIAL_TOKENS, SYNTHETIC_TAG, VocabularyError, min_vocab_size
from transformer.training.trainer import (
    DEFAULT_SNAPSHOTS, Trainer, TrainingError, TrainingStopped, TrainingWarning, build_fresh, check_out_dir,
    clear_run, load_run_data, parse_snapshots, read_run_record, resume_dir, run_items, run_tags_synthetic,
    write_run_record,
)
from transformer.cli.flags import add_field_flags, apply_flags, field_flags, value_of
from transformer.core.config import TransformerConfig
from transformer.training.presets import PRESETS, Preset, TrainSettings
from transformer.cli.modelcard import trainer_card

DATA = Path(__file__).resolve().parent / "data"
DEFAULT_DATASET = str(DATA / "tatoeba-en-it")
# back-translated pairs for the default corpus (data/tatoeba-en-it-bt/README.md), added to
# its training split unless --extra-train says otherwise
DEFAULT_EXTRA_TRAIN = str(DATA / "tatoeba-en-it-bt")


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Show '(default: X)' only for real defaults; options a preset fills in say so
    in their help instead of printing '(default: None)'."""

    def _get_help_string(self, action):
        if action.default is None or isinstance(action, argparse._StoreTrueAction):
            return action.help
        return super()._get_help_string(action)


def _snapshots(text: str) -> tuple[int, ...]:
    try:
        return parse_snapshots(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _repo_id(text: str) -> str:
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", text):
        raise argparse.ArgumentTypeError(f"expected a hub repo id like 'owner/name', got {text!r}")
    return text


pos_int = whole_number(1)


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="python train.py", description="Train a from-scratch Transformer translation model.",
                       formatter_class=HelpFormatter)
    for add in (_data_and_output_flags, _model_and_schedule_flags, _run_and_process_flags):
        add(p)
    return p


def _data_and_output_flags(p: ArgumentParser) -> None:
    p.add_argument("--preset", choices=sorted(PRESETS), default="base",
                   help="starting settings: " + "; ".join(f"'{name}' is {preset.description}"
                                                   for name, preset in sorted(PRESETS.items())))
    p.add_argument("--dataset", default=DEFAULT_DATASET,
                   help="hub dataset id, or a local directory with train.jsonl (validation.jsonl, test.jsonl) "
                        "or one .jsonl file, in the OPUS Books schema")
    p.add_argument("--dataset-config", default=None,
                   help="hub dataset config (default for a hub id: '<src>-<tgt>', e.g. en-it)")
    p.add_argument("--extra-train", nargs="*", metavar="PATH", default=None,
                   help="more training pairs: local JSONL folders or files (their train split only; validation "
                        "and test always come from --dataset). Pairs whose 'origin' starts with 'bt' are synthetic. "
                        f"(default: {Path(DEFAULT_EXTRA_TRAIN).relative_to(DATA.parent)} with the default "
                        "--dataset and --src/--tgt, none otherwise; give no PATH for none)")
    p.add_argument("--src", default="en", help="source language code in the 'translation' field")
    p.add_argument("--tgt", default="it", help="target language code in the 'translation' field")
    p.add_argument("--out", default="runs/base", help="output directory for checkpoints and logs")
    again = p.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="continue the run in --out where it stopped (its last epoch or mid-epoch checkpoint), "
                            "with the run's own settings and process count; --epochs, --max-minutes and "
                            "--save-every-minutes, when given, extend it and set a new budget")
    again.add_argument("--overwrite", action="store_true",
                       help="start a new run in an --out that holds one, replacing it (without this or --resume, "
                            "such an --out is refused)")


# the flags that set a preset's fields, made from the dataclasses' metadata (transformer.cli.flags)
PRESET_FLAGS = [*field_flags(TransformerConfig, ("model",)), *field_flags(Preset), *field_flags(TrainSettings, ("train",))]
# what --resume may change: it extends the run and sets a new budget
EXTENDS_RUN = {"epochs", "max_minutes", "save_every_minutes"}


def _preset_note(flag) -> str:
    """'(preset: base 36, real-only 31, tiny 2)' for one flag, read from every preset."""
    return "(preset: " + ", ".join(f"{name} {_shown(value_of(p, flag))}" for name, p in sorted(PRESETS.items())) + ")"


def _model_and_schedule_flags(p: ArgumentParser) -> None:
    add_field_flags(p, PRESET_FLAGS, _preset_note)
    p.add_argument("--storage-dtype", choices=["float32", "bfloat16", "float16"], default="float16",
                   help="dtype of the weights written to disk: float16 halves the files and scores the same as "
                        "float32 on test (the model always runs in float32; --resume keeps float32 weights)")


def _run_and_process_flags(p: ArgumentParser) -> None:
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"],
                   help="training device (auto picks cuda, then mps, then cpu; under torchrun each "
                        "process takes the GPU of its LOCAL_RANK)")
    p.add_argument("--distill-from", metavar="CHECKPOINT",
                   help="sequence-level knowledge distillation: this checkpoint (a directory or hub id) translates "
                        "the training sources with beam search, and every translation that differs from its "
                        "reference is added as an extra training pair (rank 0 decodes, before the time budget starts)")
    p.add_argument("--distill-beam", type=pos_int, default=4, help="beam size of the --distill-from teacher")
    p.add_argument("--max-train-pairs", type=pos_int, help="use only the first N training pairs (for quick trials)")
    p.add_argument("--val-limit", type=pos_int, default=1000, help="validation pairs scored with BLEU/chrF each epoch")
    p.add_argument("--keep-epochs", type=pos_int, default=6, help="epoch checkpoints kept on disk")
    p.add_argument("--snapshots", type=_snapshots, default=",".join(map(str, DEFAULT_SNAPSHOTS)), metavar="EPOCHS",
                   help="epochs after which a small fp16 snapshot is kept (plus the final epoch), "
                        "e.g. 1,2,4,8; 'none' keeps none")
    p.add_argument("--push-to-hub", type=_repo_id, metavar="OWNER/NAME",
                   help="after training, upload the best checkpoint folder to this hub model repo")
    p.add_argument("--threads", type=pos_int, help="torch CPU threads (default: torch's choice; with several "
                   "processes, the CPU cores shared out among them; --resume takes the run's own unless given)")


def parse_args(argv=None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def pick_device(name: str) -> str:
    mps = getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "mps" if mps else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise TrainingError("--device cuda asked for, but no CUDA device is available")
    if name == "mps" and not mps:
        raise TrainingError("--device mps asked for, but MPS is not available")
    return name


def preset_from_args(args) -> Preset:
    """The chosen preset with every flag that was given applied on top."""
    return apply_flags(PRESETS[args.preset], PRESET_FLAGS, args)


def extra_train(args) -> tuple[str, ...]:
    """The --extra-train corpora; by default the back-translated pairs that belong to the
    default corpus, when the run uses that corpus in its own direction."""
    if args.extra_train is not None:
        return tuple(args.extra_train)
    own = Path(args.dataset).resolve() == Path(DEFAULT_DATASET) and (args.src, args.tgt) == ("en", "it")
    return (DEFAULT_EXTRA_TRAIN,) if own else ()


def run_flags(args) -> dict:
    """The flags that make a run what it is, as in effect (a preset's value where none was
    given): run.json keeps them, and --resume goes on with them."""
    p = preset_from_args(args)
    return {"preset": args.preset, "dataset": args.dataset, "dataset_config": args.dataset_config,
            "extra_train": list(extra_train(args)), "src": args.src, "tgt": args.tgt,
            "max_train_pairs": args.max_train_pairs, "distill_from": args.distill_from,
            "distill_beam": args.distill_beam, "storage_dtype": args.storage_dtype, "val_limit": args.val_limit,
            "snapshots": list(args.snapshots), "threads": args.threads,
            **{flag.dest: value_of(p, flag) for flag in PRESET_FLAGS if flag.dest not in EXTENDS_RUN}}


# run.json keys of runs recorded when these flags were --no-bf16 and --separate-vocab (negated now)
NEGATED_RUN_KEYS = {"no_bf16": "bf16", "separate_vocab": "joint_vocab"}


def _shown(value) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value)) or "none"
    return "none" if value is None else str(value)


def take_run_flags(args, argv) -> None:
    """For --resume: set ``args`` to the run's own flags (run.json). A flag given now with
    another value than the run's is refused in one line (``TrainingError``), except
    --threads: a run resumes with its own unless told otherwise (the same threads give the
    very same numbers; others only change the speed and the last bits)."""
    recorded = {NEGATED_RUN_KEYS.get(name, name): (not value if name in NEGATED_RUN_KEYS else value)
                for name, value in read_run_record(args.out).items()}
    strict = build_parser()
    for action in strict._actions:  # parsed again without defaults, only what was typed is left
        action.default = argparse.SUPPRESS
    given, now = vars(strict.parse_args(argv)), run_flags(args)
    recorded = {name: value for name, value in recorded.items() if not (name == "threads" and name in given)}
    for name in sorted(given.keys() & recorded.keys()):
        if json.loads(json.dumps(now.get(name))) != recorded[name]:
            flag = "--" + name.replace("_", "-")
            raise TrainingError(f"{flag} {_shown(now.get(name))}: {args.out} was trained with {flag} "
                                f"{_shown(recorded[name])}; --resume goes on with the run's own (leave the flag out)")
    for name, value in recorded.items():
        setattr(args, name, tuple(value) if name in ("extra_train", "snapshots") else value)


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


def check_before_loading(args, preset: Preset) -> str | None:
    """What can be checked before the data loads: the vocabulary size against the
    tokenizer's special tokens, and the --distill-from teacher (it exists, loads, and
    translates this run's direction). Returns the teacher's local folder (a hub id is
    downloaded here), or None without --distill-from."""
    extra = [SYNTHETIC_TAG] if preset.tag_synthetic else []
    specials, least = SPECIAL_TOKENS + extra, min_vocab_size(extra)
    if not args.resume and preset.vocab_size < least:
        raise TrainingError(f"--vocab-size {preset.vocab_size} is too small: the {len(specials)} special tokens "
                            f"({' '.join(specials)}) and one character need {least}, and every distinct "
                            f"character of the corpus one id more")
    if not args.distill_from:
        return None
    teacher = load_translator_or_exit(args.distill_from, flag="--distill-from")
    try:
        check_teacher(teacher, args.src, args.tgt)
    except DistillError as exc:
        raise DistillError(f"--distill-from: {exc}") from None
    return str(teacher.directory)


def distill(data, args, dist, teacher: str) -> None:
    """``add_distilled`` with a progress bar and a summary line (main rank); ``teacher``
    is the --distill-from checkpoint's local folder."""
    bar = tqdm(total=len(data.train), desc=f"distilling (beam {args.distill_beam})", unit="sentence",
               disable=not dist.is_main, mininterval=0.5 if sys.stderr.isatty() else 10)
    n_train, t0 = len(data.train), time.monotonic()
    added = add_distilled(data, teacher, args.distill_beam, args.src, args.tgt, dist=dist,
                          progress=lambda done, total: bar.update(done - bar.n))
    bar.close()
    if dist.is_main:
        print(f"distillation: {added} of {n_train} teacher translations differ from their reference and were "
              f"added as training pairs ({(time.monotonic() - t0) / 60:.1f} minutes)", file=sys.stderr)


def load(args, preset: Preset, dist) -> tuple:
    """The checks that need no data, then the data (and the distilled pairs): (data, the
    --extra-train corpora, whether synthetic sources are tagged)."""
    if dist.is_main:
        check_out_dir(args.out, args.resume, args.overwrite)
    # rank 0 checks the teacher (and only it decodes with it)
    teacher = check_before_loading(args, preset) if dist.is_main else args.distill_from
    extra = extra_train(args)
    check_paths_exist(extra)
    tags = run_tags_synthetic(args.out) if args.resume else preset.tag_synthetic
    if dist.is_main and not Path(args.dataset).expanduser().exists():
        # the hub's own retries can take half a minute when it cannot be reached
        print(f"data: looking up {args.dataset} on the hub", file=sys.stderr)
    data = load_run_data(args.dataset, args.src, args.tgt, config=args.dataset_config, seed=preset.train.seed,
                         max_train_pairs=args.max_train_pairs, dist=dist, extra_train=extra,
                         tag=SYNTHETIC_TAG if tags else None)
    if args.distill_from:
        distill(data, args, dist, teacher)
    return data, extra, tags


def make_trainer(args, argv, data, preset: Preset, device: str, dist, stop: StopSignals) -> Trainer:
    options = dict(device=device, val_limit=args.val_limit, keep_epochs=args.keep_epochs, snapshots=args.snapshots,
                   command=command_line(argv), dist=dist, stop=stop, model_card=trainer_card)
    if args.resume:
        # only --epochs / --max-minutes / --save-every-minutes given now change the run's own (0 / None keep them)
        requested = replace(preset.train, epochs=args.epochs or 0, max_minutes=args.max_minutes,
                            save_every_minutes=args.save_every_minutes or 0)
        return Trainer.resume(args.out, data, requested, **options)
    model, src_tok, tgt_tok = build_fresh(preset, data, args.src, args.tgt, args.storage_dtype, seed=preset.train.seed,
                                          dist=dist)
    return Trainer(model, src_tok, tgt_tok, data, preset.train, args.out, **options)


def announce(trainer: Trainer, args, data, extra, tags: bool) -> None:
    """The start-up lines (main rank): what resumes, the data, the model, where it all goes,
    when the budget ends the run and when the run will end; then the progress printer.
    A new run first clears what --overwrite replaces, and records its flags."""
    out, cfg, s = Path(args.out), trainer.cfg, trainer.settings
    replaced = bool(run_items(out))
    if args.resume:
        print(resume_line(trainer, resume_dir(out)), file=sys.stderr)
    else:
        clear_run(out)
        write_run_record(out, {**run_flags(args), "processes": s.processes})
    tagged = tags and any(src.startswith(f"{SYNTHETIC_TAG} ") for src, _ in reversed(data.train))
    print(f"data: {len(data.train)} train / {len(data.validation)} validation pairs from {data.source}"
          + "".join(f" + {path}" for path in extra) + (" (synthetic sources tagged)" if tagged else ""),
          file=sys.stderr)
    print(f"model: {trainer.n_params:,} parameters; vocab {cfg.src_vocab_size}/{cfg.tgt_vocab_size}; "
          f"device {trainer.device} ({'bf16 autocast' if s.bf16 else 'float32'}); "
          f"{trainer.steps_per_epoch} steps/epoch x {s.epochs} epochs"
          + (f" on each of {trainer.dist.world_size} processes" if trainer.dist.enabled else ""), file=sys.stderr)
    for line in (output_line(out, resume_command(out), args.resume, replaced), budget_line(trainer)):
        if line:
            print(line, file=sys.stderr)
    ProgressPrinter(trainer, out, sys.stderr)


def run(args, argv, stop: StopSignals) -> int:
    if args.threads:
        torch.set_num_threads(args.threads)
    preset = preset_from_args(args)
    device = pick_device(args.device)
    dist = init_distributed(device)
    try:
        data, extra, tags = load(args, preset, dist)
        trainer = make_trainer(args, argv, data, preset, device, dist, stop)
        if dist.is_main:
            announce(trainer, args, data, extra, tags)
        result = trainer.fit()
    finally:
        dist.close()
    with stop.deferred():  # the run is over: a signal now does not undo its report
        return report(result, args) if dist.is_main else 0


def report(result, args) -> int:
    """The last line, on stdout (JSON), after pushing best/ to the hub when asked."""
    summary = {"best_chrf": result.best_chrf, "minutes": result.minutes, "best": str(result.best_dir)}
    if args.push_to_hub:
        try:
            from transformer.core.hub import push_checkpoint

            url = push_checkpoint(result.best_dir, args.push_to_hub, private=False, token=None)
        except Exception as exc:  # HubError, CheckpointError, auth, network...: all end the same way
            print(json.dumps(summary))
            fail(f"--push-to-hub {args.push_to_hub} failed ({type(exc).__name__}: {exc}); "
                 f"the checkpoint is kept at {result.best_dir}")
        print(f"pushed {result.best_dir} to {url}", file=sys.stderr)
        summary["hub"] = str(url)
    print(json.dumps(summary))
    return 0


def check_paths_exist(extra: tuple[str, ...]) -> None:
    for path in extra:
        if not Path(path).exists():
            raise DataError(f"--extra-train {path}: no such file or directory")


def check_before_launch(args) -> None:
    """The checks ``run`` makes before any slow work, made once in the launching process
    so that bad input gets one line instead of one per training process."""
    check_out_dir(args.out, args.resume, args.overwrite)
    check_before_loading(args, preset_from_args(args))
    check_paths_exist(extra_train(args))


def plan_processes(args) -> tuple[int, list[str]]:
    """The processes this run trains on (--processes, else the preset's, fitted to the
    device by ``fit_processes``), and the flags the processes need on top of the command
    line: a larger batch that fitting needs, said in one line (and set in ``args`` for a
    run in this process)."""
    preset = preset_from_args(args)
    wanted = args.processes or preset.train.processes
    device = pick_device(args.device)
    n_devices = torch.cuda.device_count() if device == "cuda" else 1  # a CPU's n is not used
    n, batch_tokens = fit_processes(wanted, device, n_devices, preset.train.batch_tokens)
    if n != wanted:
        print(f"{device}: {n} device(s) for {wanted} processes; training {n} process(es) of {batch_tokens} "
              f"batch tokens, the same tokens per step", file=sys.stderr)
        args.batch_tokens = batch_tokens
    args.processes = n
    return n, ["--batch-tokens", str(batch_tokens)] if n != wanted else []


def start(args, argv, stop: StopSignals) -> int:
    """This process's part: launch the training processes, or be one."""
    if args.resume:
        take_run_flags(args, argv)
    if not launched_by_torchrun():
        processes, extra_args = plan_processes(args)
        if processes > 1:
            check_before_launch(args)
            script_args = [*(sys.argv[1:] if argv is None else argv), *extra_args]  # the last of a flag wins
            return launch_processes(__file__, script_args, processes, args.threads)
    return run(args, argv, stop)


def main(argv=None) -> int:
    args = parse_args(argv)
    stop = StopSignals()
    try:
        # only rank 0 stops at once on a signal; the others note it, and the next step's
        # all-reduce stops them all together (or their connection to rank 0 breaks)
        with stop.installed(), stop.deferred() if rank() else contextlib.nullcontext(), \
                one_line_warnings(TrainingWarning):
            return start(args, argv, stop)
    except Stopped as exc:  # before anything was saved (rank 0, or the launching process)
        print(f"stopped before training resumed; {args.out} is as it was; continue with: {resume_command(args.out)}"
              if args.resume else "stopped before training started; nothing was saved", file=sys.stderr)
        return 128 + exc.signum
    except TrainingStopped as exc:
        if rank() == 0:
            print(stop_line(exc, Path(args.out), resume_command(args.out)), file=sys.stderr)
        return 128 + exc.signum
    except VocabularyError as exc:
        leave_to_rank_0(EXIT_USAGE)
        if exc.n_characters is None:
            fail(f"--vocab-size: {exc}")
        fail(f"--vocab-size {exc.vocab_size} is too small for this corpus: its {exc.n_specials} special tokens and "
             f"{exc.n_characters} distinct characters need at least {exc.needed}")
    except (TrainingError, DataError, CheckpointError, DistillError, DistributedError) as exc:
        leave_to_rank_0(EXIT_USAGE)
        fail(str(exc))
    except Exception as exc:
        if rank() == 0:
            raise
        if stop.signum:  # rank 0 stopped on the same signal, which broke this rank's connection
            return 128 + stop.signum
        if not isinstance(exc, torch.distributed.DistError):  # a peer that failed breaks it too: rank 0 says why
            traceback.print_exc()  # into this rank's own output
        leave_to_rank_0(1)


if __name__ == "__main__":
    sys.exit(main())
