"""Record judgements read one by one into a judgements file (``transformer.core.judgements``).

    python -m transformer.cli.compare --old A --new B --data data/everyday/test.jsonl \\
        --judgements data/everyday/judgements.json --output-dir /tmp/compare
    # read /tmp/compare/everyday-test.tsv; write yes or no in the empty "correct" cells
    python -m transformer.cli.judge --judgements data/everyday/judgements.json --tsv /tmp/compare/everyday-test.tsv

Every filled cell of the TSV's ``old correct`` and ``new correct`` columns is recorded for the
translation beside it; empty cells are skipped. A cell that is not ``yes`` or ``no``, or a
judgement that contradicts the file, is one line and exit code 2, and the file is left as it was.
"""

from __future__ import annotations

import sys
from pathlib import Path

from transformer.cli import ArgumentParser, fail
from transformer.core.judgements import Judgements, JudgementsError, load_judgements, save_judgements

COLUMNS = {"old": "old correct", "new": "new correct"}  # translation column -> its judgement column
ANSWERS = {"yes": True, "no": False}


def parse_args(argv=None):
    p = ArgumentParser(prog="python -m transformer.cli.judge", description=__doc__.split("\n\n")[0])
    p.add_argument("--judgements", required=True, help="the JSON file to add to (made if missing)")
    p.add_argument("--tsv", required=True, nargs="+", help="side-by-side TSVs written by transformer.cli.compare")
    p.add_argument("--rule", default=None, help="what counts as correct (kept in a new file)")
    return p.parse_args(argv)


def read_marks(path: str) -> list[tuple[str, str, bool]]:
    """(source, translation, correct) for every filled judgement cell of one TSV."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"--tsv {path}: cannot read it ({exc})")
    header = lines[0].split("\t") if lines else []
    if not {"source", *COLUMNS, *COLUMNS.values()} <= set(header):
        fail(f"--tsv {path}: not a compare TSV with judgement columns (run compare with --judgements)")
    at = {name: header.index(name) for name in header}
    marks = []
    for number, line in enumerate(lines[1:], start=2):
        cells = line.split("\t") + [""] * len(header)
        for column, judgement in COLUMNS.items():
            answer = cells[at[judgement]].strip().lower()
            if answer and answer not in ANSWERS:
                fail(f"--tsv {path}, line {number}: {judgement!r} is {answer!r}; write yes, no or leave it empty")
            if answer:
                marks.append((cells[at["source"]], cells[at[column]], ANSWERS[answer]))
    return marks


def starting_point(path: str, rule: str | None) -> Judgements:
    """The file's judgements, or an empty set for a file not made yet."""
    if not Path(path).exists():
        return Judgements(rule=rule or "")
    try:
        judged = load_judgements(path)
    except JudgementsError as exc:
        fail(f"--judgements {exc}")
    if rule is not None and rule != judged.rule:
        fail(f"--rule: {path} already states its rule; edit the file to change it")
    return judged


def main(argv=None) -> int:
    args = parse_args(argv)
    judged = starting_point(args.judgements, args.rule)
    marks = [mark for tsv in args.tsv for mark in read_marks(tsv)]
    try:
        added = sum(judged.add(*mark) for mark in marks)
    except JudgementsError as exc:
        fail(str(exc))
    if added:
        try:
            save_judgements(judged, args.judgements)
        except OSError as exc:
            fail(f"--judgements {args.judgements}: could not write it ({exc})")
    total = sum(len(t) for t in judged.sentences.values())
    print(f"{added} new judgements recorded; {args.judgements} holds {total} for {len(judged.sentences)} sentences")
    return 0


if __name__ == "__main__":
    sys.exit(main())
