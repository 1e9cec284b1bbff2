"""Head habits: a name for what each attention head habitually does (a previous-token head, an
[SOS] sink, a monotonic aligner...), read by one documented rule, :data:`HABIT_RULE`, from its
diagnostics (``transformer.core.readings.head_stats``: one sentence, or the test set's average).

    stats = with_habits(trace.head_stats)   # each kind gets "habit", (L, H) names; "habit_rule" the rule
    stats["kinds"]["cross"]["habit"][1][3]  # e.g. "monotonic aligner"

The viewer names the habits it shows (``explorer/payload.py``), and ``head_stats.json`` keeps
them (``python -m transformer.cli.head_stats``). The names are read from the figures as the
diagnostics hold them (rounded to 4 decimals), so a label always agrees with the figures shown
beside it.
"""

from __future__ import annotations

import math

HABIT_RULE = (
    "First match wins. (1) Self-attention heads: share on the previous, same or next token >= 0.5 -> "
    "'previous-token head' / 'same-token head' / 'next-token head' (in decoder self-attention the 'same' "
    "token is the one the step just read, i.e. the last word emitted). (2) Any head: share on [SOS] + [EOS] + "
    "punctuation >= 0.5 -> '[SOS] sink' / '[EOS] sink' / 'punctuation sink' (the largest of the three). "
    "(3) Cross-attention: monotonicity >= 0.7 -> 'monotonic aligner'. (4) Normalised entropy >= 0.75 -> "
    "'broad'. (5) Self-attention: previous + same + next share >= 0.5 -> 'local head'. (6) Confidence >= 0.5 "
    "-> 'focused'. (7) Otherwise 'mixed'."
)
POSITIONAL = {"prev": "previous-token head", "same": "same-token head", "next": "next-token head"}
SINKS = {"sink_sos": "[SOS] sink", "sink_eos": "[EOS] sink", "sink_punct": "punctuation sink"}


def habit(kind: str, m: dict[str, float | None]) -> str:
    """The habit of one head of attention ``kind`` ("encoder", "decoder_self" or "cross") whose
    measures are ``m`` (a measure that is missing, None or NaN counts as undefined)."""

    def val(name):
        v = m.get(name)
        return -math.inf if v is None or math.isnan(v) else v

    if kind != "cross":
        best = max((n for n in POSITIONAL if n in m), key=val)
        if val(best) >= 0.5:
            return POSITIONAL[best]
    if val("sink") >= 0.5:
        return SINKS[max(SINKS, key=val)]
    if kind == "cross" and val("monotonicity") >= 0.7:
        return "monotonic aligner"
    if val("entropy") >= 0.75:
        return "broad"
    if kind != "cross" and sum(max(val(n), 0.0) for n in POSITIONAL) >= 0.5:
        return "local head"
    if val("confidence") >= 0.5:
        return "focused"
    return "mixed"


def with_habits(stats: dict) -> dict:
    """A copy of a head-stats dict with every head named: ``habit`` beside each kind's measures,
    an (L, H) list of lists, and the rule as ``habit_rule``."""
    kinds = {}
    for kind, entry in stats.get("kinds", {}).items():
        measures = {n: v for n, v in entry.items() if isinstance(v, list) and n != "habit"}
        shape = next(iter(measures.values()), [])
        names = [
            [habit(kind, {n: grid[layer][head] for n, grid in measures.items()}) for head in range(len(row))]
            for layer, row in enumerate(shape)
        ]
        kinds[kind] = {**entry, "habit": names}
    return {**stats, "habit_rule": HABIT_RULE, "kinds": kinds}
