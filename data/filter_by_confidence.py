"""Keep the synthetic pairs a model is surest of: forward-translated Italian copies its teacher's
mistakes ("He doesn't believe in global warming." -> "Non crede in palestra."), and the teacher
is least sure where it is most often wrong.

    python data/filter_by_confidence.py --checkpoint runs/long15 \
        --pairs data/tatoeba-en-it-ft4/train.jsonl.gz --keep 0.8 --out ftwork/ft4-conf80.jsonl

Each pair is scored by the model's length-normalised log-probability of its target given its
source, (1/T) sum_t log p(y_t | x, y_<t) over the target's T tokens, [EOS] included, read
teacher-forced in batches (the figure "Your own reference" shows for one sentence,
``transformer.interpret.reference``). The ``--keep`` fraction with the highest scores is
written to ``--out`` in the input's order, one JSON line each as read; ``--scores`` also writes
every pair's score. The last stdout line is one JSON object: pairs read and kept, the threshold
and the seconds. Bad paths or flags: one line and exit code 2, before the model loads.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

import torch


from transformer import load_translator  # noqa: E402
from transformer.core import stepping  # noqa: E402
from transformer.core.tokenizer import encode  # noqa: E402


def read_lines(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [line for line in f if line.strip()]


def encoded(translator, src: str, tgt: str) -> tuple[list[int], list[int]]:
    """(source ids, target ids with [EOS]), cut as the translator and the decoder's positions cut them."""
    cfg = translator.cfg
    ids = [*encode(translator.tgt_tok, tgt), cfg.tgt_eos_id][: cfg.max_positions]
    return translator.encode_source(src).ids, ids


@torch.no_grad()
def scores(translator, pairs: list[tuple[str, str]], batch_size: int = 128) -> list[float]:
    """The length-normalised log-probability of each target given its source, batched by length."""
    model, cfg = translator.model, translator.cfg
    items = sorted(((i, *encoded(translator, s, t)) for i, (s, t) in enumerate(pairs)), key=lambda x: len(x[1]))
    out = [0.0] * len(pairs)
    for start in range(0, len(items), batch_size):
        chunk = items[start : start + batch_size]
        S, T = max(len(x[1]) for x in chunk), max(len(x[2]) for x in chunk)
        src = torch.full((len(chunk), S), cfg.src_pad_id)
        tgt_in = torch.full((len(chunk), T), cfg.tgt_pad_id)
        target = torch.full((len(chunk), T), cfg.tgt_pad_id)
        for row, (_, s, y) in enumerate(chunk):
            src[row, : len(s)] = torch.tensor(s)
            tgt_in[row, : len(y)] = torch.tensor(stepping.decoder_inputs(cfg, y[:-1]))
            target[row, : len(y)] = torch.tensor(y)
        logits = model(src, tgt_in).logits.float()  # (B, T, V)
        logp = logits.gather(-1, target[..., None])[..., 0] - logits.logsumexp(dim=-1)  # (B, T)
        for row, (i, _, y) in enumerate(chunk):
            out[i] = float(logp[row, : len(y)].double().mean())
    return out


def most_confident(values: list[float], keep: float) -> list[int]:
    """The indices of the ``keep`` fraction with the highest values, in their original order."""
    n = round(keep * len(values))
    return sorted(sorted(range(len(values)), key=lambda i: -values[i])[:n])


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", required=True, help="the model whose confidence decides (a folder or hub id)")
    p.add_argument("--pairs", required=True, help="JSONL pairs in the corpus's schema (.jsonl or .jsonl.gz)")
    p.add_argument("--out", required=True, help="JSONL file for the pairs kept")
    p.add_argument("--keep", type=float, default=0.8, help="the fraction kept, in (0, 1]")
    p.add_argument("--scores", default=None, help="also write every pair's score here (JSONL: line, score)")
    p.add_argument("--src", default="en", help="source language code in the 'translation' field")
    p.add_argument("--tgt", default="it", help="target language code in the 'translation' field")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    path = Path(args.pairs)
    if not 0 < args.keep <= 1:
        print(f"error: --keep {args.keep}: a fraction in (0, 1] is needed", file=sys.stderr)
        return 2
    if not path.is_file():
        print(f"error: --pairs {path}: no such file", file=sys.stderr)
        return 2
    try:
        lines = read_lines(path)
        rows = [json.loads(line)["translation"] for line in lines]
        pairs = [(row[args.src], row[args.tgt]) for row in rows]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"error: --pairs {path}: not pairs in the corpus's schema ({type(exc).__name__}: {exc})", file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    t0 = time.monotonic()
    values = scores(load_translator(args.checkpoint), pairs)
    kept = most_confident(values, args.keep)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.writelines(lines[i] if lines[i].endswith("\n") else lines[i] + "\n" for i in kept)
    if args.scores:
        with open(args.scores, "w", encoding="utf-8") as f:
            f.writelines(json.dumps({"line": i, "score": round(v, 5)}) + "\n" for i, v in enumerate(values))
    threshold = min((values[i] for i in kept), default=None)
    summary = {
        "read": len(pairs),
        "kept": len(kept),
        "threshold": threshold,
        "seconds": round(time.monotonic() - t0, 1),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
