"""A from-scratch encoder-decoder Transformer for translation, built to be looked inside."""

from .config import TransformerConfig
from .trace import StepView, Trace
from .model import Transformer, build_model
from .checkpoint import CheckpointError
from .data import DataError
from .translator import Translator, load_translator

__all__ = ["TransformerConfig", "Transformer", "build_model", "Translator", "load_translator", "Trace", "StepView",
           "CheckpointError", "DataError"]
