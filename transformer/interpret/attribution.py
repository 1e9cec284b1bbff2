"""Why this word? Direct logit attribution and activation patching, one decoding step at a time.

Attention shows where a head looks, not what it adds. These two analyses measure what each
decoder component adds to the choice of a word:

- :func:`direct_logit_attribution` splits the emitted token's logit (or its difference with
  another candidate) into one term per component of the decoder's residual stream;
- :func:`activation_patching` runs sentence A with one component's output taken from
  sentence B and measures how much of the A-versus-B logit difference moves (or, where A
  and B write the same word, how much of A's lead of that word over its runner-up).

Gradient attribution (input x gradient, integrated gradients) is in ``saliency.py``.

Steps and components
--------------------
Step t is 0-based, as in :meth:`Trace.step <transformer.core.trace.Trace.step>`: it reads
``[SOS] y1 ... yt`` and emits ``y(t+1)`` (the app calls it step t + 1). A translation is the
greedy one unless ``target_ids`` (the output ids ``y1 ... yn`` without [SOS], e.g.
``trace.tgt_ids[1:]`` of a forced trace) are given. The decoder's components, named as
in ``transformer.interpret.knockout`` (layers and heads 0-based in results, 1-based in figures):

- ``embedding``: the target token's embedding plus its positional encoding;
- ``decoder_self`` / ``cross``: one decoder layer's self- or cross-attention head h, i.e.
  ``heads[h] @ W_o[:, h*d_k:(h+1)*d_k].T`` (``o_proj`` split by head); the ``o_proj`` bias
  is shared by the heads and is its own term, ``decoder_self_bias`` / ``cross_bias``;
- ``ffn``: one decoder layer's feed-forward block.

Every function runs the model in eval mode (dropout off) and returns a result object with a
``to_dict()`` (JSON-ready: plain lists and numbers) and a ``figure()`` (plotly, imported
only when called).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from transformer.core import stepping
from transformer.core.decoding import greedy_decode
from transformer.core.model import LayerCache, Transformer
from transformer.core.recording import Recording, recording

LN_NOTE = (
    "final LayerNorm folded in with its scale frozen at this step: each term is centred, divided by the "
    "step's sigma and multiplied by the gain; the norm's bias is its own term"
)


# --------------------------------------------------------------------------- inputs
@dataclass
class StepInputs:
    """One sentence at one step: source ids (1, S) and the whole target ``[SOS] y1 ... yn``."""

    src: torch.Tensor  # (1, S)
    tgt: list[int]
    step: int

    @property
    def prefix(self) -> torch.Tensor:
        """The decoder inputs of the step, (1, step + 1): ``[SOS] y1 ... y(step)``."""
        return torch.tensor([self.tgt[: self.step + 1]])

    @property
    def token(self) -> int:
        """The id the step emits."""
        return self.tgt[self.step + 1]


def check_eval(model: Transformer) -> None:
    """The analyses are exact only without dropout; switching the mode here would change a
    model that other requests may be using, so a model in training mode is refused."""
    if model.training:
        raise ValueError("the model is in training mode (dropout on): call model.eval() first")


def check_token_id(name: str, value, cfg) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be a target token id (an integer), got {value!r}")
    if not 0 <= int(value) < cfg.tgt_vocab_size:
        raise ValueError(f"{name} {value} is outside the target vocabulary (0..{cfg.tgt_vocab_size - 1})")
    return int(value)


def step_inputs(
    translator,
    text: str,
    step: int,
    target_ids: list[int] | None = None,
    src_lang: str | None = None,
    tgt_lang: str | None = None,
) -> StepInputs:
    """Validate ``step`` and build the inputs of ``text`` at that step (greedy translation
    unless ``target_ids`` are given; a multilingual model's languages ``src_lang`` /
    ``tgt_lang``). Bad input raises ``ValueError`` saying what is wrong."""
    model: Transformer = translator.model
    check_eval(model)
    stepping.check_languages(translator.cfg, src_lang, tgt_lang)
    src = torch.tensor([translator.encode_source(text, src_lang).ids])  # (1, S)
    if target_ids is None:
        target_ids = greedy_decode(model, src, tgt_lang=tgt_lang).ids[0]
    elif not isinstance(target_ids, (list, tuple)):
        raise ValueError(f"target_ids must be a list of target token ids, got {type(target_ids).__name__}")
    ids = [check_token_id(f"target_ids[{i}]", v, translator.cfg) for i, v in enumerate(target_ids)]
    if translator.cfg.tgt_pad_id in ids:
        raise ValueError("target_ids cannot contain [PAD], which the decoder never emits")
    n = len(ids)
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or not 0 <= step < n:
        raise ValueError(f"step must be 0..{n - 1} (0-based; step t emits output token t + 1), got {step!r}")
    return StepInputs(src, stepping.decoder_inputs(translator.cfg, ids), int(step))


def greedy_targets(
    translator, texts: list[str], src_lang: str | None = None, tgt_lang: str | None = None
) -> list[list[int]]:
    """Greedy translations (output ids, no start token) of several sentences in one padded batch."""
    src = stepping.source_batch(translator.cfg, [translator.encode_source(t, src_lang).ids for t in texts])  # (B, S)
    return greedy_decode(translator.model, src, tgt_lang=tgt_lang).ids


def tokens(translator, ids) -> list[str]:
    return [translator.tgt_tok.id_to_token(int(i)) for i in ids]


def unembedding(model: Transformer) -> torch.Tensor:
    """(V, D): logits = final hidden @ W_U.T, the output projection or the tied embedding (no bias)."""
    return model.proj.weight if model.proj is not None else model.tgt_embed.weight


# --------------------------------------------------------------------------- one recorded pass
@dataclass
class Recorded:
    """A teacher-forced pass of one sentence with every sublayer's output kept."""

    memory: torch.Tensor  # (1, S, D)
    src_mask: torch.Tensor  # (1, 1, 1, S)
    embed: torch.Tensor  # (1, T, D) token embeddings (no positional encoding)
    stream_in: torch.Tensor  # (1, T, D) the decoder's input: embeddings, positions (and an embedding norm)
    self_heads: list[torch.Tensor]  # per decoder layer (1, H, T, d_k): each self-attention head's output
    cross_heads: list[torch.Tensor]  # per decoder layer (1, H, T, d_k)
    ffn: list[torch.Tensor]  # per decoder layer (1, T, D): what the FFN adds
    resid: torch.Tensor  # (1, T, D) the residual stream after the last layer, before the final norm
    hidden: torch.Tensor  # (1, T, D) after the final norm
    cache: list[LayerCache]  # self- and cross-attention K/V of every decoder layer


