"""The package's shape, read from the syntax tree of every module (not grepped): ``transformer/``
is four layers that import only downward, it never reaches the app, and no function outside
the tests and benchmarks is longer than a screen."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers import ROOT

PACKAGE = ROOT / "transformer"
# bottom to top: a module may import its own layer and the layers before it
LAYERS = ("core", "interpret", "training", "cli")
APP = ("explorer", "app", "gradio")
MAX_FUNCTION_LINES = 60


def imported_names(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, absolute dotted name) of every import in ``path``, at the top or inside a
    function; relative imports are resolved against the module's own package."""
    package = path.relative_to(root).parts[:-1]
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = list(package[: len(package) - node.level + 1]) if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names.append((node.lineno, module))
            # `from transformer import interpret` imports a layer by its name
            names += [(node.lineno, f"{module}.{a.name}") for a in node.names]
    return names


def layer_of(dotted: str) -> str | None:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "transformer" and parts[1] in LAYERS else None


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_module_of_the_package_sits_in_a_layer():
    loose = [p.relative_to(ROOT).as_posix() for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    assert loose == []
    assert sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(LAYERS)


def test_layers_import_only_downward():
    upward = []
    for path in modules():
        own = path.relative_to(PACKAGE).parts[0]
        if own not in LAYERS:
            continue  # the package's __init__ re-exports public names from any layer
        for line, name in imported_names(path):
            other = layer_of(name)
            if other and LAYERS.index(other) > LAYERS.index(own):
                upward.append(f"{path.relative_to(ROOT)}:{line} ({own}) imports {name} ({other})")
    assert upward == []


def test_the_import_graph_check_catches_an_upward_import(tmp_path):
    """The check above can fail: a core module that imports the trainer inside a function is found."""
    core = tmp_path / "transformer" / "core"
    core.mkdir(parents=True)
    bad = core / "model.py"
    bad.write_text("def f():\n    from ..training import loop\n    import transformer.cli.evaluate\n")
    names = [name for _, name in imported_names(bad, tmp_path)]
    assert layer_of("transformer.training.loop") == "training"
    assert "transformer.training.loop" in names and "transformer.cli.evaluate" in names


def test_the_library_never_imports_the_app():
    found = [
        f"{path.relative_to(ROOT)}:{line} {name}"
        for path in modules()
        for line, name in imported_names(path)
        if name.split(".")[0] in APP
    ]
    assert found == []


# what the package exports (README, docs/python-api.md)
EXPORTED = [
    "load_translator",
    "Translator",
    "Trace",
    "StepView",
    "Transformer",
    "TransformerConfig",
    "build_model",
    "CheckpointError",
    "DataError",
]


@pytest.mark.parametrize("name", EXPORTED)
def test_public_names_stay_importable_from_the_package(name):
    assert getattr(importlib.import_module("transformer"), name) is not None


def fresh_python(code: str) -> str:
    """What ``code`` prints in a new interpreter run from the repository root (nothing imported yet)."""
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def test_reading_a_trace_loads_no_torch():
    """A saved trace is read with numpy alone: importing the trace module, and on the way the
    package and each layer's own module, loads no torch (which costs seconds a process)."""
    code = (
        "import sys, transformer, transformer.core.trace, transformer.core.wire, "
        "transformer.interpret, transformer.training, transformer.cli; print('torch' in sys.modules)"
    )
    assert fresh_python(code).split() == ["False"]


def test_the_package_loads_each_public_name_on_first_use():
    """``from transformer import X`` loads X's module then, and gives the object that module
    defines; ``load_translator`` is the one that knows the shipped checkpoint."""
    code = (
        "import sys, transformer\n"
        "from transformer import *\n"
        "import transformer.cli, transformer.core.trace, transformer.training.data\n"
        "assert load_translator is transformer.cli.load_translator\n"
        "assert Trace is transformer.core.trace.Trace and DataError is transformer.training.data.DataError\n"
        "assert set(transformer.__all__) <= set(dir(transformer))\n"
        "print(sorted(transformer.__all__))"
    )
    assert fresh_python(code).split("\n")[0] == str(sorted(EXPORTED))
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        importlib.import_module("transformer").nothing_here


def long_functions(paths, root: Path = ROOT) -> list[str]:
    out = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    out.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({lines} lines)")
    return out


def test_no_function_outside_tests_and_benchmarks_is_longer_than_a_screen():
    paths = [
        *PACKAGE.rglob("*.py"),
        *(ROOT / "explorer").rglob("*.py"),
        *(ROOT / "data").glob("*.py"),
        ROOT / "train.py",
        ROOT / "app.py",
    ]
    assert long_functions(paths) == []


def test_the_length_check_counts_a_long_function(tmp_path):
    path = tmp_path / "long.py"
    path.write_text("def f():\n" + "    x = 1\n" * MAX_FUNCTION_LINES)
    assert long_functions([path], tmp_path) == ["long.py:1 f (61 lines)"]
