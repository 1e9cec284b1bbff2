"""Rebuild the extra real Tatoeba data under ``data/``: more English-Italian pairs and monolingual text.

    git clone https://github.com/Helsinki-NLP/OPUS-MT-train       # whole history: the files were deleted later
    git clone https://github.com/facebookresearch/LASER
    git clone https://github.com/Helsinki-NLP/OPUS-MT-testsets
    python data/build_more.py --opus-mt-train OPUS-MT-train --laser LASER --testsets OPUS-MT-testsets

Each repository is read through git at the fixed commit in ``COMMITS`` (any clone that holds it
will do, bare or not), so a rebuild writes the same bytes. It writes

- ``data/tatoeba-en-it-more/train.jsonl.gz``: real pairs, direct and through a pivot language;
- ``data/mono-en/en.txt.gz``, ``data/mono-it/it.txt.gz``: sentences without a translation here
  (one a line, sorted), for synthetic pairs later;

and prints the counts after each step as JSON. The hygiene is that of ``data/tatoeba-en-it``: no
sentence of an eng-ita evaluation file of OPUS-MT-testsets unless ``data/tatoeba-en-it/train.jsonl``
already has it, and nothing of its validation or test split or of the project's own evaluation sets
(``OWN_SETS``: ``data/everyday/test.jsonl``, ``data/long/test.jsonl``).
It reads every eng-ita file of every commit there, the news and FLORES sets as well as the Tatoeba
releases that ``data/tatoeba-en-it/heldout-fingerprints.txt`` lists, so it excludes a little more.
"""

from __future__ import annotations

import gzip
import json
import posixpath
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

DATA = Path(__file__).resolve().parent
sys.path.insert(0, str(DATA.parent))  # the project's root, so that `python data/build_more.py` finds transformer/

from transformer.training.synthetic import fingerprint, held_out, normalize, read_fingerprints

COMMITS = {
    "opus-mt-train": "08c17af2ee4382c8410eddb9536b5ce6333b2f66",  # the last with the Tatoeba val/test files
    "laser": "fec5c7d63daa2bea9d127e8252b10e87278586c0",
    "testsets": "ac0f19c0be3cb4e0d9450fcb2d7a9847c4bdd180",
}
# OPUS-MT-train's languages that have Tatoeba files with both English and Italian, and their
# ISO 639-3 codes (the ``origin`` of the pivot pairs in data/tatoeba-en-it uses these)
PIVOTS = {"de": "deu", "es": "spa", "fi": "fin", "fr": "fra", "sv": "swe"}
TATOEBA = "datasets/helsinki_nlp/tatoeba/testsets"
# the folders of OPUS-MT-testsets that hold English-Italian evaluation files (two- and three-letter names)
EVALUATION_DIR = re.compile(r"(^|/)(eng-ita|ita-eng|en-it|it-en)(/|$)")
SYMLINK = "120000"
# the evaluation sets the project wrote itself (under --data): blocked from every output, either side
OWN_SETS = ("everyday/test.jsonl", "long/test.jsonl")


