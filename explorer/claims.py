"""What the app's hints and the README say about one model, kept in one file beside its weights.

``checkpoints/NAME/claims.json`` holds the app's example sentences with their hints, the
minimal pairs' hints and the items of the README's "What to look for". Each figure those
texts state is written once, as a named value, and the texts name it in braces::

    "values": {"tom_step4_a": {"value": 0.52, "digits": 2, "where": "Tom sentence, step 4: ..."}}
    "hint": "Step 4 is a close call ('a' {tom_step4_a}, ...)"

so the page, the README and ``explorer/measure.py`` (which measures every value on the
model) read the same number, and a new model means re-measuring one file. The file's keys:
``schema`` (:data:`SCHEMA`), ``about`` (free text for whoever re-measures), ``values``,
``examples`` (``{sentence, hint}``), ``pairs`` (``{a, b, hint}``) and ``readme``
(``{intro: [lines], items: [{title, lines}]}``; lines are kept as written, so the README's
line breaks are the file's). A checkpoint without the file, such as a model of one's own,
gets :data:`GENERIC`: the same sentences, with hints that state nothing about any model (into
another language than Italian, :data:`GENERIC_ANY_TARGET`, whose hints name no target language).

A section lies between a ``<!-- claims:begin PATH ... -->`` line, where PATH (relative to
the file that holds the markers) names the claims file, and a ``<!-- claims:end -->`` line.
``first=N`` after PATH renders the intro and the first N items only: the README keeps two,
docs/what-to-look-for.md all of them::

    python -m explorer.claims --check README.md docs/what-to-look-for.md   # exit 1 when a section is stale
    python -m explorer.claims --write README.md docs/what-to-look-for.md   # render them again from the claims

Plain Python (no Gradio, no torch), so the check runs anywhere in a fraction of a second.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "SCHEMA",
    "FILE",
    "GENERIC",
    "GENERIC_ANY_TARGET",
    "Claims",
    "ClaimsError",
    "Value",
    "default",
    "for_checkpoint",
    "generic",
    "is_generic",
    "load",
    "parse",
    "render_section",
    "rendered_readme",
    "main",
]

SCHEMA = "explorer-claims/1"
FILE = "claims.json"
BEGIN = re.compile(r"^<!-- claims:begin (?P<path>\S+)(?:[ \t]+first=(?P<first>\S*))?[^\n]*-->[ \t]*$", re.MULTILINE)
END = re.compile(r"^<!-- claims:end -->[ \t]*$", re.MULTILINE)
NAME = re.compile(r"[a-z][a-z0-9_]*")
PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
MAX_DIGITS = 6
TOP_KEYS = {"schema", "about", "values", "examples", "pairs", "readme"}
log = logging.getLogger("app.claims")


class ClaimsError(ValueError):
    """A claims file that is missing or malformed; the message names the file and its first problem."""


def need(ok: bool, where: str, problem: str) -> None:
    """Stop at the first problem, saying where in the file it is (e.g. ``values.tom_it.digits``)."""
    if not ok:
        raise ClaimsError(f"{where}: {problem}" if where else problem)


@dataclass(frozen=True)
class Value:
    """One figure the texts state: ``value`` shown with ``digits`` decimals; ``where`` says
    where the app shows it, for whoever measures it again."""

    value: float
    digits: int
    where: str

    def shown(self, measured: float | None = None) -> str:
        """The value as the texts print it, or ``measured`` printed the same way: a test then
        compares what a reader would see, at the precision the text promises."""
        number = self.value if measured is None else float(measured)
        return f"{number:,.{self.digits}f}".replace("-", "\N{MINUS SIGN}")


@dataclass(frozen=True)
class Claims:
    """A parsed claims file. Texts are templates until :meth:`fill` puts the values in."""

    values: dict[str, Value] = field(default_factory=dict)
    example_templates: tuple[dict, ...] = ()
    pair_templates: tuple[dict, ...] = ()
    readme: dict | None = None
    source: Path | None = None

    def fill(self, template: str) -> str:
        return PLACEHOLDER.sub(lambda m: self.values[m.group(1)].shown(), template)

    def examples(self) -> list[list[str]]:
        """``[[sentence, hint], ...]``: the data of the browser's example list (``web/hint.js``)."""
        return [[e["sentence"], self.fill(e["hint"])] for e in self.example_templates]

    def pairs(self) -> list[dict]:
        """``[{"a", "b", "hint"}, ...]``: the curated pairs of the pairs view (``web/pairs.js``)."""
        return [{"a": p["a"], "b": p["b"], "hint": self.fill(p["hint"])} for p in self.pair_templates]

    def templates(self):
        """(where, text) of every text that may name a value, for the checks that each name exists."""
        for i, e in enumerate(self.example_templates):
            yield f"examples[{i}].hint", e["hint"]
        for i, p in enumerate(self.pair_templates):
            yield f"pairs[{i}].hint", p["hint"]
        readme = self.readme or {"intro": [], "items": []}
        for i, line in enumerate(readme["intro"]):
            yield f"readme.intro[{i}]", line
        for i, item in enumerate(readme["items"]):
            yield f"readme.items[{i}].title", item["title"]
            for j, line in enumerate(item["lines"]):
                yield f"readme.items[{i}].lines[{j}]", line


