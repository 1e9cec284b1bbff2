"""Why did it say that? Analyses that run the model again on a sentence (knock-out, logit
attribution, patching, saliency, the arithmetic of one attention row), and what a viewer reads
off a search or a trace: the beam tree, each head's habit, plotly figures. Imports only
``transformer.core``.
"""
