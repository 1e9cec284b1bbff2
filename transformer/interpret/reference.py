"""Your own reference: how the model scores a translation you give it, token by token.

:func:`score_reference` tokenises the reference with the target tokenizer, adds [EOS], and
walks it step by step as greedy decoding would, except that each step reads the *reference's*
prefix (teacher forcing): step t reads ``[SOS] r1 ... rt`` and is scored on r(t+1). At each
step it reports the model's probability of the reference token, its rank among the target
tokens greedy decoding may emit there (1 = the model's own choice; tokens whose logit is
strictly higher count, so a tie shares the better rank; a banned id is never ranked above it,
and a multilingual model's forced language token, which the reference begins with, is the only
choice of step 0), and the model's own choice there (token and probability).
``first_divergence`` is the first step where the top choice is not the reference token: the
point where the model's own greedy translation would part from the reference (before it,
both are the same).

Each step runs the decoder with the KV cache on a batch of one through the decoding core
(``transformer.core.stepping``), exactly as ``transformer.core.decoding.greedy_decode`` does,
so scoring the model's own greedy translation gives rank 1 at every step (not merely up to
float rounding).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import torch

from transformer.core import stepping
from transformer.core.tokenizer import encode

SCHEMA = "reference-score/1"


@dataclass
class ReferenceScore:
    """T = reference tokens + [EOS]; arrays are (T,)."""

    src_text: str
    reference: str
    ids: list[int]  # reference ids, [EOS] last
    tokens: list[str]
    probs: np.ndarray  # (T,) p(r_t | source, [SOS] r_1 ... r_(t-1))
    ranks: np.ndarray  # (T,) int, 1 = the model's top choice
    top_ids: list[int]  # (T,) the model's own top choice at each step
    top_tokens: list[str]
    top_probs: np.ndarray  # (T,)
    first_divergence: int | None  # first step (0-based) whose top choice is not the reference token
    truncated: bool  # the reference was cut to the decoder's max_positions

    @property
    def log_prob(self) -> float:
        """log p(reference | source), [EOS] included."""
        return float(np.log(np.maximum(self.probs.astype(np.float64), 1e-45)).sum())

    @property
    def mean_log_prob(self) -> float:
        """Length-normalised: ``log_prob`` / T."""
        return self.log_prob / max(1, len(self.ids))

    def to_dict(self, digits: int = 5) -> dict:
        def r(a):
            return [round(float(x), digits) for x in a]

        return {
            "schema": SCHEMA,
            "src_text": self.src_text,
            "reference": self.reference,
            "steps": [
                {
                    "step": t,
                    "token": self.tokens[t],
                    "id": self.ids[t],
                    "prob": p,
                    "rank": int(self.ranks[t]),
                    "top_token": self.top_tokens[t],
                    "top_id": self.top_ids[t],
                    "top_prob": tp,
                }
                for t, (p, tp) in enumerate(zip(r(self.probs), r(self.top_probs)))
            ],
            "first_divergence": self.first_divergence,
            "log_prob": round(self.log_prob, 4),
            "mean_log_prob": round(self.mean_log_prob, 4),
            "truncated": self.truncated,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

    def figure(self):
        """Probability of each reference token beside the model's top choice
        (:func:`reference_figure`)."""
        return reference_figure(self)


@torch.no_grad()
def score_reference(
    translator, text: str, reference: str, src_lang: str | None = None, tgt_lang: str | None = None
) -> ReferenceScore:
    """Score ``reference`` as a translation of ``text`` token by token (module docstring).

    ``translator``: a :class:`~transformer.core.translator.Translator`. An empty ``text`` or
    ``reference`` raises ``ValueError``; a non-string raises ``TypeError``."""
    if not isinstance(reference, str):
        raise TypeError(f"reference must be a string, got {type(reference).__name__}")
    model, cfg = translator.model, translator.cfg
    if model.training:
        raise ValueError("the model is in training mode (dropout on): call model.eval() first")
    stepping.check_languages(cfg, src_lang, tgt_lang)
    src_ids = translator.encode_source(text, src_lang).ids
    ids = encode(translator.tgt_tok, reference)
    if not ids:
        raise ValueError("empty reference: type the translation to score")
    forced = stepping.forced_start(cfg, tgt_lang)
    ids = [*forced, *ids, cfg.tgt_eos_id]
    truncated = len(ids) > cfg.max_positions  # step t reads position t: at most max_positions steps
    ids = ids[: cfg.max_positions]

    src_mask, memory, _ = stepping.encode(model, torch.tensor([src_ids]))  # src (1, S)
    last = stepping.start_tokens(cfg, 1)
    cache = None
    probs, ranks, top_ids, top_probs = [], [], [], []
    for t, ref in enumerate(ids):
        dec, logits = stepping.step(model, last, memory, src_mask, cache)
        cache = dec.cache
        logits = logits[0].float()  # (V,)
        p = logits.softmax(dim=-1)  # the model's own probabilities
        # rank and top among the tokens greedy decoding may emit at this step
        allowed = stepping.allowed_at(cfg, logits, forced, t)
        top = int(stepping.pick_at(cfg, logits, forced, t))
        probs.append(float(p[ref]))
        ranks.append(1 + int((allowed > allowed[ref]).sum()))
        top_ids.append(top)
        top_probs.append(float(p[top]))
        last = torch.full((1, 1), ref, dtype=torch.long)
    tok = translator.tgt_tok.id_to_token
    first = next((t for t, (a, b) in enumerate(zip(ids, top_ids)) if a != b), None)
    return ReferenceScore(
        src_text=text,
        reference=reference,
        ids=ids,
        tokens=[tok(i) for i in ids],
        probs=np.array(probs, dtype=np.float32),
        ranks=np.array(ranks, dtype=np.int64),
        top_ids=top_ids,
        top_tokens=[tok(i) for i in top_ids],
        top_probs=np.array(top_probs, dtype=np.float32),
        first_divergence=first,
        truncated=truncated,
    )


def mean_log_prob(probs) -> float:
    """Length-normalised log-probability of a sequence from its tokens' probabilities."""
    p = np.asarray(probs, dtype=np.float64)
    return float(np.log(np.maximum(p, 1e-45)).mean()) if p.size else -math.inf


