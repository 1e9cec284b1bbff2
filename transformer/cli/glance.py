"""The test set at a glance: every pair scored and measured, written as ``glance.json``.

    python -m transformer.cli.glance --checkpoint checkpoints/en-it \
        [--data data/tatoeba-en-it/test.jsonl] [--split test] [--limit N] [--out FILE] [--threads 1]

Each source is translated greedily with the full trace (``Translator.trace``, the app's own
decoding), and the file gets, per sentence: ``src``, ``ref``, ``hyp``; ``chrf``, sacrebleu's
``sentence_chrf`` of the hypothesis against the reference; ``logprob``, the model's
length-normalised log-probability of its hypothesis, (1/T) sum_t log p(y_t | source, y_<t)
over its T tokens, [EOS] included; ``src_share``, the mean over steps of the source share of
ALTI+ (``transformer.interpret.contributions``; the target prefix has the rest); ``coverage``,
defined below. Floats are rounded (chrF to 1 decimal, the rest to 3) and each sentence is one
line, so the file stays small (about 200 bytes a sentence) and diffs line by line.

Coverage of the source by cross-attention: take the last decoder layer's cross-attention,
average it over its heads, and sum it over all the decoding steps (the [EOS] step included):
each source token gets the attention mass it received, in steps (a token looked at fully
once has 1). ``coverage`` is the fraction of the source's word pieces ([SOS] and [EOS] left
out) that received at least ``COVERAGE_MASS`` = 0.5. A low value flags words the decoder
hardly read, a hint of an under-translation.

``--data`` defaults to the test set the checkpoint's ``metrics.json`` names (what
``python -m transformer.cli.evaluate --save`` scored), else ``data/tatoeba-en-it/test.jsonl``.
The JSON goes to ``<checkpoint>/glance.json`` unless ``--out`` says otherwise, so it ships
with the model. Progress goes to stderr; the last stdout line is one JSON object with ``n``,
``seconds``, ``seconds_per_sentence``, ``cpu_seconds_per_sentence`` (this process's CPU time)
and ``out``. Bad paths or flags: one line and exit code 2, before the model loads.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from transformer.cli import (
    DEFAULT_CHECKPOINT,
    REPO_ROOT,
    ArgumentParser,
    check_output_or_exit,
    data_split_or_exit,
    fail,
    load_translator_or_exit,
    whole_number,
)
from transformer.core.checkpoint import METRICS_FILE
from transformer.training.data import DataError, load_split

SCHEMA = "glance/1"
FILE_NAME = "glance.json"
DEFAULT_DATA = "data/tatoeba-en-it/test.jsonl"
COVERAGE_MASS = 0.5  # attention mass (in steps) a source token must receive to count as covered


def parse_args(argv=None):
    p = ArgumentParser(prog="python -m transformer.cli.glance", description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", default=DEFAULT_CHECKPOINT, help="checkpoint directory or hub repo id")
    p.add_argument(
        "--data",
        default=None,
        help="JSONL file (read whole), or a folder: its test.jsonl, or the split --split names "
        f"(default: the test set the checkpoint's metrics.json names, else {DEFAULT_DATA})",
    )
    p.add_argument("--split", default=None, help="split to read when --data is a folder (default: test)")
    p.add_argument("--limit", type=whole_number(1), default=None, help="score only the first N pairs")
    p.add_argument("--out", default=None, help=f"where to write the JSON (default: <checkpoint>/{FILE_NAME})")
    p.add_argument(
        "--threads",
        type=whole_number(1),
        default=1,
        help="torch threads (default 1: one sentence's matrices are small, and on a busy machine a second "
        "thread mostly waits for the first: 20 test sentences took 60 s with 1 and 330 s with 2 on 2 busy cores)",
    )
    return p.parse_args(argv)


def default_data(checkpoint: str) -> str:
    """The test file the checkpoint's metrics name (relative to the working directory or the
    repository), else ``DEFAULT_DATA``, wherever it is found first."""
    names = []
    for folder in (Path(checkpoint), REPO_ROOT / checkpoint):
        try:
            names.append(json.loads((folder / METRICS_FILE).read_text(encoding="utf-8"))["test"]["data"])
            break
        except (OSError, ValueError, KeyError, TypeError):
            continue
    names.append(DEFAULT_DATA)
    for name in names:
        for base in (Path.cwd(), REPO_ROOT):
            if (base / name).exists():
                return str(base / name)
    return DEFAULT_DATA


def coverage(cross_attn: np.ndarray, special: list[bool], mass: float = COVERAGE_MASS) -> float:
    """Fraction of the non-special source tokens whose cross-attention mass, last layer, mean of
    heads, summed over steps, is at least ``mass``. ``cross_attn``: (L, H, T, S)."""
    received = np.asarray(cross_attn[-1], dtype=np.float64).mean(axis=0).sum(axis=0)  # (S,)
    words = ~np.asarray(special, dtype=bool)
    if not words.any():
        return 0.0
    return float((received[words] >= mass).mean())


def sentence_row(tr, src: str, ref: str) -> dict:
    """Everything the file holds for one pair."""
    from sacrebleu import sentence_chrf

    from transformer.interpret.contributions import alti_contributions

    trace = tr.trace(src)
    hyp = trace.translation
    chosen = np.asarray(trace.topk_probs, dtype=np.float64)[:, 0]  # (T,) greedy: the top-1 is the token emitted
    shares = alti_contributions(tr, trace).source_share  # (T,)
    return {
        "src": src,
        "ref": ref,
        "hyp": hyp,
        "chrf": round(sentence_chrf(hyp, [ref]).score, 1),
        "logprob": round(float(np.log(np.maximum(chosen, 1e-45)).mean()), 3),
        "src_share": round(float(shares.mean()), 3),
        "coverage": round(coverage(trace.cross_attn, trace.src_special_mask()), 3),
    }


def write_glance(path: Path, header: dict, rows: list[dict]) -> None:
    """The header's keys, then ``sentences`` with one sentence per line."""
    head = json.dumps(header, ensure_ascii=False, indent=1)[:-2]  # drop the closing "\n}"
    lines = ",\n".join("  " + json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in rows)
    path.write_text(f'{head},\n "sentences": [\n{lines}\n ]\n}}\n', encoding="utf-8")