# the decoder's points the residual stream is summed from (transformer.core.recording)
SUMMED_POINTS = ["decoder_self.*.heads", "cross.*.heads", "decoder_ffn.*.out"]


def record(model: Transformer, src: torch.Tensor, prefix: torch.Tensor) -> Recorded:
    rec = Recording(keep=SUMMED_POINTS)
    with recording(rec):
        src_mask, memory, _ = stepping.encode(model, src)
        dec = stepping.run_decoder(model, prefix, memory, src_mask, need_hidden_states=True)
    layers = range(len(model.decoder_layers))
    return Recorded(
        memory,
        src_mask,
        model.tgt_embed(prefix),
        model.embed_target(prefix),
        [rec[f"decoder_self.{l}.heads"] for l in layers],
        [rec[f"cross.{l}.heads"] for l in layers],
        [rec[f"decoder_ffn.{l}.out"] for l in layers],
        dec.layer_hidden[-1],
        dec.hidden,
        dec.cache,
    )


def head_terms(attn, heads: torch.Tensor) -> torch.Tensor:
    """(H, d_k) head outputs at one position -> (H, D): what each head adds through ``o_proj``."""
    W = attn.o_proj.weight  # (D, H * d_k)
    return torch.einsum("hk,dhk->hd", heads, W.view(W.shape[0], attn.h, attn.d_k))


def residual_terms(model: Transformer, rec: Recorded, pos: int) -> dict[str, torch.Tensor]:
    """Everything that sums to the residual stream at decoder position ``pos`` (pre-norm,
    eval mode): the embedding with its positional encoding (D,), per layer each head's
    term (L, H, D) and the ``o_proj`` bias (L, D) of both attentions, and each FFN (L, D)."""
    layers = model.decoder_layers
    return {
        "embedding": rec.stream_in[0, pos],
        "decoder_self": torch.stack([head_terms(l.self_attn, h[0, :, pos]) for l, h in zip(layers, rec.self_heads)]),
        "decoder_self_bias": torch.stack([l.self_attn.o_proj.bias for l in layers]),
        "cross": torch.stack([head_terms(l.cross_attn, h[0, :, pos]) for l, h in zip(layers, rec.cross_heads)]),
        "cross_bias": torch.stack([l.cross_attn.o_proj.bias for l in layers]),
        "ffn": torch.stack([f[0, pos] for f in rec.ffn]),
    }


