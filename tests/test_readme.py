"""Every ```python block of README.md and of docs/*.md runs.

Each block runs alone, in a fresh interpreter (``python -c``) with the repository root as its
working directory, as a reader would paste it there; any exception fails the test, and the
message shows the block's file and line and the end of its stderr. Blocks that use
``gradio_client`` need a running app: the test starts ``python app.py`` on a free port (once
per module; these tests are marked ``slow``) and points the block's
``http://127.0.0.1:7860/`` at it. Anything not meant to run goes in another fence
(```bash, ```text, ...); every fence must name its language, so a Python block cannot escape
by being unlabelled.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import ROOT, serve_app

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PYTHON = {"python", "python3", "py"}
APP_URL = "http://127.0.0.1:7860"  # where the README's gradio_client examples find the app
BLOCK_TIMEOUT = 300  # seconds; a block loads checkpoints/en-it in about 2 s
# an opening or closing fence: up to 3 spaces, then 3+ backticks or tildes, then the info string
FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str  # first word of the info string, lower case ("" when there is none)
    code: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT).as_posix()}:{self.line}"

    @property
    def needs_app(self) -> bool:
        return "gradio_client" in self.code


def fenced_blocks(text: str, path: Path = ROOT / "README.md") -> list[Block]:
    """The fenced code blocks of a Markdown text (CommonMark fences: a block closes at a fence
    of the same character at least as long as the opening one, with no info string)."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or (m["fence"][0] == "`" and "`" in m["info"]):
            i += 1
            continue
        fence, start, body = m["fence"], i, []
        i += 1
        while i < len(lines):
            close = FENCE.match(lines[i])
            if (
                close
                and close["fence"][0] == fence[0]
                and len(close["fence"]) >= len(fence)
                and not close["info"].strip()
            ):
                break
            body.append(lines[i])
            i += 1
        info = m["info"].strip().split()
        blocks.append(Block(path, start + 1, info[0].lower() if info else "", "\n".join(body) + "\n"))
        i += 1
    return blocks


def all_blocks() -> list[Block]:
    return [b for path in DOCS for b in fenced_blocks(path.read_text(encoding="utf-8"), path)]


def python_blocks() -> list[Block]:
    return [b for b in all_blocks() if b.lang in PYTHON]


def run_block(code: str) -> subprocess.CompletedProcess:
    """Run one block as a reader would: a fresh interpreter in the repository root.

    The root it sees is a scratch folder of links to the repository's files, so what a
    snippet writes (``fig.write_html("cross.html")``) lands there, not in the work tree."""
    # one thread (the tests share the machine), no windows, no network (a snippet must not need the hub)
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
        "HF_HUB_OFFLINE": "1",
        "GRADIO_ANALYTICS_ENABLED": "False",
        "PYTHONUNBUFFERED": "1",
    }
    with tempfile.TemporaryDirectory() as scratch:
        for entry in ROOT.iterdir():
            if entry.name != ".git":
                (Path(scratch) / entry.name).symlink_to(entry)
        return subprocess.run(
            [sys.executable, "-c", code], cwd=scratch, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT
        )


def failure(where: str, result: subprocess.CompletedProcess) -> str:
    return f"the Python block at {where} failed (exit {result.returncode}):\n{result.stderr[-3000:]}"


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    """``python app.py`` (the shipped model) on a free port, until the module's tests end."""
    with serve_app(None, tmp_path_factory.mktemp("readme-app") / "app.log", extra=("--torch-threads", "1")) as app:
        yield app.url.rstrip("/")


@pytest.mark.parametrize(
    "block",
    [
        # the slow set: the blocks that call a running app, and the longer pages' (docs/), each
        # in a fresh interpreter that loads the model; the README's own run by default
        pytest.param(b, id=b.where, marks=[pytest.mark.slow] if b.needs_app or b.path.name != "README.md" else [])
        for b in python_blocks()
    ],
)
def test_python_block_runs(block, request):
    code = block.code
    if block.needs_app:
        assert APP_URL in code, (
            f"{block.where}: a gradio_client example must address the app at {APP_URL}/ "
            "(python app.py's default), so that this test can point it at its own app"
        )
        code = code.replace(APP_URL, request.getfixturevalue("app_url"))
    result = run_block(code)
    assert result.returncode == 0, failure(block.where, result)


# ----------------------------------------------------------------------------- the harness itself
def test_the_docs_have_python_blocks():
    """The parser finds the README's and the Python page's examples (a broken parser would pass
    every file silently)."""
    blocks = python_blocks()
    readme = [b for b in blocks if b.path.name == "README.md"]
    api = [b for b in blocks if b.path.name == "python-api.md"]
    assert len(readme) >= 1 and len(api) >= 4, [b.where for b in blocks]
    assert any(b.needs_app for b in api), "the gradio_client example of docs/python-api.md is not found"


def test_every_fence_names_its_language():
    unlabelled = [b.where for b in all_blocks() if not b.lang]
    assert not unlabelled, f"fenced blocks without a language (use python, bash, text, ...): {unlabelled}"


def test_fences_are_parsed_as_commonmark():
    text = "\n".join(
        [
            "intro",
            "```python",
            "x = 1",
            "```",
            "",
            "````markdown",
            "```python",
            "not code",
            "```",
            "````",
            "~~~bash",
            "echo hi",
            "~~~",
            "``` python extra",
            "y = 2",
            "```",
            "text with ```python inline```",
        ]
    )
    blocks = fenced_blocks(text)
    assert [(b.line, b.lang, b.code) for b in blocks] == [
        (2, "python", "x = 1\n"),
        (6, "markdown", "```python\nnot code\n```\n"),
        (11, "bash", "echo hi\n"),
        (14, "python", "y = 2\n"),
    ]


def test_a_failing_block_fails():
    """The runner reports an exception as a failure, with the block's stderr."""
    result = run_block("import transformer\nundefined_name\n")
    assert result.returncode != 0
    assert "NameError" in failure("README.md:1", result)
    assert run_block("import transformer\n").returncode == 0  # the repository root is importable


def test_the_readme_stays_a_short_guide():
    """The README is the Space card and a user's guide: at most 300 lines, the long parts in docs/
    (the full "What to look for" in docs/what-to-look-for.md)."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; move details to docs/"
