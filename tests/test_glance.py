"""``python -m transformer.cli.glance``: the test set at a glance (``transformer/cli/glance.py``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.helpers import exit_2
from transformer.cli import glance


def test_writes_one_line_per_sentence_with_every_measure(tiny_checkpoint, data_dir, tmp_path, capfd):
    out = tmp_path / "glance.json"
    assert glance.main(["--checkpoint", str(tiny_checkpoint), "--data", str(data_dir), "--out", str(out)]) == 0
    last = json.loads(capfd.readouterr().out.strip().splitlines()[-1])
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert last["n"] == doc["n"] == len(doc["sentences"]) == 6  # the fixture's test split
    for row in doc["sentences"]:
        assert set(row) == {"src", "ref", "hyp", "chrf", "logprob", "src_share", "coverage"}
        assert 0 <= row["chrf"] <= 100 and row["logprob"] <= 0
        assert 0 <= row["src_share"] <= 1 and 0 <= row["coverage"] <= 1
    assert doc["mean"]["chrf"] == pytest.approx(np.mean([r["chrf"] for r in doc["sentences"]]), abs=1e-3)


def test_coverage_definition():
    cross = np.zeros((2, 2, 3, 4))  # (L, H, T, S): 3 steps over [SOS] a b [EOS]
    cross[-1, :, :, 1] = 1.0  # every step of every head on "a"
    assert glance.coverage(cross, [True, False, False, True]) == 0.5
    cross[-1, 0, 0] = [0, 0, 1, 0]  # one head, one step on "b": mass 0.5 after the mean of heads
    assert glance.coverage(cross, [True, False, False, True]) == 1.0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--data", "no/such.jsonl"], "no/such.jsonl: no such file or directory"),
        (["--limit", "0"], "--limit: expected a whole number ≥ 1, got '0'"),
        (["--out", "/no/such/dir/glance.json"], "no such directory"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capfd, tiny_checkpoint, argv, message):
    line = exit_2(capfd, glance.main, ["--checkpoint", str(tiny_checkpoint), *argv])
    assert message in line
