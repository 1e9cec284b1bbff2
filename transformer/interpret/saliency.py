"""Gradient attribution beside attention: input x gradient and integrated gradients of one step.

What is explained is f = log p(y(t+1) | source, [SOS] y1 ... yt), the log-probability of the
token emitted at step t (0-based, as in ``attribution.py``), with respect to the token vectors
of the source and of the target prefix: the embeddings after the sqrt(d_model) scale, before
the positional encoding is added. A token's score is the sum over d_model of its vector's
attribution.

- input x gradient (Shrikumar et al. 2016): x . df/dx at the input;
- integrated gradients (Sundararajan et al. 2017): (x - x') . integral over a in [0, 1] of
  df/dx at x' + a (x - x'). Completeness: the scores sum to f(x) - f(x').

Baseline x': every word's vector at zero, the [SOS] and [EOS] vectors and the positional
encoding kept. The model then still sees a sentence frame of the right length (it never saw
one without those markers) but no word; the markers' integrated gradients are 0 by
construction. A [PAD] vector would be no more neutral: padding is masked out of attention,
so the model never learned to read it as an input.

The integral is a trapezoid rule over nodes 0 = a_0 < ... < a_n = 1. Along this path the
shipped model's f is far from smooth: it climbs most of the way over a narrow stretch (a
sharp rise as the words become readable), and ReLUs switching on and off make its slope
jump, so no fixed rule of 16 points gets completeness right to 1e-2 (on two 10-word
sentences, 16 uniform panels missed by 0.07 to 2.2 nats and 256 still by up to 0.024; the
refinement below met 1e-2 with 64 to 224 panels). Every node gives f for free, so each
panel [a_i, a_i+1] knows its own error, (its trapezoid) - (f(a_i+1) - f(a_i)). With
``tolerance`` set, the panels with the largest errors are halved, round after round, until
the whole gap is within it (or ``max_steps`` panels are used). ``completeness_gap`` always
says how far off the result is.

All the nodes of one round are rows of one batch: one forward and one backward pass.
Gradients are taken with ``torch.autograd.grad`` with respect to the token vectors only, so no
parameter's ``.grad`` is touched and the model is not modified.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from transformer.core import stepping
from transformer.core.readings import _spearman
from transformer.interpret.attribution import rounded, step_inputs, tokens
from transformer.core.model import Transformer

BASELINE = "zero word vectors; [SOS], [EOS] and the positional encoding kept"
CHUNK = 128  # nodes per forward/backward pass


@dataclass
class Saliency:
    """Per-token scores of one step, in nats of log-probability, beside the attention the step
    paid. ``*_src`` are over the source tokens, ``*_tgt`` over the decoder inputs of the step."""

    step: int
    token: str
    token_id: int
    n_steps: int  # integration panels used
    logprob: float  # f(x)
    baseline_logprob: float  # f(x')
    ig_src: np.ndarray  # (S,)
    ig_tgt: np.ndarray  # (t + 1,)
    ixg_src: np.ndarray  # (S,)
    ixg_tgt: np.ndarray  # (t + 1,)
    cross_attn: np.ndarray  # (S,) the step's cross-attention row
    self_attn: np.ndarray  # (t + 1,) the step's decoder self-attention row
    attention: dict  # which rows: {"layer": 0-based, "head": 0-based or "mean"}
    src_tokens: list[str]
    prefix_tokens: list[str]
    src_words: np.ndarray  # (S,) bool: not [SOS]/[EOS]
    tgt_words: np.ndarray  # (t + 1,) bool

    @property
    def completeness_gap(self) -> float:
        """sum of the integrated-gradients scores - (f(x) - f(x')): 0 for an exact integral."""
        return float(self.ig_src.sum() + self.ig_tgt.sum() - (self.logprob - self.baseline_logprob))

    def spearman(self) -> dict:
        """Spearman rank correlation of each score's magnitude with the attention row, over the
        words (the markers have no integrated gradients), on the source (cross-attention) and the
        prefix (self-attention); ``None`` with fewer than 2 words or a constant row. Magnitudes,
        because attention is never negative: a word that pushes the probability down strongly
        is as influential as one that pushes it up."""

        def rho(att, score, words):
            if words.sum() < 2:
                return None
            v = float(_spearman(att[words], np.abs(score[words])))
            return None if np.isnan(v) else v

        return {
            side: {"integrated_gradients": rho(att, ig, w), "input_x_gradient": rho(att, ixg, w)}
            for side, att, ig, ixg, w in (
                ("src", self.cross_attn, self.ig_src, self.ixg_src, self.src_words),
                ("tgt", self.self_attn, self.ig_tgt, self.ixg_tgt, self.tgt_words),
            )
        }

    def to_dict(self) -> dict:
        r = rounded
        rho = self.spearman()

        def side(name, toks, ig, ixg, att):
            return {
                "tokens": toks,
                "integrated_gradients": r(ig),
                "input_x_gradient": r(ixg),
                "attention": r(att),
                "spearman": {k: None if v is None else r(v) for k, v in rho[name].items()},
            }

        return {
            "schema": "saliency/1",
            "step": self.step,
            "token": self.token,
            "token_id": self.token_id,
            "n_steps": self.n_steps,
            "baseline": BASELINE,
            "logprob": r(self.logprob),
            "baseline_logprob": r(self.baseline_logprob),
            "completeness_gap": r(self.completeness_gap),
            "src": side("src", self.src_tokens, self.ig_src, self.ixg_src, self.cross_attn),
            "tgt": side("tgt", self.prefix_tokens, self.ig_tgt, self.ixg_tgt, self.self_attn),
            "attention_of": self.attention,
        }

    def figure(self):
        return saliency_figure(self)


def _check_args(model: Transformer, n_steps, tolerance, max_steps, layer, head) -> tuple[int, int | str]:
    if isinstance(n_steps, bool) or not isinstance(n_steps, int) or not 1 <= n_steps <= max_steps:
        raise ValueError(f"n_steps must be an integer in 1..max_steps ({max_steps}), got {n_steps!r}")
    if tolerance is not None and not (isinstance(tolerance, (int, float)) and tolerance > 0):
        raise ValueError(f"tolerance must be None or a positive number, got {tolerance!r}")
    L, H = len(model.decoder_layers), model.cfg.h
    layer = L - 1 if layer is None else layer
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 0 <= layer < L:
        raise ValueError(f"layer must be 0..{L - 1} (0-based) or None for the last, got {layer!r}")
    if head != "mean" and (isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not 0 <= head < H):
        raise ValueError(f"head must be 'mean' or 0..{H - 1} (0-based), got {head!r}")
    return int(layer), head if head == "mean" else int(head)


@dataclass
class _Path:
    """The straight path x' + a (x - x') of one step's token vectors (source, then prefix)."""

    model: Transformer
    src: torch.Tensor  # (1, S)
    prefix: torch.Tensor  # (1, T)
    token: int
    x: tuple[torch.Tensor, torch.Tensor]  # (S, D), (T, D) the input's token vectors
    base: tuple[torch.Tensor, torch.Tensor]  # the baseline's

    def at(self, alphas: torch.Tensor, layer: int | None = None):
        """f (R,) and (x - x') . df/dx per token (R, S + T) at every node of ``alphas`` (R,),
        one batched forward and backward pass; with ``layer``, also the last node's
        x . df/dx per token (S + T,) (input x gradient when that node is the input) and its
        attention at that layer: cross (H, S) and self (H, T)."""
        m, R = self.model, alphas.shape[0]
        a = alphas.to(self.x[0].dtype)[:, None, None]  # (R, 1, 1)
        delta = [xi - bi for xi, bi in zip(self.x, self.base)]
        with torch.enable_grad():
            xs, xt = ((b + a * d).requires_grad_() for b, d in zip(self.base, delta))  # (R, S, D), (R, T, D)
            src_mask, memory, _ = stepping.encode(m, self.src.expand(R, -1), embeds=xs)
            dec = stepping.run_decoder(
                m, self.prefix.expand(R, -1), memory, src_mask, need_weights=layer is not None, embeds=xt
            )
            logits = m.project(dec.hidden[:, -1])  # (R, V)
            f = logits[:, self.token] - logits.logsumexp(-1)  # (R,)
            g_src, g_tgt = torch.autograd.grad(f.sum(), [xs, xt])
        scores = torch.cat([(g_src * delta[0]).sum(-1), (g_tgt * delta[1]).sum(-1)], dim=1)  # (R, S + T)
        last = None
        if layer is not None:
            ixg = torch.cat([(g_src[-1] * self.x[0]).sum(-1), (g_tgt[-1] * self.x[1]).sum(-1)])  # (S + T,)
            last = (ixg.detach().double(), dec.cross_attn[layer][-1, :, -1], dec.self_attn[layer][-1, :, -1])
        return f.detach().double(), scores.detach().double(), last


def _panel_gaps(alphas: torch.Tensor, f: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """Each panel's trapezoid of the path derivative minus its exact rise f(a_i+1) - f(a_i)."""
    d = scores.sum(1)  # (N,) df/da at each node
    return (alphas[1:] - alphas[:-1]) * (d[1:] + d[:-1]) / 2 - (f[1:] - f[:-1])


def _evaluate(path: _Path, alphas: torch.Tensor, layer: int | None = None):
    """:meth:`_Path.at` in batches of at most ``CHUNK`` nodes, which bounds the memory of a
    long integral (the default 17 nodes are one batch); the ``layer`` extras are the last node's."""
    parts = [
        path.at(c, layer if i == len(alphas) - len(c) else None)
        for i, c in zip(range(0, len(alphas), CHUNK), alphas.split(CHUNK))
    ]
    return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts]), parts[-1][2]


def integrate(path: _Path, n_steps: int, tolerance: float | None, max_steps: int, layer: int):
    """Trapezoid nodes from n_steps uniform panels, refined where the panels' own completeness
    errors are largest (at most ``n_steps`` halvings per round) until |gap| <= tolerance.
    Returns (alphas, f, scores per node, the input's extras of :meth:`_Path.at`)."""
    alphas = torch.linspace(0.0, 1.0, n_steps + 1, dtype=torch.float64)
    f, scores, last = _evaluate(path, alphas, layer)
    while tolerance is not None:
        gaps = _panel_gaps(alphas, f, scores)
        room = max_steps - (alphas.numel() - 1)
        if abs(float(gaps.sum())) <= tolerance or room <= 0:
            break
        worst = gaps.abs().argsort(descending=True)[: min(n_steps, room)]
        mids = (alphas[worst] + alphas[worst + 1]) / 2
        f_new, s_new, _ = _evaluate(path, mids)
        alphas, order = torch.cat([alphas, mids]).sort()
        f, scores = torch.cat([f, f_new])[order], torch.cat([scores, s_new])[order]
    return alphas, f, scores, last


def _special_mask(ids: list[int], specials: set[int]) -> torch.Tensor:
    return torch.tensor([i in specials for i in ids])[:, None]  # (K, 1)


def _trapezoid_weights(alphas: torch.Tensor) -> torch.Tensor:
    """The trapezoid rule's weight of each node ``alphas`` (sorted, 0 to 1)."""
    w = torch.zeros_like(alphas)
    w[1:] += (alphas[1:] - alphas[:-1]) / 2
    w[:-1] += (alphas[1:] - alphas[:-1]) / 2
    return w


def _baseline(cfg, src_ids: list[int], prefix_ids: list[int], x: tuple) -> tuple[tuple, tuple]:
    """(keep, baseline): which tokens keep their vectors, the special ones (``keep``: (S, 1) and
    (T, 1)), and the baseline x' (see the module docstring): every word's vector at zero."""
    keep = (
        _special_mask(src_ids, stepping.source_specials(cfg)),
        _special_mask(prefix_ids, stepping.target_specials(cfg)),
    )
    return keep, tuple(torch.where(k, xi, torch.zeros_like(xi)) for k, xi in zip(keep, x))


def saliency(
    translator,
    text: str,
    step: int,
    target_ids: list[int] | None = None,
    n_steps: int = 16,
    tolerance: float | None = None,
    max_steps: int = 1024,
    layer: int | None = None,
    head: int | str = "mean",
    src_lang: str | None = None,
    tgt_lang: str | None = None,
) -> Saliency:
    """Input x gradient and integrated gradients of the log-probability of the token emitted at
    ``step``, per source token and per decoder input, with the step's cross- and
    self-attention rows at ``layer`` (0-based, default the last) and ``head`` (0-based or
    ``"mean"``). The translation is the greedy one unless ``target_ids`` are given.

    ``n_steps`` trapezoid panels (one batched pass); ``tolerance`` (e.g. 1e-2) refines them
    until the completeness gap is within it, using at most ``max_steps`` panels (see the
    module docstring).
    """
    model: Transformer = translator.model
    layer, head = _check_args(model, n_steps, tolerance, max_steps, layer, head)
    cfg = translator.cfg
    with torch.no_grad():
        inp = step_inputs(translator, text, step, target_ids, src_lang, tgt_lang)
        x = (model.src_embed(inp.src)[0], model.tgt_embed(inp.prefix)[0])  # (S, D), (T, D)
    src_ids, prefix_ids = inp.src[0].tolist(), inp.tgt[: inp.step + 1]
    keep, base = _baseline(cfg, src_ids, prefix_ids, x)
    path = _Path(model, inp.src, inp.prefix, inp.token, x, base)
    alphas, f, scores, (ixg, cross, self_) = integrate(path, n_steps, tolerance, max_steps, layer)
    ig, ixg = (_trapezoid_weights(alphas)[:, None] * scores).sum(0).numpy(), ixg.numpy()  # (S + T,)
    S = len(src_ids)

    def row(weights):  # (H, K) -> (K,)
        return (weights.mean(0) if head == "mean" else weights[head]).detach().double().numpy()

    return Saliency(
        step=inp.step,
        token=translator.tgt_tok.id_to_token(inp.token),
        token_id=inp.token,
        n_steps=alphas.numel() - 1,
        logprob=float(f[-1]),
        baseline_logprob=float(f[0]),
        ig_src=ig[:S],
        ig_tgt=ig[S:],
        ixg_src=ixg[:S],
        ixg_tgt=ixg[S:],
        cross_attn=row(cross),
        self_attn=row(self_),
        attention={"layer": layer, "head": head},
        src_tokens=[translator.src_tok.id_to_token(i) for i in src_ids],
        prefix_tokens=tokens(translator, prefix_ids),
        src_words=~keep[0][:, 0].numpy(),
        tgt_words=~keep[1][:, 0].numpy(),
    )


# --------------------------------------------------------------------------- figure
def _side(go, fig, row: int, labels: list[str], ig, ixg, attn, F) -> None:
    x = [f"{i + 1}: {t}" for i, t in enumerate(labels)]
    first = row == 1
    fig.add_trace(
        go.Bar(
            x=x,
            y=ig.tolist(),
            name="integrated gradients",
            marker_color=F.BAR,
            legendgroup="ig",
            showlegend=first,
            hovertemplate="%{x}<br>integrated gradients: %{y:+.3f}<extra></extra>",
        ),
        row=row,
        col=1,
        secondary_y=False,
    )
    fig.add_trace(
        go.Bar(
            x=x,
            y=ixg.tolist(),
            name="input × gradient",
            marker_color="#9ecae1",
            legendgroup="ixg",
            showlegend=first,
            hovertemplate="%{x}<br>input × gradient: %{y:+.3f}<extra></extra>",
        ),
        row=row,
        col=1,
        secondary_y=False,
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=attn.tolist(),
            name="attention",
            mode="lines+markers",
            legendgroup="attn",
            line={"color": F.HIGHLIGHT},
            showlegend=first,
            hovertemplate="%{x}<br>attention: %{y:.3f}<extra></extra>",
        ),
        row=row,
        col=1,
        secondary_y=True,
    )


