"""Check the long evaluation set against every other data file under ``data/``.

    python data/long/check.py        # about 5 minutes: it reads every training file

It fails (one line, exit code 1) if a pair's English is not 15-35 words (split on whitespace),
if a sentence of the set, either side, equals a sentence of another data file once case, spaces
and punctuation are folded away, or if it occurs inside a sentence of a training file (a joined
pair of ``data/tatoeba-en-it-concat``, say). ``tests/test_data_hygiene.py`` guards the other way
round on every run: no training file may hold one of these sentences exactly. On success it prints
the English word-length distribution that ``data/long/README.md`` quotes.
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
import sys
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent
MIN_WORDS, MAX_WORDS = 15, 35


def folded(text: str) -> str:
    """Lower case, punctuation (apostrophes too) as spaces, spaces folded."""
    text = unicodedata.normalize("NFC", text).lower()
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", " ", text)).strip()


def sentences(path: Path) -> list[str]:
    """Every sentence of a pairs file (both sides) or of a monolingual file."""
    opener = gzip.open if path.suffix == ".gz" else open
    out = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            if ".jsonl" in path.name:
                out.extend(json.loads(line)["translation"].values())
            else:
                out.append(line.rstrip("\n"))
    return out


def main() -> int:
    rows = [json.loads(line) for line in (HERE / "test.jsonl").read_text(encoding="utf-8").splitlines()]
    lengths = [len(r["translation"]["en"].split()) for r in rows]
    problems = [
        f"{r['id']}: {n} English words, not {MIN_WORDS}-{MAX_WORDS}"
        for r, n in zip(rows, lengths)
        if not MIN_WORDS <= n <= MAX_WORDS
    ]
    ours = {folded(s): r["id"] for r in rows for s in r["translation"].values()}
    if len(ours) != 2 * len(rows):
        problems.append("a sentence appears twice in the set")
    others = sorted(
        p
        for p in DATA.rglob("*")
        if p.is_file() and p.name.endswith((".jsonl", ".jsonl.gz", ".txt.gz")) and p.parent != HERE
    )
    for path in others:
        texts = {folded(s) for s in sentences(path)}
        training = path.name.split(".")[0] not in ("validation", "test")
        joined = "\n".join(sorted(texts)) if training else ""
        for text, row_id in ours.items():
            if text in texts:
                problems.append(f"{row_id}: a sentence of {path.relative_to(DATA)}")
            elif training and text in joined:
                problems.append(f"{row_id}: inside a sentence of {path.relative_to(DATA)}")
        print(f"{path.relative_to(DATA)}: {len(texts):,} sentences compared", file=sys.stderr)
    if problems:
        print(f"error: {len(problems)} problem(s), e.g. {problems[0]}")
        return 1
    print(
        json.dumps(
            {
                "pairs": len(rows),
                "files compared": len(others),
                "en words": {
                    "min": min(lengths),
                    "median": statistics.median(lengths),
                    "mean": round(statistics.mean(lengths), 1),
                    "max": max(lengths),
                },
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
