"""data/forward_translate.py --finish: the training folder keeps the teacher's pairs and drops
every pair with a side that is a sentence of an evaluation file under data/ (the corpus's test and
validation splits and the everyday set alike), or that is empty."""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

from tests.helpers import load_script

ROOT = Path(__file__).resolve().parent.parent


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
    script.finish(argparse.Namespace(out=str(out), finish=str(tmp_path / "ft")))
    assert json.loads(capsys.readouterr().out) == {"pairs": 1, "dropped": 4}
    with gzip.open(tmp_path / "ft" / "train.jsonl.gz", "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    assert rows == [{"id": "0", "translation": keep, "origin": "ft:beam"}]
    assert everyday["it"] in {s for s in script.evaluation_sentences()}
