"""Server-side timings of the head analyses (diagnostics, rollout, importance, knock-out) on one 10-word sentence.

    python benchmarks/analysis_timing.py [--checkpoint checkpoints/en-it] [--repeat 5]

- greedy: plain greedy translation (the unit the others are compared with);
- trace: ``Translator.trace`` with everything the viewer needs (attention, top-k, logit
  lens, rollout, head stats), and its parts ``head_stats`` and rollout alone;
- to_dict / json: turning the trace into the /translate payload;
- importance: ``knockout.head_importance`` (all heads, batched teacher-forced passes),
  target <= 300 ms;
- knockout: ``knockout.knockout`` of one head (two greedy decodes, two teacher-forced passes).
Each figure is the median of ``--repeat`` runs after one warm-up. The last line is one
JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

from _repo import ROOT  # the clone, first on sys.path

from benchmarks.timing import SENTENCE, median_ms  # noqa: E402

from transformer.core import readings  # noqa: E402
from transformer.interpret import knockout  # noqa: E402
from transformer.cli import load_translator_or_exit  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", default=str(ROOT / "checkpoints" / "en-it"), help="checkpoint directory")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per figure (median reported)")
    p.add_argument("--sentence", default=SENTENCE, help="sentence to analyse")
    args = p.parse_args(argv)
    if args.repeat < 1:
        print("error: --repeat must be positive", file=sys.stderr)
        return 2
    tr = load_translator_or_exit(args.checkpoint)
    text, r = args.sentence, args.repeat
    trace = tr.trace(text)
    payload = trace.to_dict()
    figures = {
        "greedy_ms": median_ms(lambda: tr.translate([text]), r),
        "trace_ms": median_ms(lambda: tr.trace(text), r),
        "head_stats_ms": median_ms(lambda: readings.head_stats(trace), r),
        "rollout_ms": median_ms(
            lambda: (
                readings.encoder_rollout(trace.encoder_attn),
                readings.source_relevance(trace.encoder_attn, trace.decoder_self_attn, trace.cross_attn),
            ),
            r,
        ),
        "to_dict_ms": median_ms(trace.to_dict, r),
        "json_ms": median_ms(lambda: json.dumps(payload), r),
        "importance_ms": median_ms(lambda: knockout.head_importance(tr, text), r),
        "knockout_ms": median_ms(lambda: knockout.knockout(tr, text, ["cross:0:0"]), r),
    }
    figures["importance_over_greedy"] = round(figures["importance_ms"] / figures["greedy_ms"], 2)
    figures["to_dict_over_trace"] = round(figures["to_dict_ms"] / figures["trace_ms"], 3)
    info = {
        "sentence": text,
        "words": len(text.split()),
        "steps": trace.steps,
        "src_tokens": len(trace.src_tokens),
        "payload_bytes": len(json.dumps(payload)),
        "threads": torch.get_num_threads(),
        "repeat": r,
        "importance_target_ms": 300,
        "importance_target_met": figures["importance_ms"] <= 300,
    }
    for name, value in figures.items():
        print(f"{name:>24}: {value}")
    for name, value in info.items():
        print(f"{name:>24}: {value}")
    print(json.dumps({**figures, **info}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
