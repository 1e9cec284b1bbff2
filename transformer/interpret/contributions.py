"""Where did this word come from? Source versus target-prefix contributions (ALTI+), and what
moved each attention output (Kobayashi norms), for a traced translation.

ALTI+ (Ferrando, Gállego, Alastruey, Escolano & Costa-jussà, "Towards Opening the Black Box of
Neural Machine Translation: Source and Target Contributions to the Model's Predictions",
EMNLP 2022; reference code: github.com/mt-upc/transformer-contributions-nmt,
``wrappers/transformer_wrapper.py``) extends ALTI (Ferrando, Gállego & Costa-jussà,
"Measuring the Mixing of Contextual Information in the Transformer", EMNLP 2022), which builds
on Kobayashi, Kuribayashi, Yokoi & Inui, "Attention is Not Only a Weight: Analyzing
Transformers with Vector Norms", EMNLP 2020.

The equations, with the paper's names
-------------------------------------
An attention block (multi-head attention plus its residual, and for post-LN the LayerNorm
after it) writes, at query position i, a sum of one vector per input token j::

    T_i(x_j) = sum_h alpha^h_ij f^h(x_j)  (+ x_i  when j = i: the residual, self-attention)
    f^h(x_j) = W_O^h (W_V^h x'_j + b_V^h)          x'_j: what the value projection reads
    y_i      = sum_j T_i(x_j) + b_O                 (pre-LN: the residual stream after the block)
    y_i      = LN(sum_j T_i(x_j) + b_O)             (post-LN; LN is split linearly, see below)

``W_O^h`` is the slice of ``o_proj`` that reads head h. In cross-attention the decoder's
residual stream r_i is one more term, "the target" (ALTI+ concatenates it as an extra value
vector): y_i = sum_j T_i(s_j) + r_i (+ b_O). ALTI's contribution of j to i is the L1 proximity
of the token's vector to the output, normalised over j (rows sum to 1)::

    c_ij = max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1) / sum_k max(0, ||y_i||_1 - ||y_i - T_i(x_k)||_1)

Per layer this gives ``C^enc_l`` (S, S) in the encoder, and in decoder layer l the
self-attention block's ``C^self_l`` (T, T) and the cross-attention block's ``C^cross_l``
(T, S + 1), whose last column is the residual (the target side). ALTI+ joins them into one
(T, S + T) matrix per decoder layer, the target part weighted by the residual's share::

    C^dec_l = [ C^cross_l[:, :S] ,  C^cross_l[:, S] * C^self_l ]

and composes the layers as a rollout (Abnar & Zuidema 2020) whose source columns pass through
the encoder's own rollout R_enc = C^enc_L ... C^enc_1::

    R_1 = [ C^dec_1,src R_enc ,  C^dec_1,tgt ]
    R_l = [ C^dec_l,src R_enc + C^dec_l,tgt R_(l-1),src ,  C^dec_l,tgt R_(l-1),tgt ]   (rows renormalised)

Row t of the last R is step t's contribution of each source *input* token (S columns) and of
each decoder input token ``[SOS] y1 ... yt`` (T columns, zero right of t). Its source part
summed is the **source share**, its prefix part the **prefix share**; they sum to 1.

Where this differs from the paper's code
----------------------------------------
- Pre-LN (our shipped model): the value projection reads LN(x_j), which depends on token j
  alone, so ``T_i(x_j)`` still depends on x_j only and the split is exact; the residual term is
  the un-normalised x_j, and y_i is the residual stream after the block (as in the reference).
- Post-LN: LN(z) = gain * (z - mean z) / sigma + bias is split linearly with sigma frozen at its
  value for the whole z. We use the model's own sigma, sqrt(biased var(z) + eps) (the reference
  divides by the unbiased std of z + eps, which does not add up exactly). b_O and the LN bias
  are not given to any token; they stay in y_i. Every block's split is checked against the
  block's real output: ``reconstruction_error`` reports the largest gap.
- The FFN blocks, the final encoder and decoder norms and the output projection act on each
  position alone: they do not mix tokens, so, as in the paper, they are left out (the mixing
  of a layer is that of its attention blocks). Attention weights are taken as given (the
  paper's and Kobayashi's assumption): how the query chose them is not split.
- Heads silenced by a head mask (a knock-out trace) contribute nothing, as in the model.
- Decoder steps are computed teacher-forced on the trace's own target (forced prefix and
  generated tokens alike): the causal mask makes row t the computation of step t, equal to
  the cached step the trace recorded up to float rounding.

What moved the output (Kobayashi et al. 2020)
---------------------------------------------
:func:`value_norms` gives, for every attention kind, layer and head, ||alpha^h_ij f^h(x_j)||
(L2) as a map shaped like the attention weights (rows queries, columns keys), to draw in place
of the raw weight: a key with a large weight but a small transformed value moves the output
little. The maps are **not** normalised per row (they are lengths in the residual stream's
units); :meth:`ValueNorms.normalised` divides each row by its sum when a row-stochastic map is
wanted.

Indices are 0-based; step t reads ``trace.tgt_tokens[t]`` and emits ``trace.tgt_tokens[t + 1]``
(see ``transformer/core/trace.py``). Pure functions: no state is left on the model (the forward
hooks used to read the blocks' inputs are removed on return and ignore other threads).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import torch

from transformer.core import stepping
from transformer.core.model import Transformer
from transformer.core.recording import Recording, recording
from transformer.core.trace import Trace

SCHEMA = "alti-plus/1"
NORMS_SCHEMA = "value-norms/1"
KINDS = ("encoder", "decoder_self", "cross")


# --------------------------------------------------------------------------- results
@dataclass
class Contributions:
    """ALTI+ of one traced translation. S source tokens, T steps (decoder inputs
    ``prefix_tokens`` = ``[SOS] y1 ... y(T-1)``, outputs ``output_tokens`` = ``y1 ... yT``).

    ``decoder_layers[l]`` is layer l's own mixing (its source columns are the *encoder output*
    positions); ``decoder_rollout[l]`` is composed through decoder layers 0..l and the whole
    encoder (its source columns are the source *input* tokens). ``total`` is the last rollout.
    Every row of every matrix sums to 1.
    """

    src_tokens: list[str]  # (S,)
    prefix_tokens: list[str]  # (T,) decoder inputs
    output_tokens: list[str]  # (T,) what each step emitted
    encoder_layers: np.ndarray  # (L_enc, S, S) ALTI of each encoder layer
    encoder_rollout: np.ndarray  # (S, S) R_enc: top encoder layer over source input tokens
    self_layers: np.ndarray  # (L_dec, T, T) ALTI of each decoder self-attention block
    cross_layers: np.ndarray  # (L_dec, T, S + 1) ALTI of each cross-attention block; last column: residual
    decoder_layers: np.ndarray  # (L_dec, T, S + T) C^dec_l, ALTI+ of each decoder layer
    decoder_rollout: np.ndarray  # (L_dec, T, S + T) R_l, composed through layers 0..l
    reconstruction_error: float  # max |sum of the split - the block's real output| over all blocks
    forced_prefix: list[int] = field(default_factory=list)

    @property
    def S(self) -> int:
        return len(self.src_tokens)

    @property
    def steps(self) -> int:
        return len(self.prefix_tokens)

    @property
    def total(self) -> np.ndarray:
        """(T, S + T): the composed ALTI+ result through every layer."""
        return self.decoder_rollout[-1]

    @property
    def source(self) -> np.ndarray:
        """(T, S): each source token's contribution to each step."""
        return self.total[:, : self.S]

    @property
    def prefix(self) -> np.ndarray:
        """(T, T): each decoder input token's contribution to each step (0 right of the step)."""
        return self.total[:, self.S :]

    @property
    def source_share(self) -> np.ndarray:
        """(T,): how much of each step comes from the source, in [0, 1]."""
        return self.source.sum(axis=-1)

    @property
    def prefix_share(self) -> np.ndarray:
        """(T,): how much of each step comes from the target prefix; source + prefix = 1."""
        return self.prefix.sum(axis=-1)

    @property
    def layer_source_share(self) -> np.ndarray:
        """(L_dec, T): source share of the rollout up to each decoder layer."""
        return self.decoder_rollout[:, :, : self.S].sum(axis=-1)

    def step(self, t: int) -> dict:
        """Step t (0-based) as plain data: shares, and the contribution of each source token
        and of each decoder input read so far (``prefix_tokens[: t + 1]``)."""
        if not 0 <= t < self.steps:
            raise IndexError(f"step {t} out of range 0..{self.steps - 1}")
        return {
            "step": t,
            "output_token": self.output_tokens[t],
            "source_share": float(self.source_share[t]),
            "prefix_share": float(self.prefix_share[t]),
            "source": self.source[t].tolist(),  # (S,)
            "prefix": self.prefix[t, : t + 1].tolist(),  # (t + 1,)
        }

    def to_dict(self, digits: int = 4) -> dict:
        """JSON-ready: floats rounded to ``digits`` decimals. ``source``/``prefix`` are the
        composed result; ``layers`` each decoder layer's own ALTI+; ``rollout`` per layer."""

        def r(a):
            return np.round(np.asarray(a, dtype=np.float64), digits).tolist()

        S = self.S
        return {
            "schema": SCHEMA,
            "method": "ALTI+ (Ferrando et al., EMNLP 2022)",
            "src_tokens": list(self.src_tokens),
            "prefix_tokens": list(self.prefix_tokens),
            "output_tokens": list(self.output_tokens),
            "forced_prefix": list(self.forced_prefix),
            "source_share": r(self.source_share),
            "prefix_share": r(self.prefix_share),
            "source": r(self.source),  # (T, S)
            "prefix": r(self.prefix),  # (T, T)
            "layers": {"source": r(self.decoder_layers[:, :, :S]), "prefix": r(self.decoder_layers[:, :, S:])},
            "rollout": {"source": r(self.decoder_rollout[:, :, :S]), "prefix": r(self.decoder_rollout[:, :, S:])},
            "layer_source_share": r(self.layer_source_share),
            "encoder_layers": r(self.encoder_layers),
            "encoder_rollout": r(self.encoder_rollout),
            "reconstruction_error": float(f"{self.reconstruction_error:.3g}"),
        }

    def to_json(self, digits: int = 4) -> str:
        return json.dumps(self.to_dict(digits), ensure_ascii=False, separators=(",", ":"))

    def figure(self, step: int | None = None):
        """Steps x (source + prefix) map (:func:`contributions_figure`)."""
        return contributions_figure(self, step)

    def share_figure(self):
        """Source/prefix share bar per step (:func:`shares_figure`)."""
        return shares_figure(self)


