"""data/forward_translate.py: the monolingual text it reads, and --finish: the training folder
keeps the model's pairs and drops every pair with a side that is a sentence of an evaluation file
under data/ (the corpus's test and validation splits and the everyday set alike), or whose
model-written side is empty; the origin says which side the model wrote. A stopped translation
continues where it stopped, a file of another run is refused, and bad input is one line."""

from __future__ import annotations

import argparse
import gzip
import json
import random
from pathlib import Path

import pytest

from tests.helpers import ROOT, load_script


def first_pair(path: Path) -> dict:
    with path.open(encoding="utf-8") as f:
        return json.loads(f.readline())["translation"]


def test_finish_drops_every_evaluation_sentence_on_either_side(tmp_path, capsys):
    everyday = first_pair(ROOT / "data" / "everyday" / "test.jsonl")
    test = first_pair(ROOT / "data" / "tatoeba-en-it" / "test.jsonl")
    validation = first_pair(ROOT / "data" / "tatoeba-en-it" / "validation.jsonl")
    keep = {"en": "The purple giraffe reads a newspaper.", "it": "La giraffa viola legge un giornale."}
    pairs = [
        keep,
        {"en": "Some other English.", "it": everyday["it"]},  # the teacher wrote an everyday reference
        {"en": test["en"], "it": "Una frase qualsiasi."},
        {"en": "Yet another sentence.", "it": validation["it"]},
        {"en": "Nothing came out.", "it": ""},
    ]
    out = tmp_path / "mono-en.it.jsonl"
    out.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs), encoding="utf-8")
    script = load_script("data/forward_translate.py")
    script.finish(argparse.Namespace(out=str(out), finish=str(tmp_path / "ft"), src="en"))
    assert json.loads(capsys.readouterr().out) == {"pairs": 1, "dropped": 4}
    with gzip.open(tmp_path / "ft" / "train.jsonl.gz", "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    assert rows == [{"id": "0", "translation": keep, "origin": "ft:beam"}]
    assert everyday["it"] in {s for s in script.evaluation_sentences()}


def test_back_translated_pairs_are_bt_and_need_their_english(tmp_path, capsys):
    """--src it: the model wrote the English, so an empty English is dropped (an empty Italian
    cannot come from the monolingual text) and the pairs are back-translated ones."""
    keep = {"it": "La giraffa viola legge un giornale.", "en": "The purple giraffe reads a newspaper."}
    pairs = [keep, {"it": "Una frase qualsiasi.", "en": ""}]
    out = tmp_path / "mono-it.en.jsonl"
    out.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs), encoding="utf-8")
    script = load_script("data/forward_translate.py")
    script.finish(argparse.Namespace(out=str(out), finish=str(tmp_path / "bt"), src="it"))
    assert json.loads(capsys.readouterr().out) == {"pairs": 1, "dropped": 1}
    with gzip.open(tmp_path / "bt" / "train.jsonl.gz", "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    assert rows == [{"id": "0", "translation": {"en": keep["en"], "it": keep["it"]}, "origin": "bt:beam"}]


def test_monolingual_text_comes_from_text_and_pair_files_once_each(tmp_path):
    """Text files give their lines, pair files their --src side; a sentence in both is read
    once, and the order is a seeded shuffle of the sorted sentences."""
    text = tmp_path / "it.txt.gz"
    with gzip.open(text, "wt", encoding="utf-8") as f:
        f.write("Ciao.\nBuongiorno.\n\n")
    pairs = tmp_path / "train.jsonl"
    pairs.write_text(
        "".join(
            json.dumps({"id": str(i), "translation": {"en": en, "it": it}}) + "\n"
            for i, (en, it) in enumerate([("Hello.", "Ciao."), ("Good night.", "Buonanotte.")])
        ),
        encoding="utf-8",
    )
    script = load_script("data/forward_translate.py")
    got = script.shuffled_sentences([text, pairs], "it", seed=0)
    assert sorted(got) == ["Buonanotte.", "Buongiorno.", "Ciao."]
    assert got == script.shuffled_sentences([pairs, text], "it", seed=0)
    expected = ["Buonanotte.", "Buongiorno.", "Ciao."]
    random.Random(0).shuffle(expected)
    assert got == expected


def test_skip_and_limit_take_a_slice_of_the_same_shuffle(tmp_path):
    """--skip leaves out what an earlier round translated: two rounds with the same seed, one
    with --limit N and one with --skip N, cover the text once between them."""
    text = tmp_path / "en.txt"
    text.write_text("".join(f"Sentence {i}.\n" for i in range(10)), encoding="utf-8")
    script = load_script("data/forward_translate.py")
    args = script.parse_args(["--mono", str(text), "--out", str(tmp_path / "o.jsonl"), "--limit", "4"])
    first = script.work(args)
    args = script.parse_args(["--mono", str(text), "--out", str(tmp_path / "o.jsonl"), "--skip", "4", "--limit", "3"])
    second = script.work(args)
    assert len(first) == 4 and len(second) == 3 and not set(first) & set(second)
    whole = script.shuffled_sentences([text], "en", seed=0)
    assert first + second == whole[:7]


class Upper:
    """A stand-in translator: the resume logic is about files, not about a model."""

    def translate(self, sentences, beam_size, batch_size):
        return [s.upper() for s in sentences]


def test_a_stopped_translation_continues_and_another_shuffles_file_is_refused(tmp_path, capsys, monkeypatch):
    text = tmp_path / "en.txt"
    text.write_text("".join(f"Sentence {i}.\n" for i in range(5)), encoding="utf-8")
    out = tmp_path / "o.jsonl"
    script = load_script("data/forward_translate.py")
    monkeypatch.setattr(script, "load_translator", lambda *a: Upper())
    monkeypatch.setattr(script, "CHUNK", 2)
    base = ["--mono", str(text), "--out", str(out), "--checkpoint", "x"]
    assert script.main([*base, "--limit", "3"]) == 0
    with out.open("a", encoding="utf-8") as f:
        f.write('{"en": "Sentence')  # a line cut by a stop
    assert script.main(base) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["en"] for r in rows] == script.shuffled_sentences([text], "en", seed=0)
    assert all(r["it"] == r["en"].upper() for r in rows)
    capsys.readouterr()
    before = out.read_bytes()
    assert script.main([*base, "--seed", "1"]) == 2  # another order: nothing appended
    err = capsys.readouterr().err
    assert err.startswith(f"error: --out {out}: line ") and err.endswith("give a new --out\n") and err.count("\n") == 1
    assert out.read_bytes() == before


