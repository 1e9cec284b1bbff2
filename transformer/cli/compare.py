"""Compare two checkpoints on evaluation files, as a new model must be compared before it ships:
each file translated greedily by both, then sacrebleu's paired bootstrap (1,000 resamples) of
the new against the old, on the whole file and on its short and long sentences.

    python -m transformer.cli.compare --old checkpoints/en-it --new runs/base/fine-tune/best \\
        --data data/tatoeba-en-it/test.jsonl data/long/test.jsonl data/everyday/test.jsonl

A row's slices: the pairs whose source has fewer than ``--short-words`` words, and those with at
least ``--long-words``. Its verdict for each metric is ``+`` (the new model is better, p below
``--alpha``), ``-`` (worse) or ``=`` (no significant difference; two identical outputs are ``=``,
though sacrebleu gives them its smallest p). The table goes to stdout, then one JSON line with
every row. ``--output-dir DIR`` also writes each model's translations of each file
(``NAME.old.txt``, ``NAME.new.txt``) and ``NAME.tsv`` (source, reference, old, new) to read one
by one. ``--judgements FILE`` (``transformer.core.judgements``) adds, for each file whose
sentences it covers, how many of each model's translations a reader judged correct, and the
TSV's two last columns: ``yes``, ``no``, or empty where a translation was never judged (fill
them in, then ``python -m transformer.cli.judge`` records them). Bad paths or flags: one line
and exit code 2, before any model loads.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tqdm import tqdm

from transformer.cli import ArgumentParser, data_split_or_exit, fail, fraction, load_translator_or_exit, whole_number
from transformer.cli.evaluate import translate_all
from transformer.core.judgements import Judgements, JudgementsError, load_judgements, tally
from transformer.core.metrics import LONG_SENTENCE_WORDS, paired_bootstrap, word_count
from transformer.training.data import DataError, load_split

# Tatoeba's typical sentence: the issue that set the targets asks for no loss under this many words
SHORT_SENTENCE_WORDS = 8


def parse_args(argv=None):
    p = ArgumentParser(prog="python -m transformer.cli.compare", description=__doc__.split("\n\n")[0])
    p.add_argument("--old", required=True, help="the model compared against (a folder or hub id)")
    p.add_argument("--new", required=True, help="the candidate (a folder or hub id)")
    p.add_argument(
        "--data", required=True, nargs="+", help="JSONL files of pairs, or corpus folders (their test split)"
    )
    p.add_argument(
        "--short-words",
        type=whole_number(1),
        default=SHORT_SENTENCE_WORDS,
        help="the short slice: fewer words than this",
    )
    p.add_argument(
        "--long-words",
        type=whole_number(1),
        default=LONG_SENTENCE_WORDS,
        help="the long slice: at least this many words",
    )
    p.add_argument("--samples", type=whole_number(1), default=1000, help="bootstrap resamples")
    p.add_argument("--alpha", type=fraction, default=0.05, help="the p below which a difference counts")
    p.add_argument("--batch-size", type=whole_number(1), default=64, help="sentences per decoding batch")
    p.add_argument("--output-dir", default=None, help="write the translations and a side-by-side TSV of each file here")
    p.add_argument("--judgements", default=None, help="a JSON file of translations judged by reading (count them)")
    return p.parse_args(argv)


def label(path: Path) -> str:
    """A file's name in the table: its folder and stem (``everyday/test``)."""
    return f"{path.parent.name}/{path.name.removesuffix('.gz').removesuffix('.jsonl')}"


def check_data(args) -> dict[str, tuple[str, str]]:
    """Each ``--data`` by its name in the table: (the path given, the split to read); a missing
    file, or one given twice, is one line before any model loads."""
    files = {}
    for data in args.data:
        _, split, data_file = data_split_or_exit(data, None)
        if label(data_file) in files:
            fail(f"--data {data}: given twice (as {label(data_file)})")
        files[label(data_file)] = (data, split)
    return files


def read_sets(files: dict[str, tuple[str, str]], src: str, tgt: str) -> dict[str, list[tuple[str, str]]]:
    sets = {}
    for name, (data, split) in files.items():
        try:
            sets[name] = load_split(str(data), split, src, tgt)
        except DataError as exc:
            fail(str(exc))
        if not sets[name]:
            fail(f"{data}: no {src}-{tgt} pairs to compare")
    return sets


def verdict(row: dict, alpha: float) -> str:
    """``+``, ``-`` or ``=`` for one metric of a row: a significant gain, loss, or neither."""
    gap = row["new"] - row["old"]
    if gap == 0 or row["p"] >= alpha:
        return "="
    return "+" if gap > 0 else "-"


def slices(sources: list[str], short: int, long: int) -> dict[str, list[int]]:
    """The rows of a file's table: all pairs, then its short and long sentences (when it has any)."""
    words = [word_count(s) for s in sources]
    out = {"all": list(range(len(sources)))}
    out[f"< {short} words"] = [i for i, n in enumerate(words) if n < short]
    out[f">= {long} words"] = [i for i, n in enumerate(words) if n >= long]
    return {name: rows for name, rows in out.items() if rows}


def compare_set(name, pairs, old, new, args) -> list[dict]:
    """One row per slice of one file: its size, both systems' scores, p and verdict per metric."""
    sources, refs = [s for s, _ in pairs], [t for _, t in pairs]
    rows = []
    for part, keep in slices(sources, args.short_words, args.long_words).items():
        result = paired_bootstrap([old[i] for i in keep], [new[i] for i in keep], [refs[i] for i in keep], args.samples)
        for metric in result.values():
            metric["verdict"] = verdict(metric, args.alpha)
        rows.append({"set": name, "slice": part, "n": len(keep), **result})
    return rows


