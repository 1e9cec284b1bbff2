"""data/filter_by_confidence.py: each pair's score is the model's length-normalised
log-probability of its target, the figure "Your own reference" shows for one sentence, and the
kept pairs are the surest ones, in the file's order."""

from __future__ import annotations

import gzip
import json

import pytest

from tests.helpers import PAIRS, load_script
from transformer.interpret.reference import score_reference


def load_filter():
    return load_script("data/filter_by_confidence.py")


def test_batched_scores_are_the_references_mean_log_probability(translator):
    pairs = PAIRS[:7] + [("the cat sleeps on the red sofa near the window.", "il gatto dorme.")]
    got = load_filter().scores(translator, pairs, batch_size=3)
    want = [score_reference(translator, s, t).mean_log_prob for s, t in pairs]
    assert got == pytest.approx(want, abs=1e-4)


def test_the_surest_fraction_is_kept_in_order():
    keep = load_filter().most_confident
    assert keep([-0.5, -0.1, -2.0, -0.3, -0.2], 0.6) == [1, 3, 4]
    assert keep([-0.5, -0.1], 1.0) == [0, 1] and keep([-0.5, -0.1], 0.4) == [1]


def test_main_writes_the_kept_lines_as_read(tiny_checkpoint, tmp_path, capsys):
    rows = [
        {"id": str(i), "translation": {"en": en, "it": it}, "origin": "ft:beam"} for i, (en, it) in enumerate(PAIRS)
    ]
    src = tmp_path / "pairs.jsonl.gz"
    with gzip.open(src, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    out, scored = tmp_path / "kept.jsonl", tmp_path / "scores.jsonl"
    args = ["--checkpoint", str(tiny_checkpoint), "--pairs", str(src), "--out", str(out), "--keep", "0.5"]
    assert load_filter().main([*args, "--scores", str(scored)]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    kept = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    values = [json.loads(line)["score"] for line in scored.read_text().splitlines()]
    assert summary["read"] == len(rows) and summary["kept"] == len(kept) == round(0.5 * len(rows))
    assert kept == [rows[i] for i in sorted(int(r["id"]) for r in kept)]  # as read, in order
    assert min(values[int(r["id"])] for r in kept) >= max(
        v for i, v in enumerate(values) if str(i) not in {r["id"] for r in kept}
    )


def test_bad_input_is_one_line_before_the_model_loads(tmp_path, capsys, monkeypatch):
    script = load_filter()
    monkeypatch.setattr(script, "load_translator", lambda *a: pytest.fail("the model loaded"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"translation": {"en": "x"}}\n')
    for args, line in (
        (["--pairs", str(tmp_path / "none.jsonl")], f"error: --pairs {tmp_path / 'none.jsonl'}: no such file"),
        (["--pairs", str(bad), "--keep", "1.5"], "error: --keep 1.5: a fraction in (0, 1] is needed"),
    ):
        assert script.main(["--checkpoint", "x", "--out", str(tmp_path / "o"), *args]) == 2
        assert capsys.readouterr().err == line + "\n"
    assert script.main(["--checkpoint", "x", "--out", str(tmp_path / "o"), "--pairs", str(bad)]) == 2
    assert capsys.readouterr().err.startswith(f"error: --pairs {bad}: not pairs in the corpus's schema (KeyError")
