"""What a visitor sees when something fails: bad input gets its own one-line message, a bug
gets one generic line (and the log gets the stack trace), never a stack trace on the page."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
GENERIC_ERROR = "Something went wrong on the server; the error has been logged. Please try another sentence."


def answer(log: logging.Logger, what: str, compute: Callable[[], T], failed: Callable[[str], T]) -> T:
    """``compute()``, or ``failed(message)`` when it raises: the ``ValueError``'s own message
    (bad input says what is wrong), else :data:`GENERIC_ERROR` with the error logged as ``what``."""
    try:
        return compute()
    except ValueError as exc:
        return failed(str(exc))
    except Exception:
        log.exception("%s failed", what)
        return failed(GENERIC_ERROR)
