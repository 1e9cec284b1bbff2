"""Can a 1M-pair corpus be loaded, tokenized and encoded in 3 minutes within 4 GB of RAM?

    python benchmarks/big_corpus.py                 # 1,000,000 synthetic pairs (the target)
    python benchmarks/big_corpus.py --pairs 50000   # a quick check

The benchmark writes its own corpus: a JSONL file in the OPUS Books schema, in a temporary
directory, with Tatoeba-like sentences (3-14 words, Zipf-distributed vocabulary of
pseudo-words, an Italian side with its own words and endings). Then, in a fresh child
process so that its peak memory is the pipeline's alone, it times the data path train.py
uses for big corpora:

1. load: ``load_parallel_dataset`` (JSON -> Arrow cache, language columns picked with a
   batched Arrow ``map``, seeded validation split carved out);
2. tokenizer: one joint BPE vocabulary trained from ``text_batches`` (batches of text);
3. encode: ``encode_dataset`` (``encode_batch`` in a batched ``map``) of train and validation.

The ``datasets`` cache goes into the temporary directory too, so every run is a cold start.
Peak memory is the child's ``ru_maxrss`` (it counts Arrow's native and memory-mapped
pages, which ``tracemalloc`` cannot see). Prints figures, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _repo import ROOT  # the clone, first on sys.path

LIMIT_SECONDS, LIMIT_GB = 180.0, 4.0


def pseudo_words(rng, n: int, syllables: list[str]) -> list[str]:
    lengths = rng.integers(1, 4, size=n)
    picks = rng.integers(0, len(syllables), size=(n, 3))
    words = {"".join(syllables[j] for j in row[:k]) for row, k in zip(picks, lengths)}
    return sorted(words)


def write_corpus(path: Path, n_pairs: int, seed: int = 0, chunk: int = 50_000) -> None:
    """``n_pairs`` synthetic en-it pairs, written in chunks (memory stays small)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    en_words = pseudo_words(rng, 40_000, ["th", "a", "e", "in", "st", "o", "re", "an", "ck", "ing", "ou", "sh", "er"])
    it_words = pseudo_words(rng, 40_000, ["ca", "re", "to", "la", "ri", "no", "gli", "sta", "men", "zi", "o", "e"])
    it_endings = ["o", "a", "i", "e", "ono", "iamo"]
    n_en, n_it = len(en_words), len(it_words)
    with path.open("w", encoding="utf-8") as f:
        for start in range(0, n_pairs, chunk):
            size = min(chunk, n_pairs - start)
            lengths = rng.integers(3, 15, size=size)
            ids = (rng.zipf(1.25, size=int(lengths.sum())) - 1) % n_en
            endings = rng.integers(0, len(it_endings), size=int(lengths.sum()))
            lines, pos = [], 0
            for i, n in enumerate(lengths):
                words = ids[pos : pos + n]
                en = " ".join(en_words[w] for w in words).capitalize() + "."
                it = (
                    " ".join(
                        it_words[(w * 7919) % n_it] + it_endings[e] for w, e in zip(words[::-1], endings[pos : pos + n])
                    ).capitalize()
                    + "."
                )
                pos += n
                lines.append(
                    f'{{"id": "{start + i}", "translation": {{"en": "{en}", "it": "{it}"}}, "origin": "synthetic"}}\n'
                )
            f.writelines(lines)