# --- reading and checking a file -------------------------------------------------------------------------
def load(path: str | Path) -> Claims:
    """The claims file at ``path``, checked; :class:`ClaimsError` names the file and its first problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ClaimsError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ClaimsError(f"{path}: cannot read it ({exc})") from None
    try:
        return parse(json.loads(text), source=path)
    except json.JSONDecodeError as exc:
        raise ClaimsError(f"{path}: not JSON ({exc})") from None
    except ClaimsError as exc:
        raise ClaimsError(f"{path}: {exc}") from None


def parse(data, source: Path | None = None) -> Claims:
    """Claims from the decoded JSON ``data``; every name a text uses must be a value, and every
    value must be stated somewhere (a figure nobody shows is one nobody re-measures)."""
    need(isinstance(data, dict), "", "expected a JSON object")
    need(data.get("schema") == SCHEMA, "schema", f"expected {SCHEMA!r}, found {data.get('schema')!r}")
    unknown = sorted(set(data) - TOP_KEYS)
    need(not unknown, ", ".join(unknown), f"unknown key (the keys are {', '.join(sorted(TOP_KEYS))})")
    values = data.get("values", {})
    need(isinstance(values, dict), "values", "expected an object of named values")
    claims = Claims(
        values={name: parse_value(name, v) for name, v in values.items()},
        example_templates=records(data.get("examples", []), "examples", ("sentence", "hint")),
        pair_templates=records(data.get("pairs", []), "pairs", ("a", "b", "hint")),
        readme=parse_readme(data.get("readme")),
        source=source,
    )
    check_names(claims)
    return claims


def parse_value(name: str, v) -> Value:
    where = f"values.{name}"
    need(bool(NAME.fullmatch(name)), where, "a name is lower-case letters, digits and _")
    need(
        isinstance(v, dict) and set(v) == {"value", "digits", "where"},
        where,
        'expected {"value": number, "digits": decimals shown, "where": where the app shows it}',
    )
    number, digits = v["value"], v["digits"]
    need(isinstance(number, (int, float)) and not isinstance(number, bool), f"{where}.value", "expected a number")
    need(
        isinstance(digits, int) and not isinstance(digits, bool) and 0 <= digits <= MAX_DIGITS,
        f"{where}.digits",
        f"expected a whole number of decimals, 0 to {MAX_DIGITS}",
    )
    need(isinstance(v["where"], str) and v["where"].strip() != "", f"{where}.where", "expected a description")
    return Value(number, digits, v["where"])


def records(items, where: str, keys: tuple[str, ...]) -> tuple[dict, ...]:
    """A list of objects with exactly ``keys``, each a non-empty string."""
    need(isinstance(items, list), where, "expected a list")
    for i, item in enumerate(items):
        need(isinstance(item, dict) and set(item) == set(keys), f"{where}[{i}]", f"expected the keys {', '.join(keys)}")
        for key in keys:
            need(isinstance(item[key], str) and item[key].strip() != "", f"{where}[{i}].{key}", "expected text")
    return tuple(dict(item) for item in items)


def lines_of(lines, where: str) -> list[str]:
    need(
        isinstance(lines, list) and all(isinstance(s, str) and "\n" not in s for s in lines),
        where,
        "expected a list of lines (strings without line breaks)",
    )
    return list(lines)


def parse_readme(readme) -> dict | None:
    if readme is None:
        return None
    need(isinstance(readme, dict) and set(readme) == {"intro", "items"}, "readme", "expected the keys intro, items")
    items = readme["items"]
    need(isinstance(items, list), "readme.items", "expected a list")
    parsed = []
    for i, item in enumerate(items):
        where = f"readme.items[{i}]"
        need(isinstance(item, dict) and set(item) == {"title", "lines"}, where, "expected the keys title, lines")
        need(isinstance(item["title"], str) and item["title"].strip() != "", f"{where}.title", "expected text")
        lines = lines_of(item["lines"], f"{where}.lines")
        need(bool(lines) and lines[0].strip() != "", f"{where}.lines", "the first line follows the title: not empty")
        parsed.append({"title": item["title"], "lines": lines})
    return {"intro": lines_of(readme["intro"], "readme.intro"), "items": parsed}


def check_names(claims: Claims) -> None:
    """Every ``{name}`` is a value, no brace is left unpaired, and every value is stated."""
    used = set()
    for where, text in claims.templates():
        for name in PLACEHOLDER.findall(text):
            need(name in claims.values, where, f"{{{name}}} is not one of the values")
            used.add(name)
        need(
            "{" not in PLACEHOLDER.sub("", text) and "}" not in PLACEHOLDER.sub("", text),
            where,
            "an unpaired brace (a value is named as {name})",
        )
    unused = sorted(set(claims.values) - used)
    need(not unused, f"values.{unused[0]}" if unused else "", "no text states this value")


# --- what the app shows ------------------------------------------------------------------------------------
GENERIC = Claims(
    example_templates=(
        {
            "sentence": "I have a red car.",
            "hint": "Adjective-noun reordering: Italian puts the colour after the noun ('auto rossa'). In "
            "cross-attention, which source token does each Italian word look at?",
        },
        {
            "sentence": "I don't like coffee.",
            "hint": "Negation and restructuring: Italian puts 'non' first, and 'I like' becomes 'mi piace' (coffee is "
            "the subject in Italian). Follow the rows of cross-attention.",
        },
        {
            "sentence": "The book that I bought yesterday is very interesting.",
            "hint": "Long-range dependency: at the step that emits the verb ('è'), does any head still look at 'book' "
            "across the relative clause?",
        },
        {
            "sentence": "Tom gave Mary a beautiful present for her birthday.",
            "hint": "Which head brings Mary in? Head importance ranks the heads; knock out the first and see what the "
            "translation loses. The logit lens shows the layer where each word appears.",
        },
        {
            "sentence": "My parents live in a small house near the lake.",
            "hint": "'near the lake' is easy to get wrong. At the step of the preposition, how sure is the model, and "
            "which source token does cross-attention look at?",
        },
        {
            "sentence": "We need to buy bread, milk and eggs.",
            "hint": "A list of three: does every item come out? If one goes missing, look at that step's candidates "
            "and force another with What if?",
        },
    ),
    pair_templates=(
        {
            "a": "My brother is tall.",
            "b": "My sister is tall.",
            "hint": "Gender agreement: in Italian the article and the adjective change with 'sister'. Does the model "
            "change them? Compare the candidates at each step.",
        },
        {
            "a": "I have a red car.",
            "b": "I have two red cars.",
            "hint": "Number agreement: the article, the noun and the adjective should all change. Compare the steps "
            "where they are written and where cross-attention looks.",
        },
        {
            "a": "The doctor said she was tired.",
            "b": "The doctor said he was tired.",
            "hint": "The pronoun sets the adjective's gender in Italian ('stanca', 'stanco'). "
            "Does the model follow it? "
            "Compare the candidates at the adjective's step.",
        },
    ),
)
"""What a checkpoint without a claims file shows: good sentences for English to Italian,
with hints that ask questions instead of stating any model's results."""

