"""Sequence-level knowledge distillation (Kim & Rush 2016, "Sequence-Level Knowledge
Distillation"): a trained teacher translates the training sources with beam search, and
those translations become extra training pairs for a new model.

Why try it: the app and the target scores use *greedy* decoding, and a greedy
decoder trained on a teacher's beam output can learn to find in one pass some of what the
teacher finds only with a beam (on this corpus the shipped model gains 2.5 test BLEU from a
beam of 4). The teacher's translations are also more consistent than the human
references: Tatoeba has several Italian translations for many English sentences, the
teacher gives one. The references stay in the training data; a teacher translation is
added only where it differs from its reference. Measured with the shipped model as
teacher, it did not beat training on the references alone (run kd15 in docs/experiments.md).

    extra = distill_pairs(Translator.load("checkpoints/en-it"), data.train, beam_size=4)
    data.train = data.train + extra
"""

from __future__ import annotations

import json
from typing import Callable, Sequence

from transformer.core.beam import translate_beam
from transformer.core.translator import Translator

# sentences handed to ``translate_beam`` at a time (it batches them by length, 64 at a
# time): fixed, because the batches' padding can change a beam's last digits, so the same
# chunking is what makes a distilled corpus reproducible
CHUNK = 1000


class DistillError(ValueError):
    """The teacher cannot teach this run (other languages, bad beam size)."""


def check_teacher(translator, src_lang: str, tgt_lang: str) -> None:
    """A teacher must translate the run's own direction: an it->en teacher on an en->it
    run would add Italian 'translations' of Italian text."""
    cfg = translator.model.cfg
    if (cfg.src_lang, cfg.tgt_lang) != (src_lang, tgt_lang):
        raise DistillError(f"the teacher translates {cfg.src_lang}->{cfg.tgt_lang}, this run {src_lang}->{tgt_lang}")


def distill_pairs(
    translator, pairs: Sequence[tuple[str, str]], beam_size: int = 4, progress: Callable[[int, int], None] | None = None
) -> list[tuple[str, str]]:
    """``(source, teacher translation)`` for every pair whose teacher translation is not
    empty and differs from the reference, in the order of ``pairs``.

    ``progress(done, total)`` is called after each chunk of sentences."""
    if isinstance(beam_size, bool) or not isinstance(beam_size, int) or beam_size < 1:
        raise DistillError(f"beam size must be a positive integer, got {beam_size!r}")
    sources = [s for s, _ in pairs]
    hyps: list[str] = []
    for start in range(0, len(sources), CHUNK):
        hyps += translate_beam(translator, sources[start : start + CHUNK], beam_size)
        if progress is not None:
            progress(len(hyps), len(sources))
    extra = []
    for (src, ref), hyp in zip(pairs, hyps):
        hyp = hyp.strip()
        if hyp and hyp != ref.strip():
            extra.append((src, hyp))
    return extra


def add_distilled(
    data,
    teacher: str,
    beam_size: int,
    src_lang: str,
    tgt_lang: str,
    dist=None,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Append ``teacher``'s translations (``distill_pairs``) to ``data.train`` and return
    how many were added. Under torchrun only rank 0 decodes; it sends the pairs to the
    other ranks as JSON, so every rank holds the same training pairs and the token-budget
    batches that are sharded between the ranks are the same everywhere."""
    is_main = dist is None or dist.is_main
    text = None
    if is_main:
        translator = Translator.load(teacher)
        check_teacher(translator, src_lang, tgt_lang)
        text = json.dumps(distill_pairs(translator, data.train, beam_size, progress=progress), ensure_ascii=False)
    if dist is not None:
        text = dist.broadcast_text(text)
    extra = [(src, tgt) for src, tgt in json.loads(text)]
    data.train = data.train + extra
    return len(extra)
