"""A from-scratch encoder-decoder Transformer for translation, built to be looked inside."""

from transformer.core.config import TransformerConfig
from transformer.core.trace import StepView, Trace
from transformer.core.model import Transformer, build_model
from transformer.core.checkpoint import CheckpointError
from transformer.training.data import DataError
from transformer.core.translator import Translator, load_translator

__all__ = [
    "TransformerConfig",
    "Transformer",
    "build_model",
    "Translator",
    "load_translator",
    "Trace",
    "StepView",
    "CheckpointError",
    "DataError",
]
