"""Making a model: data, presets, the trainer and its progress callbacks, data-parallel processes,
distillation and back-translation. Imports only ``transformer.core`` and ``transformer.interpret``.
"""
