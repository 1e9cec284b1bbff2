"""Every module and file the documentation names exists: the dotted paths (``transformer.x.y``,
``explorer.x``, down to a function or a method) and the repository's file names
(``transformer/core/trace.py``, ``docs/how-it-works.md``, ``explorer/web/viewer.js``, or a bare
``loop.py`` that some file of the repository is called) in docs/*.md, README.md, the
docstrings and comments of the package, the app and train.py, and the comments of the
browser modules.

Dotted paths are resolved on the syntax trees of the modules, never by importing them."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from functools import cache
from pathlib import Path

from tests.helpers import ROOT

PACKAGES = ("transformer", "explorer")
# the repository's own folders: a path starting with one of them names a file of the clone
FOLDERS = ("transformer", "explorer", "docs", "tests", "benchmarks", "data", "checkpoints")
EXTENSIONS = ("py", "md", "js", "mjs", "css", "json", "jsonl", "toml", "txt", "png", "html")
# bare names of these kinds (no folder) must be the name of some file of the clone
BARE_EXTENSIONS = ("py", "md", "js", "mjs", "css")
NOT_FILES = {"Node.js"}  # the JavaScript runtime

DOTTED = re.compile(rf"(?<![\w./-])(?:{'|'.join(PACKAGES)})(?:\.[A-Za-z_]\w*)+")
# a compressed file keeps its whole name ("words.txt.gz"), and "x.txt.bak" is not "x.txt"
FILE = re.compile(rf"(?<![\w./~-])(?:[\w.-]+/)*[\w.-]+\.(?:{'|'.join(EXTENSIONS)})(?:\.gz)?(?![\w/-]|\.\w)")


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def sources() -> list[Path]:
    return [
        ROOT / "train.py",
        ROOT / "app.py",
        *sorted((ROOT / "transformer").rglob("*.py")),
        *sorted(p for p in (ROOT / "explorer").rglob("*.py") if "__pycache__" not in p.parts),
        *sorted((ROOT / "explorer" / "web").glob("*.js")),
    ]


# a browser module's comments: // to the end of a line (not inside a URL such as http://), and /* ... */
JS_COMMENT = re.compile(r"(?<![:\w])//[^\n]*|/\*.*?\*/", re.S)


def prose(path: Path) -> str:
    """The text a reader reads: a Markdown file whole, a Python file's comments and string
    literals (its docstrings, and the messages and help that name a module or a file)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".js":
        return "\n".join(JS_COMMENT.findall(text))
    if path.suffix != ".py":
        return text
    kinds = (tokenize.COMMENT, tokenize.STRING)
    return "\n".join(t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type in kinds)


def references(text: str) -> set[str]:
    """The dotted module paths and the file names ``text`` mentions."""
    found = set(DOTTED.findall(text))
    for name in FILE.findall(text):
        folders = name.split("/")[:-1]
        if any(part.isupper() for part in folders) or name in NOT_FILES:
            continue  # a placeholder (checkpoints/NAME/claims.json, OUT/run.json), or not a file
        if folders and folders[0] in FOLDERS or not folders and name.rsplit(".", 1)[1] in BARE_EXTENSIONS:
            found.add(name)
    return found


@cache
def repository_names() -> frozenset[str]:
    skip = {".git", "node_modules", "__pycache__"}
    return frozenset(p.name for p in ROOT.rglob("*") if p.is_file() and not skip & set(p.parts))


@cache
def top_level_names(path: Path) -> dict[str, ast.AST | None]:
    """The names a module defines at its top level (a class's node, to look inside it), and
    the names its PEP 562 ``_EXPORTS`` table serves."""
    names: dict[str, ast.AST | None] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update({t.id: None for t in targets if isinstance(t, ast.Name)})
            if any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in targets):
                names.update({k.value: None for k in node.value.keys if isinstance(k, ast.Constant)})
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update({(a.asname or a.name).split(".")[0]: None for a in node.names})
    return names


def module_file(parts: list[str]) -> Path | None:
    base = ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def dotted_exists(name: str) -> bool:
    """Whether ``name`` is a module of the repository, or a name defined in one (a class's
    method or attribute one level down)."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        path = module_file(parts[:cut])
        if path is not None:
            break
    else:
        return False
    attributes = parts[cut:]
    if not attributes:
        return True
    names = top_level_names(path)
    if attributes[0] not in names:
        return False
    node = names[attributes[0]]
    if len(attributes) == 1 or not isinstance(node, ast.ClassDef):
        return len(attributes) == 1 or node is None  # deeper than a class: not followed
    inside = {
        getattr(n, "name", None) or getattr(getattr(n, "target", None), "id", None)
        for n in node.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.AnnAssign))
    }
    return attributes[1] in inside and len(attributes) == 2


def file_exists(name: str) -> bool:
    return (ROOT / name).exists() if "/" in name else name in repository_names()


def missing(text: str) -> list[str]:
    """The references of ``text`` that name nothing in the repository."""
    return sorted(
        ref for ref in references(text) if not (dotted_exists(ref) if DOTTED.fullmatch(ref) else file_exists(ref))
    )


def test_every_module_and_file_the_docs_name_exists():
    found = {path.relative_to(ROOT).as_posix(): missing(prose(path)) for path in [*documents(), *sources()]}
    assert {name: refs for name, refs in found.items() if refs} == {}


def test_the_check_finds_a_reference_to_nothing(tmp_path):
    """The check can fail: planted paths to a module, a function, a method and files that do not
    exist are found, beside real ones that pass."""
    planted = tmp_path / "planted.py"
    planted.write_text(
        '"""See ``transformer.core.nothing``, transformer.core.trace.no_such_function and\n'
        "transformer.core.trace.Trace.no_such_method, `transformer/core/nothing.py`, docs/nothing.md\n"
        "and explorer/web/nothing.js; analysis_of_nothing.py too. Real: transformer.core.trace.Trace.step,\n"
        'transformer.load_translator, explorer.payload, docs/how-it-works.md, loop.py."""\n'
        "# and in a comment: transformer.training.nothing\n"
        "x = 1  # transformer.nothing_at_all\n",
        encoding="utf-8",
    )
    assert missing(prose(planted)) == [
        "analysis_of_nothing.py",
        "docs/nothing.md",
        "explorer/web/nothing.js",
        "transformer.core.nothing",
        "transformer.core.trace.Trace.no_such_method",
        "transformer.core.trace.no_such_function",
        "transformer.nothing_at_all",
        "transformer.training.nothing",
        "transformer/core/nothing.py",
    ]


def test_a_browser_module_s_comments_are_read(tmp_path):
    """The check reads a JS module's comments (line and block) and not its code."""
    planted = tmp_path / "planted.js"
    planted.write_text(
        "// as docs/nothing.md says\n/* see explorer/web/nothing.js */\n"
        'const url = "http://example.org/docs/not-a-comment.md"; // and viewer.js\n',
        encoding="utf-8",
    )
    assert missing(prose(planted)) == ["docs/nothing.md", "explorer/web/nothing.js"]
