"""No evaluation sentence is ever trained on.

Every JSONL file under ``data/`` other than a ``validation.jsonl`` or ``test.jsonl`` is
training data (``train.py`` reads them as the train split, or as ``--extra-train``). None of
their sentences, on either side, may be a sentence of any validation or test file under
``data/``, nor one of the held-out sentences of the public Tatoeba eng-ita evaluation
releases, which ``data/tatoeba-en-it/heldout-fingerprints.txt`` lists as fingerprints
(``transformer.backtranslate --heldout`` writes it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from transformer.backtranslate import fingerprint, normalize, read_fingerprints

DATA = Path(__file__).resolve().parent.parent / "data"
EVALUATION_NAMES = ("validation.jsonl", "test.jsonl")


def sentences(path: Path) -> set[str]:
    """Every sentence of a JSONL file in the corpus schema, both sides, normalised."""
    out = set()
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                out.update(normalize(s) for s in json.loads(line)["translation"].values())
    return out


def leaks(root: Path) -> list[str]:
    """One line per training file that holds an evaluation or held-out sentence."""
    files = sorted(root.rglob("*.jsonl"))
    evaluation = set().union(*(sentences(f) for f in files if f.name in EVALUATION_NAMES))
    held = set().union(*(read_fingerprints(f) for f in sorted(root.rglob("heldout-fingerprints.txt"))))
    found = []
    for f in files:
        if f.name in EVALUATION_NAMES:
            continue
        train = sentences(f)
        direct = sorted(train & evaluation)
        hashed = sorted(s for s in train if fingerprint(s) in held)
        for kind, hits in (("an evaluation sentence", direct), ("a held-out sentence", hashed)):
            if hits:
                found.append(f"{f.relative_to(root)}: {len(hits)} x {kind}, e.g. {hits[0]!r}")
    return found


def test_no_training_file_under_data_holds_an_evaluation_sentence():
    assert sorted(DATA.rglob("heldout-fingerprints.txt")), "the held-out fingerprints are missing"
    assert sorted(DATA.rglob("train.jsonl")), "no training file found"
    assert leaks(DATA) == []


@pytest.fixture
def corpus(tmp_path) -> Path:
    root = tmp_path / "data"
    (root / "main").mkdir(parents=True)
    (root / "bt").mkdir()
    row = lambda en, it: json.dumps({"translation": {"en": en, "it": it}}) + "\n"  # noqa: E731
    (root / "main" / "train.jsonl").write_text(row("a.", "uno.") + row("b.", "due."), encoding="utf-8")
    (root / "main" / "validation.jsonl").write_text(row("c.", "tre."), encoding="utf-8")
    (root / "main" / "test.jsonl").write_text(row("d.", "quattro."), encoding="utf-8")
    (root / "main" / "heldout-fingerprints.txt").write_text(fingerprint("e.") + "\n", encoding="utf-8")
    (root / "bt" / "train.jsonl").write_text(row("f.", "sei."), encoding="utf-8")
    return root


def test_the_check_finds_every_kind_of_leak(corpus):
    assert leaks(corpus) == []
    bt = corpus / "bt" / "train.jsonl"
    bt.write_text(bt.read_text() + json.dumps({"translation": {"en": "x.", "it": "quattro."}}) + "\n")
    assert leaks(corpus) == ["bt/train.jsonl: 1 x an evaluation sentence, e.g. 'quattro.'"]
    bt.write_text(json.dumps({"translation": {"en": " e. ", "it": "sette."}}) + "\n")
    assert leaks(corpus) == ["bt/train.jsonl: 1 x a held-out sentence, e.g. 'e.'"]