@dataclass
class ValueNorms:
    """||alpha^h_ij f^h(x_j)|| of every head (Kobayashi et al. 2020), shaped like the trace's
    attention: ``encoder`` (L_enc, H, S, S), ``decoder_self`` (L_dec, H, T, T), ``cross``
    (L_dec, H, T, S); rows queries, columns keys. Not normalised per row (see
    :meth:`normalised`). Masked keys (decoder keys after the query) are 0."""

    src_tokens: list[str]
    prefix_tokens: list[str]
    output_tokens: list[str]
    encoder: np.ndarray
    decoder_self: np.ndarray
    cross: np.ndarray
    value_norms: dict  # kind -> (L, H, K) ||f^h(x_j)||, the transformed value's length before weighting

    def get(self, kind: str) -> np.ndarray:
        kind = {"decoder": "decoder_self"}.get(kind, kind)
        if kind not in KINDS:
            raise ValueError(f"unknown attention kind {kind!r}; expected one of {', '.join(KINDS)}")
        return getattr(self, kind)

    def normalised(self, kind: str) -> np.ndarray:
        """The ``kind`` map with each row divided by its sum (rows of zeros stay zero)."""
        a = self.get(kind)
        s = a.sum(axis=-1, keepdims=True)
        return np.divide(a, s, out=np.zeros_like(a), where=s > 0)

    def to_dict(self, digits: int = 4) -> dict:
        def r(a):
            return np.round(np.asarray(a, dtype=np.float64), digits).tolist()

        return {
            "schema": NORMS_SCHEMA,
            "method": "||alpha f(x)|| (Kobayashi et al., EMNLP 2020), not normalised per row",
            "src_tokens": list(self.src_tokens),
            "prefix_tokens": list(self.prefix_tokens),
            "output_tokens": list(self.output_tokens),
            **{k: r(getattr(self, k)) for k in KINDS},
        }

    def figure(self, kind: str = "cross", layer: int = 1, head: int | str = "mean", normalise: bool = False):
        """One map (:func:`value_norms_figure`); ``layer`` and ``head`` count from 1 there, as
        every figure does (``head`` may be "mean"/"max")."""
        return value_norms_figure(self, kind, layer, head, normalise)


