"""Train an encoder-decoder Transformer for translation.

    python train.py                                   # the shipped en->it model (preset base)
    python train.py --preset tiny --dataset DIR --out runs/tiny   # a smoke run
    python train.py --out runs/base --resume          # continue the last run in runs/base

Output directory layout:
    OUT/epochs/epoch-NNN/   checkpoint after each epoch (+ train_state.pt for --resume)
    OUT/best/               the checkpoint with the best validation chrF (this is what ships)
    OUT/tensorboard/        TensorBoard scalars
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch
from tqdm import tqdm

from transformer.checkpoint import WEIGHTS_FILE, CheckpointError, assign_weights, load_checkpoint, save_checkpoint
from transformer.config import TransformerConfig
from transformer.data import DataError, encode_pairs, load_parallel, make_batch, token_budget_batches
from transformer.model import build_model, count_parameters
from transformer.modelcard import model_card
from transformer.tokenizer import special_ids, train_tokenizer
from transformer.training import (
    PRESETS, Stopwatch, TrainSettings, average_checkpoints, corpus_scores, make_optimizer, make_scheduler,
    seed_everything, train_step, validation_loss,
)
from transformer.translator import Translator

DEFAULT_DATASET = "Helsinki-NLP/opus_books"
STATE_FILE = "train_state.pt"


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Train a from-scratch Transformer translation model.",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--preset", choices=sorted(PRESETS), default="base",
                   help="starting settings; 'base' made the shipped model, 'tiny' is a 1-minute smoke run")
    p.add_argument("--dataset", default=DEFAULT_DATASET,
                   help="hub dataset id, or a local directory with train.jsonl (validation.jsonl, test.jsonl) "
                        "or one .jsonl file, in the OPUS Books schema")
    p.add_argument("--dataset-config", default=None,
                   help="hub dataset config (default for a hub id: '<src>-<tgt>', e.g. en-it)")
    p.add_argument("--src", default="en", help="source language code in the 'translation' field")
    p.add_argument("--tgt", default="it", help="target language code in the 'translation' field")
    p.add_argument("--out", default="runs/base", help="output directory for checkpoints and logs")
    p.add_argument("--resume", action="store_true", help="continue from the last epoch checkpoint in --out")
    p.add_argument("--epochs", type=int, help="number of epochs (sets the length of the LR schedule)")
    p.add_argument("--batch-tokens", type=int, help="padded source+target tokens per batch")
    p.add_argument("--lr", type=float, help="peak learning rate after warmup")
    p.add_argument("--warmup-steps", type=int, help="linear warmup steps")
    p.add_argument("--d-model", type=int, help="model width d_model")
    p.add_argument("--layers", type=int, help="encoder layers = decoder layers")
    p.add_argument("--heads", type=int, help="attention heads h (8 or fewer keeps the viewer readable)")
    p.add_argument("--d-ff", type=int, help="feed-forward inner width d_ff")
    p.add_argument("--dropout", type=float, help="dropout on residuals, embeddings and the FFN")
    p.add_argument("--vocab-size", type=int, help="BPE vocabulary size (per tokenizer)")
    p.add_argument("--separate-vocab", action="store_true",
                   help="one tokenizer per language instead of a joint one (disables full weight tying)")
    p.add_argument("--label-smoothing", type=float, help="label smoothing epsilon")
    p.add_argument("--no-bf16", action="store_true", help="train in float32 instead of bf16 autocast")
    p.add_argument("--storage-dtype", choices=["float32", "bfloat16", "float16"], default="float32",
                   help="dtype of the weights written to disk (the model always runs in float32)")
    p.add_argument("--average-last", type=int, help="average the last N epoch checkpoints at the end (0: off)")
    p.add_argument("--seed", type=int, default=0, help="seed for splits, shuffling and initialisation")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"],
                   help="training device (auto picks cuda, then mps, then cpu)")
    p.add_argument("--max-minutes", type=float, help="wall-clock budget for training; stops cleanly when spent")
    p.add_argument("--max-train-pairs", type=int, help="use only the first N training pairs (for quick trials)")
    p.add_argument("--val-limit", type=int, default=1000, help="validation pairs scored with BLEU/chrF each epoch")
    p.add_argument("--keep-epochs", type=int, default=6, help="epoch checkpoints kept on disk")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    return p.parse_args(argv)


def fail(message: str) -> "None":
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def pick_device(name: str) -> str:
    if name == "auto":
        if torch.cuda.is_available():
            return "cuda"
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return "mps"
        return "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        fail("--device cuda asked for, but no CUDA device is available")
    if name == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        fail("--device mps asked for, but MPS is not available")
    return name


def settings_from_args(args, preset: dict) -> TrainSettings:
    s = TrainSettings(**preset["train"], seed=args.seed)
    overrides = {"epochs": args.epochs, "batch_tokens": args.batch_tokens, "lr": args.lr,
                 "warmup_steps": args.warmup_steps, "label_smoothing": args.label_smoothing,
                 "max_minutes": args.max_minutes, "average_last": args.average_last}
    s = replace(s, **{k: v for k, v in overrides.items() if v is not None})
    if args.no_bf16:
        s = replace(s, bf16=False)
    for name in ("epochs", "batch_tokens"):
        if getattr(s, name) <= 0:
            fail(f"--{name.replace('_', '-')} must be positive")
    if s.lr <= 0:
        fail("--lr must be positive")
    return s


def check_out_dir(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-test"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        fail(f"{out}: output directory is not writable ({exc.strerror or exc})")


def latest_epoch_dir(out: Path) -> Path | None:
    dirs = sorted(d for d in (out / "epochs").glob("epoch-*") if d.is_dir() and (d / STATE_FILE).is_file())
    return dirs[-1] if dirs else None


def build_fresh(args, preset, data):
    """Tokenizers trained on the training split, and a new model sized from the preset."""
    m = dict(preset["model"])
    for key, arg in (("d_model", "d_model"), ("h", "heads"), ("d_ff", "d_ff"), ("dropout", "dropout")):
        if getattr(args, arg) is not None:
            m[key] = getattr(args, arg)
    if args.layers is not None:
        m["n_encoder_layers"] = m["n_decoder_layers"] = args.layers
    vocab = args.vocab_size or preset["vocab_size"]
    joint = preset["joint_vocab"] and not args.separate_vocab
    if joint:
        texts = [s for s, _ in data.train] + [t for _, t in data.train]
        src_tok = tgt_tok = train_tokenizer(texts, vocab)
        files = {"src_tokenizer_file": "tokenizer.json", "tgt_tokenizer_file": "tokenizer.json"}
    else:
        src_tok = train_tokenizer([s for s, _ in data.train], vocab)
        tgt_tok = train_tokenizer([t for _, t in data.train], vocab)
        files = {}
        if m.get("tie_embeddings") == "all":
            m["tie_embeddings"] = "decoder"
    ids = {f"src_{k}_id": v for k, v in special_ids(src_tok).items()}
    ids.update({f"tgt_{k}_id": v for k, v in special_ids(tgt_tok).items()})
    try:
        cfg = TransformerConfig(**m, **ids, **files, src_vocab_size=src_tok.get_vocab_size(),
                                tgt_vocab_size=tgt_tok.get_vocab_size(), src_lang=args.src, tgt_lang=args.tgt,
                                storage_dtype=args.storage_dtype)
    except ValueError as exc:
        fail(str(exc))
    return build_model(cfg), src_tok, tgt_tok


def evaluate_split(translator: Translator, pairs, limit: int) -> tuple[dict, list[tuple[str, str, str]]]:
    pairs = pairs[:limit]
    hyps = translator.translate([s for s, _ in pairs])
    scores = corpus_scores(hyps, [t for _, t in pairs])
    return scores, [(s, t, h) for (s, t), h in zip(pairs, hyps)]


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    preset = PRESETS[args.preset]
    settings = settings_from_args(args, preset)
    device = pick_device(args.device)
    out = Path(args.out)
    check_out_dir(out)
    command = "python train.py " + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))

    config_name = args.dataset_config
    if config_name is None and not Path(args.dataset).exists():
        config_name = f"{args.src}-{args.tgt}"
    try:
        data = load_parallel(args.dataset, args.src, args.tgt, config=config_name, seed=args.seed)
    except DataError as exc:
        fail(str(exc))
    if args.max_train_pairs:
        data.train = data.train[: args.max_train_pairs]

    seed_everything(settings.seed)
    state = None
    if args.resume:
        last = latest_epoch_dir(out)
        if last is None:
            fail(f"--resume: no epoch checkpoint with {STATE_FILE} under {out / 'epochs'}")
        try:
            model, src_tok, tgt_tok, _ = load_checkpoint(last)
            state = torch.load(last / STATE_FILE, weights_only=True)
        except (CheckpointError, RuntimeError, OSError) as exc:
            fail(f"--resume: {exc}")
        settings = replace(TrainSettings(**state["settings"]), epochs=max(settings.epochs, state["epoch"]),
                           max_minutes=settings.max_minutes)
    else:
        model, src_tok, tgt_tok = build_fresh(args, preset, data)
    cfg = model.cfg
    model.to(device)

    train_enc = encode_pairs(data.train, src_tok, tgt_tok, cfg)
    val_enc = encode_pairs(data.validation, src_tok, tgt_tok, cfg)
    steps_per_epoch = len(token_budget_batches(train_enc, settings.batch_tokens, settings.seed, 0))
    total_steps = settings.epochs * steps_per_epoch
    opt = make_optimizer(model, settings)
    sched = make_scheduler(opt, settings, total_steps)
    start_epoch, step, best_chrf, elapsed0 = 0, 0, -1.0, 0.0
    history = []
    if state is not None:
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["torch_rng"])
        start_epoch, step, best_chrf = state["epoch"], state["step"], state["best_chrf"]
        elapsed0, history = state["elapsed"], json.loads(state["history"])

    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(out / "tensorboard"))
    n_params = count_parameters(model)
    print(f"data: {len(data.train)} train / {len(data.validation)} validation pairs from {data.source}", file=sys.stderr)
    print(f"model: {n_params:,} parameters; vocab {cfg.src_vocab_size}/{cfg.tgt_vocab_size}; device {device}; "
          f"{steps_per_epoch} steps/epoch x {settings.epochs} epochs", file=sys.stderr)
    clock = Stopwatch(elapsed0)
    budget = settings.max_minutes * 60 if settings.max_minutes else None
    out_of_time = False
    for epoch in range(start_epoch, settings.epochs):
        batches = token_budget_batches(train_enc, settings.batch_tokens, settings.seed, epoch)
        bar = tqdm(batches, desc=f"epoch {epoch + 1}/{settings.epochs}", unit="batch", dynamic_ncols=True,
                   mininterval=0.5 if sys.stderr.isatty() else 10)
        tokens, t0 = 0, time.monotonic()
        for idx in bar:
            batch = make_batch([train_enc[i] for i in idx], cfg)
            loss, gnorm = train_step(model, batch, opt, sched, settings, device)
            step += 1
            tokens += batch.n_tgt_tokens + batch.n_src_tokens
            tok_s = tokens / max(1e-9, time.monotonic() - t0)
            lr = sched.get_last_lr()[0]
            bar.set_postfix(loss=f"{loss:.3f}", lr=f"{lr:.2e}", tok_s=f"{tok_s:,.0f}", refresh=False)
            if step % 20 == 0:
                writer.add_scalar("train/loss", loss, step)
                writer.add_scalar("train/lr", lr, step)
                writer.add_scalar("train/grad_norm", gnorm, step)
                writer.add_scalar("train/tokens_per_s", tok_s, step)
            if budget is not None and clock.elapsed > budget:
                out_of_time = True
                break
        bar.close()
        model.eval()
        translator = Translator(model, src_tok, tgt_tok)
        val_loss = validation_loss(model, val_enc, cfg, settings.batch_tokens, device)
        scores, samples = evaluate_split(translator, data.validation, args.val_limit)
        record = {"epoch": epoch + 1, "step": step, "minutes": round(clock.elapsed / 60, 2),
                  "train_loss": round(loss, 4), "val_loss": round(val_loss, 4), **scores}
        history.append(record)
        writer.add_scalar("val/loss", val_loss, step)
        writer.add_scalar("val/bleu", scores["bleu"], step)
        writer.add_scalar("val/chrf", scores["chrf"], step)
        print(json.dumps(record), file=sys.stderr)
        for src, ref, hyp in samples[:3]:
            print(f"  src: {src}\n  ref: {ref}\n  hyp: {hyp}", file=sys.stderr)

        is_best = scores["chrf"] > best_chrf
        best_chrf = max(best_chrf, scores["chrf"])
        metrics = {"validation": scores, "val_loss": val_loss, "epoch": epoch + 1, "step": step,
                   "train_minutes": round(clock.elapsed / 60, 2), "parameters": n_params}
        train_state = {
            "optimizer": opt.state_dict(), "scheduler": sched.state_dict(), "torch_rng": torch.get_rng_state(),
            "epoch": epoch + 1, "step": step, "best_chrf": best_chrf, "elapsed": clock.elapsed,
            "settings": asdict(settings), "history": json.dumps(history),
        }
        model.cpu()
        save_checkpoint(out / "epochs" / f"epoch-{epoch + 1:03d}", model, src_tok, tgt_tok,
                        metrics=metrics, extra_files={STATE_FILE: train_state})
        if is_best:
            card = model_card(cfg, n_params, command, history, metrics, samples[:10], data.source)
            save_checkpoint(out / "best", model, src_tok, tgt_tok, metrics=metrics, model_card=card)
        model.to(device)
        for old in sorted((out / "epochs").glob("epoch-*"))[: -args.keep_epochs]:
            shutil.rmtree(old, ignore_errors=True)
        if out_of_time:
            print(f"time budget of {settings.max_minutes} minutes spent; stopping after epoch {epoch + 1}",
                  file=sys.stderr)
            break

    # average the last few epochs' weights: a cheap ensemble that usually beats each one
    recent = sorted((out / "epochs").glob("epoch-*"))[-settings.average_last:] if settings.average_last > 1 else []
    if len(recent) > 1:
        assign_weights(model.cpu(), average_checkpoints([d / WEIGHTS_FILE for d in recent]), "averaged weights")
        model.eval()
        translator = Translator(model, src_tok, tgt_tok)
        val_loss = validation_loss(model, val_enc, cfg, settings.batch_tokens, "cpu")
        scores, samples = evaluate_split(translator, data.validation, args.val_limit)
        record = {"averaged": [d.name for d in recent], "val_loss": round(val_loss, 4), **scores,
                  "minutes": round(clock.elapsed / 60, 2)}
        history.append(record)
        print(json.dumps(record), file=sys.stderr)
        if scores["chrf"] > best_chrf:
            best_chrf = scores["chrf"]
            metrics = {"validation": scores, "val_loss": val_loss, "averaged": record["averaged"], "step": step,
                       "train_minutes": round(clock.elapsed / 60, 2), "parameters": n_params}
            card = model_card(cfg, n_params, command, history, metrics, samples[:10], data.source)
            save_checkpoint(out / "best", model, src_tok, tgt_tok, metrics=metrics, model_card=card)
    writer.close()
    (out / "history.json").write_text(json.dumps(history, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({"best_chrf": best_chrf, "minutes": round(clock.elapsed / 60, 2), "best": str(out / "best")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
