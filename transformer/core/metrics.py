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


# Tatoeba's sentences are short: the model is trained almost only on sentences under this many
# words and is measured apart on the ones at or above it (evaluate's "long" slice).
LONG_SENTENCE_WORDS = 15


def word_count(text: str) -> int:
    """Words as a reader counts them: runs of non-space characters."""
    return len(text.split())


def paired_bootstrap(old: list[str], new: list[str], references: list[str], samples: int = 1000) -> dict:
    """sacrebleu's paired bootstrap (Koehn 2004, its ``--paired-bs``) of ``new`` against ``old``
    on the same references: for BLEU and chrF, each system's corpus score and the two-sided p
    of their difference (the chance of a gap this large between two systems that are the same).
    Seeded as sacrebleu seeds it (``SACREBLEU_SEED``, 12345 by default), so a rerun agrees."""
    from sacrebleu.metrics import BLEU, CHRF
    from sacrebleu.significance import PairedTest

    metrics = {"bleu": BLEU(references=[references]), "chrf": CHRF(references=[references])}
    test = PairedTest([("old", old), ("new", new)], metrics, references=None, test_type="bs", n_samples=samples)
    _, results = test()
    names = {"BLEU": "bleu", "chrF2": "chrf"}
    out = {}
    for key, (old_result, new_result) in ((k, v) for k, v in results.items() if k in names):
        out[names[key]] = {"old": old_result.score, "new": new_result.score, "p": new_result.p_value}
    return out


def long_slice_scores(
    sources: list[str], hypotheses: list[str], references: list[str], min_words: int = LONG_SENTENCE_WORDS
) -> dict | None:
    """:func:`corpus_scores` of the pairs whose source has at least ``min_words`` words, with
    their count ``n`` and ``min_words``; None when there are none."""
    keep = [i for i, s in enumerate(sources) if word_count(s) >= min_words]
    if not keep:
        return None
    scores = corpus_scores([hypotheses[i] for i in keep], [references[i] for i in keep])
    return {"min_words": min_words, "n": len(keep), **scores}