# the hints of GENERIC that speak of Italian, by sentence (a pair's by its first one), as a model
# into another language reads them
_ANY_TARGET_EXAMPLES = {
    "I have a red car.": "Adjective-noun order: does the translation keep the colour before the noun, or move it "
    "after? In cross-attention, which source token does each word of the translation look at?",
    "I don't like coffee.": "Negation and restructuring: where does the negation go, and does 'I like' keep its "
    "shape? Follow the rows of cross-attention.",
    "The book that I bought yesterday is very interesting.": "Long-range dependency: at the step that emits the "
    "verb, does any head still look at 'book' across the relative clause?",
}
_ANY_TARGET_PAIRS = {
    "My brother is tall.": "Agreement: does anything besides the noun change with 'sister' (an article, the "
    "adjective)? Compare the candidates at each step.",
    "The doctor said she was tired.": "The pronoun may set the gender of the words after it. Does the model "
    "follow it? Compare the candidates at the adjective's step.",
}
GENERIC_ANY_TARGET = Claims(
    example_templates=tuple(
        {**e, "hint": _ANY_TARGET_EXAMPLES.get(e["sentence"], e["hint"])} for e in GENERIC.example_templates
    ),
    pair_templates=tuple({**p, "hint": _ANY_TARGET_PAIRS.get(p["a"], p["hint"])} for p in GENERIC.pair_templates),
)
"""What a checkpoint without a claims file shows when it translates English into another language
than Italian: :data:`GENERIC`'s sentences, with hints that name no target language."""


def generic(tgt_lang: str = "it") -> Claims:
    """The examples and hints of a checkpoint without a claims file that translates into ``tgt_lang``."""
    return GENERIC if tgt_lang == "it" else GENERIC_ANY_TARGET


def is_generic(claims: Claims) -> bool:
    """Whether ``claims`` are generic ones, which state nothing measured on the model."""
    return claims is GENERIC or claims is GENERIC_ANY_TARGET


