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


def test_long_rows_keep_both_word_limits_and_shuffled_ids_follow_the_order():
    build = load_builder()
    rows = build.concatenations(PAIRS, 300, max_words=12, seed=2, pieces=(2, 3, 4), min_words=9, shuffle=True)
    # 3 words a sentence: 9-12 words are 3 or 4 pieces, never 2
    assert {row["origin"] for row in rows} == {"concat:3", "concat:4"}
    assert all(9 <= len(row["translation"]["en"].split()) <= 12 for row in rows)
    assert [row["id"] for row in rows] == [str(i) for i in range(300)]
    unshuffled = build.concatenations(PAIRS, 300, max_words=12, seed=2, pieces=(2, 3, 4), min_words=9)
    assert rows != unshuffled
    key = lambda row: row["translation"]["en"]  # noqa: E731
    assert sorted(map(key, rows)) == sorted(map(key, unshuffled))


def test_main_refuses_a_piece_count_under_two(tmp_path, capsys):
    assert load_builder().main(["--out", str(tmp_path / "joined"), "--pieces", "1", "2"]) == 2
    assert capsys.readouterr().err.count("\n") == 1 and not (tmp_path / "joined").exists()
