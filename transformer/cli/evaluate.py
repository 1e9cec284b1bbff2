"""Score a checkpoint on a JSONL test file with batched greedy or beam decoding and sacrebleu.

    python -m transformer.cli.evaluate --checkpoint checkpoints/en-it --data data/tatoeba-en-it/test.jsonl
    python -m transformer.cli.evaluate --data data/tatoeba-en-it --beam-size 4
    python -m transformer.cli.evaluate --checkpoint runs/base/best --data data/tatoeba-en-it/test.jsonl --save

Progress goes to stderr; the last stdout line is one JSON object with at least
``bleu``, ``chrf``, ``n`` and ``seconds``, and ``long``: the same scores on the pairs whose
source has at least ``--long-words`` words (None if there are none), the sentences the model
was trained on least. ``benchmarks/beam_eval.py`` decodes greedily
through :func:`translate_all` too, so both report the same greedy scores.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tqdm import tqdm

from transformer.core.checkpoint import METRICS_FILE, write_file_atomic
from transformer.cli import (
    ArgumentParser,
    add_checkpoint_and_data,
    DataSplit,
    check_output_or_exit,
    data_split_or_exit,
    fail,
    load_translator_or_exit,
    whole_number,
)
from transformer.training.data import DataError, load_split
from transformer.core.metrics import LONG_SENTENCE_WORDS, corpus_scores, long_slice_scores
from transformer.cli.modelcard import display_source


def parse_args(argv=None):
    p = ArgumentParser(prog="python -m transformer.cli.evaluate", description=__doc__.split("\n")[0])
    add_checkpoint_and_data(p, "score")
    p.add_argument("--src", default=None, help="source language (default: the checkpoint's)")
    p.add_argument("--tgt", default=None, help="target language (default: the checkpoint's)")
    p.add_argument("--limit", type=whole_number(1), default=None, help="score only the first N pairs")
    p.add_argument("--batch-size", type=whole_number(1), default=64, help="sentences per decoding batch")
    p.add_argument("--beam-size", type=whole_number(1), default=1, help="beam width k (1: greedy decoding)")
    p.add_argument(
        "--long-words",
        type=whole_number(1),
        default=LONG_SENTENCE_WORDS,
        help="also score apart the pairs whose source has at least this many words (the 'long' slice)",
    )
    p.add_argument("--output", default=None, help="write the hypotheses here, one per line")
    p.add_argument(
        "--save",
        action="store_true",
        help="record the greedy scores (and the long slice's) in the checkpoint's metrics.json as its 'test' "
        "entry, which its model card and the app's long-sentence notice show; local folders only",
    )
    return p.parse_args(argv)


def translate_all(
    tr, sources: list[str], batch_size: int = 64, beam_size: int = 1, progress: Callable[[int], object] | None = None
) -> list[str]:
    """``tr.translate(sources, batch_size, beam_size)``, in the very same batches, handed
    over one batch at a time so that ``progress`` (called with each batch's size) can follow.

    The batches matter: a sentence's greedy output can change with the sentences padded
    beside it (the float rounding differs with the batch's shape, enough to flip a near
    tie), which moves BLEU by about 0.01. ``Translator.translate`` sorts the whole list by
    source length before cutting it into batches; this cuts the same sorted list, and a
    batch handed back keeps its order (the sort is stable), so the output is identical.
    A sentence the model cannot read raises ``ValueError`` naming it (1-based)."""
    lengths = []
    for i, text in enumerate(sources):
        try:
            lengths.append(len(tr.encode_source(text).ids))
        except ValueError as exc:  # e.g. a source that is only control characters
            raise ValueError(f"pair {i + 1}: {exc}") from None
    order = sorted(range(len(sources)), key=lengths.__getitem__)
    hyps = [""] * len(sources)
    for start in range(0, len(order), batch_size):
        batch = order[start : start + batch_size]
        out = tr.translate([sources[i] for i in batch], batch_size=batch_size, beam_size=beam_size)
        for i, hyp in zip(batch, out):
            hyps[i] = hyp
        if progress is not None:
            progress(len(batch))
    return hyps


def check_args(args) -> DataSplit:
    """What to read once every flag has passed; a one-line message and exit code 2
    otherwise. Runs before the model loads, so nothing slow is lost to a typo."""
    if args.save and args.beam_size != 1:
        fail("--save records greedy scores: leave out --beam-size (benchmarks/beam_eval.py --save records beam search)")
    if args.save and not (Path(args.checkpoint) / METRICS_FILE).is_file():
        fail(f"--save: {args.checkpoint} is not a local checkpoint folder with a {METRICS_FILE}")
    if args.save:
        check_output_or_exit(Path(args.checkpoint) / METRICS_FILE, "--save")
    check_output_or_exit(args.output, "--output")
    return data_split_or_exit(args.data, args.split)


def main(argv=None) -> int:
    args = parse_args(argv)
    path, split, data_file = check_args(args)
    tr = load_translator_or_exit(args.checkpoint)
    src, tgt = args.src or tr.cfg.src_lang, args.tgt or tr.cfg.tgt_lang
    try:
        pairs = load_split(str(path), split, src, tgt)
    except DataError as exc:
        fail(str(exc))
    if not pairs:
        fail(f"{path}: no {src}-{tgt} pairs to score in split {split!r}")
    pairs = pairs[: args.limit] if args.limit else pairs

    start = time.perf_counter()
    with tqdm(total=len(pairs), desc="translating", unit="sent", file=sys.stderr) as bar:
        try:
            hyps = translate_all(tr, [s for s, _ in pairs], args.batch_size, args.beam_size, progress=bar.update)
        except ValueError as exc:
            fail(f"{path}: {exc}")
    seconds = time.perf_counter() - start
    refs = [t for _, t in pairs]
    scores = corpus_scores(hyps, refs)
    long = long_slice_scores([s for s, _ in pairs], hyps, refs, args.long_words)
    try:
        if args.output:
            Path(args.output).expanduser().write_text("\n".join(hyps) + "\n", encoding="utf-8")
        if args.save:
            metrics_path = Path(args.checkpoint) / METRICS_FILE
            metrics = json.loads(metrics_path.read_text(encoding="utf-8"))
            metrics["test"] = {**scores, "n": len(pairs), "data": display_source(str(data_file)), "long": long}
            write_file_atomic(metrics_path, json.dumps(metrics, indent=2) + "\n")
    except OSError as exc:  # checked at the start; the disk can still fill up or change since
        fail(f"could not write the results: {exc}")
    print(
        json.dumps(
            {
                **scores,
                "n": len(pairs),
                "long": long,
                "beam_size": args.beam_size,
                "seconds": round(seconds, 2),
                "checkpoint": str(args.checkpoint),
                "data": str(data_file),
                "src": src,
                "tgt": tgt,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
