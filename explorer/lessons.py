"""The course inside the explorer: short lessons on the live model, kept as data beside its weights.

``checkpoints/NAME/lessons.json`` holds every lesson: its sentence, the view it opens (kind,
layer, head, step and the sections open), a short text, an optional guess the learner commits
to before the model answers, a task the learner performs in the explorer, and a "Show me" hint.
The browser (``web/lessons.js``) checks the task against the trace on screen and explains the
answer with the model's own numbers, read from the trace; what a lesson's *text* states about the
model is written once, as a fact::

    "facts": {"violin": {"kind": "pieces", "word": "violin", "is": ["viol", "in"]}}
    "text": "'violin' is read as {violin}"

and :func:`measure` measures each fact on the model (``tests/test_lessons.py``), so a
retrained model fails a test instead of teaching something false. Fact kinds (steps, layers and
heads count from 1, as on screen; a token is written as the app shows it, without "▁"):

- ``translation``: the greedy translation of the lesson's sentence;
- ``pieces``: the source tokens an English word is read as;
- ``emits``: the token written at ``step``;
- ``prob``: the probability of ``token`` among the candidates at ``step`` (shown with ``digits``);
- ``reads``: the source token cross-attention ``layer``, ``head`` (a number or "mean") weighs most at ``step``;
- ``weight``: that head's weight on ``token`` at ``step`` (with ``digits``);
- ``lens``: the first decoder layer from which the logit lens's top token at ``step`` is the
  emitted one and stays so;
- ``knockout``: the translation with the cross-attention ``heads`` ("layer:head", ...) knocked out;
- ``beam``: the best translation of a beam of ``size``;
- ``config``: a field of the model's config (``h``, ``n_decoder_layers``...).

Plain Python until :func:`measure` is called (which runs the model), so the page reads the file cheaply.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from transformer.core.readings import strongest_key

__all__ = ["FILE", "SCHEMA", "Lessons", "LessonsError", "load", "for_checkpoint", "measure", "shown"]

FILE = "lessons.json"
SCHEMA = "explorer-lessons/1"
MAX_WORDS = 90  # "at most about 80 words": a lesson sits beside the picture, not over it
FACT = re.compile(r"\{([a-z][a-z0-9_]*)\}")
VIEWS = ("cross", "decoder", "encoder")
GUESSES = ("next", "source", "layer", "choice")
TASKS = (
    "piece",
    "step",
    "top-cell",
    "sink-head",
    "masked-cell",
    "pe-follow",
    "explain-cell",
    "open",
    "knockout",
    "beam",
)
FACT_KINDS = {
    "translation": (),
    "pieces": ("word",),
    "emits": ("step",),
    "prob": ("step", "token", "digits"),
    "reads": ("layer", "head", "step"),
    "weight": ("layer", "head", "step", "token", "digits"),
    "lens": ("step",),
    "knockout": ("heads",),
    "beam": ("size",),
    "config": ("field",),
}
log = logging.getLogger("app.lessons")


class LessonsError(ValueError):
    """A lessons file that is missing or malformed; the message names the file and its first problem."""


def need(ok: bool, where: str, problem: str) -> None:
    if not ok:
        raise LessonsError(f"{where}: {problem}")


@dataclass(frozen=True)
class Lessons:
    """A parsed lessons file: ``lessons`` as in the file, texts still naming their facts."""

    lessons: tuple[dict, ...]
    source: Path | None = None

    def facts(self):
        """(lesson, name, fact) of every fact, for whoever measures them."""
        for lesson in self.lessons:
            for name, fact in lesson.get("facts", {}).items():
                yield lesson, name, fact

    def payload(self) -> list[dict]:
        """The lessons as the browser gets them: every ``{fact}`` of a text filled in."""
        return [fill(lesson) for lesson in self.lessons]


def shown(fact: dict) -> str:
    """A fact as a text prints it: a number with its decimals, pieces joined with " + ", quoted words."""
    value = fact["is"]
    if isinstance(value, list):
        return " + ".join(f"“{v}”" for v in value)
    if isinstance(value, float):
        return f"{value:.{fact['digits']}f}"
    if isinstance(value, int):
        return str(value)
    return f"“{value}”"


def fill(lesson: dict) -> dict:
    facts = lesson.get("facts", {})
    text = lambda t: FACT.sub(lambda m: shown(facts[m.group(1)]), t)  # noqa: E731
    out = {k: v for k, v in lesson.items() if k != "facts"}
    out["text"] = text(lesson["text"])
    if lesson.get("guess"):
        out["guess"] = {**lesson["guess"], "ask": text(lesson["guess"]["ask"])}
    out["task"] = {**lesson["task"], "do": text(lesson["task"]["do"])}
    out["hint"] = {**lesson["hint"], "say": text(lesson["hint"]["say"])}
    if lesson.get("after"):
        out["after"] = text(lesson["after"])
    return out


# --- reading and checking a file -------------------------------------------------------------------
def load(path: str | Path) -> Lessons:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LessonsError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LessonsError(f"{path}: cannot read it ({exc})") from None
    try:
        return parse(data, source=path)
    except LessonsError as exc:
        raise LessonsError(f"{path}: {exc}") from None


def for_checkpoint(directory) -> Lessons | None:
    """The lessons of the checkpoint in ``directory``, or None (a model without lessons, or a
    broken file: logged, and the page goes on without a course)."""
    path = Path(directory) / FILE if directory else None
    if path is None or not path.is_file():
        return None
    try:
        return load(path)
    except LessonsError as exc:
        log.warning("no lessons: %s", exc)
        return None


def parse(data, source: Path | None = None) -> Lessons:
    need(isinstance(data, dict) and data.get("schema") == SCHEMA, "schema", f"expected {SCHEMA!r}")
    lessons = data.get("lessons")
    need(isinstance(lessons, list) and lessons, "lessons", "expected a list of lessons")
    ids = set()
    for i, lesson in enumerate(lessons):
        where = f"lessons[{i}]"
        check_lesson(lesson, where)
        need(lesson["id"] not in ids, f"{where}.id", f"{lesson['id']!r} is used twice")
        ids.add(lesson["id"])
    return Lessons(tuple(lessons), source)


def text_field(obj: dict, key: str, where: str) -> str:
    need(isinstance(obj.get(key), str) and obj[key].strip() != "", f"{where}.{key}", "expected text")
    return obj[key]


def check_lesson(lesson, where: str) -> None:
    need(isinstance(lesson, dict), where, "expected an object")
    for key in ("id", "title", "sentence", "text"):
        text_field(lesson, key, where)
    need(len(lesson["text"].split()) <= MAX_WORDS, f"{where}.text", f"more than {MAX_WORDS} words")
    view = lesson.get("view")
    need(isinstance(view, dict) and view.get("view") in VIEWS, f"{where}.view", f"expected a view of {VIEWS}")
    need(isinstance(view.get("step"), int) and view["step"] >= 1, f"{where}.view.step", "expected a step from 1")
    need(isinstance(view.get("open", []), list), f"{where}.view.open", "expected a list of section names")
    guess = lesson.get("guess")
    if guess is not None:
        ok = isinstance(guess, dict) and guess.get("kind") in GUESSES
        need(ok, f"{where}.guess", f"expected a kind of {GUESSES}")
        text_field(guess, "ask", f"{where}.guess")
        if guess["kind"] == "choice":
            need(isinstance(guess.get("choices"), list) and len(guess["choices"]) >= 2, f"{where}.guess", "choices")
    task = lesson.get("task")
    need(isinstance(task, dict) and task.get("kind") in TASKS, f"{where}.task", f"expected a kind of {TASKS}")
    text_field(task, "do", f"{where}.task")
    hint = lesson.get("hint")
    need(isinstance(hint, dict), f"{where}.hint", "expected {target, say}")
    text_field(hint, "target", f"{where}.hint")
    text_field(hint, "say", f"{where}.hint")
    facts = lesson.get("facts", {})
    need(isinstance(facts, dict), f"{where}.facts", "expected an object of named facts")
    for name, fact in facts.items():
        kind = fact.get("kind") if isinstance(fact, dict) else None
        need(kind in FACT_KINDS, f"{where}.facts.{name}", f"expected a kind of {tuple(FACT_KINDS)}")
        missing = [k for k in ("is", *FACT_KINDS[kind]) if k not in fact]
        need(not missing, f"{where}.facts.{name}", f"missing {', '.join(missing)}")
    texts = [lesson["text"], task["do"], hint["say"], lesson.get("after", ""), *([guess["ask"]] if guess else [])]
    for text in texts:
        for name in FACT.findall(text):
            need(name in facts, where, f"{{{name}}} is not one of its facts")


# --- measuring the facts on a model ---------------------------------------------------------------
def word(token: str) -> str:
    return token.replace("▁", "")


def measure(translator, lesson: dict, fact: dict):
    """What ``fact`` of ``lesson`` is on the model ``translator``, in the form of its ``is``."""
    from transformer.interpret import knockout
    from transformer.interpret.beam_tree import beam_tree

    text, kind = fact.get("sentence", lesson["sentence"]), fact["kind"]
    if kind == "config":
        return getattr(translator.cfg, fact["field"])
    trace = translator.trace(text)
    src = [word(t) for t in trace.src_tokens]
    if kind == "translation":
        return trace.translation
    if kind == "pieces":
        return word_pieces(trace.src_tokens, fact["word"])
    step = fact.get("step", 1) - 1
    if kind == "emits":
        return word(trace.tgt_tokens[step + 1])
    if kind == "prob":
        tokens = [word(t) for t in trace.topk_tokens[step]]
        return round(float(trace.topk_probs[step][tokens.index(fact["token"])]), fact["digits"])
    if kind in ("reads", "weight"):
        heads = trace.cross_attn[fact["layer"] - 1, :, step]  # (H, S)
        row = heads.mean(axis=0) if fact["head"] == "mean" else heads[int(fact["head"]) - 1]
        if kind == "reads":
            return src[strongest_key(row)]
        return round(float(row[src.index(fact["token"])]), fact["digits"])
    if kind == "lens":  # a large vocabulary's trace has its lens computed now
        return lens_first(translator.logit_lens(trace), step)
    if kind == "knockout":
        heads = [
            {"kind": "cross", "layer": int(a) - 1, "head": int(b) - 1}
            for a, b in (h.split(":") for h in fact["heads"].split(","))
        ]
        return knockout.knockout(translator, text, heads)["knockout"]["translation"]
    if kind == "beam":
        return beam_tree(translator, text, fact["size"])[0]
    raise LessonsError(f"unknown fact kind {kind!r}")


def word_pieces(tokens: list[str], wanted: str) -> list[str]:
    """The tokens that spell the English word ``wanted`` (from the token starting it with "▁")."""
    for i, tok in enumerate(tokens):
        if not tok.startswith("▁"):
            continue
        j, spelled = i + 1, word(tok)
        while j < len(tokens) and not tokens[j].startswith("▁") and spelled != wanted and wanted.startswith(spelled):
            spelled += tokens[j]
            j += 1
        if spelled == wanted:
            return [word(t) for t in tokens[i:j]]
    return []


def lens_first(trace, step: int) -> int | None:
    """The first layer (1-based) from which the logit lens's top token is the emitted one and stays
    so at 0-based ``step`` (the browser's lens section says the same)."""
    from transformer.core.readings import logit_lens_first_layer

    first = logit_lens_first_layer(trace)[step]
    return None if first is None else first + 1


def stale(translator, lessons: Lessons) -> list[str]:
    """Every fact whose measure on ``translator`` is not what the lessons say, one line each."""
    out = []
    for lesson, name, fact in lessons.facts():
        got = measure(translator, lesson, fact)
        if got != fact["is"]:
            out.append(f"{lesson['id']}.{name}: the lesson says {fact['is']!r}, the model {got!r}")
    return out


def main(argv=None) -> int:
    """``python -m explorer.lessons [--checkpoint DIR]``: measure every fact of the checkpoint's
    lessons and list the stale ones (exit 1 when there are any, 2 when the file is broken)."""
    import argparse

    from transformer import load_translator

    p = argparse.ArgumentParser(prog="python -m explorer.lessons", description=main.__doc__)
    p.add_argument("--checkpoint", default=str(Path(__file__).resolve().parent.parent / "checkpoints" / "en-it"))
    args = p.parse_args(argv)
    try:
        lessons = load(Path(args.checkpoint) / FILE)
    except LessonsError as exc:
        print(exc, file=sys.stderr)
        return 2
    bad = stale(load_translator(args.checkpoint), lessons)
    for line in bad:
        print(line)
    print(f"{sum(1 for _ in lessons.facts()) - len(bad)} facts hold, {len(bad)} stale")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