# --------------------------------------------------------------------------- the forward pass
@dataclass
class _Block:
    """One attention block of the forward pass, as the model ran it (batch of one)."""

    kind: str
    layer: int
    weights: torch.Tensor  # (H, Q, K) post-softmax
    v: torch.Tensor  # (H, K, d_k) the module's values (W_V x'_j + b_V, split by head)
    head_scale: torch.Tensor | None  # (H,) head mask values, None = all 1
    residual: torch.Tensor  # (Q, D) the block's input x (the residual stream)
    output: torch.Tensor  # (Q, D) the block's output (pre-LN: x + y; post-LN: LN(x + y))
    attn: torch.nn.Module  # the MultiHeadAttention module (o_proj)
    norm: torch.nn.Module  # the block's LayerNorm


# the points every block's numbers are read from (transformer.core.recording)
BLOCK_POINTS = ["*.v", "*.head_mask", "*.residual", "*.output"]


def _model_of(translator_or_model) -> Transformer:
    model = getattr(translator_or_model, "model", translator_or_model)
    if not isinstance(model, Transformer):
        raise TypeError(f"expected a Translator or a Transformer, got {type(translator_or_model).__name__}")
    if model.training:
        raise ValueError("the model is in training mode (dropout on): call model.eval() first")
    return model


