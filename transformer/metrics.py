"""Translation quality scores, shared by training (per-epoch validation) and evaluation.

Kept apart from ``training`` so that scoring a checkpoint never imports the optimiser,
the schedule or anything else that only training needs.
"""

from __future__ import annotations

import sacrebleu


def corpus_scores(hypotheses: list[str], references: list[str]) -> dict[str, float]:
    """sacrebleu's corpus BLEU (13a tokenisation) and chrF, as reported in papers."""
    return {
        "bleu": round(sacrebleu.corpus_bleu(hypotheses, [references]).score, 2),
        "chrf": round(sacrebleu.corpus_chrf(hypotheses, [references]).score, 2),
    }