def for_checkpoint(directory: str | Path | None, tgt_lang: str = "it") -> Claims:
    """The claims the app shows for the checkpoint in ``directory``: its claims file, or the
    generic ones for its target language (:func:`generic`) when it has none (a model of one's own,
    a translator built in memory). A malformed file is logged, not fatal, so the page still
    serves (with the generic hints)."""
    if directory is None or not (Path(directory) / FILE).is_file():
        return generic(tgt_lang)
    try:
        return load(Path(directory) / FILE)
    except ClaimsError as exc:
        log.error("%s; showing the generic examples and hints instead", exc)
        return generic(tgt_lang)


@functools.lru_cache(maxsize=1)
def default() -> Claims:
    """The claims of the checkpoint ``python app.py`` serves when given none (the shipped model)."""
    from transformer.cli import DEFAULT_CHECKPOINT, REPO_ROOT

    return for_checkpoint(REPO_ROOT / DEFAULT_CHECKPOINT)


# --- a file's section -----------------------------------------------------------------------------------------
def render_section(claims: Claims, first: int | None = None) -> str:
    """The lines between a section's markers: the intro, a blank line, then one list item per
    claim (the first ``first`` of them, or all)."""
    need(claims.readme is not None, str(claims.source or "claims"), "no readme section in this file")
    items = claims.readme["items"]
    need(
        first is None or 1 <= first <= len(items),
        str(claims.source or "claims"),
        f"first={first}: the readme section has {len(items)} item(s)",
    )
    out = [claims.fill(line) for line in claims.readme["intro"]]
    if out:
        out.append("")
    for item in items[:first]:
        head, *rest = (claims.fill(line) for line in item["lines"])
        out.append(f"- **{claims.fill(item['title'])}** {head}")
        out.extend(f"  {line}" if line else "" for line in rest)
    return "".join(f"{line}\n" for line in out)


@dataclass(frozen=True)
class Section:
    """Where a section's lines start and end in its file, the claims file its begin marker names,
    and how many items it shows (None: all)."""

    start: int
    end: int
    source: Path
    first: int | None = None


def section_bounds(text: str, readme: Path) -> Section:
    """The section of ``text`` (the file ``readme``), as its markers give it."""
    begins, ends = list(BEGIN.finditer(text)), list(END.finditer(text))
    need(
        len(begins) == 1 and len(ends) == 1,
        str(readme),
        "expected one '<!-- claims:begin PATH -->' line and one '<!-- claims:end -->' line",
    )
    begin, end = begins[0], ends[0]
    need(begin.end() < end.start(), str(readme), "'<!-- claims:end -->' comes before '<!-- claims:begin'")
    first = begin["first"]
    need(first is None or first.isdigit(), str(readme), f"first={first}: expected a whole number")
    source = Path(os.path.normpath(readme.parent / begin["path"]))
    return Section(begin.end() + 1, end.start(), source, None if first is None else int(first))


def rendered_readme(readme: str | Path) -> tuple[str, str, Path]:
    """(the file as it is, as it should be, the claims file): the second has the section
    rendered from the claims file its begin marker names."""
    readme = Path(readme)
    text = readme.read_bytes().decode("utf-8")
    s = section_bounds(text, readme)
    return text, text[: s.start] + render_section(load(s.source), s.first) + text[s.end :], s.source


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m explorer.claims",
        description=(
            "Render the 'What to look for' section of each file from the claims file its "
            "'<!-- claims:begin PATH [first=N] -->' marker names (PATH relative to that file, e.g. "
            "checkpoints/en-it/claims.json from README.md); first=N renders the first N items only."
        ),
    )
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument(
        "--check", metavar="README", nargs="+", help="exit 1 if a section differs from what the claims render"
    )
    mode.add_argument("--write", metavar="README", nargs="+", help="rewrite each section from its claims file")
    return p.parse_args(argv)


def update(readme: Path, write: bool) -> int:
    """0: the section of ``readme`` is (now) current; 1: stale and not written; 2: a missing or malformed file."""
    try:
        text, fresh, source = rendered_readme(readme)
    except (ClaimsError, OSError, UnicodeDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if text == fresh:
        print(f"{readme}: the section matches {source}")
        return 0
    if not write:
        print(
            f"{readme}: the section differs from {source}; run python -m explorer.claims --write {readme}",
            file=sys.stderr,
        )
        return 1
    readme.write_bytes(fresh.encode("utf-8"))
    print(f"{readme}: section rewritten from {source}")
    return 0


def main(argv=None) -> int:
    """0: every section is (now) current; 1: --check found one stale; 2: a missing or malformed file."""
    args = parse_args(argv)
    codes = [update(Path(name), write=bool(args.write)) for name in args.check or args.write]
    return max(codes)


if __name__ == "__main__":
    sys.exit(main())
