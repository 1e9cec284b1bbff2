"""Why did it say that? Analyses that run the model again on a sentence (knock-out, logit
attribution, patching, saliency, the arithmetic of one attention row) and plotly figures of a
trace. Imports only ``transformer.core``.
"""
