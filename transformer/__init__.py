"""A from-scratch encoder-decoder Transformer for translation, built to be looked inside.

    from transformer import load_translator
    tr = load_translator()              # the shipped checkpoint, or a folder or hub id

The public names below load on first use (PEP 562 ``__getattr__``): importing the package, or
a module that needs no model code such as ``transformer.core.trace`` (a saved trace read with
numpy alone), does not load torch.
"""

from __future__ import annotations

from transformer.core.lazy import lazy_exports

# public name -> the module that defines it
_EXPORTS = {
    "TransformerConfig": "transformer.core.config",
    "Transformer": "transformer.core.model",
    "build_model": "transformer.core.model",
    "Translator": "transformer.core.translator",
    # the command-line layer's: it knows which checkpoint "none given" means
    "load_translator": "transformer.cli",
    "Trace": "transformer.core.trace",
    "StepView": "transformer.core.trace",
    "CheckpointError": "transformer.core.checkpoint",
    "DataError": "transformer.training.data",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
