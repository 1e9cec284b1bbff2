"""Translations judged by reading them one by one: for each source sentence, the translations a
reader accepted and those they refused. BLEU and chrF move with every word; a reader's count of
correct sentences is the figure a learner meets, so a file of judgements lets that count be
re-taken for any model, and only its new translations need reading.

The file is JSON, one entry per source sentence:

    {"rule": "what counts as correct",
     "sentences": {"Our cat is sleeping on the sofa.": {"correct": ["Il nostro gatto dorme sul divano."],
                                                        "wrong": ["Il nostro gatto dorme sul solletico."]}}}

A translation is matched exactly (after stripping its ends), so a model's greedy output, which
is deterministic, is judged once.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path


class JudgementsError(ValueError):
    """A judgements file that cannot be read, or a new judgement that contradicts it."""


@dataclass
class Judgements:
    rule: str = ""
    # source -> translation -> True (correct) or False (wrong)
    sentences: dict[str, dict[str, bool]] = field(default_factory=dict)

    def verdict(self, source: str, translation: str) -> bool | None:
        """True or False as judged, None when this translation of this source was never read."""
        return self.sentences.get(source.strip(), {}).get(translation.strip())

    def covers(self, sources: list[str]) -> bool:
        """Whether any of ``sources`` has a judged translation (whether to report a file at all)."""
        return any(s.strip() in self.sentences for s in sources)

    def add(self, source: str, translation: str, correct: bool) -> bool:
        """Record one judgement; True if it is new. One that contradicts the file raises: a
        reader's earlier word is never overwritten silently."""
        source, translation = source.strip(), translation.strip()
        before = self.verdict(source, translation)
        if before is not None and before != correct:
            said = "correct" if before else "wrong"
            raise JudgementsError(
                f"{source!r}: {translation!r} was judged {said} before (to change that, edit the file itself)"
            )
        self.sentences.setdefault(source, {})[translation] = correct
        return before is None


def tally(judged: Judgements, sources: list[str], translations: list[str]) -> dict[str, int]:
    """How many of ``translations`` are judged correct, wrong, or not yet judged."""
    counts = {"n": len(sources), "correct": 0, "wrong": 0, "unjudged": 0}
    for source, translation in zip(sources, translations, strict=True):
        said = judged.verdict(source, translation)
        counts["unjudged" if said is None else "correct" if said else "wrong"] += 1
    return counts


def _entry(source: object, entry: object) -> dict[str, bool]:
    if not isinstance(entry, dict) or set(entry) - {"correct", "wrong"}:
        raise JudgementsError(f'{source!r}: expected {{"correct": [...], "wrong": [...]}}')
    out = {}
    for key in ("correct", "wrong"):
        texts = entry.get(key, [])
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise JudgementsError(f"{source!r}: {key!r} must be a list of translations")
        for text in texts:
            if out.get(text.strip(), key == "correct") != (key == "correct"):
                raise JudgementsError(f"{source!r}: {text!r} is both correct and wrong")
            out[text.strip()] = key == "correct"
    return out


def load_judgements(path: str | Path) -> Judgements:
    """The judgements in ``path``; a missing or malformed file raises :class:`JudgementsError`
    with one line that names it."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise JudgementsError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise JudgementsError(f"{path}: not a judgements file ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("sentences"), dict):
        raise JudgementsError(f'{path}: not a judgements file (expected an object with "sentences")')
    try:
        sentences = {src.strip(): _entry(src, entry) for src, entry in data["sentences"].items()}
    except JudgementsError as exc:
        raise JudgementsError(f"{path}: {exc}") from None
    return Judgements(str(data.get("rule", "")), sentences)


def save_judgements(judged: Judgements, path: str | Path) -> None:
    """Write ``judged`` to ``path`` in a stable order (sources and translations sorted, so a
    new judgement is a one-line diff), replacing the file only once the new one is whole."""
    sentences = {
        src: {
            "correct": sorted(t for t, ok in judged.sentences[src].items() if ok),
            "wrong": sorted(t for t, ok in judged.sentences[src].items() if not ok),
        }
        for src in sorted(judged.sentences)
    }
    text = json.dumps({"rule": judged.rule, "sentences": sentences}, ensure_ascii=False, indent=1) + "\n"
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