# --------------------------------------------------------------------------- direct logit attribution
@dataclass
class LogitAttribution:
    """The step's logit (or logit difference) as a sum of per-component terms, in nats.

    ``value`` is the model's own number; the terms (``embedding`` + every entry of the
    arrays + ``norm_bias``) sum to it up to float rounding (:meth:`total`)."""

    step: int
    token: str
    token_id: int
    versus: str | None
    versus_id: int | None
    value: float
    embedding: float
    decoder_self: np.ndarray  # (L, H)
    decoder_self_bias: np.ndarray  # (L,)
    cross: np.ndarray  # (L, H)
    cross_bias: np.ndarray  # (L,)
    ffn: np.ndarray  # (L,)
    norm_bias: float
    norm_sigma: float  # the final LayerNorm's scale at this step, frozen
    src_tokens: list[str]
    prefix_tokens: list[str]
    logits_bias: float = 0.0  # the output layer's own bias (Marian's and mBART's final_logits_bias)

    def total(self) -> float:
        arrays = (self.decoder_self, self.decoder_self_bias, self.cross, self.cross_bias, self.ffn)
        return float(self.embedding + self.norm_bias + self.logits_bias + sum(a.sum() for a in arrays))

    def ranking(self, k: int = 10) -> list[dict]:
        """The ``k`` heads with the largest terms in absolute value, in the heads format of ``analysis``."""
        rows = [
            {"kind": kind, "layer": l, "head": h, "value": float(a[l, h])}
            for kind, a in (("decoder_self", self.decoder_self), ("cross", self.cross))
            for l in range(a.shape[0])
            for h in range(a.shape[1])
        ]
        return sorted(rows, key=lambda r: -abs(r["value"]))[:k]

    def to_dict(self) -> dict:
        r = rounded
        return {
            "schema": "logit-attribution/1",
            "step": self.step,
            "token": self.token,
            "token_id": self.token_id,
            "versus": self.versus,
            "versus_id": self.versus_id,
            "value": r(self.value),
            "total": r(self.total()),
            "embedding": r(self.embedding),
            "decoder_self": r(self.decoder_self),
            "decoder_self_bias": r(self.decoder_self_bias),
            "cross": r(self.cross),
            "cross_bias": r(self.cross_bias),
            "ffn": r(self.ffn),
            "norm_bias": r(self.norm_bias),
            "logits_bias": r(self.logits_bias),
            "norm_sigma": r(self.norm_sigma),
            "note": LN_NOTE,
            "ranking": [{**h, "value": r(h["value"])} for h in self.ranking()],
            "src_tokens": self.src_tokens,
            "prefix_tokens": self.prefix_tokens,
        }

    def figure(self):
        return attribution_figure(self)


def rounded(x):
    """Numbers for JSON: 5 decimals, arrays as nested lists (as ``analysis`` does)."""
    if isinstance(x, np.ndarray):
        return np.round(x.astype(np.float64), 5).tolist()
    return round(float(x), 5)


def _versus_id(versus, chosen: int, logits: torch.Tensor, cfg) -> int | None:
    """None (the plain logit), ``"runner-up"`` (the highest logit among the other tokens:
    the top-1 when a forced token is not the argmax) or a token id other than ``chosen``."""
    if versus is None:
        return None
    if versus == "runner-up":
        top = stepping.allowed_logits(cfg, logits).topk(2).indices.tolist()  # a banned id is never the runner-up
        return top[1] if top[0] == chosen else top[0]
    if not isinstance(versus, str):
        vid = check_token_id("versus", versus, cfg)
        if vid == chosen:
            raise ValueError(f"versus {vid} is the chosen token itself: the difference would be 0")
        return vid
    raise ValueError(f"versus must be None, 'runner-up' or a target token id, got {versus!r}")


def fold_final_norm(model: Transformer, terms: torch.Tensor, resid: torch.Tensor, direction: torch.Tensor):
    """Each term's share of ``LayerNorm(resid) @ direction``, with the norm's scale frozen.

    LN(x) = (x - mean(x)) / sigma * gain + bias with sigma = sqrt(var(x) + eps) of the whole
    stream ``resid`` (D,). Centring is linear, so for x = sum of ``terms`` (N, D) the logit
    splits exactly into ((term - mean(term)) / sigma * gain) @ direction per term, plus
    bias @ direction. Computed in float64. Returns (per-term (N,), bias term, sigma)."""
    norm = model.decoder_norm
    x = resid.double()
    sigma = torch.sqrt(x.var(unbiased=False) + norm.eps)
    t, d = terms.double(), direction.double()
    centred = t - t.mean(-1, keepdim=True)  # (N, D)
    return (centred / sigma * norm.gain.double()) @ d, float(norm.bias.double() @ d), float(sigma)