def test_bad_input_is_one_line_before_the_model_loads(tmp_path, capsys, monkeypatch):
    script = load_script("data/forward_translate.py")
    monkeypatch.setattr(script, "load_translator", lambda *a: pytest.fail("the model loaded"))
    text = tmp_path / "en.txt"
    text.write_text("Hello.\n", encoding="utf-8")
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"translation": {"it": "Ciao."}}\n', encoding="utf-8")
    junk = tmp_path / "junk.jsonl"
    junk.write_text('{"en": "Hello.", "it": "Ciao."}\nnot json\n', encoding="utf-8")
    out, ft = str(tmp_path / "o.jsonl"), str(tmp_path / "ft")
    cases = (
        (["--mono", str(tmp_path / "none.txt"), "--out", out], f"error: --mono {tmp_path / 'none.txt'}: no such file"),
        (["--mono", str(pairs), "--out", out], "error: --mono: a JSONL file is not pairs with a 'en' side (KeyError"),
        (["--mono", str(text), "--out", out, "--beam-size", "0"], "error: --beam-size 0: a positive number is needed"),
        (["--mono", str(text), "--out", out, "--skip", "-1"], "error: --skip -1: a number of sentences (0 or more)"),
        (["--mono", str(text), "--out", str(junk)], f"error: --out {junk}: not this script's pairs (JSONDecodeError"),
        (["--out", out, "--finish", ft], f"error: --out {out}: no such file (translate into it first)"),
        (["--out", str(junk), "--finish", ft], f"error: --out {junk}: line 2 is not an (en, it) pair"),
    )
    for args, line in cases:
        assert script.main(args) == 2
        err = capsys.readouterr().err
        assert err.startswith(line) and err.count("\n") == 1, (args, err)
    assert not (tmp_path / "ft").exists() and not Path(out).exists()


def test_a_missing_checkpoint_is_one_line(tmp_path, capsys):
    text = tmp_path / "en.txt"
    text.write_text("Hello.\n", encoding="utf-8")
    script = load_script("data/forward_translate.py")
    missing = tmp_path / "no-model"
    assert script.main(["--mono", str(text), "--out", str(tmp_path / "o.jsonl"), "--checkpoint", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --checkpoint {missing}: ") and err.count("\n") == 1
    assert not (tmp_path / "o.jsonl").exists()


def test_several_checkpoints_translate_together(tiny_checkpoint, other_checkpoint, tmp_path):
    from transformer import load_translator
    from transformer.core.rerank import ensemble_translate

    text = tmp_path / "en.txt"
    text.write_text("the cat sleeps.\ni see the dog.\nwe see a house.\n", encoding="utf-8")
    out = tmp_path / "o.jsonl"
    script = load_script("data/forward_translate.py")
    argv = ["--mono", str(text), "--out", str(out), "--beam-size", "2", "--checkpoint"]
    assert script.main([*argv, str(tiny_checkpoint), str(other_checkpoint)]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    models = [load_translator(tiny_checkpoint), load_translator(other_checkpoint)]
    assert [r["it"] for r in rows] == ensemble_translate(models, [r["en"] for r in rows], beam_size=2)
    # the second model had a say: the ensemble is not the first model's beam alone
    assert [r["it"] for r in rows] != models[0].translate([r["en"] for r in rows], beam_size=2)
