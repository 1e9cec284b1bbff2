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
import os
from pathlib import Path
from typing import Callable, Sequence

from transformer.core.beam import translate_beam
from transformer.core.checkpoint import write_file_atomic
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


def teacher_id(translator, beam_size: int) -> dict:
    """What makes a teacher's translations the same ones: its folder, its weights' last write
    and the beam (the first line of a cache, ``distill_pairs``)."""
    folder = Path(translator.directory).resolve()
    weights = folder / "model.safetensors"
    return {"teacher": str(folder), "weights_mtime_ns": weights.stat().st_mtime_ns, "beam": beam_size}


def read_cache(cache: Path, header: dict, sources: Sequence[str]) -> list[str]:
    """The translations a cache holds for the first of ``sources``, in whole chunks: none when
    another teacher or beam wrote it; up to the first line that is cut short (a kill during a
    write) or is of another source (the training data changed)."""
    hyps: list[str] = []
    try:
        lines = cache.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return hyps
    try:
        if not lines or json.loads(lines[0]) != header:
            return hyps
        for line, src in zip(lines[1:], sources):
            entry = json.loads(line)
            if entry.get("src") != src or not isinstance(entry.get("hyp"), str):
                break
            hyps.append(entry["hyp"])
    except json.JSONDecodeError:
        pass
    return hyps if len(hyps) == len(sources) else hyps[: len(hyps) // CHUNK * CHUNK]


def _lines(sources: Sequence[str], hyps: Sequence[str]) -> str:
    return "".join(json.dumps({"src": s, "hyp": h}, ensure_ascii=False) + "\n" for s, h in zip(sources, hyps))


def _write_cache(cache: Path, header: dict, sources: Sequence[str], hyps: list[str]) -> None:
    """Rewrite ``cache`` with ``header`` and the translations kept so far (before appending),
    atomically: a kill now leaves the file as it was."""
    write_file_atomic(cache, json.dumps(header) + "\n" + _lines(sources, hyps))


def _append(cache: Path, sources: Sequence[str], hyps: Sequence[str]) -> None:
    """One chunk's lines in one write, on disk before the next chunk starts."""
    text = _lines(sources, hyps)
    with open(cache, "a", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def distill_pairs(
    translator,
    pairs: Sequence[tuple[str, str]],
    beam_size: int = 4,
    progress: Callable[[int, int], None] | None = None,
    cache: str | Path | None = None,
) -> list[tuple[str, str]]:
    """``(source, teacher translation)`` for every pair whose teacher translation is not
    empty and differs from the reference, in the order of ``pairs``.

    ``progress(done, total)`` is called after each chunk of sentences. ``cache``: a JSONL file
    that keeps every chunk's translations as it is done, so that a stopped run (hours of beam
    search with a big teacher) goes on from the last chunk it finished; the same teacher, beam
    and sources read it back (``read_cache``), anything else starts it again."""
    if isinstance(beam_size, bool) or not isinstance(beam_size, int) or beam_size < 1:
        raise DistillError(f"beam size must be a positive integer, got {beam_size!r}")
    sources = [s for s, _ in pairs]
    hyps: list[str] = []
    if cache is not None:
        cache, header = Path(cache), teacher_id(translator, beam_size)
        hyps = read_cache(cache, header, sources)
        _write_cache(cache, header, sources, hyps)
        if hyps and progress is not None:
            progress(len(hyps), len(sources))
    for start in range(len(hyps), len(sources), CHUNK):
        chunk = translate_beam(translator, sources[start : start + CHUNK], beam_size)
        if cache is not None:
            _append(cache, sources[start : start + CHUNK], chunk)
        hyps += chunk
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
    cache: str | Path | None = None,
) -> int:
    """Append ``teacher``'s translations (``distill_pairs``, kept in ``cache`` as they are
    made) to ``data.train`` and return how many were added. Under torchrun only rank 0
    decodes; it sends the pairs to the other ranks as JSON, so every rank holds the same
    training pairs and the token-budget batches that are sharded between the ranks are the
    same everywhere."""
    is_main = dist is None or dist.is_main
    text = None
    if is_main:
        translator = Translator.load(teacher)
        check_teacher(translator, src_lang, tgt_lang)
        extra = distill_pairs(translator, data.train, beam_size, progress=progress, cache=cache)
        text = json.dumps(extra, ensure_ascii=False)
    if dist is not None:
        text = dist.broadcast_text(text)
    extra = [(src, tgt) for src, tgt in json.loads(text)]
    data.train = data.train + extra
    return len(extra)
