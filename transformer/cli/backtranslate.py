"""Make synthetic training pairs by back-translating monolingual target-language text
(the method and its hygiene: ``transformer.training.synthetic``).

    python -m transformer.cli.backtranslate --testsets OPUS-MT-testsets/datasets/helsinki_nlp/tatoeba/testsets \\
        --checkpoint runs/rev-it-en/best --out data/tatoeba-en-it-bt
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tqdm import tqdm

from transformer.cli import ArgumentParser, fail, integer, load_translator_or_exit, whole_number
from transformer.training.synthetic import (
    METHODS,
    BacktranslateError,
    backtranslate,
    held_out,
    normalize,
    read_testsets,
    select_monolingual,
    synthetic_pairs,
    write_fingerprints,
    write_pairs,
)
from transformer.training.data import DataError, load_parallel


def parse_args(argv=None):
    p = ArgumentParser(
        prog="python -m transformer.cli.backtranslate",
        description="Make synthetic training pairs by back-translating monolingual "
        "target-language sentences from the Tatoeba test sets of other pairs.",
    )
    p.add_argument(
        "--testsets",
        required=True,
        help="OPUS-MT-testsets' datasets/helsinki_nlp/tatoeba/testsets folder (git clone "
        "https://github.com/Helsinki-NLP/OPUS-MT-testsets)",
    )
    p.add_argument("--checkpoint", required=True, help="the reverse model (target -> source), a directory or hub id")
    p.add_argument(
        "--dataset",
        default="data/tatoeba-en-it",
        help="the real corpus (train/validation/test.jsonl): its held-out sentences are never used, "
        "and sentences already among its training targets are not back-translated again",
    )
    p.add_argument("--out", required=True, help="folder to write train.jsonl into (created if missing)")
    p.add_argument(
        "--method",
        choices=METHODS,
        default="sample",
        help="beam: the reverse model's beam output; sample: a draw from its full distribution; "
        "noised-beam: beam output with words dropped, blanked and locally shuffled",
    )
    p.add_argument("--beam-size", type=whole_number(1), default=4, help="beam width for beam and noised-beam")
    p.add_argument(
        "--top-k",
        type=whole_number(0),
        default=0,
        help="sample only among the K most likely tokens at each step (0: from the whole distribution)",
    )
    p.add_argument("--seed", type=integer, default=0, help="seed of the sampling and the noise")
    p.add_argument(
        "--limit", type=whole_number(1), default=None, help="back-translate only the first N sentences (trials)"
    )
    p.add_argument(
        "--heldout",
        default=None,
        help="also write the held-out sentences' fingerprints to this file (for the hygiene test)",
    )
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if not Path(args.testsets).is_dir():
        fail(f"{args.testsets}: no such folder (expected OPUS-MT-testsets' tatoeba/testsets)")
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"{out}: cannot create the output folder ({exc.strerror or exc})")
    tr = load_translator_or_exit(args.checkpoint)
    src_lang, tgt_lang = tr.cfg.tgt_lang, tr.cfg.src_lang  # the forward direction this data is for
    try:
        real = load_parallel(args.dataset, src_lang, tgt_lang)
        text = read_testsets(args.testsets, src_lang, tgt_lang)
    except (DataError, BacktranslateError) as exc:
        fail(str(exc))
    blocked = held_out(text.evaluation, real.train, (real.validation, real.test))
    known = {normalize(t) for _, t in real.train}
    mono = [s for s in select_monolingual(text.monolingual, blocked, known) if tr.src_tok.encode(s).ids]
    mono = mono[: args.limit] if args.limit else mono
    print(
        f"{len(text.monolingual)} {tgt_lang} sentences in the other pairs' test sets; {len(mono)} to "
        f"back-translate ({len(blocked)} held-out sentences excluded, and the corpus's own targets)",
        file=sys.stderr,
    )
    if args.heldout:
        write_fingerprints(args.heldout, blocked)
    t0 = time.monotonic()
    with tqdm(
        total=len(mono),
        desc=f"back-translating ({args.method})",
        unit="sentence",
        file=sys.stderr,
        mininterval=0.5 if sys.stderr.isatty() else 30,
    ) as bar:
        sources = backtranslate(
            tr,
            mono,
            args.method,
            seed=args.seed,
            beam_size=args.beam_size,
            top_k=args.top_k,
            progress=lambda done, total: bar.update(done - bar.n),
        )
    pairs = synthetic_pairs(mono, sources, blocked)
    write_pairs(out / "train.jsonl", pairs, src_lang, tgt_lang, origin=f"bt:{args.method}")
    print(
        json.dumps(
            {
                "pairs": len(pairs),
                "sentences": len(mono),
                "method": args.method,
                "minutes": round((time.monotonic() - t0) / 60, 1),
                "out": str(out / "train.jsonl"),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
