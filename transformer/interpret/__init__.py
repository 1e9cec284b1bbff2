"""Why did it say that? Analyses that run the model again on a sentence (knock-out, logit
attribution, patching, saliency, the arithmetic of one attention row), and what a viewer reads
off a search or a trace: the beam tree, each head's habit, plotly figures. Imports only
``transformer.core``.

Where did this word come from? The names below load on first use (PEP 562 ``__getattr__``, as
the package root does), so importing ``transformer.interpret`` loads no torch:

    from transformer.interpret import alti_contributions, value_norms, decoder_lens, score_reference
    trace = tr.trace("The black cat sleeps.")
    c = alti_contributions(tr, trace)       # ALTI+: c.source_share (T,), c.source (T, S), c.prefix (T, T)
    n = value_norms(tr, trace)              # Kobayashi: n.cross (L, H, T, S), n.encoder, n.decoder_self
    lens = decoder_lens(tr, "The black cat sleeps.")          # lens.rows[l].text per encoder layer
    s = score_reference(tr, "The black cat sleeps.", "Il gatto nero dorme.")   # s.probs, s.ranks

Each result has ``to_dict()`` (JSON-ready) and ``figure()`` (plotly, drawn in the analysis's own
module with the kit of ``transformer.interpret.figures``).
"""

from __future__ import annotations

from transformer.core.lazy import lazy_exports

# public name -> the module that defines it
_EXPORTS = {
    "alti_contributions": "transformer.interpret.contributions",
    "value_norms": "transformer.interpret.contributions",
    "Contributions": "transformer.interpret.contributions",
    "ValueNorms": "transformer.interpret.contributions",
    "decoder_lens": "transformer.interpret.decoder_lens",
    "DecoderLens": "transformer.interpret.decoder_lens",
    "LensRow": "transformer.interpret.decoder_lens",
    "score_reference": "transformer.interpret.reference",
    "value_zeroing": "transformer.interpret.value_zeroing",
    "ValueZeroing": "transformer.interpret.value_zeroing",
    "ReferenceScore": "transformer.interpret.reference",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
