"""Translations judged by reading: the file format (transformer.core.judgements), the counts
compare prints from it, and python -m transformer.cli.judge, which records a reader's yes and no
from compare's TSV without ever overwriting an earlier word; and the everyday set's own file."""

from __future__ import annotations

import json

import pytest

from tests.helpers import PAIRS, ROOT
from transformer import load_translator
from transformer.cli import compare, judge
from transformer.core.judgements import Judgements, JudgementsError, load_judgements, save_judgements, tally

EVERYDAY = ROOT / "data" / "everyday"


def test_a_verdict_is_per_source_and_translation_and_a_contradiction_is_refused():
    judged = Judgements()
    assert judged.add("The cat sleeps.", "Il gatto dorme.", True)
    assert not judged.add(" The cat sleeps. ", "Il gatto dorme. ", True)  # the same judgement, ends stripped
    judged.add("The cat sleeps.", "Il cane dorme.", False)
    assert judged.verdict("The cat sleeps.", "Il gatto dorme.") is True
    assert judged.verdict("The cat sleeps.", "Il cane dorme.") is False
    assert judged.verdict("The dog sleeps.", "Il gatto dorme.") is None  # the same words, another source
    with pytest.raises(JudgementsError, match="was judged correct before"):
        judged.add("The cat sleeps.", "Il gatto dorme.", False)
    assert judged.verdict("The cat sleeps.", "Il gatto dorme.") is True
    counts = tally(judged, ["The cat sleeps."] * 3, ["Il gatto dorme.", "Il cane dorme.", "Gatto."])
    assert counts == {"n": 3, "correct": 1, "wrong": 1, "unjudged": 1}


def test_the_file_round_trips_in_a_stable_order(tmp_path):
    judged = Judgements(rule="whole meaning")
    for source, translation, ok in [("b", "B2", False), ("a", "A", True), ("b", "B1", True), ("b", "B0", False)]:
        judged.add(source, translation, ok)
    path = tmp_path / "judgements.json"
    save_judgements(judged, path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert list(data["sentences"]) == ["a", "b"]
    assert data["sentences"]["b"] == {"correct": ["B1"], "wrong": ["B0", "B2"]}
    again = load_judgements(path)
    assert again == judged and not (tmp_path / "judgements.json.partial").exists()


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "not a judgements file"),
        ('{"rule": "x"}', 'expected an object with "sentences"'),
        ('{"sentences": {"a": ["A"]}}', 'expected {"correct": [...], "wrong": [...]}'),
        ('{"sentences": {"a": {"correct": "A"}}}', "'correct' must be a list of translations"),
        ('{"sentences": {"a": {"correct": ["A"], "wrong": ["A "]}}}', "'A ' is both correct and wrong"),
    ],
)
def test_a_malformed_file_is_one_line_naming_it(tmp_path, text, message):
    path = tmp_path / "j.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(JudgementsError) as caught:
        load_judgements(path)
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value)
    assert "\n" not in str(caught.value)
    with pytest.raises(JudgementsError, match="no such file"):
        load_judgements(tmp_path / "none.json")


