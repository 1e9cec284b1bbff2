"""Names a package exports and loads on first use (PEP 562): importing the package then costs
nothing (no torch) until one of them is read. The package root and ``transformer.interpret``
use it."""

from __future__ import annotations

import importlib


def lazy_exports(package: str, exports: dict[str, str]):
    """``__getattr__`` and ``__dir__`` for ``package``, whose ``exports`` map each public name to
    the module that defines it; a name once read is kept in the package's namespace."""
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        namespace[name] = value  # found directly from now on
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__
