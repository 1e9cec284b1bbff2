"""python -m transformer.cli.compare: two checkpoints on evaluation files, with sacrebleu's paired
bootstrap on each file and on its short and long sentences; bad input is one line before any
model loads."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import PAIRS, ROOT, write_jsonl
from transformer import load_translator
from transformer.cli import compare
from transformer.core.metrics import corpus_scores, paired_bootstrap

REFS = [it for _, it in PAIRS] * 4


def test_the_bootstrap_scores_are_the_corpus_scores_and_its_p_tells_a_real_gap_from_noise():
    worse = [" ".join(r.split()[:-1]) for r in REFS]  # every sentence loses its last word
    result = paired_bootstrap(worse, REFS, REFS)
    assert round(result["bleu"]["old"], 2) == corpus_scores(worse, REFS)["bleu"]
    assert round(result["chrf"]["new"], 2) == corpus_scores(REFS, REFS)["chrf"] == 100
    assert result["bleu"]["p"] < 0.01 and result["chrf"]["p"] < 0.01
    one_off = [*REFS[:-1], worse[-1]]  # one sentence of 64 differs
    result = paired_bootstrap(one_off, REFS, REFS)
    assert result["bleu"]["p"] > 0.05 and result["chrf"]["p"] > 0.05


def test_a_verdict_needs_a_gap_and_a_small_p():
    assert compare.verdict({"old": 40.0, "new": 41.0, "p": 0.01}, 0.05) == "+"
    assert compare.verdict({"old": 41.0, "new": 40.0, "p": 0.01}, 0.05) == "-"
    assert compare.verdict({"old": 40.0, "new": 41.0, "p": 0.2}, 0.05) == "="
    # sacrebleu gives two identical outputs its smallest p: no gap is no difference
    assert compare.verdict({"old": 40.0, "new": 40.0, "p": 0.001}, 0.05) == "="


def test_the_slices_are_the_short_and_the_long_sentences():
    sources = ["One two.", "One two three four five six seven.", "a b c d e f g h", " ".join("w" * 15)]
    assert compare.slices(sources, 8, 15) == {"all": [0, 1, 2, 3], "< 8 words": [0, 1], ">= 15 words": [3]}
    assert compare.slices(sources[:1], 8, 15) == {"all": [0], "< 8 words": [0]}


def test_two_models_on_two_files(tiny_checkpoint, other_checkpoint, data_dir, tmp_path, capsys):
    (tmp_path / "long").mkdir()
    long = write_jsonl(
        tmp_path / "long" / "test.jsonl", [(" ".join(["the cat sleeps"] * 5), "il gatto dorme"), PAIRS[0]]
    )
    out = tmp_path / "out"
    argv = ["--old", str(tiny_checkpoint), "--new", str(other_checkpoint), "--data", str(data_dir), str(long)]
    assert compare.main([*argv, "--samples", "50", "--output-dir", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    report = json.loads(lines[-1])
    got = [(r["set"], r["slice"], r["n"]) for r in report["rows"]]
    assert got == [(data_dir.name + "/test", "all", 6), (data_dir.name + "/test", "< 8 words", 6)] + [
        ("long/test", "all", 2),
        ("long/test", "< 8 words", 1),
        ("long/test", ">= 15 words", 1),
    ]
    assert lines[0].startswith("| set | slice | n |") and len(lines) == 2 + len(got) + 1
    old = load_translator(tiny_checkpoint).translate([s for s, _ in PAIRS[6:12]])
    assert (out / f"{data_dir.name}-test.old.txt").read_text(encoding="utf-8").splitlines() == old
    first = report["rows"][0]
    assert first["bleu"]["old"] == pytest.approx(corpus_scores(old, [t for _, t in PAIRS[6:12]])["bleu"], abs=0.005)
    tsv = (out / "long-test.tsv").read_text(encoding="utf-8").splitlines()
    assert tsv[0] == "source\treference\told\tnew" and tsv[2].split("\t")[:2] == list(PAIRS[0])


def test_bad_input_is_one_line_before_a_model_loads(tiny_checkpoint, data_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(compare, "load_translator_or_exit", lambda *a: pytest.fail("a model loaded"))
    a_file = tmp_path / "file"
    a_file.write_text("x")
    base = ["--old", str(tiny_checkpoint), "--new", str(tiny_checkpoint)]
    for argv, line in (
        ([*base, "--data", str(tmp_path / "none.jsonl")], f"{tmp_path / 'none.jsonl'}: no such file or directory"),
        ([*base, "--data", str(data_dir), "--output-dir", str(a_file)], f"--output-dir {a_file}: is a file"),
        ([*base, "--data", str(data_dir), str(data_dir)], f"--data {data_dir}: given twice"),
    ):
        with pytest.raises(SystemExit) as stop:
            compare.main(argv)
        err = capsys.readouterr().err
        assert stop.value.code == 2 and line in err and err.count("\n") == 1, (argv, err)


def test_a_reader_that_stops_early_costs_no_file(tiny_checkpoint, other_checkpoint, data_dir, tmp_path):
    """``compare ... | head``: the pipe closes before the report is printed; the translations
    and the TSV are still written, and the run ends cleanly."""
    out = tmp_path / "out"
    argv = ["--old", str(tiny_checkpoint), "--new", str(other_checkpoint), "--data", str(data_dir)]
    p = subprocess.Popen(
        [sys.executable, "-m", "transformer.cli.compare", *argv, "--samples", "20", "--output-dir", str(out)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    p.stdout.close()  # the reader has gone before the first line
    with p.stderr:
        err = p.stderr.read()
    assert p.wait(timeout=300) == 0, err[-3000:]
    assert "Traceback" not in err and "BrokenPipeError" not in err, err[-3000:]
    assert (out / f"{data_dir.name}-test.tsv").is_file() and (out / f"{data_dir.name}-test.new.txt").is_file()
