"""Why did it say that? Head knock-out and head importance: the model run again with heads
silenced, and what changes.

Pure functions of a :class:`~transformer.core.translator.Translator`. No Gradio, no printing,
no files: every result is a JSON-ready dict or a numpy array, so the server computes once and
the browser draws. What only reads a trace's attention (rollout, head diagnostics, the logit
lens's settling layer) is in ``transformer.core.readings``; the logit lens itself is recorded
during the traced greedy decode (``transformer.core.decoding.greedy_decode``).

Heads format
------------
A *head* is named by its attention kind, its layer and its index, all 0-based::

    {"kind": "cross", "layer": 0, "head": 3}        # canonical form (what results return)
    "cross:0:3"                                      # shorthand accepted on input

``kind`` is one of ``"encoder"`` (encoder self-attention), ``"decoder_self"`` (decoder
masked self-attention) or ``"cross"`` (decoder-encoder attention). Functions taking
``heads`` accept a list of either form, or one string of shorthands separated by commas
or spaces (``"cross:0:3, encoder:2:1"``; ``""`` is no head). Anything else, an unknown
kind, or a layer/head out of range raises ``ValueError`` saying which item is wrong.
"""

from __future__ import annotations

import re

import numpy as np
import torch

from transformer.core import stepping
from transformer.core.decoding import greedy_decode
from transformer.core.model import HEAD_MASK_KINDS, Transformer

KINDS = HEAD_MASK_KINDS  # ("encoder", "decoder_self", "cross")


# --------------------------------------------------------------------------- heads
def n_layers(cfg, kind: str) -> int:
    return cfg.n_encoder_layers if kind == "encoder" else cfg.n_decoder_layers


