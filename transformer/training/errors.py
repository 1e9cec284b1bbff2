"""The training layer's own error and warning, in one place every training module imports
from (``train.py`` turns the error into one line and the warning into one plain line)."""

from __future__ import annotations


class TrainingError(ValueError):
    """A run cannot start or continue as asked (bad settings, nothing to resume...)."""


class TrainingWarning(UserWarning):
    """A run goes ahead differently from what was asked (e.g. float32 instead of bf16);
    its own category so that a command line can print it as one plain line."""
