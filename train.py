"""Train an encoder-decoder Transformer for translation.

    python train.py                                           # the shipped en->it model (preset base)
    python train.py --preset tiny --out runs/tiny             # a smoke run
    python train.py --out runs/base --resume                  # continue the last run in runs/base
    python train.py --processes 2 --out runs/two              # data-parallel over 2 processes of 1 thread each
    torchrun --nproc_per_node=2 train.py --out runs/ddp       # the same, started by torchrun (or on 2 GPUs)

Output directory layout:
    OUT/epochs/epoch-NNN/     checkpoint after each epoch (+ train_state.pt for --resume)
    OUT/best/                 the checkpoint with the best validation chrF (this is what ships)
    OUT/snapshots/epoch-NNN/  small fp16 checkpoints after chosen epochs (copied into best/snapshots/)
    OUT/tensorboard/          TensorBoard scalars
    OUT/history.json          one record per evaluation

The loop itself lives in ``transformer.trainer``; this file parses arguments, prints
progress, and turns errors into exit code 2.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import time
import traceback
from dataclasses import replace
from pathlib import Path

import torch
from tqdm import tqdm

from transformer.checkpoint import CheckpointError
from transformer.cli import (
    EXIT_USAGE, ArgumentParser, fail, fraction, integer, load_translator_or_exit, one_line_warnings, positive_number,
    whole_number,
)
from transformer.data import DataError
from transformer.distill import DistillError, add_distilled, check_teacher
from transformer.distributed import DistributedError, init_distributed, launched_by_torchrun
from transformer.tokenizer import SPECIAL_TOKENS, SYNTHETIC_TAG, VocabularyError, min_vocab_size
from transformer.trainer import (
    DEFAULT_SNAPSHOTS, Trainer, TrainingError, TrainingWarning, build_fresh, forecast, latest_epoch_dir, load_run_data,
    parse_snapshots, run_tags_synthetic,
)
from transformer.training import PRESETS, Preset

# how long a rank other than 0 waits before it exits after an error (``leave_to_rank_0``)
OTHER_RANKS_WAIT_SECONDS = 10
# set in the environment of the processes that train.py starts itself (``launch_processes``)
LAUNCHED_BY_TRAIN_PY = "TRAIN_PY_PROCESSES"
# steps timed (after the first) for the forecast printed before the first epoch ends
FORECAST_AFTER_STEPS = 20
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


def _preset_note(get) -> str:
    """'(preset: base 22, small-vocab 21, tiny 2)' for one field, read from every preset."""
    values = ", ".join(f"{name} {get(p)}" for name, p in sorted(PRESETS.items()))
    return f"(preset: {values})"


def _snapshots(text: str) -> tuple[int, ...]:
    try:
        return parse_snapshots(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _repo_id(text: str) -> str:
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", text):
        raise argparse.ArgumentTypeError(f"expected a hub repo id like 'owner/name', got {text!r}")
    return text


def parse_args(argv=None) -> argparse.Namespace:
    p = ArgumentParser(prog="python train.py", description="Train a from-scratch Transformer translation model.",
                       formatter_class=HelpFormatter)
    pos_int, pos_float = whole_number(1), positive_number
    tr, md = (lambda f: lambda p: getattr(p.train, f)), (lambda f: lambda p: getattr(p.model, f))
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
    p.add_argument("--resume", action="store_true",
                   help="continue from the last epoch checkpoint in --out, with the run's own settings; "
                        "--epochs and --max-minutes, when given, extend it and set a new budget")
    p.add_argument("--epochs", type=pos_int, help="number of epochs (sets the length of the LR schedule) "
                   + _preset_note(tr("epochs")))
    p.add_argument("--batch-tokens", type=pos_int, help="padded source+target tokens per batch (per process) "
                   + _preset_note(tr("batch_tokens")))
    p.add_argument("--lr", type=pos_float, help="peak learning rate after warmup " + _preset_note(tr("lr")))
    p.add_argument("--warmup-steps", type=pos_int, help="linear warmup steps " + _preset_note(tr("warmup_steps")))
    p.add_argument("--d-model", type=pos_int, help="model width d_model " + _preset_note(md("d_model")))
    p.add_argument("--layers", type=pos_int, help="encoder layers = decoder layers "
                   + _preset_note(md("n_encoder_layers")))
    p.add_argument("--heads", type=pos_int, help="attention heads h (8 or fewer keeps the viewer readable) "
                   + _preset_note(md("h")))
    p.add_argument("--d-ff", type=pos_int, help="feed-forward inner width d_ff " + _preset_note(md("d_ff")))
    p.add_argument("--dropout", type=fraction, help="dropout on residuals, embeddings and the FFN "
                   + _preset_note(md("dropout")))
    p.add_argument("--attn-dropout", type=fraction, help="dropout on attention weights (after they are recorded) "
                   + _preset_note(md("attn_dropout")))
    p.add_argument("--vocab-size", type=pos_int, help="BPE vocabulary size (per tokenizer) "
                   + _preset_note(lambda p: p.vocab_size))
    p.add_argument("--split-punctuation", action=argparse.BooleanOptionalAction, default=None,
                   help="the tokenizer cuts punctuation off words ('car.' is 'car' + '.') "
                        + _preset_note(lambda p: p.split_punctuation))
    p.add_argument("--tag-synthetic", action=argparse.BooleanOptionalAction, default=None,
                   help="start every synthetic (back-translated) source with a [BT] tag token "
                        + _preset_note(lambda p: p.tag_synthetic))
    p.add_argument("--separate-vocab", action="store_true",
                   help="one tokenizer per language instead of a joint one (disables full weight tying)")
    p.add_argument("--label-smoothing", type=fraction, help="label smoothing epsilon "
                   + _preset_note(tr("label_smoothing")))
    p.add_argument("--word-dropout", type=fraction, help="probability that a source token is replaced by the "
                   "unknown token during training " + _preset_note(tr("word_dropout")))
    p.add_argument("--no-bf16", action="store_true", help="train in float32 instead of bf16 autocast (bf16 is used only where the "
                   "hardware runs it natively; elsewhere the run falls back to float32 with a warning) "
                   + _preset_note(lambda p: "bf16" if p.train.bf16 else "float32"))
    p.add_argument("--storage-dtype", choices=["float32", "bfloat16", "float16"], default="float16",
                   help="dtype of the weights written to disk: float16 halves the files and scores the same as "
                        "float32 on test (the model always runs in float32; --resume keeps float32 weights)")
    p.add_argument("--average-last", type=whole_number(0),
                   help="average the last N epoch checkpoints at the end (0 or 1: off) "
                        + _preset_note(tr("average_last")))
    p.add_argument("--seed", type=integer, default=0, help="seed for splits, shuffling and initialisation")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"],
                   help="training device (auto picks cuda, then mps, then cpu; under torchrun each "
                        "process takes the GPU of its LOCAL_RANK)")
    p.add_argument("--max-minutes", type=pos_float,
                   help="wall-clock budget for the whole run: training stops cleanly in time for the last "
                        "evaluation and the checkpoint average (no budget if unset) "
                        + _preset_note(lambda p: p.train.max_minutes or "none"))
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
                   "processes, the CPU cores shared out among them)")
    p.add_argument("--processes", type=pos_int,
                   help="data-parallel training processes that train.py starts itself, as torchrun "
                        "--nproc_per_node would: each trains on its own share of every epoch with --batch-tokens "
                        "per step, so one optimiser step sees N times the tokens. On a CPU, 2 processes of 1 "
                        "thread each make epochs faster than 1 process of 2 threads (docs/experiments.md). "
                        "With fewer GPUs than N, one process per GPU with --batch-tokens scaled up to the same "
                        "tokens per step " + _preset_note(tr("processes")))
    return p.parse_args(argv)


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
    preset = PRESETS[args.preset]
    model = {k: v for k, v in {"d_model": args.d_model, "h": args.heads, "d_ff": args.d_ff, "dropout": args.dropout,
                               "attn_dropout": args.attn_dropout, "n_encoder_layers": args.layers,
                               "n_decoder_layers": args.layers}.items() if v is not None}
    train = {k: v for k, v in {"epochs": args.epochs, "batch_tokens": args.batch_tokens, "lr": args.lr,
                               "warmup_steps": args.warmup_steps, "label_smoothing": args.label_smoothing,
                               "word_dropout": args.word_dropout,
                               "max_minutes": args.max_minutes, "average_last": args.average_last}.items()
             if v is not None}
    if args.no_bf16:
        train["bf16"] = False
    return replace(preset, model=replace(preset.model, **model), train=replace(preset.train, **train, seed=args.seed),
                   vocab_size=args.vocab_size or preset.vocab_size,
                   joint_vocab=preset.joint_vocab and not args.separate_vocab,
                   **{k: v for k, v in {"split_punctuation": args.split_punctuation,
                                        "tag_synthetic": args.tag_synthetic}.items() if v is not None})


def extra_train(args) -> tuple[str, ...]:
    """The --extra-train corpora; by default the back-translated pairs that belong to the
    default corpus, when the run uses that corpus in its own direction."""
    if args.extra_train is not None:
        return tuple(args.extra_train)
    own = Path(args.dataset).resolve() == Path(DEFAULT_DATASET) and (args.src, args.tgt) == ("en", "it")
    return (DEFAULT_EXTRA_TRAIN,) if own else ()


def check_out_dir(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".write-test-{os.getpid()}"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise TrainingError(f"{out}: output directory is not writable ({exc.strerror or exc})") from None


def command_line(argv) -> str:
    """The command that started this run, as its checkpoints record it: ``python train.py``
    (also when train.py started the processes itself), or the torchrun line that did."""
    args = " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    if launched_by_torchrun() and not os.environ.get(LAUNCHED_BY_TRAIN_PY):
        nproc = os.environ.get("LOCAL_WORLD_SIZE", os.environ["WORLD_SIZE"])
        return f"torchrun --nproc_per_node={nproc} train.py {args}"
    return f"python train.py {args}"


def progress_printer(trainer: Trainer, out: Path) -> None:
    """Progress bars, one JSON line per evaluation, and TensorBoard scalars (main rank)."""
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(out / "tensorboard"))
    bar = {}
    timing = {"epochs": 0, "seconds": 0.0, "start": None}

    def epoch_start(t, epoch, n_batches):
        timing.setdefault("first_elapsed", t.clock.elapsed)
        if timing["epochs"]:  # here rather than after the evaluation: an epoch the budget cut ends the run
            print_forecast(t, timing["seconds"] / timing["epochs"], f"from {timing['epochs']} epoch(s) here")
        bar["bar"] = tqdm(total=n_batches, desc=f"epoch {epoch}/{t.settings.epochs}", unit="batch",
                          dynamic_ncols=True, mininterval=0.5 if sys.stderr.isatty() else 10)

    def batch_end(t, loss, grad_norm, lr, tokens_per_s):
        if timing["start"] is None:  # the first step warms up: time from its end
            timing["start"] = (time.monotonic(), t.step)
        elif t.step - timing["start"][1] == FORECAST_AFTER_STEPS and not timing["epochs"]:
            per_step = (time.monotonic() - timing["start"][0]) / FORECAST_AFTER_STEPS
            print_forecast(t, per_step * t.steps_per_epoch, "from the first steps; evaluation not included")
        bar["bar"].update(1)
        bar["bar"].set_postfix(loss=f"{loss:.3f}", lr=f"{lr:.2e}", tok_s=f"{tokens_per_s:,.0f}", refresh=False)
        if t.step % 20 == 0:
            for name, value in (("loss", loss), ("lr", lr), ("grad_norm", grad_norm), ("tokens_per_s", tokens_per_s)):
                writer.add_scalar(f"train/{name}", value, t.step)

    def evaluated(t, evaluation):
        if "bar" in bar:
            bar.pop("bar").close()
        record = evaluation.record
        print(json.dumps(record), file=sys.stderr)
        for src, ref, hyp in evaluation.samples[:3]:
            print(f"  src: {src}\n  ref: {ref}\n  hyp: {hyp}", file=sys.stderr)
        if "averaged" in record:
            print(average_verdict(t, evaluation), file=sys.stderr)
        if "epoch" in record:
            for name in ("val_loss", "bleu", "chrf"):
                writer.add_scalar(f"val/{name.removeprefix('val_')}", record[name], t.step)
            timing["epochs"] += 1
            timing["seconds"] = t.clock.elapsed - (timing["first_elapsed"])

    def out_of_time(t, epoch, batches_done, n_batches):
        where = (f"after epoch {epoch}" if batches_done == n_batches
                 else f"after {batches_done} of {n_batches} batches of epoch {epoch}")
        print(f"time budget of {t.settings.max_minutes} minutes spent; stopped {where}", file=sys.stderr)

    for event, fn in (("on_epoch_start", epoch_start), ("on_batch_end", batch_end), ("on_evaluate", evaluated),
                      ("on_time_budget", out_of_time), ("on_end", lambda t, result: writer.close())):
        trainer.add_callback(event, fn)


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


def resume_line(t: Trainer, out: Path) -> str:
    """Which epoch checkpoint a resumed run continues from, and what is left to train."""
    s, done = t.settings, t.epoch
    last = latest_epoch_dir(out)
    if done >= s.epochs:
        todo = "no epochs left to train (a larger --epochs trains more)"
    elif done + 1 == s.epochs:
        todo = f"epoch {s.epochs} to go"
    else:
        todo = f"epochs {done + 1}-{s.epochs} to go"
    return f"resuming from epoch {done} ({last}): {todo}"


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


def print_forecast(t: Trainer, seconds_per_epoch: float, basis: str) -> None:
    """One line: when the whole run will end, and whether --max-minutes cuts it short."""
    s = t.settings
    f = forecast(t.clock.elapsed, t.epoch, s.epochs, seconds_per_epoch, s.max_minutes, t.finish_seconds)
    end = time.strftime("%H:%M", time.localtime(time.time() + f.seconds_left))
    line = (f"forecast: {seconds_per_epoch / 60:.1f} min/epoch ({basis}); the run ends about {end}, "
            f"{f.seconds_left / 60:.0f} minutes from now")
    if f.cut_by_budget:
        line += f"; --max-minutes {s.max_minutes:g} cuts it during epoch {f.last_epoch} of {s.epochs}"
    tqdm.write(line, file=sys.stderr)  # above a progress bar that may be drawing


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


def run(args, argv) -> int:
    if args.threads:
        torch.set_num_threads(args.threads)
    preset = preset_from_args(args)
    device = pick_device(args.device)
    out = Path(args.out)
    dist = init_distributed(device)
    try:
        # rank 0 checks the teacher (and only it decodes with it)
        teacher = check_before_loading(args, preset) if dist.is_main else args.distill_from
        if dist.is_main:
            check_out_dir(out)
        extra = extra_train(args)
        check_paths_exist(extra)
        tags = run_tags_synthetic(out) if args.resume else preset.tag_synthetic
        if dist.is_main and not Path(args.dataset).expanduser().exists():
            # the hub's own retries can take half a minute when it cannot be reached
            print(f"data: looking up {args.dataset} on the hub", file=sys.stderr)
        data = load_run_data(args.dataset, args.src, args.tgt, config=args.dataset_config, seed=args.seed,
                             max_train_pairs=args.max_train_pairs, dist=dist, extra_train=extra,
                             tag=SYNTHETIC_TAG if tags else None)
        if args.distill_from:
            distill(data, args, dist, teacher)
        options = dict(device=device, val_limit=args.val_limit, keep_epochs=args.keep_epochs,
                       snapshots=args.snapshots, command=command_line(argv), dist=dist)
        if args.resume:
            # only --epochs / --max-minutes given now change the run's own (0 / None keep them)
            requested = replace(preset.train, epochs=args.epochs or 0, max_minutes=args.max_minutes)
            trainer = Trainer.resume(out, data, requested, **options)
        else:
            model, src_tok, tgt_tok = build_fresh(preset, data, args.src, args.tgt, args.storage_dtype,
                                                  seed=args.seed, dist=dist)
            trainer = Trainer(model, src_tok, tgt_tok, data, preset.train, out, **options)
        if dist.is_main:
            cfg, s = trainer.cfg, trainer.settings
            if args.resume:
                print(resume_line(trainer, out), file=sys.stderr)
            print(f"data: {len(data.train)} train / {len(data.validation)} validation pairs from {data.source}"
                  + "".join(f" + {path}" for path in extra) + (" (synthetic sources tagged)" if tags else ""),
                  file=sys.stderr)
            print(f"model: {trainer.n_params:,} parameters; vocab {cfg.src_vocab_size}/{cfg.tgt_vocab_size}; "
                  f"device {trainer.device} ({'bf16 autocast' if s.bf16 else 'float32'}); "
                  f"{trainer.steps_per_epoch} steps/epoch x {s.epochs} epochs"
                  + (f" on each of {dist.world_size} processes" if dist.enabled else ""), file=sys.stderr)
            progress_printer(trainer, out)
        result = trainer.fit()
    finally:
        dist.close()
    if not dist.is_main:
        return 0
    summary = {"best_chrf": result.best_chrf, "minutes": result.minutes, "best": str(result.best_dir)}
    if args.push_to_hub:
        try:
            from transformer.hub import push_checkpoint

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
    check_before_loading(args, preset_from_args(args))
    check_out_dir(Path(args.out))
    check_paths_exist(extra_train(args))


def fit_processes(wanted: int, device: str, n_devices: int, batch_tokens: int) -> tuple[int, int]:
    """(processes, batch tokens per process) for ``wanted`` processes of ``batch_tokens``.

    On a CPU every process gets its share of the cores. A GPU cannot be shared between
    training processes, so with fewer GPUs (``n_devices``) than ``wanted`` one process runs
    per GPU, each on a larger batch, so that a step still sees ``wanted * batch_tokens``
    tokens and the learning-rate schedule keeps its meaning."""
    if device == "cpu" or n_devices >= wanted:
        return wanted, batch_tokens
    return n_devices, round(batch_tokens * wanted / n_devices)


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


def launch_processes(args, argv, extra_args: list[str]) -> int:
    """Start ``args.processes`` copies of this script with torch's own launcher (what
    ``torchrun --standalone --nproc_per_node=N`` does: a local rendezvous and
    ``RANK``/``WORLD_SIZE`` in each process's environment). Each copy joins the process
    group in ``init_distributed``. Rank 0 keeps this terminal, so the output reads as a
    one-process run's; the other ranks write to log files in a temporary folder (a failure
    there is rank 0's to report, and their tracebacks of the broken connection would only
    bury its one line). Returns the exit code of the failed run: rank 0's when it has one."""
    import logging

    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import get_args_parser, run as launch

    check_before_launch(args)
    cores = max(1, (os.cpu_count() or 1) // args.processes)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads or cores))  # torch's launcher warns when it picks
    os.environ[LAUNCHED_BY_TRAIN_PY] = str(args.processes)
    logging.getLogger("torch.distributed").setLevel(logging.CRITICAL)  # its own lines about failed processes
    others = ",".join(f"{rank}:3" for rank in range(1, args.processes))
    script_args = [*(sys.argv[1:] if argv is None else argv), *extra_args]  # the last of a flag wins
    launcher = get_args_parser().parse_args(["--standalone", f"--nproc_per_node={args.processes}",
                                             "--redirects", others, __file__, *script_args])
    try:
        launch(launcher)
    except ChildFailedError as exc:
        codes = {rank: failure.exitcode for rank, failure in exc.failures.items()}
        return next((c for c in (codes.get(0), *codes.values()) if c is not None and c > 0), 1)
    return 0


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        with one_line_warnings(TrainingWarning):
            if not launched_by_torchrun():
                processes, extra_args = plan_processes(args)
                if processes > 1:
                    return launch_processes(args, argv, extra_args)
            return run(args, argv)
    except VocabularyError as exc:
        leave_to_rank_0(EXIT_USAGE)
        if exc.n_characters is None:
            fail(f"--vocab-size: {exc}")
        fail(f"--vocab-size {exc.vocab_size} is too small for this corpus: its {exc.n_specials} special tokens and "
             f"{exc.n_characters} distinct characters need at least {exc.needed}")
    except (TrainingError, DataError, CheckpointError, DistillError, DistributedError) as exc:
        leave_to_rank_0(EXIT_USAGE)
        fail(str(exc))
    except Exception:
        if not launched_by_torchrun() or int(os.environ["RANK"]) == 0:
            raise
        traceback.print_exc()  # the broken connection of a peer that stopped, into this rank's own output
        leave_to_rank_0(1)


def leave_to_rank_0(code: int) -> None:
    """On the ranks other than 0: exit with ``code`` and no message, after a short wait.

    Every training process meets the same bad input, and when rank 0 stops the others see
    their connection break; rank 0 alone says why. The wait lets rank 0 end first, so the
    launcher reports rank 0's exit code as the run's, not the broken connection's."""
    if launched_by_torchrun() and int(os.environ["RANK"]) != 0:
        time.sleep(OTHER_RANKS_WAIT_SECONDS)
        raise SystemExit(code)


if __name__ == "__main__":
    sys.exit(main())