def _check_trace(model: Transformer, trace: Trace) -> None:
    if not isinstance(trace, Trace):
        raise TypeError(f"trace must be a transformer.core.trace.Trace, got {type(trace).__name__}")
    if trace.steps == 0:
        raise ValueError("the trace has no decoding steps")
    cfg = model.cfg
    for name, ids, vocab in (
        ("src_ids", trace.src_ids, cfg.src_vocab_size),
        ("tgt_ids", trace.tgt_ids, cfg.tgt_vocab_size),
    ):
        if any(not 0 <= int(i) < vocab for i in ids):
            raise ValueError(f"trace.{name} holds ids outside this model's vocabulary: was it made by another model?")
    if len(trace.tgt_ids) > cfg.max_positions:
        raise ValueError(
            f"the trace's target has {len(trace.tgt_ids)} tokens, beyond max_positions={cfg.max_positions}"
        )


@torch.no_grad()
def _run(model: Transformer, src_ids: list[int], tgt_in: list[int], head_mask: dict | None) -> list[_Block]:
    """One teacher-forced pass; every attention block's numbers, in forward order."""
    src = torch.tensor([src_ids])  # (1, S)
    tgt = torch.tensor([tgt_in])  # (1, T)
    rec = Recording(keep=BLOCK_POINTS)
    with recording(rec):
        enc_w, dec, _ = stepping.teacher_forced(model, src, tgt, need_weights=True, head_mask=head_mask)
    weights = {"encoder": enc_w, "decoder_self": dec.self_attn, "cross": dec.cross_attn}
    blocks = []
    for kind, n in (("encoder", len(model.encoder_layers)), ("decoder_self", len(model.decoder_layers))):
        for l in range(n):
            kinds = [kind] if kind == "encoder" else ["decoder_self", "cross"]
            for k in kinds:
                hm = rec[f"{k}.{l}.head_mask"]
                layer = model.encoder_layers[l] if k == "encoder" else model.decoder_layers[l]
                attn = layer.self_attn if k != "cross" else layer.cross_attn
                block = layer.cross_attn_block if k == "cross" else layer.self_attn_block
                blocks.append(
                    _Block(
                        kind=k,
                        layer=l,
                        weights=weights[k][l][0].float(),  # (H, Q, K)
                        v=rec[f"{k}.{l}.v"][0].float(),  # (H, K, d_k)
                        head_scale=None if hm is None else hm[0].float(),  # (H,)
                        residual=rec[f"{k}.{l}.residual"][0].float(),  # (Q, D)
                        output=rec[f"{k}.{l}.output"][0].float(),  # (Q, D)
                        attn=attn,
                        norm=block.norm,
                    )
                )
    return blocks