def reference_figure(score: ReferenceScore):
    """Each reference token's probability (bars; orange from the first step where the model's
    own top choice differs) beside the top choice's (dots); hover gives the rank. Drawn with the
    kit of transformer/interpret/figures.py, imported (with plotly) only when asked for."""
    import plotly.graph_objects as go

    from transformer.interpret import figures as F

    x = list(range(len(score.ids)))
    labels = [f"{t + 1}: {tok}" for t, tok in enumerate(score.tokens)]
    first = score.first_divergence
    colours = [F.HIGHLIGHT if first is not None and t >= first else F.BAR for t in x]
    tips = [
        f"step {t + 1}: reference {F.quote(score.tokens[t])} p = {score.probs[t]:.3f}, rank {int(score.ranks[t])}"
        f"<br>model's top choice {F.quote(score.top_tokens[t])} p = {score.top_probs[t]:.3f}"
        for t in x
    ]
    fig = go.Figure(
        [
            go.Bar(
                x=x,
                y=np.asarray(score.probs, dtype=np.float64).tolist(),
                name="reference token",
                marker_color=colours,
                hovertext=tips,
                hovertemplate="%{hovertext}<extra></extra>",
            ),
            go.Scatter(
                x=x,
                y=np.asarray(score.top_probs, dtype=np.float64).tolist(),
                mode="markers",
                name="model's top choice",
                marker=dict(color=F.TEXT, size=7),
                hovertext=tips,
                hovertemplate="%{hovertext}<extra></extra>",
            ),
        ]
    )
    where = "the model would write the same" if first is None else f"they part at step {first + 1}"
    fig.update_layout(
        **F.frame(f"Your reference, token by token: mean log-probability {score.mean_log_prob:.2f}<br>{where}"),
        width=max(480, 30 * len(x) + 200),
        height=400,
        meta=dict(view="reference", first_divergence=first),
        xaxis=dict(title=dict(text="reference token"), tickmode="array", tickvals=x, ticktext=labels, tickangle=-60),
        yaxis=dict(title=dict(text="probability"), range=[0, 1.05]),
    )
    return fig
