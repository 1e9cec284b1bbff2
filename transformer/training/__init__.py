"""Making a model: data, presets, the trainer (``loop``) and beside it the run folder, saving,
evaluation, the optimiser step and what a run starts from (``run_folder``, ``saving``,
``evaluation``, ``optim``, ``setup``); its progress callbacks, data-parallel processes,
distillation and back-translation. Imports only ``transformer.core`` and ``transformer.interpret``.
"""