def parse_heads(heads, cfg) -> list[dict]:
    """Validate ``heads`` (see the module docstring) and return it in canonical form:
    a sorted list of ``{"kind", "layer", "head"}`` dicts without duplicates."""
    usage = 'heads must be a list of {"kind": ..., "layer": ..., "head": ...} dicts or "kind:layer:head" strings'
    if heads is None:
        return []
    if isinstance(heads, str):
        heads = [h for h in re.split(r"[,\s]+", heads.strip()) if h]
    if not isinstance(heads, (list, tuple)):
        raise ValueError(f"{usage}, got {type(heads).__name__}")
    seen = set()
    for i, item in enumerate(heads):
        if isinstance(item, str):
            parts = item.strip().split(":")
            if len(parts) != 3:
                raise ValueError(f"heads[{i}] = {item!r}: expected 'kind:layer:head', e.g. 'cross:0:3'")
            kind, layer, head = parts
            try:
                layer, head = int(layer), int(head)
            except ValueError:
                raise ValueError(f"heads[{i}] = {item!r}: layer and head must be integers") from None
        elif isinstance(item, dict):
            missing = [k for k in ("kind", "layer", "head") if k not in item]
            if missing:
                raise ValueError(f"heads[{i}] lacks {', '.join(missing)}; {usage}")
            kind, layer, head = item["kind"], item["layer"], item["head"]
            if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (layer, head)):
                raise ValueError(f"heads[{i}]: layer and head must be integers, got {layer!r} and {head!r}")
            layer, head = int(layer), int(head)
        else:
            raise ValueError(f"heads[{i}] is a {type(item).__name__}; {usage}")
        if kind not in KINDS:
            raise ValueError(f"heads[{i}]: unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
        L = n_layers(cfg, kind)
        if not 0 <= layer < L:
            raise ValueError(f"heads[{i}]: layer {layer} out of range 0..{L - 1} for {kind}")
        if not 0 <= head < cfg.h:
            raise ValueError(f"heads[{i}]: head {head} out of range 0..{cfg.h - 1}")
        seen.add((KINDS.index(kind), layer, head))
    return [{"kind": KINDS[k], "layer": l, "head": h} for k, l, h in sorted(seen)]


def heads_to_mask(heads, cfg) -> dict[str, torch.Tensor]:
    """Head mask for ``Transformer.forward``/``encode``/``decode``: one (L, H) float
    tensor per kind, 1 everywhere except 0 at the given heads."""
    mask = {kind: torch.ones(n_layers(cfg, kind), cfg.h) for kind in KINDS}
    for h in parse_heads(heads, cfg):
        mask[h["kind"]][h["layer"], h["head"]] = 0.0
    return mask


# --------------------------------------------------------------------------- teacher forcing
def _target_logprobs(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """log p(target) from logits (B, T, V) and target ids (B, T), without materialising a
    second (B, T, V) log-softmax tensor."""
    logits = logits.float()
    return logits.gather(-1, target[..., None])[..., 0] - logits.logsumexp(dim=-1)  # (B, T)


def _tokens(translator, ids) -> list[str]:
    return [translator.tgt_tok.id_to_token(int(i)) for i in ids]


@torch.no_grad()
def knockout(translator, text: str, heads, src_lang: str | None = None, tgt_lang: str | None = None) -> dict:
    """Silence ``heads`` (format in the module docstring) and decode ``text`` again.

    Two things are measured. (1) The knocked-out model decodes greedily on its own: its
    translation may differ from the original. (2) Teacher-forced on the *original*
    translation, at every step: the probability of the original token under the
    original model and under the knocked-out one, so the browser can show where the
    heads mattered even when the final output did not change. An empty ``heads`` runs the
    same code with an all-ones mask and gives exactly the original numbers.

    Returns a JSON-ready dict::

        {"heads": [canonical heads],
         "original":  {"translation", "tokens" ([SOS] y1 ... yn), "ids"},
         "knockout":  {"translation", "tokens", "ids", "finished"},
         "changed": bool,                       # the two translations differ
         "steps": {"token": [n original outputs],
                   "p_original": [n], "p_knockout": [n],       # p(original token at step t)
                   "top_knockout": [n],         # knocked-out model's greedy choice at step t
                   "logprob_original": float, "logprob_knockout": float}}  # sums over steps
    """
    model: Transformer = translator.model
    cfg = translator.cfg
    parsed = parse_heads(heads, cfg)
    mask = heads_to_mask(parsed, cfg)
    stepping.check_languages(cfg, src_lang, tgt_lang)
    src_ids = translator.encode_source(text, src_lang).ids
    src = torch.tensor([src_ids])
    orig = greedy_decode(model, src, tgt_lang=tgt_lang).ids[0]
    ko = greedy_decode(model, src, head_mask=mask, tgt_lang=tgt_lang).ids[0]

    tgt = stepping.decoder_inputs(cfg, orig)
    tgt_in, target = torch.tensor([tgt[:-1]]), torch.tensor([tgt[1:]])
    base_logits = model(src, tgt_in).logits  # (1, T, V)
    ko_logits = model(src, tgt_in, head_mask=mask).logits
    lp_orig = _target_logprobs(base_logits, target)[0]  # (T,)
    lp_ko = _target_logprobs(ko_logits, target)[0]
    return {
        "heads": parsed,
        "original": {"translation": translator._decode_text(orig), "tokens": _tokens(translator, tgt), "ids": tgt},
        "knockout": {
            "translation": translator._decode_text(ko),
            "tokens": _tokens(translator, stepping.decoder_inputs(cfg, ko)),
            "ids": stepping.decoder_inputs(cfg, ko),
            "finished": bool(ko) and ko[-1] == cfg.tgt_eos_id,
        },
        "changed": ko != orig,
        "steps": {
            "token": _tokens(translator, orig),
            "p_original": lp_orig.exp().tolist(),
            "p_knockout": lp_ko.exp().tolist(),
            "top_knockout": _tokens(
                translator, stepping.picks_along(cfg, ko_logits[0], stepping.forced_start(cfg, tgt_lang)).tolist()
            ),
            "logprob_original": float(lp_orig.sum()),
            "logprob_knockout": float(lp_ko.sum()),
        },
    }


def _single_head_masks(n_rows: int, L: int, H: int, first_row: int) -> torch.Tensor:
    """(n_rows, L, H) ones, except row first_row + j silences flat head j = layer * H + head."""
    m = torch.ones(n_rows, L * H)
    j = torch.arange(L * H)
    m[first_row + j, j] = 0.0
    return m.view(n_rows, L, H)


@torch.no_grad()
def _single_head_logprobs(model: Transformer, src: torch.Tensor, tgt: list[int], batch_size: int) -> torch.Tensor:
    """Teacher-forced log-probabilities of ``tgt`` (T, one per step) for the unmasked model
    (row 0) and for each head silenced alone: rows in the order encoder, decoder_self,
    cross heads, each layer by layer."""
    cfg = model.cfg
    H, Le, Ld = cfg.h, cfg.n_encoder_layers, cfg.n_decoder_layers
    S, T = src.shape[1], len(tgt) - 1
    # encoder: row 0 unmasked, rows 1.. silence one encoder head each
    n_enc = 1 + Le * H
    src_mask, memory, _ = stepping.encode(
        model, src.expand(n_enc, S), head_mask={"encoder": _single_head_masks(n_enc, Le, H, 1)}
    )  # (n_enc, 1, 1, S), (n_enc, S, D)
    src_mask = src_mask[:1]
    # decoder rows: [unmasked, encoder heads..., decoder_self heads..., cross heads...]
    n_rows = n_enc + 2 * Ld * H
    mem_index = torch.cat([torch.arange(n_enc), torch.zeros(2 * Ld * H, dtype=torch.long)])
    self_mask = _single_head_masks(n_rows, Ld, H, n_enc)
    cross_mask = _single_head_masks(n_rows, Ld, H, n_enc + Ld * H)
    tgt_in, target = torch.tensor([tgt[:-1]]), torch.tensor([tgt[1:]])
    logp = torch.empty(n_rows, T)
    for start in range(0, n_rows, batch_size):
        rows = slice(start, min(start + batch_size, n_rows))
        b = rows.stop - rows.start
        _, logits = stepping.decode_all(
            model,
            tgt_in.expand(b, T),
            memory[mem_index[rows]],
            src_mask.expand(b, -1, -1, -1),
            head_mask={"decoder_self": self_mask[rows], "cross": cross_mask[rows]},
        )
        logp[rows] = _target_logprobs(logits, target.expand(b, T))

    return logp


def _drops_by_kind(drops: np.ndarray, cfg, T: int) -> tuple[dict, dict, list]:
    """(importance, per_step, ranking) from the (all heads, T) drops, rows in
    :func:`_single_head_logprobs`'s order; the ranking is sorted, largest drop first."""
    H = cfg.h
    importance, per_step, ranking, at = {}, {}, [], 0
    for kind in KINDS:
        L = n_layers(cfg, kind)
        block = drops[at : at + L * H].reshape(L, H, T)
        at += L * H
        total = block.sum(-1)
        importance[kind] = np.round(total.astype(np.float64), 5).tolist()
        per_step[kind] = np.round(block.astype(np.float64), 5).tolist()
        ranking += [
            {"kind": kind, "layer": l, "head": h, "drop": float(total[l, h])} for l in range(L) for h in range(H)
        ]
    ranking.sort(key=lambda r: -r["drop"])
    return importance, per_step, ranking


@torch.no_grad()
def head_importance(
    translator, text: str, batch_size: int = 128, src_lang: str | None = None, tgt_lang: str | None = None
) -> dict:
    """For every head, the drop in log-probability of the original greedy translation
    when that head alone is silenced (Michel et al. 2019, measured by ablation).

    drop(head) = log p(y | x) - log p(y | x, head silenced), summed over the steps of the
    original translation y (teacher-forced); positive = the head helps produce y. It is
    computed in batched teacher-forced passes, not one decode per head: row 0 of the batch
    is the unmasked model, each other row silences one head through the (B, L, H) form of
    the head mask. The encoder runs once per *encoder* mask only (1 + L_enc * H rows);
    rows that silence a decoder head share the unmasked encoder memory.

    Returns a JSON-ready dict::

        {"translation", "tokens" ([SOS] y1 ... yn), "ids", "logprob": log p(y | x),
         "heads": H, "layers": {kind: L},
         "importance": {kind: (L, H) drops},           # nats
         "per_step": {kind: (L, H, n) drops per step},
         "ranking": [{"kind", "layer", "head", "drop"}, ...]}   # 10 largest drops
    """
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    model: Transformer = translator.model
    cfg = translator.cfg
    H = cfg.h
    stepping.check_languages(cfg, src_lang, tgt_lang)
    src = torch.tensor([translator.encode_source(text, src_lang).ids])  # (1, S)
    orig = greedy_decode(model, src, tgt_lang=tgt_lang).ids[0]
    tgt = stepping.decoder_inputs(cfg, orig)
    T = len(orig)

    logp = _single_head_logprobs(model, src, tgt, batch_size)  # (1 + all heads, T)
    importance, per_step, ranking = _drops_by_kind((logp[0] - logp[1:]).numpy(), cfg, T)
    return {
        "translation": translator._decode_text(orig),
        "tokens": _tokens(translator, tgt),
        "ids": tgt,
        "logprob": float(logp[0].sum()),
        "heads": H,
        "layers": {kind: n_layers(cfg, kind) for kind in KINDS},
        "importance": importance,
        "per_step": per_step,
        "ranking": [{**r, "drop": round(r["drop"], 5)} for r in ranking[:10]],
    }
