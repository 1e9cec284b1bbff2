"""data/build_concat.py: the joined pairs for longer inputs are real pairs end to end, drawn the
same way every time, within the word limit, and written in the corpus's schema."""

from __future__ import annotations

import gzip
import json

from tests.helpers import load_script


def load_builder():
    return load_script("data/build_concat.py")


PAIRS = [(f"Sentence number {i}.", f"Frase numero {i}.") for i in range(50)]


def test_each_row_joins_two_or_three_distinct_real_pairs_in_order():
    rows = load_builder().concatenations(PAIRS, 200, max_words=40, seed=0)
    assert len(rows) == 200
    for row in rows:
        en, it = row["translation"]["en"], row["translation"]["it"]
        numbers = [int(w.rstrip(".")) for w in en.split() if w.rstrip(".").isdigit()]
        assert (
            row["origin"] == f"concat:{len(numbers)}" and len(numbers) in (2, 3) and len(set(numbers)) == len(numbers)
        )
        # the Italian side is the same pairs' Italian, in the same order
        assert it == " ".join(f"Frase numero {n}." for n in numbers)


def test_the_draw_is_fixed_by_its_seed_and_keeps_the_word_limit():
    build = load_builder()
    assert build.concatenations(PAIRS, 50, 40, 1) == build.concatenations(PAIRS, 50, 40, 1)
    assert build.concatenations(PAIRS, 50, 40, 1) != build.concatenations(PAIRS, 50, 40, 2)
    rows = build.concatenations(PAIRS, 100, max_words=6, seed=0)  # 3 words a sentence: only pairs of 2 fit
    assert {row["origin"] for row in rows} == {"concat:2"}


def test_main_writes_a_gzipped_jsonl_folder(tmp_path):
    assert load_builder().main(["--out", str(tmp_path / "joined"), "--count", "30"]) == 0
    with gzip.open(tmp_path / "joined" / "train.jsonl.gz", "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    assert len(rows) == 30 and set(rows[0]) == {"id", "translation", "origin"}