def _panel_title(what: str, where: str, rho: dict) -> str:
    def fmt(v):
        return "n/a" if v is None else f"{v:+.2f}"

    return (
        f"{what} ({where})<br>Spearman ρ with attention, over words: |IG| {fmt(rho['integrated_gradients'])}, "
        f"|I×G| {fmt(rho['input_x_gradient'])}"
    )


def saliency_figure(res: Saliency):
    """Scores per source token (top) and per decoder input (bottom) as bars, the step's
    attention row as a line on its own axis, Spearman's rho in the panel titles."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from transformer.interpret import figures as F

    rho = res.spearman()
    head = "mean of heads" if res.attention["head"] == "mean" else f"head {res.attention['head'] + 1}"
    where = f"layer {res.attention['layer'] + 1}, {head}"
    titles = [
        _panel_title("Source tokens · cross-attention", where, rho["src"]),
        _panel_title("Decoder inputs · self-attention", where, rho["tgt"]),
    ]
    fig = make_subplots(
        rows=2,
        cols=1,
        specs=[[{"secondary_y": True}], [{"secondary_y": True}]],
        subplot_titles=titles,
        vertical_spacing=0.3,
    )
    _side(go, fig, 1, res.src_tokens, res.ig_src, res.ixg_src, res.cross_attn, F)
    _side(go, fig, 2, res.prefix_tokens, res.ig_tgt, res.ixg_tgt, res.self_attn, F)
    rise = res.logprob - res.baseline_logprob
    title = (
        f"Gradient attribution · step {res.step + 1}: log p({F.quote(res.token)}) = {res.logprob:.3f}"
        f"<br>integrated gradients ({res.n_steps} trapezoid panels) sum to {rise + res.completeness_gap:.3f}, "
        f"f(x) − f(x') = {rise:.3f}<br>baseline x': {BASELINE}"
    )
    fig.update_layout(
        **F.frame(title),
        barmode="group",
        width=max(820, 46 * len(res.src_tokens) + 260),
        height=720,
        margin={"t": 170},
        legend={"orientation": "h", "y": -0.18},
        meta={"view": "saliency", "step": res.step + 1, "n_steps": res.n_steps, **res.attention},
    )
    fig.update_yaxes(title={"text": "nats"}, zeroline=True, zerolinecolor="#999", secondary_y=False)
    fig.update_yaxes(title={"text": "attention"}, range=[0, 1.05], tickmode="auto", showgrid=False, secondary_y=True)
    return fig
