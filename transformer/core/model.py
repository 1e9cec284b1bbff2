"""The encoder-decoder Transformer of "Attention Is All You Need", written out by hand.

No ``nn.Transformer*`` or ``nn.MultiheadAttention``: every block is here so a reader can
follow one sentence from token ids to logits. Attention weights are *returned* by the
forward pass when asked for (never stored on a module), so two concurrent users can never
see each other's maps. When nobody asks, attention runs through the fused
``F.scaled_dot_product_attention``; ``tests/test_model.py`` checks both paths agree.

Masks are boolean and mean "may attend" (True = keep), the convention of
``F.scaled_dot_product_attention``. The explicit path fills blocked scores with
``torch.finfo(dtype).min`` so a blocked key gets exactly zero weight after softmax.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer.core.config import TransformerConfig
from transformer.core import recording
from transformer.core.recording import point


class LayerNorm(nn.Module):
    """(x - mean) / sqrt(var + eps) * gain + bias over the last dim.

    ``F.layer_norm`` computes exactly that formula in one fused kernel; the learnable
    gain and bias are ours. ``tests/test_model.py`` checks it against the formula.
    """

    def __init__(self, d_model: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.gain = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],), self.gain, self.bias, self.eps)


def dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Inverted dropout: zero each element with probability ``p``, scale the rest by 1/(1-p).

    Why not ``F.dropout``: on CPU it fills a float mask with ``bernoulli_``, one random
    draw per element, and ``torch.profiler`` put that at 21% of the CPU time of a training
    step of the base model on 2 CPU cores (all the linear layers' matmuls: 52%).
    This draws one 64-bit number per *four* elements and reads it as four uniform 16-bit
    integers, so ``p`` is rounded to a multiple of 1/65536 (0.2 becomes 0.199997) and the
    survivors are scaled by the rounded keep rate, which keeps the mean exact. The mask
    comes from torch's seeded global generator, as ``F.dropout``'s does. Other devices keep
    ``F.dropout``, whose fused kernels are already fast. ``python benchmarks/train_step.py
    --d-ff 1024 --dropout-impl torch fast`` times both side by side.
    """
    if not training or p == 0.0:
        return x
    drop = round(p * 65536)  # how many of the 65536 values mean "drop"
    if x.device.type != "cpu" or not 0 < drop < 65536:  # other devices; p too close to 0 or 1 (or outside [0, 1])
        return F.dropout(x, p=p, training=True)
    n = x.numel()
    bits = torch.empty((n + 3) // 4, dtype=torch.int64).random_(-(2**63), None)  # full 64-bit range
    u16 = bits.view(torch.int16)[:n].view(x.shape)  # four uniform int16 per draw, in [-32768, 32767]
    keep = (u16 >= drop - 32768).to(x.dtype).mul_(65536 / (65536 - drop))
    return x * keep


class Dropout(nn.Dropout):
    """``nn.Dropout`` with the fast CPU mask of :func:`dropout` (same ``p``, same repr)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)


def sinusoidal_table(max_positions: int, d_model: int, layout: str = "interleaved", offset: int = 0) -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] = cos(same angle).

    ``layout="halves"`` is Marian's table (transformers' ``MarianSinusoidalPositionalEmbedding``):
    the same angles with the sines in the first half and the cosines in the second,
    PE[pos, i] = sin(angle_i), PE[pos, d/2 + i] = cos(angle_i). It is computed as Marian
    computes it, in float64 then rounded to float32, so converted checkpoints add the very
    same numbers (ours, in float32, differ from it in the last bits).

    ``layout="fairseq"`` is fairseq's (M2M100's, NLLB's): [sin | cos] too, but with the
    frequencies 10000^(-i / (d/2 - 1)) for i < d/2, computed in float32 as transformers'
    ``M2M100SinusoidalPositionalEmbedding`` does.

    ``offset``: the table starts at that row, so row p is what position p reads (fairseq numbers
    positions from padding_idx + 1 = 2).
    """
    n = max_positions + offset
    if layout == "halves":
        position = torch.arange(n, dtype=torch.float64).unsqueeze(1)  # (P, 1)
        half = (d_model + 1) // 2
        angle = position / torch.pow(10000.0, 2 * torch.arange(half, dtype=torch.float64) / d_model)  # (P, half)
        return torch.cat([torch.sin(angle), torch.cos(angle[:, : d_model // 2])], dim=1).float()[offset:]  # (P, D)
    if layout == "fairseq":
        half = d_model // 2
        freq = torch.exp(torch.arange(half).float() * -(math.log(10000) / (half - 1)))  # (half,)
        angle = torch.arange(n).float().unsqueeze(1) * freq.unsqueeze(0)  # (P, half)
        pe = torch.cat([torch.sin(angle), torch.cos(angle), torch.zeros(n, d_model % 2)], dim=1)  # (P, D)
        return pe[offset:]
    position = torch.arange(n, dtype=torch.float32).unsqueeze(1)  # (P, 1)
    div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(n, d_model)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term[: d_model // 2])
    return pe[offset:]


def add_positions(x: torch.Tensor, table: torch.Tensor, offset: int, norm, dropout: nn.Module) -> torch.Tensor:
    """dropout(norm(x + table[offset : offset + T])) for token vectors x (B, T, D) at positions
    offset..offset+T-1 (no norm when ``norm`` is None)."""
    T = x.shape[1]
    if offset + T > table.shape[0]:
        raise ValueError(f"sequence of {offset + T} positions exceeds max_positions={table.shape[0]}")
    x = x + table[offset : offset + T]
    return dropout(x if norm is None else norm(x))


class PositionalEncoding(nn.Module):
    """Adds the fixed sinusoidal table. It is a buffer (not a parameter, not saved): it is
    a pure function of the config, and the viewer reads this exact tensor: ``pe[p]`` is the
    vector added at position p."""

    def __init__(
        self, d_model: int, max_positions: int, dropout: float, layout: str = "interleaved", offset: int = 0
    ) -> None:
        super().__init__()
        self.register_buffer("pe", sinusoidal_table(max_positions, d_model, layout, offset), persistent=False)
        self.dropout = Dropout(dropout)

    def forward(self, x: torch.Tensor, offset: int = 0, norm: nn.Module | None = None) -> torch.Tensor:
        return add_positions(x, self.pe, offset, norm, self.dropout)


class LearnedPositionalEncoding(nn.Module):
    """A trained table instead (mBART's ``embed_positions``), one per stack, saved with the
    weights as ``weight``. ``pe`` is the same table detached, as the viewer reads it."""

    def __init__(self, d_model: int, max_positions: int, dropout: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(max_positions, d_model))
        self.dropout = Dropout(dropout)

    @property
    def pe(self) -> torch.Tensor:
        return self.weight.detach()

    def forward(self, x: torch.Tensor, offset: int = 0, norm: nn.Module | None = None) -> torch.Tensor:
        return add_positions(x, self.weight, offset, norm, self.dropout)  # the parameter, so training reaches it


class TokenEmbedding(nn.Module):
    """Embedding multiplied by sqrt(d_model), so token vectors and the PE (amplitude 1)
    have comparable scale (section 3.4 of the paper). ``scale=False`` leaves them as they
    are (a Marian model trained without ``scale_embedding``)."""

    def __init__(self, vocab_size: int, d_model: int, pad_id: int, scale: bool = True) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(vocab_size, d_model))
        self.pad_id = pad_id
        self.scale = math.sqrt(d_model) if scale else 1.0

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return F.embedding(ids, self.weight) * self.scale


class MultiHeadAttention(nn.Module):
    """Scaled dot-product attention over ``h`` heads with separate Q/K/V/O projections.

    Keys and values are projected by :meth:`project_kv` separately from the query so the
    caller can cache them: cross-attention K/V once per sentence, decoder self-attention
    K/V growing one step at a time.
    """

    def __init__(self, d_model: int, h: int, attn_dropout: float) -> None:
        super().__init__()
        self.h = h
        self.d_k = d_model // h
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attn_dropout = attn_dropout
        self.point_name = "attention"  # its points' prefix, e.g. "cross.1" (Transformer names them)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.h, self.d_k).transpose(1, 2)  # (B, H, T, d_k)

    def project_kv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self._split_heads(self.k_proj(x)), self._split_heads(self.v_proj(x))

    def forward(
        self,
        x_q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None,
        need_weights: bool = False,
        head_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x_q: (B, T, D); k, v: (B, H, S, d_k); mask: bool, broadcastable to (B, H, T, S).

        ``head_mask`` (B or 1, H), 1 = keep, 0 = silence: each head's output is scaled
        before the heads are concatenated and mixed by ``o_proj``, so a silenced head
        contributes nothing (the knock-out of Michel et al. 2019). Its weights are still
        returned: they show where the head *would* have looked.

        Its named points (``transformer.core.recording``) let an analysis read the inputs,
        the weights and each head's output, and replace the heads' outputs (patching).

        Returns the output (B, T, D) and, if asked, the post-softmax weights (B, H, T, S)
        taken before dropout.
        """
        B, T, D = x_q.shape
        name = self.point_name
        if recording.active():  # each input may be read, or replaced (value zeroing replaces v)
            x_q, k, v, mask, head_mask = (
                point(name, what, value)
                for what, value in (("query_in", x_q), ("k", k), ("v", v), ("mask", mask), ("head_mask", head_mask))
            )
        q = self._split_heads(self.q_proj(x_q))  # (B, H, T, d_k)
        p = self.attn_dropout if self.training else 0.0
        weights = None
        if need_weights:
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)  # (B, H, T, S)
            if mask is not None:
                scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
            weights = point(name, "weights", scores.softmax(dim=-1))
            out = dropout(weights, p, self.training) @ v  # (B, H, T, d_k)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        if head_mask is not None:
            out = out * head_mask[:, :, None, None]  # (B, H, T, d_k)
        out = point(name, "heads", out)  # (B, H, T, d_k)
        out = out.transpose(1, 2).reshape(B, T, D)  # (B, T, D)
        return self.o_proj(out), weights


# the FFN's nonlinearity by config name: ReLU is the paper's; OPUS-MT models use swish
# (SiLU, x * sigmoid(x)); "gelu" is the exact (erf) GELU, as transformers' ACT2FN["gelu"]
ACTIVATION_FUNCTIONS = {"relu": F.relu, "swish": F.silu, "gelu": F.gelu}


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W1 + b1) W2 + b2, applied to every position alone (``activation``
    replaces max(0, .), e.g. swish for Marian models)."""

    def __init__(self, d_model: int, d_ff: int, dropout: float, activation: str = "relu") -> None:
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = Dropout(dropout)
        self.activation = ACTIVATION_FUNCTIONS[activation]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(self.dropout(self.activation(self.linear1(x))))


class Residual(nn.Module):
    """A sublayer wrapped with its residual connection and layer norm.

    pre-norm:  x + dropout(sublayer(norm(x)))
    post-norm: norm(x + dropout(sublayer(x)))   (the paper's original placement)
    The sublayer may return extra values (attention weights); they pass through.
    """

    def __init__(self, d_model: int, dropout: float, pre_norm: bool, eps: float) -> None:
        super().__init__()
        self.norm = LayerNorm(d_model, eps)
        self.dropout = Dropout(dropout)
        self.pre_norm = pre_norm
        self.point_name = "block"  # its points' prefix (Transformer names them)

    def forward(self, x: torch.Tensor, sublayer) -> tuple[torch.Tensor, tuple]:
        x = point(self.point_name, "residual", x)
        if self.pre_norm:
            y, *extra = sublayer(self.norm(x))
            return point(self.point_name, "output", x + self.dropout(y)), tuple(extra)
        y, *extra = sublayer(x)
        return point(self.point_name, "output", self.norm(x + self.dropout(y))), tuple(extra)


class EncoderLayer(nn.Module):
    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        pre = cfg.norm_placement == "pre"
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.h, cfg.attn_dropout)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, cfg.dropout, cfg.activation)
        self.self_attn_block = Residual(cfg.d_model, cfg.dropout, pre, cfg.layer_norm_eps)
        self.ffn_block = Residual(cfg.d_model, cfg.dropout, pre, cfg.layer_norm_eps)

    def name_points(self, layer: int) -> None:
        """Name this layer's points (``transformer.core.recording``): encoder.{layer}, encoder_ffn.{layer}."""
        self.self_attn.point_name = self.self_attn_block.point_name = f"encoder.{layer}"
        self.ffn_block.point_name = f"encoder_ffn.{layer}"

    def forward(self, x, src_mask, need_weights=False, head_mask=None):
        def attend(h):
            k, v = self.self_attn.project_kv(h)
            return self.self_attn(h, k, v, src_mask, need_weights, head_mask)

        x, (weights,) = self.self_attn_block(x, attend)
        x, _ = self.ffn_block(x, lambda h: (point(self.ffn_block.point_name, "out", self.ffn(h)),))
        return x, weights


@dataclass
class LayerCache:
    """K/V of one decoder layer, each (B, H, len, d_k). Self-attention K/V grow by one
    position per decoding step; cross-attention K/V are computed once per sentence."""

    self_k: torch.Tensor
    self_v: torch.Tensor
    cross_k: torch.Tensor
    cross_v: torch.Tensor


def select_cache_rows(cache: list[LayerCache], rows: torch.Tensor, cross: bool = True) -> list[LayerCache]:
    """Row r of the new cache continues row ``rows[r]`` of the old one (``index_select``,
    nothing recomputed): greedy decoding drops finished sentences with it, beam search
    reorders hypotheses. ``cross=False`` keeps the cross-attention K/V as they are, for
    when every selected row still reads the same source as before."""
    return [
        LayerCache(
            self_k=c.self_k.index_select(0, rows),  # (R', H, t, d_k)
            self_v=c.self_v.index_select(0, rows),
            cross_k=c.cross_k.index_select(0, rows) if cross else c.cross_k,  # (R', H, S, d_k)
            cross_v=c.cross_v.index_select(0, rows) if cross else c.cross_v,
        )
        for c in cache
    ]


class DecoderLayer(nn.Module):
    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        pre = cfg.norm_placement == "pre"
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.h, cfg.attn_dropout)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.h, cfg.attn_dropout)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, cfg.dropout, cfg.activation)
        self.self_attn_block = Residual(cfg.d_model, cfg.dropout, pre, cfg.layer_norm_eps)
        self.cross_attn_block = Residual(cfg.d_model, cfg.dropout, pre, cfg.layer_norm_eps)
        self.ffn_block = Residual(cfg.d_model, cfg.dropout, pre, cfg.layer_norm_eps)

    def forward(
        self,
        x,
        memory,
        self_mask,
        cross_mask,
        cache: LayerCache | None = None,
        need_weights=False,
        self_head_mask=None,
        cross_head_mask=None,
    ):
        """x: (B, T, D) new target positions; memory: (B, S, D) encoder output.

        With a cache, ``x`` holds only the new positions and the cached self K/V are the
        earlier ones; cross K/V come from the cache instead of re-projecting ``memory``.
        Returns (x, self_weights, cross_weights, new_cache).
        """
        new = {}

        def self_attend(h):
            k, v = self.self_attn.project_kv(h)
            if cache is not None:
                k = torch.cat([cache.self_k, k], dim=2)  # (B, H, past + T, d_k)
                v = torch.cat([cache.self_v, v], dim=2)
            new["self_k"], new["self_v"] = k, v
            return self.self_attn(h, k, v, self_mask, need_weights, self_head_mask)

        def cross_attend(h):
            if cache is not None:
                k, v = cache.cross_k, cache.cross_v
            else:
                k, v = self.cross_attn.project_kv(memory)
            new["cross_k"], new["cross_v"] = k, v
            return self.cross_attn(h, k, v, cross_mask, need_weights, cross_head_mask)

        x, (self_w,) = self.self_attn_block(x, self_attend)
        x, (cross_w,) = self.cross_attn_block(x, cross_attend)
        x, _ = self.ffn_block(x, lambda h: (point(self.ffn_block.point_name, "out", self.ffn(h)),))  # (B, T, D)
        return x, self_w, cross_w, LayerCache(**new)

    def name_points(self, layer: int) -> None:
        """Name this layer's points: decoder_self.{layer}, cross.{layer}, decoder_ffn.{layer}."""
        self.self_attn.point_name = self.self_attn_block.point_name = f"decoder_self.{layer}"
        self.cross_attn.point_name = self.cross_attn_block.point_name = f"cross.{layer}"
        self.ffn_block.point_name = f"decoder_ffn.{layer}"


@dataclass
class DecoderOutput:
    hidden: torch.Tensor  # (B, T, D) after the final norm
    cache: list[LayerCache]
    self_attn: list[torch.Tensor] = field(default_factory=list)  # per layer (B, H, T, past + T)
    cross_attn: list[torch.Tensor] = field(default_factory=list)  # per layer (B, H, T, S)
    # with need_hidden_states: each layer's output (B, T, D), before the final norm (logit lens)
    layer_hidden: list[torch.Tensor] = field(default_factory=list)


@dataclass
class Seq2SeqOutput:
    logits: torch.Tensor  # (B, T, V_tgt)
    encoder_attn: list[torch.Tensor] = field(default_factory=list)  # per layer (B, H, S, S)
    decoder_self_attn: list[torch.Tensor] = field(default_factory=list)  # per layer (B, H, T, T)
    cross_attn: list[torch.Tensor] = field(default_factory=list)  # per layer (B, H, T, S)


HEAD_MASK_KINDS = ("encoder", "decoder_self", "cross")


def check_head_mask(head_mask: dict | None) -> None:
    """A head mask is ``None`` or a dict with some of the keys of ``HEAD_MASK_KINDS``."""
    if head_mask is None:
        return
    if not isinstance(head_mask, dict):
        raise TypeError(f"head_mask must be a dict with keys {HEAD_MASK_KINDS} or None, got {type(head_mask).__name__}")
    unknown = sorted(set(head_mask) - set(HEAD_MASK_KINDS))
    if unknown:
        raise ValueError(f"unknown head_mask keys {unknown}; expected some of {list(HEAD_MASK_KINDS)}")


def causal_mask(T: int, offset: int = 0, device=None) -> torch.Tensor:
    """Bool (T, offset + T): query at position offset+i may see keys 0..offset+i."""
    return torch.ones(T, offset + T, dtype=torch.bool, device=device).tril(diagonal=offset)


class Transformer(nn.Module):
    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.src_embed = TokenEmbedding(cfg.src_vocab_size, cfg.d_model, cfg.src_pad_id, cfg.scale_embedding)
        if cfg.tie_embeddings == "all":
            self.tgt_embed = self.src_embed
        else:
            self.tgt_embed = TokenEmbedding(cfg.tgt_vocab_size, cfg.d_model, cfg.tgt_pad_id, cfg.scale_embedding)
        # the encoder's positional table, which the viewer draws, and the decoder's: the same module
        # unless the tables are learned (one per stack)
        if cfg.positional_table == "learned":
            self.pos_encoding = LearnedPositionalEncoding(cfg.d_model, cfg.max_positions, cfg.dropout)
            self.tgt_pos_encoding = LearnedPositionalEncoding(cfg.d_model, cfg.max_positions, cfg.dropout)
        else:
            self.pos_encoding = PositionalEncoding(
                cfg.d_model, cfg.max_positions, cfg.dropout, cfg.positional_table, cfg.position_offset
            )
            self.tgt_pos_encoding = self.pos_encoding
        # mBART's layernorm_embedding: each stack normalises its input
        self.encoder_embed_norm = LayerNorm(cfg.d_model, cfg.layer_norm_eps) if cfg.embedding_norm else None
        self.decoder_embed_norm = LayerNorm(cfg.d_model, cfg.layer_norm_eps) if cfg.embedding_norm else None
        self.encoder_layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_decoder_layers))
        for stack in (self.encoder_layers, self.decoder_layers):
            for l, layer in enumerate(stack):
                layer.name_points(l)
        pre = cfg.norm_placement == "pre"
        # pre-norm leaves the residual stream un-normalised, so each stack ends with a norm
        self.encoder_norm = LayerNorm(cfg.d_model, cfg.layer_norm_eps) if pre else nn.Identity()
        self.decoder_norm = LayerNorm(cfg.d_model, cfg.layer_norm_eps) if pre else nn.Identity()
        if cfg.tie_embeddings == "none":
            self.proj = nn.Linear(cfg.d_model, cfg.tgt_vocab_size, bias=False)
        else:
            self.proj = None  # logits = hidden @ tgt_embed.weight^T
        # Marian's final_logits_bias: one learnt offset per target token, added to every logit
        self.logits_bias = nn.Parameter(torch.zeros(cfg.tgt_vocab_size)) if cfg.final_logits_bias else None
        self._init_weights()

    def _init_weights(self) -> None:
        """Xavier-uniform for every projection matrix, zeros for biases.

        Embeddings get N(0, d_model^-0.5) instead: they are multiplied by sqrt(d_model), so
        token vectors start with unit variance, on the scale of the positional encoding. With
        Xavier on a (vocab, d_model) matrix they would start 4x smaller than the PE, and the
        tied output projection would start near zero: training then crawls for epochs.
        """
        embeddings = {id(self.src_embed.weight), id(self.tgt_embed.weight)}
        for name, p in self.named_parameters():
            if id(p) in embeddings:
                nn.init.normal_(p, mean=0.0, std=self.cfg.d_model**-0.5)
            elif p.dim() > 1:
                nn.init.xavier_uniform_(p)
            elif name.endswith("bias") and "norm" not in name:
                nn.init.zeros_(p)

    # masks -----------------------------------------------------------------------
    def src_mask(self, src: torch.Tensor) -> torch.Tensor:
        return (src != self.cfg.src_pad_id)[:, None, None, :]  # (B, 1, 1, S)

    def tgt_mask(self, tgt: torch.Tensor) -> torch.Tensor:
        T = tgt.shape[1]
        keep = tgt != self.cfg.tgt_pad_id  # (B, T)
        # the first input is the start token, never padding, even when it is the pad id
        # (Marian's decoder starts from <pad>)
        keep[:, 0] = True
        return keep[:, None, None, :] & causal_mask(T, device=tgt.device)  # (B, 1, T, T)

    def layer_head_masks(self, head_mask: dict | None, kind: str, batch: int, dtype=torch.float32, device=None):
        """Per-layer slices (B or 1, H) of ``head_mask[kind]``, or ``None`` per layer.

        ``head_mask[kind]`` is (L, H) (one mask for the whole batch) or (B, L, H) (one per
        row, e.g. head importance runs every single-head knock-out in one batch); values
        are 1 = keep, 0 = silence, any float or bool dtype.
        """
        n_layers = len(self.encoder_layers) if kind == "encoder" else len(self.decoder_layers)
        m = None if head_mask is None else head_mask.get(kind)
        if m is None:
            return [None] * n_layers
        m = torch.as_tensor(m, device=device).to(dtype)
        if m.dim() == 2:
            m = m[None]  # (1, L, H)
        if m.dim() != 3 or tuple(m.shape[1:]) != (n_layers, self.cfg.h):
            raise ValueError(
                f"head_mask[{kind!r}] must be (layers, heads) = ({n_layers}, {self.cfg.h}) or "
                f"(batch, {n_layers}, {self.cfg.h}), got {tuple(m.shape)}"
            )
        if m.shape[0] not in (1, batch):
            raise ValueError(f"head_mask[{kind!r}] has a batch of {m.shape[0]} masks for a batch of {batch} rows")
        return [m[:, i] for i in range(n_layers)]  # each (B or 1, H)

    # stacks ----------------------------------------------------------------------
    def embed_source(self, src: torch.Tensor, embeds: torch.Tensor | None = None) -> torch.Tensor:
        """The encoder's input (B, S, D): token vectors (``embeds``, else ``src_embed(src)``) plus
        positions, through the embedding norm if the model has one, then dropout."""
        x = self.src_embed(src) if embeds is None else embeds
        return self.pos_encoding(x, norm=self.encoder_embed_norm)

    def embed_target(self, tgt: torch.Tensor, offset: int = 0, embeds: torch.Tensor | None = None) -> torch.Tensor:
        """The decoder's input (B, T, D) for target ids at positions offset..offset+T-1, as
        :meth:`embed_source` makes the encoder's."""
        x = self.tgt_embed(tgt) if embeds is None else embeds
        return self.tgt_pos_encoding(x, offset=offset, norm=self.decoder_embed_norm)

    def encode(
        self,
        src: torch.Tensor,
        src_mask: torch.Tensor | None = None,
        need_weights: bool = False,
        head_mask: dict | None = None,
        embeds: torch.Tensor | None = None,
    ):
        """src: (B, S) ids. Returns memory (B, S, D) and per-layer weights (B, H, S, S).
        ``head_mask``: see :meth:`layer_head_masks`; only its "encoder" entry is used here.
        ``embeds`` (B, S, D): token vectors to use instead of ``src_embed(src)`` (the
        positional encoding is still added; ``src`` still gives the padding mask), so
        gradient attribution can differentiate with respect to them."""
        check_head_mask(head_mask)
        if src_mask is None:
            src_mask = self.src_mask(src)
        x = point("source", "input", self.embed_source(src, embeds))  # (B, S, D)
        masks = self.layer_head_masks(head_mask, "encoder", src.shape[0], x.dtype, x.device)
        weights = []
        for layer, hm in zip(self.encoder_layers, masks):
            x, w = layer(x, src_mask, need_weights, hm)
            if need_weights:
                weights.append(w)
        return self.encoder_norm(x), weights

    def decode(
        self,
        tgt: torch.Tensor,
        memory: torch.Tensor,
        src_mask: torch.Tensor,
        tgt_mask: torch.Tensor | None = None,
        cache: list[LayerCache] | None = None,
        need_weights: bool = False,
        head_mask: dict | None = None,
        need_hidden_states: bool = False,
        embeds: torch.Tensor | None = None,
    ) -> DecoderOutput:
        """tgt: (B, T) ids of the *new* positions. With ``cache`` the earlier positions'
        K/V are reused and positions start after them; without, positions start at 0.

        ``head_mask``: its "decoder_self" and "cross" entries (see :meth:`layer_head_masks`).
        ``need_hidden_states`` keeps each layer's output for the logit lens. ``embeds``
        (B, T, D): token vectors to use instead of ``tgt_embed(tgt)``, as in :meth:`encode`.
        What each sublayer reads and adds is read, or replaced, through named points
        (``transformer.core.recording``), never through extra parameters.
        """
        check_head_mask(head_mask)
        offset = 0 if cache is None else cache[0].self_k.shape[2]
        if tgt_mask is None and tgt.shape[1] > 1:
            # one new position (a cached decoding step) may see every key: no mask needed
            tgt_mask = causal_mask(tgt.shape[1], offset, device=tgt.device)
        x = point("target", "input", self.embed_target(tgt, offset, embeds))  # (B, T, D)
        B = tgt.shape[0]
        self_masks = self.layer_head_masks(head_mask, "decoder_self", B, x.dtype, x.device)
        cross_masks = self.layer_head_masks(head_mask, "cross", B, x.dtype, x.device)
        out = DecoderOutput(hidden=x, cache=[])
        for i, layer in enumerate(self.decoder_layers):
            x, sw, cw, layer_cache = layer(
                x,
                memory,
                tgt_mask,
                src_mask,
                None if cache is None else cache[i],
                need_weights,
                self_masks[i],
                cross_masks[i],
            )
            out.cache.append(layer_cache)
            if need_weights:
                out.self_attn.append(sw)
                out.cross_attn.append(cw)
            if need_hidden_states:
                out.layer_hidden.append(x)
        out.hidden = self.decoder_norm(x)
        return out

    def project(self, hidden: torch.Tensor) -> torch.Tensor:
        """Logits (..., V_tgt) of decoder outputs (..., D)."""
        weight = self.proj.weight if self.proj is not None else self.tgt_embed.weight  # (V_tgt, D)
        if self.training or torch.is_grad_enabled():
            return F.linear(hidden, weight, self.logits_bias)  # (..., V_tgt)
        # Decoding reads the whole (V, D) matrix at every step for one row of logits. Against a
        # contiguous (D, V) copy, BLAS splits that product over every core, where F.linear's
        # one-row kernel keeps to one: half the time at OPUS-MT's 58k vocabulary on 2 cores
        # (benchmarks/marian_size.py). The same sums in another order: float rounding apart.
        logits = hidden @ self._projection_t(weight)  # (..., V_tgt)
        return logits if self.logits_bias is None else logits + self.logits_bias

    def _projection_t(self, weight: torch.Tensor) -> torch.Tensor:
        """``weight.T`` (D, V) as a contiguous copy, made again whenever the weights change (a
        load, an optimiser step: the tensor's version counter moves). Not a parameter or buffer,
        so never saved."""
        key = (weight.data_ptr(), weight._version, weight.dtype, weight.device)
        cached = self.__dict__.get("_projection_cache")
        if cached is None or cached[0] != key:
            cached = (key, weight.detach().t().contiguous())
            self.__dict__["_projection_cache"] = cached
        return cached[1]

    def forward(
        self, src: torch.Tensor, tgt: torch.Tensor, need_weights: bool = False, head_mask: dict | None = None
    ) -> Seq2SeqOutput:
        """Teacher-forced pass: src (B, S), tgt (B, T) decoder inputs ([SOS] y1 ... ).

        ``head_mask``: ``{"encoder" | "decoder_self" | "cross": (L, H) or (B, L, H)}``,
        1 = keep, 0 = silence that head (see :meth:`layer_head_masks`). Passed in per
        call, never stored, so concurrent requests cannot leak masks into each other.
        """
        src_mask = self.src_mask(src)
        memory, enc_w = self.encode(src, src_mask, need_weights, head_mask=head_mask)
        dec = self.decode(tgt, memory, src_mask, self.tgt_mask(tgt), need_weights=need_weights, head_mask=head_mask)
        return Seq2SeqOutput(self.project(dec.hidden), enc_w, dec.self_attn, dec.cross_attn)


def build_model(cfg: TransformerConfig) -> Transformer:
    """The one factory: config in, freshly initialised model out."""
    return Transformer(cfg)


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
