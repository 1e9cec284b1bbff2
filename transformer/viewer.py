"""The few texts the app's Python side still writes about a trace; the browser draws the rest.

Every chart and every per-step text is made in the browser (``transformer/web/``) from
the payload of :mod:`transformer.payload`. What stays here needs the model or is shown
outside the viewer: the What-if prefix, the label of a forced translation, and the
notices about truncation and unknown text. Steps are 1-based in every text, as in the UI.
"""

from __future__ import annotations

from .payload import unk_fraction
from .trace import Trace

UNK = "[UNK]"
MEANINGLESS_UNK_SHARE = 0.5  # at least this share of [UNK] subwords: the output means nothing


def display_token(tok: str) -> str:
    """A subword as a reader sees it: the word-start marker ▁ becomes nothing."""
    return tok.replace("▁", "").strip() or tok


def whatif_prefix(trace: Trace, step: int, rank: int) -> list[int]:
    """Target ids to force: the outputs of steps 1..step-1 as decoded, then candidate
    ``rank`` (0 = most likely) at ``step`` (1-based)."""
    t = step - 1
    return [*trace.tgt_ids[1 : t + 1], int(trace.topk_ids[t][rank])]


def forced_label(trace: Trace) -> str | None:
    """"step 4 forced to 'si'" for a What-if trace, None for a plain greedy one."""
    n = len(trace.forced_prefix)
    if not n or n >= len(trace.tgt_tokens):
        return None
    return f"step {n} forced to '{display_token(trace.tgt_tokens[n])}'"


def notices(trace: Trace, max_source_tokens: int) -> list[str]:
    """Warnings that belong next to the translation, in the units the model works in (tokens)."""
    notes = []
    if trace.truncated:
        total = max_source_tokens + trace.n_src_tokens_dropped
        notes.append(f"⚠️ Too long for the model: it reads at most {max_source_tokens} subword tokens and this text "
                     f"has {total}. Only the first {max_source_tokens} were translated "
                     f"({trace.n_src_tokens_dropped} tokens dropped).")
    share = unk_fraction(trace.src_tokens, trace.special_tokens, UNK)
    if share >= MEANINGLESS_UNK_SHARE:
        n_real = sum(t not in trace.special_tokens or t == UNK for t in trace.src_tokens)
        n_unk = trace.src_tokens.count(UNK)
        notes.append(f"⚠️ This model reads English: {n_unk} of the {n_real} subword tokens of this text are unknown "
                     "to it ([UNK], e.g. another script or emoji), so the translation below is meaningless.")
    elif UNK in trace.src_tokens:
        notes.append("Some characters are unknown to the tokenizer and were read as [UNK].")
    if not trace.finished:
        notes.append("⚠️ Decoding stopped at the length limit before the model emitted [EOS].")
    return notes
