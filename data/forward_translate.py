"""Translate monolingual Tatoeba text into synthetic pairs for the en->it model: English with an
en->it checkpoint (forward translation, self-training), or Italian with an it->en checkpoint
(back-translation, e.g. a later round with a stronger reverse model).

    python data/forward_translate.py --checkpoint checkpoints/en-it --out ftwork/mono-en.it.jsonl
    python data/forward_translate.py ... --finish data/tatoeba-en-it-ft   # the committed folder
    python data/forward_translate.py --src it --checkpoint runs/rev/best \
        --mono data/mono-it/it.txt.gz data/tatoeba-en-it-bt/train.jsonl --out ftwork/mono-it.en.jsonl
    python data/forward_translate.py --checkpoint checkpoints/en-it runs/big/fine-tune/best --out ...  # an ensemble

The text comes from ``--mono`` (default ``data/mono-en/en.txt.gz``): plain-text files hold one
sentence a line, JSONL files (gzipped or not) give the ``--src`` side of each pair. The
distinct sentences are sorted, then shuffled with a fixed seed, so the first N lines of the
output are a random sample of N sentences. The work is long (hours on a CPU), so it appends one
JSON object a line to ``--out`` in chunks and starts again after the last chunk written: run
the same command after a stop and it continues (a file another ``--mono``, ``--seed``,
``--skip`` or ``--src`` wrote is refused, not appended to). ``--finish DIR`` writes the folder that
training reads: the pairs with no held-out, validation or test sentence on either side and a
non-empty model-written side, gzip-compressed, in the corpus's schema with ``origin: ft:beam``
(the model wrote the Italian) or ``bt:beam`` (it wrote the English). Several ``--checkpoint``
translate together: each one's beam, reranked by all of them (``transformer.core.rerank``), so
models with vocabularies of their own make one teacher. Bad paths, flags or files:
one line and exit code 2, before the model loads.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
from pathlib import Path

import torch

from _repo import ROOT  # the clone, first on sys.path

from transformer import load_translator  # noqa: E402
from transformer.core.checkpoint import CheckpointError  # noqa: E402
from transformer.core.rerank import ensemble_translate  # noqa: E402
from transformer.training.synthetic import fingerprint, normalize, read_fingerprints  # noqa: E402

MONO_EN = ROOT / "data" / "mono-en" / "en.txt.gz"
HELDOUT = ROOT / "data" / "tatoeba-en-it" / "heldout-fingerprints.txt"
CHUNK = 1024


LANGUAGES = ("en", "it")


def read_sentences(path: Path, lang: str) -> list[str]:
    """The sentences of a text file (one a line) or the ``lang`` side of a JSONL file's pairs."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        if path.name.removesuffix(".gz").endswith(".jsonl"):
            return [json.loads(line)["translation"][lang] for line in f if line.strip()]
        return [line.rstrip("\n") for line in f if line.strip()]


def shuffled_sentences(paths: list[Path], lang: str, seed: int) -> list[str]:
    sentences = sorted({s for path in paths for s in read_sentences(path, lang)})
    random.Random(seed).shuffle(sentences)
    return sentences


def work(args) -> list[str]:
    """The sentences this run translates, in order: the seeded shuffle of ``--mono`` after
    ``--skip``, cut to ``--limit``. A later round can take the next slice of the same shuffle."""
    sentences = shuffled_sentences([Path(p) for p in args.mono], args.src, args.seed)[args.skip :]
    return sentences[: args.limit or None]


class InputError(Exception):
    """Bad input, said in one line before any slow work."""


def written_sources(out: Path, src: str) -> list[str]:
    """The ``src`` side of each whole line already in ``out``; a line cut by a stop is dropped
    from the file, to be translated again."""
    if not out.exists():
        return []
    data = out.read_bytes()
    keep = data[: data.rfind(b"\n") + 1]
    if len(keep) != len(data):
        out.write_bytes(keep)
    try:
        return [json.loads(line)[src] for line in keep.decode("utf-8").splitlines()]
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"--out {out}: not this script's pairs ({type(exc).__name__}: {exc})") from None


def check_resume(out: Path, written: list[str], sentences: list[str]) -> None:
    """A resumed ``--out`` must be this run's work so far, line for line: appending to a file that
    another ``--mono``, ``--seed``, ``--skip`` or ``--src`` wrote would mix two orders silently."""
    for i, text in enumerate(written):
        if i >= len(sentences) or text != sentences[i]:
            expected = repr(sentences[i]) if i < len(sentences) else "past the end of this run's sentences"
            raise InputError(
                f"--out {out}: line {i + 1} translates {text!r}, but this run's sentence {i + 1} is {expected}; "
                "another --mono, --seed, --skip or --src wrote it: give a new --out"
            )


