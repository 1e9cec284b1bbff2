"""pyproject.toml: the wheel carries every module of both packages (the model library and
the explorer) and the explorer's browser files, its dependencies are requirements.txt, and
the installed packages work from any directory."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from tests.helpers import ROOT


def setuptools_version() -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in importlib.metadata.version("setuptools").split(".")[:2])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return (0,)


def requirement_lines(name: str) -> list[str]:
    return [
        line.strip()
        for line in (ROOT / name).read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def test_runtime_and_test_requirements_are_separate():
    runtime = {re.split(r"[=<>~!\s]", r)[0].lower() for r in requirement_lines("requirements.txt")}
    test = {re.split(r"[=<>~!\s]", r)[0].lower() for r in requirement_lines("requirements-test.txt")}
    assert {"pytest", "playwright"} <= test and not ({"pytest", "playwright"} & runtime)
    assert {"torch", "gradio", "tokenizers", "datasets", "huggingface-hub", "safetensors"} <= runtime
    assert not runtime & test
    # CI installs both as the README's Quick start does: its two lines are the whole set-up
    ci = (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    lines = [line.split("#")[0].strip() for line in quick.strip().splitlines()]
    assert lines == ["pip install -e . && python app.py", 'pip install -e ".[test]" && python -m pytest'], lines
    assert 'pip install --quiet --disable-pip-version-check -e ".[test]"' in ci and "\npython -m pytest -ra\n" in ci
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    dynamic = meta["tool"]["setuptools"]["dynamic"]
    assert dynamic["dependencies"]["file"] == ["requirements.txt"]
    assert dynamic["optional-dependencies"]["test"]["file"] == ["requirements-test.txt"]


@pytest.mark.parametrize("require, workers", [("", "0"), pytest.param("1", "2", marks=pytest.mark.slow)])
def test_browser_tests_without_a_chromium_skip_and_ci_fails(tmp_path, require, workers):
    """No Chromium: the browser tests skip with the line that says how to get one, the summary
    counts them, and REQUIRE_BROWSER=1 (CI) turns the skips into a failed run, also through
    xdist's workers as the README's command runs them."""
    env = {**os.environ, "CHROMIUM": str(tmp_path / "no-chromium"), "REQUIRE_BROWSER": require}
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", workers, "-p", "no:cacheprovider", "-ra", "tests/browser/test_theme.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = r.stdout + r.stderr
    n = int(re.search(r"(\d+) browser tests? skipped: ", out).group(1))
    assert n >= 2 and "playwright install chromium" in out, out[-2000:]
    assert f"{n} skipped" in out and "passed" not in out, out[-2000:]
    assert r.returncode == (1 if require else 0), out[-2000:]


@pytest.mark.slow
def test_wheel_has_modules_and_web_files_and_imports_from_anywhere(tmp_path):
    """Build the wheel from a copy of the sources (the tree stays clean), install it into a
    folder, and import it from an unrelated working directory."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "requirements.txt", "requirements-test.txt", "requirements-marian.txt"):
        shutil.copy(ROOT / name, src / name)
    for package in ("transformer", "explorer"):
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    # the installed setuptools builds it when new enough (no download); else pip fetches one
    isolation = ["--no-build-isolation"] if setuptools_version() >= (77,) else []
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(src),
            "--no-deps",
            *isolation,
            "-w",
            str(tmp_path / "dist"),
            "-q",
            "--disable-pip-version-check",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        p.relative_to(ROOT).as_posix()
        for package in ("transformer", "explorer")
        for p in (ROOT / package).rglob("*.py")
        if "__pycache__" not in p.parts
    }
    web = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "explorer").glob("web/*")
        if p.is_file() and p.suffix in {".js", ".css", ".html", ".svg", ".json"}
    }
    assert not list((ROOT / "transformer").glob("web"))  # the model library ships no browser files
    assert expected <= names, sorted(expected - names)
    assert web <= names, sorted(web - names)  # the browser code ships with the package
    assert "explorer/english_words.txt.gz" in names  # the word list of the junk check (explorer/texts.py)
    requires = [
        line.split(": ", 1)[1]
        for line in zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode().splitlines()
        if line.startswith("Requires-Dist")
    ]
    assert [r for r in requires if "extra ==" not in r] == requirement_lines("requirements.txt")

    site = tmp_path / "site"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--target",
            str(site),
            str(wheel),
            "-q",
            "--disable-pip-version-check",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = (
        "import transformer, explorer, pathlib; from transformer import load_translator, CheckpointError; "
        "from explorer.notebook import viewer_html; from explorer.assets import WEB; "
        "from explorer.texts import english_words; assert 'cat' in english_words(); "
        "p = pathlib.Path(transformer.__file__).parent; print(p); "
        "print(sorted(x.name for x in WEB.iterdir()))"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr[-3000:]
    where, files = r.stdout.splitlines()[:2]
    assert Path(where) == site / "transformer"
    assert "import gradio" not in "".join(p.read_text() for p in (ROOT / "transformer").glob("*.py"))
    assert sorted(Path(w).name for w in web) == eval(files)
