"""A from-scratch encoder-decoder Transformer for translation, built to be looked inside."""

from .config import TransformerConfig
from .decoding import StepView, Trace
from .model import Transformer, build_model
from .translator import Translator, load_translator

__all__ = ["TransformerConfig", "Transformer", "build_model", "Translator", "load_translator", "Trace", "StepView"]
