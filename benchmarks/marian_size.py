"""A Marian model at OPUS-MT's real size through our converter and our trace, in one run.

    python benchmarks/marian_size.py [--repeat 5] [--keep DIR]

Builds a random-weight ``MarianMTModel`` at the size of the OPUS-MT models (d_model 512,
6 + 6 layers, 8 heads, d_ff 2048, one shared vocabulary of 58101 tokens, swish, static
sinusoids: transformers' ``MarianConfig`` defaults, those of Helsinki-NLP/opus-mt-en-de;
the Hub cannot be reached from here to read opus-mt-en-it's own), saves it with
``save_pretrained``, converts it with ``python -m transformer.cli.from_marian`` and times
our ``Translator.trace`` of a 10-word sentence on it, beside the shipped checkpoint's.

The tokenizer is honest about what it is: two small SentencePiece models trained on our
corpus (4000 pieces each), whose pieces fill vocab.json's first ids; the rest of the 58101
ids are placeholders no SentencePiece model produces. The matrices are full size, so the
conversion and the output projection (58101 logits per step) cost what they cost for a
real OPUS-MT model. Random weights do not stop where a trained model would: the trace
runs to its length limit (2 S + 10 steps), so the benchmark also times the Marian trace held to
our model's number of steps (those tokens forced, then [EOS]), the figure to compare.

Needs the Marian extra (``pip install -e ".[marian]"``). Prints figures only; the last
stdout line is one JSON object with all of them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import torch

from _repo import ROOT  # the clone, first on sys.path

from transformer.cli import fail, from_marian, load_translator_or_exit  # noqa: E402

TEN_WORDS = "My sister bought a beautiful red dress for the party."  # as benchmarks/speed.py
SIZE = dict(
    d_model=512,
    encoder_layers=6,
    decoder_layers=6,
    encoder_attention_heads=8,
    decoder_attention_heads=8,
    encoder_ffn_dim=2048,
    decoder_ffn_dim=2048,
    max_position_embeddings=512,
)
VOCAB = 58101


def build_marian(folder: Path) -> None:
    """A random-weight OPUS-MT-sized Marian model and its tokenizer, saved with save_pretrained."""
    from transformers import MarianConfig, MarianMTModel

    from published_sizes import corpus_lines, marian_tokenizer  # the same files, made once

    folder.mkdir(parents=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        marian_tokenizer(folder, corpus_lines(), VOCAB)
    cfg = MarianConfig(
        vocab_size=VOCAB,
        activation_function="swish",
        scale_embedding=True,
        pad_token_id=VOCAB - 1,
        decoder_start_token_id=VOCAB - 1,
        eos_token_id=0,
        **SIZE,
    )
    torch.manual_seed(0)
    model = MarianMTModel(cfg)
    with torch.no_grad():
        model.final_logits_bias.normal_(0.0, 1.0)  # a non-zero bias, as a trained model has
    model.save_pretrained(folder)


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def trace_figures(tr, repeat: int, steps: int | None = None) -> dict:
    """The 10-word trace's time. With ``steps``, also the trace held to that many steps (its
    first ``steps - 1`` tokens forced, then [EOS]): what the trace costs when the model ends
    the sentence where a trained one would, since random weights never choose [EOS]."""
    trace = tr.trace(TEN_WORDS)  # warm-up, and the number of steps
    ms = median_ms(lambda: tr.trace(TEN_WORDS), repeat)
    out = {"trace_ms": round(ms, 1), "steps": trace.steps, "ms_per_step": round(ms / trace.steps, 2)}
    if steps is not None:
        forced = [*trace.tgt_ids[1:steps], tr.cfg.tgt_eos_id]
        held = tr.trace(TEN_WORDS, forced_prefix=forced)
        out["held_steps"] = held.steps
        out["held_trace_ms"] = round(median_ms(lambda: tr.trace(TEN_WORDS, forced_prefix=forced), repeat), 1)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=5, help="timed traces per model (median)")
    p.add_argument("--keep", default=None, help="keep the Marian folder and the converted checkpoint here")
    args = p.parse_args(argv)
    try:
        import sentencepiece  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        fail('this benchmark needs the Marian extra: pip install -e ".[marian]"')
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="marian-size-"))
    if args.keep and work.exists() and any(work.iterdir()):
        fail(f"--keep {work}: exists and is not empty")
    try:
        t0 = time.perf_counter()
        build_marian(work / "marian")
        build_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        if from_marian.main([str(work / "marian"), "--out", str(work / "converted")]) != 0:
            fail("conversion failed")
        convert_s = time.perf_counter() - t0
        converted = load_translator_or_exit(str(work / "converted"))
        shipped = load_translator_or_exit(str(ROOT / "checkpoints" / "en-it"))
        models = {"marian": converted, "ours": shipped}
        n_params = {name: sum(p.numel() for p in tr.model.parameters()) for name, tr in models.items()}
        with torch.no_grad():
            ours = trace_figures(shipped, args.repeat)
            figures = {"marian": trace_figures(converted, args.repeat, ours["steps"]), "ours": ours}
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"built the random-weight Marian folder in {build_s:.1f} s (not part of the conversion)")
    print(f"conversion (python -m transformer.cli.from_marian): {convert_s:.1f} s")
    print(f"10-word trace ({TEN_WORDS!r}), median of {args.repeat}, torch threads {torch.get_num_threads()}:")
    for name, label in (("marian", "converted OPUS-MT-size Marian"), ("ours", "shipped checkpoints/en-it")):
        f = figures[name]
        print(
            f"  {label:31s} {n_params[name] / 1e6:6.1f} M parameters  {f['trace_ms']:8.1f} ms  "
            f"{f['steps']:3d} steps  {f['ms_per_step']:6.2f} ms/step"
        )
    m = figures["marian"]
    print(f"  {'the Marian trace held to ' + str(m['held_steps']) + ' steps':40s}{m['held_trace_ms']:19.1f} ms")
    print(
        json.dumps(
            {"build_s": round(build_s, 1), "convert_s": round(convert_s, 2), "params": n_params, **figures},
            sort_keys=True,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