class Git:
    """Blobs and trees of one repository, through one ``git cat-file --batch`` process."""

    def __init__(self, repo: Path):
        self.repo = repo
        self.proc = subprocess.Popen(
            ["git", "-C", str(repo), "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )

    def run(self, *args: str) -> str:
        return subprocess.run(["git", "-C", str(self.repo), *args], check=True, capture_output=True, text=True).stdout

    def tree(self, commit: str, *paths: str) -> list[tuple[str, str, str]]:
        """(mode, blob id, path) of every file under ``paths`` at ``commit``."""
        out = self.run("ls-tree", "-r", "-z", commit, "--", *paths)
        rows = [entry.split("\t", 1) for entry in out.split("\0") if entry]
        return [(meta.split()[0], meta.split()[2], path) for meta, path in rows]

    def blob(self, spec: str) -> bytes:
        """The content of a blob id or ``commit:path``."""
        self.proc.stdin.write(spec.encode() + b"\n")
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().decode().split()
        if header[-1] == "missing":
            raise FileNotFoundError(f"{self.repo}: no {spec}")
        data = self.proc.stdout.read(int(header[2]))
        self.proc.stdout.read(1)  # the newline after each blob
        return data

    def lines(self, spec: str) -> list[str]:
        """A text file's lines, normalised, empty ones kept (parallel files align by line)."""
        raw = self.blob(spec)
        text = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
        return [normalize(line) for line in text.decode("utf-8").split("\n")[: -1 if text.endswith(b"\n") else None]]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


# ---------------------------------------------------------------- reading the sources


def aligned(git: Git, src: str, trg: str) -> list[tuple[str, str]]:
    a, b = git.lines(src), git.lines(trg)
    if len(a) != len(b):
        raise ValueError(f"{src} and {trg} differ in length ({len(a)} and {len(b)} lines)")
    return list(zip(a, b))


def opus_direct(git: Git) -> list[tuple[str, str]]:
    """The (en, it) pairs of OPUS-MT-train's Tatoeba it-en validation and test files."""
    c = COMMITS["opus-mt-train"]
    pairs = []
    for split in ("val", "test"):
        pairs += [
            (en, it)
            for it, en in aligned(
                git, f"{c}:work-spm/it-en/{split}/Tatoeba.src", f"{c}:work-spm/it-en/{split}/Tatoeba.trg"
            )
        ]
    return pairs


def opus_pivots(git: Git) -> dict[tuple[str, str], tuple[set[str], bool]]:
    """(en, it) pairs that translate the same sentence of a pivot language X: one from X-en's files,
    one from X-it's. Each pair maps to its pivot languages, and whether any one of them had exactly
    one English and one Italian translation of that sentence (``pivot_strict`` in data/tatoeba-en-it)."""
    c = COMMITS["opus-mt-train"]
    found: dict[tuple[str, str], tuple[set[str], bool]] = {}
    for x, iso3 in PIVOTS.items():
        side: dict[str, dict[str, set[str]]] = {"en": defaultdict(set), "it": defaultdict(set)}
        for lang in side:
            for split in ("val", "test"):
                d = f"{c}:work-spm/{x}-{lang}/{split}/Tatoeba"
                for pivot, text in aligned(git, f"{d}.src", f"{d}.trg"):
                    if pivot and text:
                        side[lang][pivot].add(text)
        for pivot in sorted(side["en"].keys() & side["it"].keys()):
            ens, its = side["en"][pivot], side["it"][pivot]
            for pair in ((en, it) for en in sorted(ens) for it in sorted(its)):
                langs, strict = found.get(pair, (set(), False))
                found[pair] = (langs | {iso3}, strict or len(ens) == len(its) == 1)
    return found


def opus_monolingual(git: Git, lang: str) -> list[str]:
    """Every ``lang`` sentence of OPUS-MT-train's Tatoeba validation and test files, any pair."""
    c = COMMITS["opus-mt-train"]
    out: dict[str, None] = {}
    for mode, blob, path in git.tree(c, "work-spm"):
        m = re.fullmatch(r"work-spm/([^/-]+)-([^/-]+)/(val|test)/Tatoeba\.(src|trg)", path)
        # the ``lang`` side of an A-B folder: Tatoeba.src when A is lang, Tatoeba.trg when B is
        if mode != SYMLINK and m and m.group(4) == {m.group(1): "src", m.group(2): "trg"}.get(lang):
            out.update(dict.fromkeys(s for s in git.lines(blob) if s))
    return list(out)


def laser_pairs(git: Git) -> list[tuple[str, str]]:
    c = COMMITS["laser"]
    return aligned(git, f"{c}:data/tatoeba/v1/tatoeba.ita-eng.eng", f"{c}:data/tatoeba/v1/tatoeba.ita-eng.ita")


def testsets_monolingual(git: Git, iso3: str) -> list[str]:
    """The ``iso3`` side of every Tatoeba test set of OPUS-MT-testsets but the eng-ita ones."""
    out: dict[str, None] = {}
    for mode, blob, path in git.tree(COMMITS["testsets"], TATOEBA):
        pair = path.split("/")[-2]
        if (
            mode != SYMLINK
            and path.endswith(f".{iso3}")
            and iso3 in pair.split("-")
            and pair not in ("eng-ita", "ita-eng")
        ):
            out.update(dict.fromkeys(s for s in git.lines(blob) if s))
    return list(out)


def evaluation_sentences(git: Git) -> set[str]:
    """Every sentence of every English-Italian evaluation file of OPUS-MT-testsets, either side,
    in every commit up to ``COMMITS["testsets"]``: news, FLORES and the Tatoeba releases. Links
    are followed (some folders and files are links to others)."""
    blobs: set[str] = set()
    for commit in git.run("rev-list", COMMITS["testsets"]).split():
        entries = [e for e in git.tree(commit) if EVALUATION_DIR.search(e[2])]
        for _ in range(4):  # a link to a link to a folder at most
            links = [e for e in entries if e[0] == SYMLINK]
            blobs.update(b for m, b, p in entries if m != SYMLINK and not p.endswith(".labels"))
            entries = []
            for _, blob, path in links:
                target = posixpath.normpath(posixpath.join(posixpath.dirname(path), git.blob(blob).decode()))
                entries += git.tree(commit, target)
    return {s for blob in sorted(blobs) for s in git.lines(blob) if s}


# ---------------------------------------------------------------- hygiene, step by step


def read_pairs(path: Path) -> list[tuple[str, str]]:
    with path.open(encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [(r["translation"]["en"], r["translation"]["it"]) for r in rows]


def filtered(items: list, steps: list[tuple[str, object]], counts: dict[str, int]) -> list:
    """``items`` through each (name, keep) step in turn; ``counts[name]`` is how many are left after it."""
    for name, keep in steps:
        items = [x for x in items if keep(x)]
        counts[name] = len(items)
    return items


def first_time(seen: set, key=lambda item: item):
    """A keep-step that passes each ``key(item)`` once (``seen`` holds the keys met so far)."""

    def keep(item) -> bool:
        if key(item) in seen:
            return False
        seen.add(key(item))
        return True

    return keep


def clean_pairs(
    sources: dict[str, list[tuple[str, str, str]]], train: list[tuple[str, str]], held: set[str], splits: set[str]
) -> tuple[list[tuple[str, str, str]], dict]:
    """The (en, it, origin) rows of every source that pass the hygiene, sources in order (a pair
    two sources share is kept from the first), and the count left after each step, per source."""
    known, seen, kept, counts = set(train), set(), [], {}
    for name, rows in sources.items():
        counts[name] = {"read": len(rows)}
        kept += filtered(
            rows,
            [
                ("non-empty", lambda r: bool(r[0] and r[1])),
                ("not held out", lambda r: r[0] not in held and r[1] not in held),
                ("not validation/test/everyday", lambda r: r[0] not in splits and r[1] not in splits),
                ("not already in train.jsonl", lambda r: r[:2] not in known),
                ("not a repeat", first_time(seen, key=lambda r: r[:2])),
            ],
            counts[name],
        )
    return kept, counts


def clean_monolingual(
    sentences: list[str], held: set[str], splits: set[str], paired: set[str], max_chars: int = 300
) -> tuple[list[str], dict]:
    """The sentences to make new pairs from, sorted (the file compresses better; shuffle before use),
    and the count left after each step."""
    counts = {"read": len(sentences)}
    out = filtered(
        sentences,
        [
            ("unique", first_time(set())),
            ("not held out", lambda s: s not in held),
            ("not validation/test/everyday", lambda s: s not in splits),
            ("not already paired", lambda s: s not in paired),
            (f"at most {max_chars} characters", lambda s: len(s) <= max_chars),
        ],
        counts,
    )
    return sorted(out), counts


# ---------------------------------------------------------------- writing


def write_gzip(path: Path, text: str) -> None:
    """gzip level 9, with no file name or time in the header: the bytes depend on the text only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as f:
        f.write(text.encode("utf-8"))


def pairs_text(rows: list[tuple[str, str, str]]) -> str:
    """JSON lines in the corpus schema, as ``datasets`` reads them."""
    return "".join(
        json.dumps({"id": str(i), "translation": {"en": en, "it": it}, "origin": origin}, ensure_ascii=False) + "\n"
        for i, (en, it, origin) in enumerate(rows)
    )


# ---------------------------------------------------------------- the command


def parse_args(argv=None):
    from transformer.cli import ArgumentParser

    p = ArgumentParser(
        prog="python data/build_more.py",
        description="Rebuild the extra real Tatoeba data: more English-Italian pairs, and "
        "monolingual English and Italian.",
    )
    p.add_argument(
        "--opus-mt-train",
        required=True,
        type=Path,
        help=f"a clone of Helsinki-NLP/OPUS-MT-train holding commit {COMMITS['opus-mt-train'][:8]}",
    )
    p.add_argument(
        "--laser",
        required=True,
        type=Path,
        help=f"a clone of facebookresearch/LASER holding commit {COMMITS['laser'][:8]}",
    )
    p.add_argument(
        "--testsets",
        required=True,
        type=Path,
        help=f"a clone of Helsinki-NLP/OPUS-MT-testsets holding commit {COMMITS['testsets'][:8]}",
    )
    p.add_argument(
        "--data",
        type=Path,
        default=DATA,
        help="the data folder: reads tatoeba-en-it/, tatoeba-en-it-bt/, everyday/ and long/, "
        "writes tatoeba-en-it-more/, mono-en/ and mono-it/",
    )
    return p.parse_args(argv)


def check_inputs(args) -> None:
    """Every input there, before the slow reading starts; else one line and exit code 2."""
    from transformer.cli import fail

    for flag, name in (("--opus-mt-train", "opus-mt-train"), ("--laser", "laser"), ("--testsets", "testsets")):
        repo = getattr(args, flag[2:].replace("-", "_"))
        found = (
            subprocess.run(
                ["git", "-C", str(repo), "cat-file", "-e", f"{COMMITS[name]}^{{commit}}"],
                check=False,
                capture_output=True,
            ).returncode
            == 0
            if repo.is_dir()
            else False
        )
        if not found:
            fail(f"{flag} {repo}: not a git clone holding commit {COMMITS[name]}")
    for need in (
        "tatoeba-en-it/train.jsonl",
        "tatoeba-en-it/validation.jsonl",
        "tatoeba-en-it/test.jsonl",
        "tatoeba-en-it/heldout-fingerprints.txt",
        "tatoeba-en-it-bt/train.jsonl",
        *OWN_SETS,
    ):
        if not (args.data / need).is_file():
            fail(f"{args.data / need}: missing (--data must be the project's data folder)")


def read_sources(args) -> tuple[dict[str, list[tuple[str, str, str]]], dict[str, list[str]], set[str]]:
    """The (en, it, origin) pairs of each source, the monolingual candidates of each language, and
    every sentence of the English-Italian evaluation files."""
    opus, laser, tests = (Git(args.opus_mt_train), Git(args.laser), Git(args.testsets))
    sources = {
        "OPUS-MT-train it-en": [(en, it, "direct:opus-mt-train") for en, it in opus_direct(opus)],
        "LASER ita-eng": [(en, it, "direct:laser") for en, it in laser_pairs(laser)],
        "OPUS-MT-train pivots": [
            (en, it, f"pivot{'_strict' if strict else ''}:{','.join(sorted(langs))}")
            for (en, it), (langs, strict) in opus_pivots(opus).items()
        ],
    }
    mono = {
        "en": opus_monolingual(opus, "en") + testsets_monolingual(tests, "eng"),
        "it": opus_monolingual(opus, "it") + testsets_monolingual(tests, "ita"),
    }
    evaluation = evaluation_sentences(tests)
    for git in (opus, laser, tests):
        git.close()
    return sources, mono, evaluation


def main(argv=None) -> int:
    from transformer.cli import fail

    args = parse_args(argv)
    check_inputs(args)
    data = args.data
    train = read_pairs(data / "tatoeba-en-it/train.jsonl")
    ours = [read_pairs(data / f"tatoeba-en-it/{split}.jsonl") for split in ("validation", "test")]
    own = {name: read_pairs(data / name) for name in OWN_SETS}
    sources, mono, evaluation = read_sources(args)
    # the project's own sets are its own writing: none of their English may be a Tatoeba sentence
    tatoeba = (
        {s for rows in sources.values() for r in rows for s in r[:2]}
        | set(mono["en"])
        | set(mono["it"])
        | evaluation
        | {s for pairs in (train, *ours) for pair in pairs for s in pair}
    )
    for name, pairs in own.items():
        clash = sorted({en for en, _ in pairs} & tatoeba)
        if clash:
            fail(f"{name}: {len(clash)} English sentence(s) found in Tatoeba, e.g. {clash[0]!r}: replace them")

    held = held_out(evaluation, train, ())  # the evaluation files' sentences, but those train.jsonl has
    blocked = held_out((), train, (*ours, *own.values()))  # validation, test and the own sets, either side
    pairs, counts = clean_pairs(sources, train, held, blocked)
    paired = {
        "en": {en for en, _ in train} | {r[0] for r in pairs},
        "it": {it for _, it in train}
        | {r[1] for r in pairs}
        | {it for _, it in read_pairs(data / "tatoeba-en-it-bt/train.jsonl")},
    }
    stats = {"pairs": counts, "pairs kept": len(pairs)}
    write_gzip(data / "tatoeba-en-it-more/train.jsonl.gz", pairs_text(pairs))
    for lang in ("en", "it"):
        lines, stats[f"mono-{lang}"] = clean_monolingual(mono[lang], held, blocked, paired[lang])
        write_gzip(data / f"mono-{lang}/{lang}.txt.gz", "".join(f"{s}\n" for s in lines))

    listed = read_fingerprints(data / "tatoeba-en-it/heldout-fingerprints.txt")
    stats["held-out sentences"] = {
        "all": len(held),
        "not in data/tatoeba-en-it's list (news, FLORES)": sum(fingerprint(s) not in listed for s in held),
    }
    print(json.dumps(stats, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
