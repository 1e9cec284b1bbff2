"""No evaluation sentence is ever trained on, and every data file reads as its README says.

Two kinds of data file live under ``data/``:

- sentence pairs: JSON lines in the corpus schema (``{"translation": {"en": ..., "it": ...}}``),
  as ``.jsonl`` or gzip-compressed ``.jsonl.gz``;
- monolingual text: one sentence a line, gzip-compressed, named for its language
  (``data/mono-en/en.txt.gz``).

A pairs file named ``validation`` or ``test`` is evaluation data (``data/everyday`` and ``data/long``
hold only a ``test.jsonl``: evaluation-only folders); every other data file is training material
(``train.py`` reads pairs as the train split or ``--extra-train``; monolingual text is made into
synthetic pairs). No training file may hold, on either side, a sentence of any evaluation file
under ``data/``, nor one of the held-out sentences of the public Tatoeba eng-ita evaluation
releases, which the ``heldout-fingerprints.txt`` files list as fingerprints (``transformer.training.synthetic
--heldout`` writes them).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from functools import cache
from pathlib import Path

import pytest

from transformer.training.synthetic import FINGERPRINT_HEX, fingerprint, normalize, read_fingerprints
from tests.helpers import ROOT

DATA = ROOT / "data"
PAIR_SUFFIXES = (".jsonl", ".jsonl.gz")
MONOLINGUAL_SUFFIX = ".txt.gz"
EVALUATION_STEMS = ("validation", "test")
# the evaluation-only folders the project wrote itself (never train on them)
OWN_EVALUATION_SETS = ("everyday", "long")
FINGERPRINTS = "heldout-fingerprints.txt"
# files under data/ that are not data: the folders' descriptions, the held-out list, the rebuild
# script (and the bytecode Python may leave beside it), an evaluation set's translations judged
# by reading (transformer.core.judgements: never training material)
NOT_DATA = re.compile(r"(README\.md|heldout-fingerprints\.txt|judgements\.json|.*\.pyc?)$")


def kind(path: Path) -> str | None:
    """ "pairs", "monolingual" or None (not a data file)."""
    if path.name.endswith(PAIR_SUFFIXES):
        return "pairs"
    return "monolingual" if path.name.endswith(MONOLINGUAL_SUFFIX) else None


def is_evaluation(path: Path) -> bool:
    return kind(path) == "pairs" and path.name.split(".")[0] in EVALUATION_STEMS


def data_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and kind(p))


def text_lines(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def n_rows(path: Path) -> int:
    """How many rows ``rows(path)`` holds, counted without parsing them (a README's table)."""
    lines = text_lines(path)
    return sum(1 for line in lines if line.strip()) if kind(path) == "pairs" else len(lines)


def rows(path: Path) -> tuple[dict, ...]:
    """A pairs file's rows, or a monolingual file's lines as rows of one language (named by
    the file). Read once per version of the file: several checks read the same large files."""
    stat = path.stat()
    return _rows(path, stat.st_mtime_ns, stat.st_size)


@cache
def _rows(path: Path, mtime_ns: int, size: int) -> tuple[dict, ...]:
    if kind(path) == "pairs":
        return tuple(json.loads(line) for line in text_lines(path) if line.strip())
    # every line of monolingual text is a sentence: an empty one is a defect the checks should see
    lang = path.name.split(".")[0]
    return tuple({"translation": {lang: line}} for line in text_lines(path))


def sentences(path: Path) -> dict[str, str]:
    """Every sentence of a data file, every side, normalised, with its fingerprint."""
    stat = path.stat()
    return _sentences(path, stat.st_mtime_ns, stat.st_size)


@cache
def _sentences(path: Path, mtime_ns: int, size: int) -> dict[str, str]:
    texts = {normalize(s) for row in rows(path) for s in row["translation"].values()}
    return {s: fingerprint_normalised(s) for s in texts}


def fingerprint_normalised(text: str) -> str:
    """``fingerprint`` of a sentence already normalised, without normalising it again (the
    check fingerprints every training sentence, some 500,000)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:FINGERPRINT_HEX]


def test_the_check_fingerprints_as_the_library_does():
    for text in ("Così è.", "  Two  spaces. ", "cafe\u0301"):
        assert fingerprint_normalised(normalize(text)) == fingerprint(text)


def leaks(root: Path) -> list[str]:
    """One line per training file that holds an evaluation or held-out sentence."""
    files = data_files(root)
    evaluation = set().union(*(sentences(f) for f in files if is_evaluation(f)))
    held = set().union(*(read_fingerprints(f) for f in sorted(root.rglob(FINGERPRINTS))))
    found = []
    for f in files:
        if is_evaluation(f):
            continue
        train = sentences(f)
        direct = sorted(train.keys() & evaluation)
        hashed = sorted(s for s, h in train.items() if h in held)
        for what, hits in (("an evaluation sentence", direct), ("a held-out sentence", hashed)):
            if hits:
                found.append(f"{f.relative_to(root)}: {len(hits)} x {what}, e.g. {hits[0]!r}")
    return found


@pytest.mark.slow  # reads every file under data/ (about a million sentences)
def test_no_training_file_under_data_holds_an_evaluation_sentence():
    assert sorted(DATA.rglob(FINGERPRINTS)), "the held-out fingerprints are missing"
    assert [f for f in data_files(DATA) if not is_evaluation(f)], "no training file found"
    assert leaks(DATA) == []


def test_the_projects_own_evaluation_sets_are_read_as_evaluation_data():
    """The sets the project wrote (``data/everyday``, ``data/long``) hold only evaluation files:
    a file there named otherwise (``long.jsonl``) would count as training material, and its
    sentences would stop guarding anything."""
    for folder in OWN_EVALUATION_SETS:
        files = data_files(DATA / folder)
        assert files, f"data/{folder} has no data file"
        assert [f.name for f in files if not is_evaluation(f)] == [], f"data/{folder} holds a training file"


def test_every_file_under_data_is_checked():
    """A data file in a format the check does not read (``train.parquet``, ``en.txt``) would
    escape it, so there must be none."""
    unread = [
        str(p.relative_to(DATA))
        for p in sorted(DATA.rglob("*"))
        if p.is_file() and not kind(p) and not NOT_DATA.fullmatch(p.name)
    ]
    assert unread == []


@pytest.fixture
def corpus(tmp_path) -> Path:
    root = tmp_path / "data"
    (root / "main").mkdir(parents=True)
    (root / "bt").mkdir()
    row = lambda en, it: json.dumps({"translation": {"en": en, "it": it}}) + "\n"
    (root / "main" / "train.jsonl").write_text(row("a.", "uno.") + row("b.", "due."), encoding="utf-8")
    (root / "main" / "validation.jsonl").write_text(row("c.", "tre."), encoding="utf-8")
    (root / "main" / "test.jsonl").write_text(row("d.", "quattro."), encoding="utf-8")
    (root / "main" / FINGERPRINTS).write_text(fingerprint("e.") + "\n", encoding="utf-8")
    (root / "bt" / "train.jsonl").write_text(row("f.", "sei."), encoding="utf-8")
    return root


def write_gzip(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(text)


def test_the_check_finds_every_kind_of_leak(corpus):
    assert leaks(corpus) == []
    bt = corpus / "bt" / "train.jsonl"
    bt.write_text(bt.read_text() + json.dumps({"translation": {"en": "x.", "it": "quattro."}}) + "\n")
    assert leaks(corpus) == ["bt/train.jsonl: 1 x an evaluation sentence, e.g. 'quattro.'"]
    bt.write_text(json.dumps({"translation": {"en": " e. ", "it": "sette."}}) + "\n")
    assert leaks(corpus) == ["bt/train.jsonl: 1 x a held-out sentence, e.g. 'e.'"]


def test_the_check_reads_gzip_files(corpus):
    write_gzip(corpus / "bt" / "more.jsonl.gz", json.dumps({"translation": {"en": "c.", "it": "otto."}}) + "\n")
    write_gzip(corpus / "bt" / "en.txt.gz", "nove.\ne.\n")
    assert leaks(corpus) == [
        "bt/en.txt.gz: 1 x a held-out sentence, e.g. 'e.'",
        "bt/more.jsonl.gz: 1 x an evaluation sentence, e.g. 'c.'",
    ]


def test_an_evaluation_only_folder_guards_its_sentences(corpus):
    """An evaluation-only folder (like ``data/everyday``) names its file ``test.jsonl`` or
    ``test.jsonl.gz``; its sentences then count as evaluation sentences, either side."""
    write_gzip(corpus / "everyday" / "test.jsonl.gz", json.dumps({"translation": {"en": "g.", "it": "nove."}}) + "\n")
    write_gzip(corpus / "mono-it" / "it.txt.gz", "dieci.\n")
    assert leaks(corpus) == []
    write_gzip(corpus / "mono-it" / "it.txt.gz", "dieci.\nnove.\n")
    assert leaks(corpus) == ["mono-it/it.txt.gz: 1 x an evaluation sentence, e.g. 'nove.'"]


# ---------------------------------------------------------------- the files as their READMEs describe them


@pytest.mark.slow  # reads every file under data/
def test_every_sentence_is_stored_normalised_and_no_file_repeats_itself():
    """NFC, spaces folded, no empty side; a pairs file holds each (en, it) pair once and a
    monolingual file each sentence once."""
    for f in data_files(DATA):
        texts = {s for row in rows(f) for s in row["translation"].values()}
        # normalising twice changes nothing, so a text among the normalised ones is normalised
        assert sorted(texts - sentences(f).keys() | (texts & {""})) == [], f
        keys = [tuple(sorted(row["translation"].items())) for row in rows(f)]
        assert len(keys) == len(set(keys)), f"{f.relative_to(DATA)} repeats {len(keys) - len(set(keys))} rows"


def real_pairs(root: Path) -> dict[Path, set[tuple[str, str]]]:
    """The (en, it) pairs of every training pairs file that a person paired: not back-translated
    (``bt``) nor forward-translated (``ft``), whose rounds share their English on purpose (each
    round is a teacher's translation of the same sentences, and a run takes one of them)."""
    out = {}
    for f in data_files(root):
        if kind(f) == "pairs" and not is_evaluation(f):
            pairs = {
                (r["translation"]["en"], r["translation"]["it"])
                for r in rows(f)
                if not str(r.get("origin", "")).startswith(("bt", "ft"))
            }
            if pairs:
                out[f] = pairs
    return out


@pytest.mark.slow  # reads every pairs file under data/
def test_no_real_pair_is_in_two_training_files():
    seen: dict[tuple[str, str], Path] = {}
    for f, pairs in real_pairs(DATA).items():
        again = sorted(p for p in pairs if p in seen)
        assert again == [], f"{f.relative_to(DATA)} repeats {len(again)} pairs of {seen[again[0]].relative_to(DATA)}"
        seen.update(dict.fromkeys(pairs, f))


def translated(root: Path, lang: str) -> set[str]:
    """Every ``lang`` sentence of a training pairs file that a person paired. A synthetic pair
    (origin ``bt`` or ``ft``) does not count: one side is a model's, and the other is the
    monolingual text itself (``data/forward_translate.py`` draws the English from ``data/mono-en``
    and the Italian from ``data/mono-it`` and the first back-translated round)."""
    out = set()
    for f in data_files(root):
        if kind(f) != "pairs" or is_evaluation(f):
            continue
        for r in rows(f):
            if not str(r.get("origin", "")).startswith(("bt", "ft")):
                out.add(r["translation"][lang])
    return out


@pytest.mark.slow  # reads every file under data/
def test_monolingual_text_holds_no_sentence_that_training_already_pairs():
    """Monolingual text is for making new pairs: a sentence with a real translation in a
    training file would only be made twice, and worse."""
    mono = [f for f in data_files(DATA) if kind(f) == "monolingual"]
    assert mono, "no monolingual text found"
    for f in mono:
        lang = f.name.split(".")[0]
        again = sorted(sentences(f).keys() & translated(DATA, lang))
        assert again == [], f"{f.relative_to(DATA)}: {len(again)} sentences already paired, e.g. {again[0]!r}"


# a README's count table: | train.jsonl.gz | 12,345 |
COUNT_ROW = re.compile(r"^\|\s*`?([\w.-]+\.(?:jsonl|jsonl\.gz|txt\.gz))`?\s*\|\s*([\d,]+)\s*\|", re.MULTILINE)


def test_every_data_folder_has_a_readme_whose_counts_are_the_files():
    for folder in sorted({f.parent for f in data_files(DATA)}):
        readme = folder / "README.md"
        assert readme.is_file(), f"{folder.relative_to(DATA)} has no README.md"
        counts = {name: int(n.replace(",", "")) for name, n in COUNT_ROW.findall(readme.read_text(encoding="utf-8"))}
        files = {f.name: n_rows(f) for f in data_files(folder) if f.parent == folder}
        assert counts == files, f"{readme.relative_to(DATA)}: the table says {counts}, the files hold {files}"