@torch.no_grad()
def direct_logit_attribution(
    translator,
    text: str,
    step: int,
    target_ids: list[int] | None = None,
    versus: int | str | None = None,
    src_lang: str | None = None,
    tgt_lang: str | None = None,
) -> LogitAttribution:
    """Split the logit of the token emitted at ``step`` into the decoder's components.

    ``versus``: ``None`` splits the logit itself; ``"runner-up"`` or a token id splits the
    difference logit(emitted) - logit(versus), which is what decides the choice (the softmax
    ignores what all logits share). Exact for a pre-norm model with the final LayerNorm's scale
    frozen at the step (:func:`fold_final_norm`); a post-norm model renormalises after every
    sublayer, so its residual stream is no sum of terms and it raises ``ValueError``.
    """
    model: Transformer = translator.model
    if model.cfg.norm_placement != "pre":
        raise ValueError(
            "direct logit attribution needs a pre-norm model: post-norm normalises after every "
            "sublayer, so the residual stream is not a sum of their outputs"
        )
    inp = step_inputs(translator, text, step, target_ids, src_lang, tgt_lang)
    rec = record(model, inp.src, inp.prefix)
    chosen = inp.token
    logits = model.project(rec.hidden[0, -1])  # (V,)
    other = _versus_id(versus, chosen, logits, model.cfg)
    W_U = unembedding(model)
    direction = W_U[chosen] if other is None else W_U[chosen] - W_U[other]  # (D,)
    value = logits[chosen] - (0.0 if other is None else logits[other])

    terms = residual_terms(model, rec, inp.step)
    L, H = terms["decoder_self"].shape[:2]
    names = ("embedding", "decoder_self", "decoder_self_bias", "cross", "cross_bias", "ffn")
    flat = torch.cat([terms[n].reshape(-1, terms[n].shape[-1]) for n in names])  # (N, D)
    parts, bias, sigma = fold_final_norm(model, flat, rec.resid[0, -1], direction)
    parts = parts.numpy()
    sizes = np.cumsum([1, L * H, L, L * H, L, L])
    emb, self_h, self_b, cross_h, cross_b, ffn = np.split(parts, sizes[:-1])
    return LogitAttribution(
        step=inp.step,
        token=translator.tgt_tok.id_to_token(chosen),
        token_id=chosen,
        versus=None if other is None else translator.tgt_tok.id_to_token(other),
        versus_id=other,
        value=float(value),
        embedding=float(emb[0]),
        decoder_self=self_h.reshape(L, H),
        decoder_self_bias=self_b,
        cross=cross_h.reshape(L, H),
        cross_bias=cross_b,
        ffn=ffn,
        norm_bias=bias,
        norm_sigma=sigma,
        src_tokens=[translator.src_tok.id_to_token(int(i)) for i in inp.src[0]],
        prefix_tokens=tokens(translator, inp.tgt[: inp.step + 1]),
        logits_bias=_logits_bias(model, chosen, other),
    )


def _logits_bias(model: Transformer, chosen: int, other: int | None) -> float:
    """The output layer's bias in the split value: b[chosen] (minus b[other])."""
    b = model.logits_bias
    if b is None:
        return 0.0
    return float(b[chosen] - (0.0 if other is None else b[other]))


# --------------------------------------------------------------------------- activation patching
POSITIONS = ("prefix", "step")
METRICS = ("difference", "runner-up")  # PatchingResult.metric


@dataclass
class PatchingResult:
    """Logit differences d = logit(token_a) - logit(token_b) at one step of A: clean
    (``diff_a``), of B (``diff_b``) and with each component patched from B (``patched``), in
    nats. Every ``fraction`` is (d_patched - diff_a) / (:attr:`reference` - diff_a).

    ``metric`` ``"difference"``: token_a and token_b are what A and B emit (or ``tokens_ab``);
    the reference is ``diff_b``, so 0 = no effect, 1 = the component alone turns A's
    difference into B's.

    ``metric`` ``"runner-up"``: A and B emit the same token, token_a, and token_b is A's
    runner-up (its highest other logit at the step), so d is A's lead of its word over the
    runner-up. The reference is 0, a tie: a fraction is the share of A's lead that the
    component's output from B takes away (0 = none, 1 = a tie, above 1 the runner-up wins,
    below 0 a wider lead). It is well defined wherever A's two tokens do not tie, even when B's
    lead equals A's (there ``diff_b - diff_a`` is 0 and the other normalisation is not)."""

    text_a: str
    text_b: str
    step: int
    positions: str
    token_a: str
    token_a_id: int
    token_b: str
    token_b_id: int
    prefix_a: list[str]
    prefix_b: list[str]
    diff_a: float
    diff_b: float
    patched: dict  # "embedding", "all": float; "decoder_self", "cross": (L, H); "ffn": (L,)
    metric: str = "difference"

    @property
    def reference(self) -> float:
        """The d a fraction of 1 stands for: B's difference, or a tie (0) against the runner-up."""
        return self.diff_b if self.metric == "difference" else 0.0

    def fraction(self, name: str):
        return (self.patched[name] - self.diff_a) / (self.reference - self.diff_a)

    def summary(self) -> str:
        """What the maps show, in one plain paragraph (steps 1-based, as in the figures)."""
        return patching_summary(self)

    def ranking(self, k: int = 10) -> list[dict]:
        """The ``k`` heads whose patch moves the largest fraction (in absolute value)."""
        rows = [
            {"kind": kind, "layer": l, "head": h, "fraction": float(f[l, h])}
            for kind in ("decoder_self", "cross")
            for f in [self.fraction(kind)]
            for l in range(f.shape[0])
            for h in range(f.shape[1])
        ]
        return sorted(rows, key=lambda r: -abs(r["fraction"]))[:k]

    def to_dict(self) -> dict:
        r = rounded
        names = ("embedding", "decoder_self", "cross", "ffn", "all")
        return {
            "schema": "activation-patching/1",
            "text_a": self.text_a,
            "text_b": self.text_b,
            "step": self.step,
            "positions": self.positions,
            "token_a": self.token_a,
            "token_a_id": self.token_a_id,
            "token_b": self.token_b,
            "token_b_id": self.token_b_id,
            "prefix_a": self.prefix_a,
            "prefix_b": self.prefix_b,
            "diff_a": r(self.diff_a),
            "diff_b": r(self.diff_b),
            "fraction": {n: r(np.asarray(self.fraction(n))) for n in names},
            "patched": {n: r(np.asarray(self.patched[n])) for n in names},
            "ranking": [{**h, "fraction": r(h["fraction"])} for h in self.ranking()],
            "metric": self.metric,
            "runner_up": self.token_b if self.metric == "runner-up" else None,
            "runner_up_id": self.token_b_id if self.metric == "runner-up" else None,
            "reference": r(self.reference),
            "summary": self.summary(),
        }

    def figure(self):
        return patching_figure(self)


