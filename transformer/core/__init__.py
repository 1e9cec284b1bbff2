"""The model and what it records: config, model, tokenizer, checkpoint, greedy and beam decoding,
the trace and its readings, the wire format, the translator. Imports nothing else of the package.
"""