def read_work(args) -> list[str]:
    """``work(args)``, with a missing or unreadable ``--mono`` file said in one line."""
    for path in args.mono:
        if not Path(path).is_file():
            raise InputError(f"--mono {path}: no such file")
    try:
        return work(args)
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--mono: {exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        what = f"{type(exc).__name__}: {exc}"
        raise InputError(f"--mono: a JSONL file is not pairs with a '{args.src}' side ({what})") from None


def load(checkpoint: str):
    try:
        return load_translator(checkpoint)
    except (CheckpointError, OSError) as exc:
        raise InputError(f"--checkpoint {checkpoint}: {exc}") from None


def translate(args) -> None:
    sentences = read_work(args)
    tgt = other(args.src)
    out = Path(args.out)
    written = written_sources(out, args.src)
    check_resume(out, written, sentences)
    start = len(written)
    translators = [load(checkpoint) for checkpoint in args.checkpoint]
    torch.set_num_threads(args.threads)
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with out.open("a", encoding="utf-8") as f:
        for i in range(start, len(sentences), CHUNK):
            chunk = sentences[i : i + CHUNK]
            if len(translators) == 1:
                hyps = translators[0].translate(chunk, beam_size=args.beam_size, batch_size=args.batch_size)
            else:
                hyps = ensemble_translate(translators, chunk, args.beam_size, args.batch_size)
            f.writelines(
                json.dumps({args.src: text, tgt: hyp}, ensure_ascii=False) + "\n" for text, hyp in zip(chunk, hyps)
            )
            f.flush()
            done = i + len(chunk)
            rate = (done - start) / (time.monotonic() - t0)
            print(
                f"{done}/{len(sentences)} sentences, {rate:.1f}/s, {(len(sentences) - done) / rate / 60:.0f} min left",
                flush=True,
            )


def other(lang: str) -> str:
    return LANGUAGES[1 - LANGUAGES.index(lang)]


def evaluation_sentences() -> set[str]:
    """Both sides of every evaluation file under ``data/``: each folder's ``validation.jsonl``
    and ``test.jsonl``, the corpus's and the project's own sets (everyday, long) alike (the
    teacher's Italian can come out word for word as one of their references)."""
    sentences = set()
    for path in sorted((ROOT / "data").rglob("*.jsonl")):
        if path.stem in ("validation", "test"):
            for line in path.read_text(encoding="utf-8").splitlines():
                sentences.update(normalize(s) for s in json.loads(line)["translation"].values())
    return sentences


def read_pairs(out: Path) -> list[dict]:
    """The (en, it) lines of ``--out``, normalised; a missing file or a bad line in one line."""
    if not out.is_file():
        raise InputError(f"--out {out}: no such file (translate into it first)")
    pairs = []
    for n, line in enumerate(out.read_text(encoding="utf-8").splitlines(), 1):
        try:
            pair = json.loads(line)
            pairs.append({lang: normalize(pair[lang]) for lang in LANGUAGES})
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InputError(f"--out {out}: line {n} is not an (en, it) pair ({type(exc).__name__}: {exc})") from None
    return pairs


def finish(args) -> None:
    """The training folder from ``--out``: held-out and evaluation sentences dropped, and pairs
    whose model-written side (the one ``--src`` is not) came out empty."""
    blocked = read_fingerprints(HELDOUT)
    evaluation = evaluation_sentences()
    written = other(args.src)
    origin = "ft:beam" if written == "it" else "bt:beam"
    rows, dropped = [], 0
    for pair in read_pairs(Path(args.out)):
        if not pair[written] or any(s in evaluation or fingerprint(s) in blocked for s in pair.values()):
            dropped += 1
            continue
        rows.append({"id": str(len(rows)), "translation": {"en": pair["en"], "it": pair["it"]}, "origin": origin})
    folder = Path(args.finish)
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(folder / "train.jsonl.gz", "wb", compresslevel=9, mtime=0) as gz:
        gz.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8"))
    print(json.dumps({"pairs": len(rows), "dropped": dropped}))


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--src", choices=LANGUAGES, default="en", help="the language of the monolingual text (en: forward, it: back)"
    )
    p.add_argument(
        "--mono",
        nargs="+",
        default=[str(MONO_EN)],
        help="monolingual text: .txt(.gz) files of one sentence a line, or .jsonl(.gz) pair files (their --src side)",
    )
    p.add_argument(
        "--checkpoint",
        nargs="+",
        default=["checkpoints/en-it"],
        help="the model that translates, --src to the other; several: an ensemble that reranks their beams",
    )
    p.add_argument("--out", required=True, help="JSONL of (en, it) written chunk by chunk; resumed when it exists")
    p.add_argument("--beam-size", type=int, default=4, help="beam width (1: greedy)")
    p.add_argument("--batch-size", type=int, default=64, help="sentences decoded together")
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument("--seed", type=int, default=0, help="seed of the shuffle (the order of the work)")
    p.add_argument(
        "--skip",
        type=int,
        default=0,
        help="leave out the first N shuffled sentences (those an earlier round translated with the same --seed)",
    )
    p.add_argument(
        "--limit", type=int, default=0, help="translate only the first N shuffled sentences after --skip (0: all)"
    )
    p.add_argument("--finish", metavar="DIR", help="write the training folder DIR from --out instead of translating")
    return p.parse_args(argv)


def check_flags(args) -> None:
    for name in ("beam_size", "batch_size", "threads"):
        if getattr(args, name) < 1:
            raise InputError(f"--{name.replace('_', '-')} {getattr(args, name)}: a positive number is needed")
    for name in ("skip", "limit"):
        if getattr(args, name) < 0:
            raise InputError(f"--{name} {getattr(args, name)}: a number of sentences (0 or more) is needed")


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        check_flags(args)
        finish(args) if args.finish else translate(args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