def patching_summary(res: PatchingResult) -> str:
    """The sentence a learner reads above the maps (:meth:`PatchingResult.summary`)."""

    def q(tok: str) -> str:  # as figures.quote, without importing plotly for a dict
        return f"“{tok}”"

    step, a, b = res.step + 1, q(res.token_a), q(res.token_b)
    nats = f"{res.diff_a:.2f} nats in A, {res.diff_b:.2f} in B"
    if res.metric == "difference":
        return (
            f"At step {step} the maps show the fraction of logit {a} − logit {b} ({nats}) that each "
            "component moves when it takes B's output (0 none, 1 all the way to B's)."
        )
    lead, what = (
        ("lead", f"A's lead of {a} over its runner-up {b}")
        if res.diff_a > 0
        else ("gap", f"how far {a} trails A's top token {b}")
    )
    return (
        f"A and B both write {a} at step {step}: the maps show how much each head's and FFN's output "
        f"from B moves {what} ({nats}), as the share of that {lead} it takes away (0 none, 1 all of "
        f"it: a tie; below 0 a wider {lead})."
    )


def _patch_rows(L: int, H: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Keep-masks (1 = A's own output, 0 = B's) of the batched patched run. Rows:
    [embedding, each decoder_self head (layer-major), each cross head, each FFN, all].
    Returns the embedding (R,), decoder_self (R, L, H), cross (R, L, H) and ffn (R, L) masks."""
    n = L * H
    R = 1 + 2 * n + L + 1
    emb, self_m, cross_m, ffn = torch.ones(R), torch.ones(R, n), torch.ones(R, n), torch.ones(R, L)
    j, f = torch.arange(n), torch.arange(L)
    emb[0] = 0.0
    self_m[1 + j, j] = 0.0
    cross_m[1 + n + j, j] = 0.0
    ffn[1 + 2 * n + f, f] = 0.0
    for m in (emb, self_m, cross_m, ffn):
        m[-1] = 0.0
    return emb, self_m.view(R, L, H), cross_m.view(R, L, H), ffn


def _shared_cache(rec: Recorded, rows: int, past: int) -> list[LayerCache]:
    """A's cache for ``rows`` rows as expanded views (nothing copied, nothing projected again):
    the cross-attention K/V of A's source and the self-attention K/V of its first ``past``
    decoder positions."""
    return [
        LayerCache(
            self_k=c.self_k[:, :, :past].expand(rows, -1, -1, -1),
            self_v=c.self_v[:, :, :past].expand(rows, -1, -1, -1),
            cross_k=c.cross_k.expand(rows, -1, -1, -1),
            cross_v=c.cross_v.expand(rows, -1, -1, -1),
        )
        for c in rec.cache
    ]


def _mix(keep: torch.Tensor, theirs: torch.Tensor):
    """A point's replacement: rows keep their own value where ``keep`` is 1, take ``theirs`` where 0."""
    return lambda own: own * keep + theirs * (1 - keep)


def _patches(rec_b: Recorded, run: slice, self_m, cross_m, ffn_m) -> dict:
    """The points a patched run replaces (``transformer.core.recording``): per decoder layer,
    each head's output and the FFN's, B's value in the rows that patch them."""
    patches = {}
    for l in range(len(rec_b.ffn)):
        patches[f"decoder_self.{l}.heads"] = _mix(self_m[:, l, :, None, None], rec_b.self_heads[l][:, :, run])
        patches[f"cross.{l}.heads"] = _mix(cross_m[:, l, :, None, None], rec_b.cross_heads[l][:, :, run])
        patches[f"decoder_ffn.{l}.out"] = _mix(ffn_m[:, l, None, None], rec_b.ffn[l][:, run])
    return patches


def _patched_diffs(
    model: Transformer,
    rec_a: Recorded,
    rec_b: Recorded,
    prefix_a: torch.Tensor,
    direction: torch.Tensor,
    positions: str,
) -> torch.Tensor:
    """One batched decoder pass of A, one row per patched component (:func:`_patch_rows`);
    returns each row's logit difference (R,) at the step.

    ``"prefix"`` runs every decoder position 0..step. ``"step"`` runs the step's position
    alone: a patch there cannot change the earlier positions (the decoder is causal), so
    their self-attention K/V are A's own, taken from its cache."""
    L, H = len(model.decoder_layers), model.cfg.h
    emb, self_m, cross_m, ffn_m = _patch_rows(L, H)
    R, T = emb.shape[0], prefix_a.shape[1]
    run = slice(0, T) if positions == "prefix" else slice(T - 1, T)  # the positions computed, and patched
    e = emb[:, None, None]  # (R, 1, 1)
    embeds = rec_a.embed[:, run] * e + rec_b.embed[:, run] * (1 - e)  # (R, T', D)
    with recording(Recording(replace=_patches(rec_b, run, self_m, cross_m, ffn_m))):
        dec = stepping.run_decoder(
            model,
            prefix_a[:, run].expand(R, -1),
            rec_a.memory.expand(R, -1, -1),
            rec_a.src_mask.expand(R, -1, -1, -1),
            _shared_cache(rec_a, R, run.start),
            embeds=embeds,
        )
    return dec.hidden[:, -1] @ direction  # (R,)


def _compared_tokens(translator, token_a: int, token_b: int, tokens_ab) -> tuple[int, int]:
    """The two tokens whose logit difference is patched: what A and B emit, or ``tokens_ab``."""
    if tokens_ab is None:
        return token_a, token_b
    if not (isinstance(tokens_ab, (list, tuple)) and len(tokens_ab) == 2):
        raise ValueError(f"tokens_ab must be a pair of target token ids, got {tokens_ab!r}")
    tok_a, tok_b = (check_token_id(f"tokens_ab[{i}]", v, translator.model.cfg) for i, v in enumerate(tokens_ab))
    if tok_a == tok_b:
        raise ValueError(
            f"tokens_ab name {translator.tgt_tok.id_to_token(tok_a)!r} twice: their logit difference "
            "is 0 everywhere, give two different tokens"
        )
    return tok_a, tok_b


def _compared(translator, a: StepInputs, b: StepInputs, rec_a: Recorded, tokens_ab) -> tuple[str, int, int]:
    """The metric and the two tokens whose logit difference is patched (token_a, token_b):
    ``"difference"`` of what A and B emit (or of ``tokens_ab``) or, when A and B emit the same
    token and no ``tokens_ab`` are given, ``"runner-up"``: that token against A's runner-up,
    found as direct logit attribution's ``versus="runner-up"`` finds it."""
    if tokens_ab is None and a.token == b.token:
        logits = translator.model.project(rec_a.hidden[0, -1])  # (V,)
        return "runner-up", a.token, _versus_id("runner-up", a.token, logits, translator.model.cfg)
    return ("difference", *_compared_tokens(translator, a.token, b.token, tokens_ab))


def _check_movable(metric: str, diff_a: float, diff_b: float) -> None:
    """A fraction needs a non-zero denominator: A's lead (runner-up) or B's move from A's difference."""
    if metric == "runner-up" and abs(diff_a) < 1e-6:
        raise ValueError("A's word and its runner-up tie at this step: there is no lead to patch")
    if metric == "difference" and abs(diff_b - diff_a) < 1e-6:
        raise ValueError("A and B give the same logit difference at this step: there is nothing to patch")


def _by_component(d: np.ndarray, L: int, H: int) -> dict:
    """The patched differences, one per batch row of ``_patched_diffs``, by component."""
    n = L * H
    return {
        "embedding": float(d[0]),
        "decoder_self": d[1 : 1 + n].reshape(L, H),
        "cross": d[1 + n : 1 + 2 * n].reshape(L, H),
        "ffn": d[1 + 2 * n : 1 + 2 * n + L],
        "all": float(d[-1]),
    }


def _pair_inputs(translator, texts, step: int, targets, langs) -> tuple[StepInputs, StepInputs]:
    """A's and B's inputs at ``step``; a translation not given is the greedy one (both in one batch)."""
    if any(t is None for t in targets):
        greedy = greedy_targets(translator, list(texts), *langs)
        targets = [g if t is None else t for g, t in zip(greedy, targets)]
    return tuple(step_inputs(translator, x, step, t, *langs) for x, t in zip(texts, targets))


@torch.no_grad()
def activation_patching(
    translator,
    text_a: str,
    text_b: str,
    step: int,
    target_a: list[int] | None = None,
    target_b: list[int] | None = None,
    tokens_ab: tuple[int, int] | None = None,
    positions: str = "prefix",
    src_lang: str | None = None,
    tgt_lang: str | None = None,
) -> PatchingResult:
    """Patch every decoder component of A with B's, one at a time, at ``step``.

    Clean run A and corrupted run B are each teacher-forced on their own translation
    (greedy unless ``target_a`` / ``target_b``) up to ``step``, so the two decoder prefixes
    have the same length; the sources may differ in length, because a cross-attention head's
    output lives at the decoder positions. The metric is logit(token_a) - logit(token_b) at
    the step, where token_a/token_b are what A and B emit there, or ``tokens_ab``. Where A and
    B emit the same token (and no ``tokens_ab`` are given), the metric is ``"runner-up"``:
    token_b is A's runner-up and each fraction is the share of A's lead that the patch takes
    away (:class:`PatchingResult`). Components: each decoder self- and cross-attention head
    (output before ``o_proj``), each FFN block, the target embedding, and all of them together,
    whose patch gives exactly B's difference (the residual stream at the step is then B's).
    ``positions``: ``"prefix"`` patches the decoder positions 0..step, ``"step"`` only the
    step's own position. All the patched runs are rows of one batched decoder pass.
    """
    if positions not in POSITIONS:
        raise ValueError(f"positions must be one of {', '.join(POSITIONS)}, got {positions!r}")
    model: Transformer = translator.model
    check_eval(model)
    a, b = _pair_inputs(translator, (text_a, text_b), step, (target_a, target_b), (src_lang, tgt_lang))
    rec_a, rec_b = record(model, a.src, a.prefix), record(model, b.src, b.prefix)
    metric, tok_a, tok_b = _compared(translator, a, b, rec_a, tokens_ab)
    W_U = unembedding(model)
    direction = W_U[tok_a] - W_U[tok_b]  # (D,)
    offset = _logits_bias(model, tok_a, tok_b)  # the output layer's bias, where it has one
    diff_a, diff_b = (float(r.hidden[0, -1] @ direction) + offset for r in (rec_a, rec_b))
    _check_movable(metric, diff_a, diff_b)
    d = _patched_diffs(model, rec_a, rec_b, a.prefix, direction, positions).numpy().astype(np.float64) + offset
    tok = translator.tgt_tok.id_to_token
    return PatchingResult(
        text_a=text_a,
        text_b=text_b,
        step=a.step,
        positions=positions,
        token_a=tok(tok_a),
        token_a_id=tok_a,
        token_b=tok(tok_b),
        token_b_id=tok_b,
        prefix_a=tokens(translator, a.tgt[: step + 1]),
        prefix_b=tokens(translator, b.tgt[: step + 1]),
        diff_a=diff_a,
        diff_b=diff_b,
        patched=_by_component(d, len(model.decoder_layers), model.cfg.h),
        metric=metric,
    )


# --------------------------------------------------------------------------- figures
def _layer_head_heatmap(go, z: np.ndarray, kind_label: str, what: str, coloraxis: str = "coloraxis"):
    """A (L, H) map of per-head numbers, 1-based labels, the value printed in each cell."""
    L, H = z.shape
    tips = [[f"{kind_label} layer {l + 1}, head {h + 1}<br>{what}: {z[l, h]:+.3f}" for h in range(H)] for l in range(L)]
    return go.Heatmap(
        z=z.tolist(),
        x=[f"head {h + 1}" for h in range(H)],
        y=[f"layer {l + 1}" for l in range(L)],
        coloraxis=coloraxis,
        text=tips,
        hovertemplate="%{text}<extra></extra>",
        texttemplate="%{z:.2f}",
        textfont={"size": 9},
        xgap=1,
        ygap=1,
        name=kind_label,
    )


def _diverging_axis(F, values) -> dict:
    """A red-white-blue colour axis centred on 0, symmetric around it."""
    hi = max(float(np.max(np.abs(np.concatenate([np.ravel(v) for v in values])))), 1e-9)
    return {"colorscale": F.colorscale(F.RDBU), "cmin": -hi, "cmax": hi, "cmid": 0.0}


def _block_terms(res: LogitAttribution) -> tuple[list[str], list[float]]:
    """(name, term) of each block: the embedding, each layer's attentions (bias included) and
    FFN, and the final norm's bias."""
    names, values = ["embedding + PE"], [res.embedding]
    for l in range(res.cross.shape[0]):
        names += [f"L{l + 1} self", f"L{l + 1} cross", f"L{l + 1} FFN"]
        values += [
            res.decoder_self[l].sum() + res.decoder_self_bias[l],
            res.cross[l].sum() + res.cross_bias[l],
            res.ffn[l],
        ]
    if res.logits_bias:
        names, values = names + ["output bias"], values + [res.logits_bias]
    return names + ["final-norm bias"], values + [res.norm_bias]


def attribution_figure(res: LogitAttribution):
    """Direct logit attribution as the view shows it: per-head maps of decoder self- and
    cross-attention (layers x heads, red = against, blue = for the token) and a bar per
    block (embedding, each layer's attentions with their bias, FFNs, final-norm bias)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from transformer.interpret import figures as F

    L, H = res.cross.shape
    fig = make_subplots(
        rows=2,
        cols=2,
        specs=[[{}, {}], [{"colspan": 2}, None]],
        vertical_spacing=0.2,
        subplot_titles=["Decoder self-attention heads", "Cross-attention heads", "By block"],
    )
    fig.add_trace(_layer_head_heatmap(go, res.decoder_self, "decoder self-attention", "term"), 1, 1)
    fig.add_trace(_layer_head_heatmap(go, res.cross, "cross-attention", "term"), 1, 2)
    names, values = _block_terms(res)
    fig.add_trace(
        go.Bar(
            x=names,
            y=values,
            marker_color=[F.BAR if v >= 0 else F.HIGHLIGHT for v in values],
            name="block",
            hovertemplate="%{x}: %{y:+.3f}<extra></extra>",
        ),
        2,
        1,
    )
    what = F.quote(res.token) + ("" if res.versus is None else f" − {F.quote(res.versus)}")
    title = (
        f"Direct logit attribution · step {res.step + 1}: logit {what} = {res.value:.3f} "
        f"(terms sum to {res.total():.3f})<br>final LayerNorm folded in, scale frozen at this step "
        f"(σ = {res.norm_sigma:.3f}); attention heads' o_proj bias counted in the block bars"
    )
    fig.update_layout(
        **F.frame(title),
        showlegend=False,
        width=max(760, 2 * 60 * H + 200),
        height=620,
        coloraxis={**_diverging_axis(F, [res.decoder_self, res.cross]), "colorbar": {"title": {"text": "nats"}}},
        meta={"view": "attribution", "step": res.step + 1, "token": res.token, "versus": res.versus},
    )
    fig.update_yaxes(autorange="reversed", row=1)
    fig.update_yaxes(title={"text": "nats"}, zeroline=True, zerolinecolor="#999", row=2, col=1)
    return fig


def _patching_title(F, res: PatchingResult) -> str:
    """The figure's two title lines: the compared logits, then what a cell's fraction is."""
    where = "decoder positions 1.." + str(res.step + 1) if res.positions == "prefix" else "the step's position"
    a, b = F.quote(res.token_a), F.quote(res.token_b)
    if res.metric == "runner-up":
        other = "A's runner-up" if res.diff_a > 0 else "A's top token"
        first = f"A and B both write {a}; logit {a} − {b} ({other})"
        moved = "share of A's lead taken away"
    else:
        first, moved = f"logit {a} − {b}", "fraction of the difference moved"
    return (
        f"Activation patching · step {res.step + 1}: {first} = {res.diff_a:.3f} in A, {res.diff_b:.3f} in B<br>"
        f"{moved} when one component takes B's output at {where} (embedding {res.fraction('embedding'):.2f}, "
        f"all together {res.fraction('all'):.3f})"
    )


def patching_figure(res: PatchingResult):
    """The fraction of the A-versus-B logit difference each component moves (or, with the
    ``"runner-up"`` metric, the share of A's lead it takes away): layers x heads maps of
    decoder self- and cross-attention and a column of FFN blocks."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from transformer.interpret import figures as F

    self_f, cross_f, ffn_f = res.fraction("decoder_self"), res.fraction("cross"), res.fraction("ffn")
    L, H = self_f.shape
    fig = make_subplots(
        rows=1,
        cols=3,
        column_widths=[H, H, 1.4],
        horizontal_spacing=0.06,
        subplot_titles=["Decoder self-attention heads", "Cross-attention heads", "FFN"],
    )
    what = "share of A's lead taken away" if res.metric == "runner-up" else "fraction moved"
    fig.add_trace(_layer_head_heatmap(go, self_f, "decoder self-attention", what), 1, 1)
    fig.add_trace(_layer_head_heatmap(go, cross_f, "cross-attention", what), 1, 2)
    fig.add_trace(_layer_head_heatmap(go, ffn_f[:, None], "FFN", what), 1, 3)
    fig.data[2].update(x=["FFN"], text=[[f"FFN layer {l + 1}<br>{what}: {ffn_f[l]:+.3f}"] for l in range(L)])
    fig.update_layout(
        **F.frame(_patching_title(F, res)),
        showlegend=False,
        width=max(820, 2 * 60 * H + 260),
        height=420,
        coloraxis={**_diverging_axis(F, [self_f, cross_f, ffn_f, [1.0]]), "colorbar": {"title": {"text": "fraction"}}},
        meta={
            "view": "patching",
            "step": res.step + 1,
            "text_a": res.text_a,
            "text_b": res.text_b,
            "positions": res.positions,
            "metric": res.metric,
        },
    )
    fig.update_yaxes(autorange="reversed")
    return fig