def test_compare_counts_each_models_judged_translations_and_the_tsv_marks_them(
    tiny_checkpoint, other_checkpoint, data_dir, tmp_path, capsys
):
    sources = [s for s, _ in PAIRS[6:12]]
    old = load_translator(tiny_checkpoint).translate(sources)
    new = load_translator(other_checkpoint).translate(sources)
    judged = Judgements()
    judged.add(sources[0], old[0], True)
    judged.add(sources[1], old[1], False)
    judged.add(sources[2], new[2], True)
    path = tmp_path / "judgements.json"
    save_judgements(judged, path)
    out = tmp_path / "out"
    argv = ["--old", str(tiny_checkpoint), "--new", str(other_checkpoint), "--data", str(data_dir)]
    assert compare.main([*argv, "--samples", "20", "--judgements", str(path), "--output-dir", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    expected = {"old": tally(judged, sources, old), "new": tally(judged, sources, new)}
    assert json.loads(lines[-1])["judged"] == {f"{data_dir.name}/test": expected}
    line = f"{data_dir.name}/test: read one by one, old {expected['old']['correct']} correct, "
    assert lines[-2].startswith(line + f"new {expected['new']['correct']} correct, of 6 (not yet judged: old ")
    tsv = [row.split("\t") for row in (out / f"{data_dir.name}-test.tsv").read_text(encoding="utf-8").splitlines()]
    assert tsv[0][-2:] == ["old correct", "new correct"]
    assert [row[4] for row in tsv[1:4]] == ["yes", "no", "yes" if old[2] == new[2] else ""]
    assert tsv[3][5] == "yes" and tsv[6][4:] == ["", ""]


def test_compare_refuses_a_bad_judgements_file_before_a_model_loads(data_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(compare, "load_translator_or_exit", lambda *a: pytest.fail("a model loaded"))
    bad = tmp_path / "j.json"
    bad.write_text("[]", encoding="utf-8")
    with pytest.raises(SystemExit) as stop:
        compare.main(["--old", "a", "--new", "b", "--data", str(data_dir), "--judgements", str(bad)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and f"--judgements {bad}: not a judgements file" in err and err.count("\n") == 1


def filled_tsv(path, rows):
    header = "source\treference\told\tnew\told correct\tnew correct\n"
    path.write_text(header + "".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_judge_records_the_filled_cells_and_skips_the_empty_ones(tmp_path, capsys):
    path = tmp_path / "judgements.json"
    tsv = filled_tsv(
        tmp_path / "everyday-test.tsv",
        [("Hello.", "Ciao.", "Ciao.", "Salve.", "yes", ""), ("Bread.", "Pane.", "Pan.", "Pane.", "no", "Yes")],
    )
    assert judge.main(["--judgements", str(path), "--tsv", str(tsv), "--rule", "whole meaning"]) == 0
    assert capsys.readouterr().out.startswith("3 new judgements recorded;")
    judged = load_judgements(path)
    assert judged.rule == "whole meaning"
    assert judged.sentences == {"Hello.": {"Ciao.": True}, "Bread.": {"Pan.": False, "Pane.": True}}
    assert judge.main(["--judgements", str(path), "--tsv", str(tsv)]) == 0  # again: nothing new
    assert capsys.readouterr().out.startswith("0 new judgements recorded;")


@pytest.mark.parametrize(
    "row, message",
    [
        (("Hello.", "Ciao.", "Ciao.", "Salve.", "maybe", ""), "line 2: 'old correct' is 'maybe'; write yes, no"),
        (("Hello.", "Ciao.", "Ciao.", "Salve.", "no", ""), "'Hello.': 'Ciao.' was judged correct before"),
    ],
)
def test_judge_refuses_a_bad_cell_or_a_contradiction_and_leaves_the_file_as_it_was(tmp_path, capsys, row, message):
    path = tmp_path / "judgements.json"
    judged = Judgements(rule="r")
    judged.add("Hello.", "Ciao.", True)
    save_judgements(judged, path)
    before = path.read_bytes()
    with pytest.raises(SystemExit) as stop:
        judge.main(["--judgements", str(path), "--tsv", str(filled_tsv(tmp_path / "t.tsv", [row]))])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and message in err and err.count("\n") == 1, err
    assert path.read_bytes() == before


def test_judge_wants_a_tsv_with_judgement_columns(tmp_path, capsys):
    tsv = tmp_path / "plain.tsv"
    tsv.write_text("source\treference\told\tnew\nHello.\tCiao.\tCiao.\tSalve.\n", encoding="utf-8")
    with pytest.raises(SystemExit) as stop:
        judge.main(["--judgements", str(tmp_path / "j.json"), "--tsv", str(tsv)])
    assert stop.value.code == 2 and "run compare with --judgements" in capsys.readouterr().err
    assert not (tmp_path / "j.json").exists()


def test_the_everyday_judgements_cover_exactly_the_everyday_sentences():
    judged = load_judgements(EVERYDAY / "judgements.json")
    pairs = [json.loads(line)["translation"] for line in (EVERYDAY / "test.jsonl").read_text("utf-8").splitlines()]
    assert set(judged.sentences) == {pair["en"] for pair in pairs}
    assert judged.rule
    # each reference a reader wrote is, by construction, a correct translation
    assert all(judged.verdict(pair["en"], pair["it"]) is not False for pair in pairs)
