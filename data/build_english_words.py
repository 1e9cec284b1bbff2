"""Build the app's English word list, which tells keyboard mashing from English.

    python data/build_english_words.py

Every word (as ``explorer.texts.english_word_list`` splits it: lower case, letters joined by
an apostrophe, a dot or a hyphen) of the English side of ``data/tatoeba-en-it/train.jsonl``
and of ``data/mono-en/en.txt.gz`` that occurs at least ``--min-count`` times; a word seen
once is as often a typo or a foreign name as a word. Single letters other than "a" and "i"
are left out: standing alone they are initials, and letters typed one by one are mashing.
Neither source holds a validation, test or everyday sentence (their READMEs say how that is
checked), so the rates measured on those sets are those of unseen text.

Output: ``explorer/english_words.txt.gz``, one word a line, sorted, gzip without a time
stamp, so a rebuild writes the same bytes.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import sys
from pathlib import Path

from _repo import ROOT  # the clone, first on sys.path

from explorer.texts import ENGLISH_WORDS, english_word_list

PAIRS = ROOT / "data" / "tatoeba-en-it" / "train.jsonl"
MONO = ROOT / "data" / "mono-en" / "en.txt.gz"
SINGLE_LETTERS = {"a", "i"}


def english_sentences():
    with PAIRS.open(encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)["translation"]["en"]
    with gzip.open(MONO, "rt", encoding="utf-8") as f:
        yield from f


def word_list(sentences, min_count: int) -> list[str]:
    counts = collections.Counter(w for s in sentences for w in english_word_list(s))
    return sorted(w for w, n in counts.items() if n >= min_count and (len(w) > 1 or w in SINGLE_LETTERS))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--min-count", type=int, default=2, help="fewest occurrences of a kept word")
    parser.add_argument("--out", type=Path, default=ENGLISH_WORDS, help="the gzip file to write")
    args = parser.parse_args(argv)
    missing = [str(p) for p in (PAIRS, MONO) if not p.exists()]
    if missing:
        print(f"error: missing {', '.join(missing)}", file=sys.stderr)
        return 2
    words = word_list(english_sentences(), args.min_count)
    with gzip.GzipFile(args.out, "wb", mtime=0, compresslevel=9) as f:
        f.write("".join(w + "\n" for w in words).encode("utf-8"))
    print(json.dumps({"words": len(words), "bytes": args.out.stat().st_size}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