def _ln_params(norm: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor, float]:
    """(gain, bias, eps) of our LayerNorm, or of ``nn.LayerNorm``."""
    gain = getattr(norm, "gain", None)
    if gain is None:
        gain = norm.weight
    bias = norm.bias if norm.bias is not None else torch.zeros_like(gain)
    return gain.float(), bias.float(), float(norm.eps)


def transformed_values(block: _Block) -> torch.Tensor:
    """f^h(x_j) = W_O^h v^h_j for every head and key, (H, K, D), scaled by the head mask."""
    H, K, d_k = block.v.shape
    W_o = block.attn.o_proj.weight.float()  # (D, H * d_k)
    W_oh = W_o.view(W_o.shape[0], H, d_k).permute(1, 2, 0)  # (H, d_k, D)
    f = block.v @ W_oh  # (H, K, D)
    if block.head_scale is not None:
        f = f * block.head_scale[:, None, None]
    return f


def _split(block: _Block, pre_norm: bool) -> tuple[torch.Tensor, torch.Tensor, float]:
    """The block's output as one vector per input plus a bias: terms (Q, K [+1], D) whose sum
    plus ``bias`` (Q, D) is y (Q, D); also the largest gap to the block's real output."""
    A = block.weights  # (H, Q, K)
    f = transformed_values(block)  # (H, K, D)
    terms = torch.einsum("hqk,hkd->qkd", A, f)  # (Q, K, D)  sum_h alpha^h_ij f^h(x_j)
    if block.kind == "cross":
        terms = torch.cat([terms, block.residual[:, None, :]], dim=1)  # (Q, S + 1, D): the residual as a term
    else:
        Q = terms.shape[0]
        idx = torch.arange(Q)
        terms[idx, idx] += block.residual  # (Q, Q, D): x_i joins its own token's term
    b_o = block.attn.o_proj.bias
    b_o = torch.zeros(terms.shape[-1]) if b_o is None else b_o.float()
    z = terms.sum(dim=1) + b_o  # (Q, D) what the residual stream holds after the block
    if pre_norm:
        bias = b_o.expand_as(z)
    else:
        # LN(z) = g * (z - mean z) / sigma + b, sigma frozen at its value for z: linear in each term
        g, b, eps = _ln_params(block.norm)
        sigma = (z.var(dim=-1, unbiased=False, keepdim=True) + eps).sqrt()  # (Q, 1)
        terms = (terms - terms.mean(dim=-1, keepdim=True)) * g / sigma[:, None, :]  # (Q, K, D)
        bias = (b_o - b_o.mean()) * g / sigma + b  # (Q, D)
    y = terms.sum(dim=1) + bias  # (Q, D)
    return terms, y, float((y - block.output).abs().max())


