"""Build length-robustness pairs: each joins 2 or more random real pairs into one longer pair.

    python data/build_concat.py --out data/tatoeba-en-it-concat
    python data/build_concat.py --out data/tatoeba-en-it-joined-long --count 30250 --pieces 2 3 4 \
        --min-words 15 --max-words 60 --seed 2 --shuffle

Tatoeba's sentences are short (7 words on average), so a model trained on them alone has
rarely seen a source of 15 words or more and loses track on one. Training on concatenations
of real pairs is a known cheap fix (e.g. Varis & Bojar 2021, "Sequence Length is a Domain"):
the pieces are real translations, so the joined pair is a correct one, only longer.

The pieces come from the real training pairs only (``data/tatoeba-en-it/train.jsonl`` and
``data/tatoeba-en-it-more/train.jsonl.gz``), so the hygiene of those folders carries over: no
validation, test or held-out sentence can appear. The draw uses a fixed seed, so a rebuild
writes the same bytes. Output: ``train.jsonl.gz`` in the corpus's schema, ``origin: concat:N``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent
SOURCES = (DATA / "tatoeba-en-it" / "train.jsonl", DATA / "tatoeba-en-it-more" / "train.jsonl.gz")


def read_pairs(path: Path) -> list[tuple[str, str]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [(row["translation"]["en"], row["translation"]["it"]) for row in rows]


def concatenations(
    pairs: list[tuple[str, str]],
    count: int,
    max_words: int,
    seed: int,
    pieces: tuple[int, ...] = (2, 3),
    min_words: int = 0,
    shuffle: bool = False,
) -> list[dict]:
    """``count`` rows, each a number of distinct random pairs (drawn from ``pieces``) joined
    with a space, of ``min_words`` to ``max_words`` English words (a draw outside that is
    drawn again). ``shuffle`` shuffles the rows with the same generator after the draw (the
    order one fine-tuning run was made with), and the ids follow the final order."""
    rng = random.Random(seed)
    rows = []
    while len(rows) < count:
        drawn = rng.sample(pairs, rng.choice(pieces))
        en = " ".join(p[0] for p in drawn)
        if not min_words <= len(en.split()) <= max_words:
            continue
        it = " ".join(p[1] for p in drawn)
        rows.append({"translation": {"en": en, "it": it}, "origin": f"concat:{len(drawn)}"})
    if shuffle:
        rng.shuffle(rows)
    return [{"id": str(i), **row} for i, row in enumerate(rows)]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder to write train.jsonl.gz into")
    parser.add_argument("--count", type=int, default=20000, help="how many joined pairs to write")
    parser.add_argument("--max-words", type=int, default=40, help="longest English side, in words")
    parser.add_argument("--min-words", type=int, default=0, help="shortest English side, in words")
    parser.add_argument("--pieces", type=int, nargs="+", default=[2, 3], help="how many real pairs a row joins")
    parser.add_argument("--shuffle", action="store_true", help="shuffle the rows after the draw")
    parser.add_argument("--seed", type=int, default=0, help="seed of the draw")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    missing = [str(p) for p in SOURCES if not p.exists()]
    if missing:
        print(f"error: missing {', '.join(missing)}", file=sys.stderr)
        return 2
    pairs = [pair for path in SOURCES for pair in read_pairs(path)]
    if min(args.pieces) < 2 or args.min_words > args.max_words:
        print("error: --pieces must be 2 or more, and --min-words at most --max-words", file=sys.stderr)
        return 2
    rows = concatenations(
        pairs, args.count, args.max_words, args.seed, tuple(args.pieces), args.min_words, args.shuffle
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    with gzip.GzipFile(out / "train.jsonl.gz", "wb", mtime=0) as f:
        f.write(text.encode("utf-8"))
    print(json.dumps({"pieces": len(pairs), "rows": len(rows)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