def glance_header(checkpoint: str, data: str, rows: list[dict], seconds: float) -> dict:
    """The file's keys before ``sentences``: where it comes from, what each field means, the means."""
    mean = {k: round(float(np.mean([r[k] for r in rows])), 3) for k in ("chrf", "logprob", "src_share", "coverage")}
    header = {
        "schema": SCHEMA,
        "checkpoint": checkpoint,
        "data": data,
        "n": len(rows),
        "decoding": "greedy, traced (Translator.trace)",
        "fields": {
            "chrf": "sacrebleu sentence chrF of hyp against ref",
            "logprob": "mean over the hypothesis's tokens ([EOS] included) of log p(token | source, prefix)",
            "src_share": "ALTI+ source share (Ferrando et al. 2022), mean over steps; the target prefix has the rest",
            "coverage": f"fraction of source word pieces ([SOS]/[EOS] left out) receiving >= {COVERAGE_MASS} of "
            "last-layer cross-attention (mean of heads) summed over steps",
        },
        "mean": mean,
        "seconds_per_sentence": round(seconds / len(rows), 3),
    }
    return header


def main(argv=None) -> int:
    """0 when the file is written; bad input exits with code 2 and a one-line message. Torch's
    thread count is set to ``--threads`` while it runs and restored afterwards."""
    args = parse_args(argv)
    before = torch.get_num_threads()
    try:
        return run(args)
    finally:
        torch.set_num_threads(before)


def run(args) -> int:
    check_output_or_exit(args.out, "--out")
    data = args.data if args.data is not None else default_data(args.checkpoint)
    path, split, data_file = data_split_or_exit(data, args.split)
    torch.set_num_threads(args.threads)
    tr = load_translator_or_exit(args.checkpoint)
    if args.out is not None:
        out = Path(args.out).expanduser()
    elif tr.directory is not None:
        out = Path(tr.directory) / FILE_NAME
        check_output_or_exit(out, "the default --out")
    else:
        fail("no checkpoint folder to write into: pass --out")
    try:
        pairs = load_split(str(path), split, tr.cfg.src_lang, tr.cfg.tgt_lang)
    except DataError as exc:
        fail(str(exc))
    pairs = pairs[: args.limit]
    if not pairs:
        fail(f"{path}: no {tr.cfg.src_lang}-{tr.cfg.tgt_lang} pairs to score")

    start, cpu = time.perf_counter(), time.process_time()
    rows = []
    for i, (src, ref) in enumerate(tqdm(pairs, desc="glancing", unit="sent", file=sys.stderr)):
        try:
            rows.append(sentence_row(tr, src, ref))
        except ValueError as exc:  # e.g. a source that is only control characters
            fail(f"{path}: pair {i + 1}: {exc}")
    seconds = time.perf_counter() - start
    header = glance_header(str(args.checkpoint), str(data_file), rows, seconds)
    try:
        write_glance(out, header, rows)
    except OSError as exc:
        fail(f"{out}: cannot write ({exc})")
    print(
        json.dumps(
            {
                "n": len(rows),
                "seconds": round(seconds, 2),
                "seconds_per_sentence": round(seconds / len(rows), 3),
                "cpu_seconds_per_sentence": round((time.process_time() - cpu) / len(rows), 3),
                "out": str(out),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