def table(rows: list[dict]) -> str:
    lines = [
        "| set | slice | n | old BLEU / chrF | new BLEU / chrF | p BLEU / chrF | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        b, c = r["bleu"], r["chrf"]
        old, new = f"{b['old']:.2f} / {c['old']:.2f}", f"{b['new']:.2f} / {c['new']:.2f}"
        p, said = f"{b['p']:.3f} / {c['p']:.3f}", f"BLEU {b['verdict']} chrF {c['verdict']}"
        lines.append(f"| {r['set']} | {r['slice']} | {r['n']} | {old} | {new} | {p} | {said} |")
    return "\n".join(lines)


def write_outputs(folder: Path, name: str, pairs, old, new, judged: Judgements | None) -> None:
    """``NAME.old.txt``, ``NAME.new.txt`` and ``NAME.tsv``; with judgements, the TSV says of each
    translation whether it was judged correct (``yes``, ``no``, empty if never read)."""
    stem = name.replace("/", "-")
    (folder / f"{stem}.old.txt").write_text("".join(h + "\n" for h in old), encoding="utf-8")
    (folder / f"{stem}.new.txt").write_text("".join(h + "\n" for h in new), encoding="utf-8")
    header = ["source", "reference", "old", "new"] + (["old correct", "new correct"] if judged else [])
    rows = []
    for (s, t), o, n in zip(pairs, old, new):
        cells = [s, t, o, n]
        if judged:
            cells += [{True: "yes", False: "no", None: ""}[judged.verdict(s, h)] for h in (o, n)]
        rows.append("\t".join(cell.replace("\t", " ") for cell in cells) + "\n")
    (folder / f"{stem}.tsv").write_text("\t".join(header) + "\n" + "".join(rows), encoding="utf-8")


def judged_counts(judged: Judgements, sets: dict, old: dict, new: dict) -> dict[str, dict]:
    """For each file the judgements cover: each model's counts of correct, wrong and unjudged."""
    counts = {}
    for name, pairs in sets.items():
        sources = [s for s, _ in pairs]
        if judged.covers(sources):
            counts[name] = {"old": tally(judged, sources, old[name]), "new": tally(judged, sources, new[name])}
    return counts


def judged_lines(counts: dict[str, dict]) -> list[str]:
    lines = []
    for name, both in counts.items():
        o, n = both["old"], both["new"]
        line = f"{name}: read one by one, old {o['correct']} correct, new {n['correct']} correct, of {o['n']}"
        if o["unjudged"] or n["unjudged"]:
            line += f" (not yet judged: old {o['unjudged']}, new {n['unjudged']})"
        lines.append(line)
    return lines


def read_judgements(path: str | None) -> Judgements | None:
    if path is None:
        return None
    try:
        return load_judgements(path)
    except JudgementsError as exc:
        fail(f"--judgements {exc}")


def output_folder(output_dir: str | None) -> Path | None:
    """``--output-dir``, made before any model loads, so that a bad path costs a second."""
    if output_dir is None:
        return None
    folder = Path(output_dir).expanduser()
    if folder.exists() and not folder.is_dir():
        fail(f"--output-dir {output_dir}: is a file; give a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"--output-dir {output_dir}: cannot make it ({exc})")
    return folder


def translations(tr, sets: dict, who: str, batch_size: int) -> dict[str, list[str]]:
    total = sum(len(p) for p in sets.values())
    with tqdm(total=total, desc=f"translating ({who})", unit="sent", file=sys.stderr) as bar:
        try:
            return {
                name: translate_all(tr, [s for s, _ in p], batch_size, progress=bar.update) for name, p in sets.items()
            }
        except ValueError as exc:
            fail(f"{who}: {exc}")


def say(lines: list[str]) -> None:
    """Print the report. A reader of stdout that stops early (``| head``) must not cost the
    files still to be written: the rest of the output goes nowhere instead of raising."""
    try:
        print("\n".join(lines), flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def main(argv=None) -> int:
    args = parse_args(argv)
    files = check_data(args)
    folder = output_folder(args.output_dir)
    judged = read_judgements(args.judgements)
    old_tr = load_translator_or_exit(args.old, "--old")
    new_tr = load_translator_or_exit(args.new, "--new")
    src, tgt = old_tr.cfg.src_lang, old_tr.cfg.tgt_lang
    if (new_tr.cfg.src_lang, new_tr.cfg.tgt_lang) != (src, tgt):
        fail(
            f"--new translates {new_tr.cfg.src_lang}->{new_tr.cfg.tgt_lang}, --old {src}->{tgt}: compare one direction"
        )
    sets = read_sets(files, src, tgt)
    old, new = translations(old_tr, sets, "old", args.batch_size), translations(new_tr, sets, "new", args.batch_size)
    rows = [row for name, pairs in sets.items() for row in compare_set(name, pairs, old[name], new[name], args)]
    counts = judged_counts(judged, sets, old, new) if judged else {}
    report = {"old": str(args.old), "new": str(args.new), "samples": args.samples, "rows": rows}
    say([table(rows), *judged_lines(counts), json.dumps(report | ({"judged": counts} if judged else {}))])
    if folder is not None:
        try:
            for name, pairs in sets.items():
                write_outputs(folder, name, pairs, old[name], new[name], judged)
        except OSError as exc:  # made at the start; the disk can still fill up
            fail(f"--output-dir {args.output_dir}: could not write the translations ({exc})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