def measure(data_dir: Path, vocab_size: int, cache_dir: Path) -> dict:
    """The timed pipeline (runs in the child process)."""
    sys.path.insert(0, str(ROOT))
    from transformer.core.config import TransformerConfig
    from transformer.training.data import encode_dataset, load_parallel_dataset, text_batches
    from transformer.core.tokenizer import special_ids, train_tokenizer

    # wall time is the target; CPU seconds (all threads) tell how much of it was waiting
    # for a busy machine
    t0, c0 = time.perf_counter(), time.process_time()
    data = load_parallel_dataset(str(data_dir), "en", "it", seed=0, cache_dir=str(cache_dir))
    t1, c1 = time.perf_counter(), time.process_time()
    tok = train_tokenizer(text_batches(data.train, ("src", "tgt")), vocab_size)
    t2, c2 = time.perf_counter(), time.process_time()
    ids = {f"{side}_{k}_id": v for side in ("src", "tgt") for k, v in special_ids(tok).items()}
    cfg = TransformerConfig(src_vocab_size=tok.get_vocab_size(), tgt_vocab_size=tok.get_vocab_size(), **ids)
    train_enc = encode_dataset(data.train, tok, tok, cfg)
    val_enc = encode_dataset(data.validation, tok, tok, cfg)
    t3, c3 = time.perf_counter(), time.process_time()
    src_len, tgt_len = train_enc.lengths()
    return {
        "train_pairs": len(data.train),
        "validation_pairs": len(data.validation),
        "load_s": round(t1 - t0, 2),
        "tokenizer_s": round(t2 - t1, 2),
        "encode_s": round(t3 - t2, 2),
        "total_s": round(t3 - t0, 2),
        "load_cpu_s": round(c1 - c0, 2),
        "tokenizer_cpu_s": round(c2 - c1, 2),
        "encode_cpu_s": round(c3 - c2, 2),
        "total_cpu_s": round(c3 - c0, 2),
        "vocab": tok.get_vocab_size(),
        "train_tokens": int(src_len.sum() + tgt_len.sum()),
        "validation_encoded": len(val_enc),
        # Linux reports ru_maxrss in KiB
        "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description="Time loading, tokenizer training and encoding of a synthetic 1M-pair corpus, and its peak memory."
    )
    p.add_argument("--pairs", type=int, default=1_000_000, help="synthetic pairs to generate")
    p.add_argument("--vocab-size", type=int, default=8000, help="joint BPE vocabulary size")
    p.add_argument("--workdir", default=None, help="where to write the corpus and cache (default: a new temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the generated corpus and cache")
    p.add_argument("--measure", default=None, help=argparse.SUPPRESS)  # internal: the child process
    p.add_argument("--cache-dir", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(Path(args.measure), args.vocab_size, Path(args.cache_dir))))
        return 0
    if args.pairs < 100:
        p.error("--pairs must be at least 100")

    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="big-corpus-"))
    try:
        data_dir = work / "corpus"
        data_dir.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        write_corpus(data_dir / "train.jsonl", args.pairs)
        size_mb = (data_dir / "train.jsonl").stat().st_size / 1e6
        print(
            f"generated {args.pairs:,} pairs ({size_mb:.0f} MB JSONL) in {time.perf_counter() - t:.1f} s "
            f"(not timed below)",
            file=sys.stderr,
        )
        cache = work / "hf-cache"
        shutil.rmtree(cache, ignore_errors=True)  # a cold cache every time
        child = subprocess.run(
            [
                sys.executable,
                __file__,
                "--measure",
                str(data_dir),
                "--cache-dir",
                str(cache),
                "--vocab-size",
                str(args.vocab_size),
            ],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        if child.returncode != 0:
            print(f"error: the measuring process failed (exit {child.returncode})", file=sys.stderr)
            return 1
        r = json.loads(child.stdout.strip().splitlines()[-1])
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    r = {
        "benchmark": "big_corpus",
        "pairs": args.pairs,
        "jsonl_mb": round(size_mb, 1),
        **r,
        "cpus": os.cpu_count(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }
    r["within_limits"] = r["total_s"] <= LIMIT_SECONDS and r["peak_rss_gb"] <= LIMIT_GB
    print(f"{r['train_pairs']:,} train + {r['validation_pairs']:,} validation pairs", file=sys.stderr)
    print(
        f"  load (JSON -> Arrow, pick languages, split): {r['load_s']:7.1f} s wall {r['load_cpu_s']:7.1f} s CPU",
        file=sys.stderr,
    )
    print(
        f"  joint BPE tokenizer ({r['vocab']:,} tokens):      {r['tokenizer_s']:7.1f} s wall "
        f"{r['tokenizer_cpu_s']:7.1f} s CPU",
        file=sys.stderr,
    )
    print(
        f"  encode train + validation:                  {r['encode_s']:7.1f} s wall {r['encode_cpu_s']:7.1f} s CPU",
        file=sys.stderr,
    )
    print(
        f"  total {r['total_s']:.1f} s (limit {LIMIT_SECONDS:.0f}), peak RSS {r['peak_rss_gb']:.2f} GB "
        f"(limit {LIMIT_GB:.0f}); load average {r['load_avg_1m']} on {r['cpus']} CPUs",
        file=sys.stderr,
    )
    print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