def alti_layer(terms: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """ALTI's contributions (Q, K): max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1), rows normalised."""
    prox = (y.abs().sum(-1)[:, None] - (y[:, None, :] - terms).abs().sum(-1)).clamp(min=0)  # (Q, K)
    return prox / prox.sum(dim=-1, keepdim=True).clamp(min=torch.finfo(prox.dtype).tiny)


def _rownorm(a: torch.Tensor) -> torch.Tensor:
    return a / a.sum(dim=-1, keepdim=True).clamp(min=torch.finfo(a.dtype).tiny)


def _tokens(trace: Trace) -> tuple[list[str], list[str], list[str]]:
    T = trace.steps
    return list(trace.src_tokens), list(trace.tgt_tokens[:T]), list(trace.tgt_tokens[1 : T + 1])


def _pre_norm(model: Transformer) -> bool:
    return model.cfg.norm_placement == "pre"


# --------------------------------------------------------------------------- the analyses
@torch.no_grad()
def alti_contributions(translator_or_model, trace: Trace, head_mask: dict | None = None) -> Contributions:
    """ALTI+ of ``trace`` (a :class:`~transformer.core.trace.Trace` this model made): for each
    step, the share of the source and of the target prefix, and each token's contribution,
    per decoder layer and through all layers (see the module docstring).

    ``translator_or_model``: a ``Translator`` or a ``Transformer`` in eval mode.
    ``head_mask``: the one the trace was decoded with, if any (a knock-out trace).
    """
    model = _model_of(translator_or_model)
    _check_trace(model, trace)
    pre = _pre_norm(model)
    T, S = trace.steps, len(trace.src_ids)
    blocks = _run(model, list(trace.src_ids), list(trace.tgt_ids[:T]), head_mask)
    err = 0.0
    enc, self_c, cross_c = [], [], []
    for b in blocks:
        terms, y, e = _split(b, pre)
        err = max(err, e)
        {"encoder": enc, "decoder_self": self_c, "cross": cross_c}[b.kind].append(alti_layer(terms, y))
    # encoder rollout R_enc = C_L ... C_1
    R_enc = enc[0]  # (S, S)
    for C in enc[1:]:
        R_enc = _rownorm(C @ R_enc)
    layers, rollout = [], []
    for l, (Cs, Cx) in enumerate(zip(self_c, cross_c)):
        C_src = Cx[:, :S]  # (T, S) over the encoder output positions
        C_tgt = Cx[:, S:] * Cs  # (T, T) the residual's share, split by the self-attention block
        layers.append(torch.cat([C_src, C_tgt], dim=-1))  # (T, S + T)
        if l == 0:
            r_src, r_tgt = C_src @ R_enc, C_tgt
        else:
            r_src = C_src @ R_enc + C_tgt @ rollout[-1][:, :S]
            r_tgt = C_tgt @ rollout[-1][:, S:]
        rollout.append(_rownorm(torch.cat([r_src, r_tgt], dim=-1)))  # (T, S + T)
    src_tokens, prefix_tokens, output_tokens = _tokens(trace)
    return Contributions(
        src_tokens=src_tokens,
        prefix_tokens=prefix_tokens,
        output_tokens=output_tokens,
        encoder_layers=torch.stack(enc).numpy(),
        encoder_rollout=R_enc.numpy(),
        self_layers=torch.stack(self_c).numpy(),
        cross_layers=torch.stack(cross_c).numpy(),
        decoder_layers=torch.stack(layers).numpy(),
        decoder_rollout=torch.stack(rollout).numpy(),
        reconstruction_error=err,
        forced_prefix=list(trace.forced_prefix),
    )


@torch.no_grad()
def value_norms(translator_or_model, trace: Trace, head_mask: dict | None = None) -> ValueNorms:
    """||alpha^h_ij f^h(x_j)|| for every attention kind, layer and head of ``trace``
    (Kobayashi et al. 2020), shaped like the trace's attention weights; not normalised per row.
    f^h(x_j) = W_O^h (W_V^h x'_j + b_V^h): the key's value as head h's slice of ``o_proj``
    writes it into the residual stream (x'_j: the value projection's input, LN(x_j) in pre-LN)."""
    model = _model_of(translator_or_model)
    _check_trace(model, trace)
    T = trace.steps
    blocks = _run(model, list(trace.src_ids), list(trace.tgt_ids[:T]), head_mask)
    maps: dict = {k: [] for k in KINDS}
    lengths: dict = {k: [] for k in KINDS}
    for b in blocks:
        fnorm = transformed_values(b).norm(dim=-1)  # (H, K)
        maps[b.kind].append(b.weights * fnorm[:, None, :])  # (H, Q, K)
        lengths[b.kind].append(fnorm)
    src_tokens, prefix_tokens, output_tokens = _tokens(trace)
    return ValueNorms(
        src_tokens=src_tokens,
        prefix_tokens=prefix_tokens,
        output_tokens=output_tokens,
        **{k: torch.stack(maps[k]).numpy() for k in KINDS},
        value_norms={k: torch.stack(lengths[k]).numpy() for k in KINDS},
    )


# --------------------------------------------------------------------------- figures
# Drawn with the kit of transformer/interpret/figures.py, imported (with plotly) only when a
# figure is asked for. Layers and steps are shown 1-based, as in every figure.

ALTI_TITLE = "Where each word came from: ALTI+ (Ferrando et al. 2022), through all layers"


def _step_rows(F, prefix_tokens: list[str], output_tokens: list[str], step: int) -> list:
    """One ``F.Entry`` per step: the token it reads and the one it emits; ``step`` (1-based) is
    the current row, later ones are not generated yet."""
    return [
        F.Entry(
            i,
            f"{i + 1}: {q} → {o}",
            f"step {i + 1} (reads {F.quote(q)}, emits {F.quote(o)})",
            current=i == step - 1,
            future=i > step - 1,
        )
        for i, (q, o) in enumerate(zip(prefix_tokens, output_tokens))
    ]


def contributions_figure(c: Contributions, step: int | None = None):
    """Steps x (source + prefix) map of ALTI+ (``Contributions.total``, (T, S + T)): the source
    tokens' columns, then the decoder inputs' (a step's later inputs masked grey). Each row sums
    to 1; ``step`` (1-based, default the last) frames a row and greys the later ones."""
    from transformer.interpret import figures as F

    T, S = c.steps, c.S
    step = T if step is None else F._whole("step", step, 1, T)
    rows = _step_rows(F, c.prefix_tokens, c.output_tokens, step)
    cols = [F.Entry(j, tok, f"source token {j + 1} {F.quote(tok)}") for j, tok in enumerate(c.src_tokens)]
    cols += [
        F.Entry(S + j, f"↳ {tok}", f"decoder input {j + 1} {F.quote(tok)}") for j, tok in enumerate(c.prefix_tokens)
    ]
    total = np.asarray(c.total, dtype=np.float64)  # (T, S + T)
    matrix = F.analysis_matrix(total, rows, cols)
    matrix[:, S:][np.triu(np.ones((T, T), dtype=bool), k=1)] = np.nan  # a step never reads later inputs
    matrix[[i for i, e in enumerate(rows) if e.future]] = -np.inf
    share = c.source_share
    tips = [
        [
            f"{r.tip} is not generated yet (now at step {step})"
            if r.future
            else f"{r.tip}<br>{col.tip}<br>"
            + ("masked: a later decoder input" if np.isnan(matrix[i, j]) else f"contribution: {matrix[i, j]:.3f}")
            + f"<br>source share of the step: {share[i]:.2f}"
            for j, col in enumerate(cols)
        ]
        for i, r in enumerate(rows)
    ]
    title = "<br>".join([*ALTI_TITLE.split(": ", 1), f"source columns, then target prefix (↳) · step {step} of {T}"])
    return F.heatmap_figure(
        matrix,
        rows,
        cols,
        title=title,
        x_title="source token | decoder input (prefix)",
        y_title="decoding step",
        tips=tips,
        hi=F._top(total),
        scale_title="contribution",
        meta=dict(view="alti", step=step),
    )


def shares_figure(c: Contributions):
    """Source versus target-prefix share of each step (ALTI+), stacked bars summing to 1."""
    import plotly.graph_objects as go

    from transformer.interpret import figures as F

    labels = [f"{i + 1}: {o}" for i, o in enumerate(c.output_tokens)]
    src, pre = np.asarray(c.source_share, dtype=np.float64), np.asarray(c.prefix_share, dtype=np.float64)
    fig = go.Figure()
    for name, v, colour in (("source", src, F.BAR), ("target prefix", pre, F.HIGHLIGHT)):
        fig.add_trace(
            go.Bar(
                x=list(range(len(labels))),
                y=v.tolist(),
                name=name,
                marker_color=colour,
                customdata=labels,
                hovertemplate=f"%{{customdata}}<br>{name}: %{{y:.3f}}<extra></extra>",
            )
        )
    fig.update_layout(
        **F.frame(f"Source or target prefix? ALTI+ share of each step<br>mean source share {src.mean():.2f}"),
        barmode="stack",
        width=max(480, 28 * len(labels) + 200),
        height=380,
        meta=dict(view="alti_shares"),
        xaxis=dict(
            title=dict(text="step: emitted token"),
            tickmode="array",
            tickvals=list(range(len(labels))),
            ticktext=labels,
            tickangle=-60,
        ),
        yaxis=dict(title=dict(text="share"), range=[0, 1]),
    )
    return fig


def value_norms_figure(
    n: ValueNorms, kind: str = "cross", layer: int = 1, head="mean", normalise: bool = False, step: int | None = None
):
    """||alpha f(x)|| of one kind, layer (1-based) and head (1-based, ``"mean"`` or ``"max"``)
    laid out as the attention view of the same settings (``ValueNorms``, Kobayashi et al. 2020).
    Raw lengths unless ``normalise`` (each row divided by its sum)."""
    from transformer.interpret import figures as F

    view = {"decoder_self": "decoder"}.get(kind, kind)
    if view not in F.ATTENTION_VIEWS:
        raise ValueError(f"kind must be encoder, decoder_self or cross, got {kind!r}")
    values = n.normalised(kind) if normalise else n.get(kind)  # (L, H, Q, K)
    L, H = values.shape[:2]
    layer = F._whole("layer", layer, 1, L)
    head = F._head(head, H)
    T = len(n.prefix_tokens)
    step = T if step is None else F._whole("step", step, 1, T)
    tgt_tokens = [*n.prefix_tokens, n.output_tokens[-1]]
    rows, cols, causal = F.layout(view, step, n.src_tokens, tgt_tokens, [])
    matrix = F.attention_matrix(values, layer - 1, head if head in ("mean", "max") else head - 1, rows, cols, causal)
    where = f"layer {layer}, {F.head_name(head)}"
    what = "share of the row" if normalise else "‖α·f(x)‖"
    tips = [
        [
            f"{r.tip} is not generated yet"
            if r.future
            else f"query: {r.tip}<br>key: {col.tip}<br>"
            + ("masked" if np.isnan(matrix[i, j]) else f"{what}: {matrix[i, j]:.3f}")
            for j, col in enumerate(cols)
        ]
        for i, r in enumerate(rows)
    ]
    finite = matrix[np.isfinite(matrix)]
    return F.heatmap_figure(
        matrix,
        rows,
        cols,
        title=f"{F.ATTENTION_VIEWS[view]}: what moved the output, ‖α·f(x)‖ (Kobayashi et al. 2020)<br>{where}"
        + (" · rows normalised" if normalise else " · not normalised"),
        x_title=F.AXES[view][1],
        y_title=F.AXES[view][0],
        tips=tips,
        hi=F._top(finite),
        scale_title=what,
        meta=dict(view="value_norms", kind=kind, layer=layer, head=head, normalise=normalise),
    )
