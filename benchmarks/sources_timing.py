"""Timings of "Where did this word come from?": the three endpoints and the norms of the main map.

    python benchmarks/sources_timing.py [--checkpoint checkpoints/en-it] [--repeat 5] [--threads 2]
                                        [--url http://127.0.0.1:7860/]

On one 10-word sentence, each figure the median of ``--repeat`` runs after one warm-up:

- greedy: plain greedy translation (the unit the others are compared with);
- contributions: what ``/contributions`` computes, the traced translation and ALTI+ of every
  step (``alti_contributions``) with its JSON; contributions_given: ALTI+ alone, the trace given
  (the page's request: the trace is in the visitor's state);
- decoder_lens: ``/decoder_lens``, one greedy decode per encoder layer (the earlier ones batched);
- score_reference: ``/score_reference`` of the test-style reference below;
- norms_given: ``value_norms`` with its JSON, the trace given (the main map's toggle);
- with ``--url``: the same three endpoints called through ``gradio_client`` on a running app
  (``*_http_ms``: the request, the queue and the JSON included).
Target: each at most 1 s for a 10-word sentence on 2 cores. The machine's load average is printed
with them: on a shared machine every figure grows with it. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch

from _repo import ROOT  # the clone, first on sys.path

from benchmarks.timing import SENTENCE, median_ms  # noqa: E402

from transformer.cli import load_translator_or_exit
from transformer.interpret.contributions import alti_contributions, value_norms
from transformer.interpret.decoder_lens import decoder_lens
from transformer.interpret.reference import score_reference

REFERENCE = "Mia sorella ha comprato un bellissimo vestito rosso per la festa."
TARGET_MS = 1000


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", default=str(ROOT / "checkpoints" / "en-it"), help="checkpoint directory")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per figure (median reported)")
    p.add_argument("--threads", type=int, default=2, help="torch threads (default 2: the Space's cores)")
    p.add_argument("--sentence", default=SENTENCE)
    p.add_argument("--reference", default=REFERENCE)
    p.add_argument("--url", default=None, help="a running app: time its endpoints through gradio_client too")
    args = p.parse_args(argv)
    if args.repeat < 1 or args.threads < 1:
        print("error: --repeat and --threads must be positive", file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    tr = load_translator_or_exit(args.checkpoint)
    text, ref, r = args.sentence, args.reference, args.repeat
    trace = tr.trace(text)
    figures = {
        "greedy_ms": median_ms(lambda: tr.translate([text]), r),
        "contributions_ms": median_ms(lambda: alti_contributions(tr, tr.trace(text)).to_json(), r),
        "contributions_given_ms": median_ms(lambda: alti_contributions(tr, trace).to_json(), r),
        "decoder_lens_ms": median_ms(lambda: decoder_lens(tr, text).to_json(), r),
        "score_reference_ms": median_ms(lambda: score_reference(tr, text, ref).to_json(), r),
        "norms_given_ms": median_ms(lambda: json.dumps(value_norms(tr, trace).to_dict(3)), r),
    }
    if args.url:
        from gradio_client import Client

        client = Client(args.url, verbose=False)
        figures["contributions_http_ms"] = median_ms(lambda: client.predict(text, 0, api_name="/contributions"), r)
        figures["decoder_lens_http_ms"] = median_ms(lambda: client.predict(text, api_name="/decoder_lens"), r)
        figures["score_reference_http_ms"] = median_ms(
            lambda: client.predict(text, ref, api_name="/score_reference"), r
        )
    info = {
        "sentence": text,
        "words": len(text.split()),
        "src_tokens": len(trace.src_tokens),
        "steps": trace.steps,
        "contributions_kb": round(len(alti_contributions(tr, trace).to_json()) / 1000, 1),
        "norms_kb": round(len(json.dumps(value_norms(tr, trace).to_dict(3))) / 1000, 1),
        "threads": torch.get_num_threads(),
        "repeat": r,
        "load_average_1min": round(os.getloadavg()[0], 2),
        "target_met": all(v <= TARGET_MS for k, v in figures.items() if k != "greedy_ms"),
    }
    for name, value in {**figures, **info}.items():
        print(f"{name:>24}: {value}")
    print(json.dumps({**figures, **info}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
