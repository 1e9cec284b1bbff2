"""The decoding core: the one place that knows how a model reads a source, how its decoder
starts, which tokens it may emit, and how one decoding step runs.

Every loop that picks tokens goes through these functions: greedy decoding and the trace
(``decoding``), beam search (``beam``), What if? (a forced prefix), DecoderLens, reference
scoring, knock-out, attribution, contributions, the arithmetic and the training data. So a
model's special tokens and banned ids are honoured everywhere, and a model family with
another framing (a language token, a forced first token) changes only this module's inputs,
the config's fields:

- source framing: ``[SOS] x [EOS]`` (ours), ``x </s>`` (Marian: ``src_sos_id`` None), or
  ``lang x </s>`` (M2M100, NLLB-200, mBART-50: ``lang_ids``);
- decoder prompt: the start token ``tgt_sos_id`` (ours [SOS]; Marian's <pad>; M2M100's
  </s>), then, for a multilingual model, the target language's token as a *forced* output
  of step 0, as transformers' ``forced_bos_token_id`` does;
- allowed tokens: every target id but ``tgt_banned_ids`` (greedy); beam search also never
  proposes [PAD] or the start token (:func:`never_emitted`);
- one step: the decoder on the tokens just read, with the KV cache passed explicitly, and
  the logits of the last position.

No module outside ``transformer/core`` takes an argmax over logits or builds a decoder start
itself (``tests/test_decoding_core.py`` reads the syntax tree of every module to hold that).
"""

from __future__ import annotations

import torch

from transformer.core.config import TransformerConfig
from transformer.core.model import DecoderOutput, LayerCache, Transformer


# --------------------------------------------------------------------------- framing
def language_codes(cfg: TransformerConfig) -> list[str]:
    """The language codes a multilingual model reads and writes ([] for one pair)."""
    return sorted(cfg.lang_ids)


def _lang_id(cfg: TransformerConfig, lang: str | None, side: str) -> int:
    code = getattr(cfg, side + "_lang") if lang is None else lang
    if code not in cfg.lang_ids:
        raise ValueError(f"unknown language {code!r}: this model knows {', '.join(language_codes(cfg))}")
    return cfg.lang_ids[code]


def check_languages(cfg: TransformerConfig, src_lang: str | None, tgt_lang: str | None) -> None:
    """A language asked of a model of one pair must be its own; of a multilingual model, one
    of its codes. ``ValueError`` in one line otherwise."""
    for side, lang in (("src", src_lang), ("tgt", tgt_lang)):
        if lang is None:
            continue
        if cfg.lang_ids:
            _lang_id(cfg, lang, side)
        elif lang != getattr(cfg, side + "_lang"):
            raise ValueError(f"this model translates {cfg.src_lang} to {cfg.tgt_lang} only, not {side} {lang!r}")


def frame_source(cfg: TransformerConfig, ids: list[int], src_lang: str | None = None) -> list[int]:
    """A source's subword ids as the encoder reads them: ``[SOS] ids [EOS]``, a Marian
    model's ``ids </s>``, a multilingual model's ``lang ids </s>``."""
    if cfg.lang_ids:
        return [_lang_id(cfg, src_lang, "src"), *ids, cfg.src_eos_id]
    start = [] if cfg.src_sos_id is None else [cfg.src_sos_id]
    return [*start, *ids, cfg.src_eos_id]


def source_batch(cfg: TransformerConfig, framed: list[list[int]], device=None) -> torch.Tensor:
    """Framed sources as one right-padded batch (B, S)."""
    width = max(len(ids) for ids in framed)
    batch = torch.full((len(framed), width), cfg.src_pad_id, dtype=torch.long, device=device)  # (B, S)
    for b, ids in enumerate(framed):
        batch[b, : len(ids)] = torch.tensor(ids, dtype=torch.long)
    return batch


# --------------------------------------------------------------------------- the decoder prompt
def forced_start(cfg: TransformerConfig, tgt_lang: str | None = None) -> list[int]:
    """Output ids every translation begins with, whatever the logits say: a multilingual
    model's target-language token; none for a model of one pair."""
    return [_lang_id(cfg, tgt_lang, "tgt")] if cfg.lang_ids else []


def start_id(cfg: TransformerConfig) -> int:
    """The token the decoder reads first (ours [SOS], Marian's <pad>, M2M100's </s>)."""
    return cfg.tgt_sos_id


def decoder_inputs(cfg: TransformerConfig, ids: list[int]) -> list[int]:
    """The decoder's input row for output ids ``y1 ... yn``: ``start y1 ... yn`` (teacher
    forcing reads all but its last; a trace's ``tgt_ids``)."""
    return [cfg.tgt_sos_id, *ids]


def start_tokens(cfg: TransformerConfig, batch: int, device=None) -> torch.Tensor:
    """(B, 1) the start token every row of a batch reads at step 0."""
    return torch.full((batch, 1), cfg.tgt_sos_id, dtype=torch.long, device=device)


def with_forced_start(cfg: TransformerConfig, prefix: list[int] | None, tgt_lang: str | None = None) -> list[int]:
    """A forced output prefix that begins with the model's forced start: ``prefix`` as it is
    when it already begins with a language token (a What if? or a beam tree built from a
    translation's own ids, whatever its language), else the start before it."""
    prefix = list(prefix or [])
    if cfg.lang_ids and prefix and prefix[0] in cfg.lang_ids.values():
        return prefix
    return [*forced_start(cfg, tgt_lang), *prefix]


def source_specials(cfg: TransformerConfig) -> set[int]:
    """Source ids that frame a sentence rather than carry its words: padding, start, end and
    language tokens."""
    start = set() if cfg.src_sos_id is None else {cfg.src_sos_id}
    return {cfg.src_pad_id, cfg.src_eos_id, *start, *cfg.lang_ids.values()}


def target_specials(cfg: TransformerConfig) -> set[int]:
    """Target ids that are never words of a translation: padding, start, end and language tokens."""
    return {cfg.tgt_pad_id, cfg.tgt_sos_id, cfg.tgt_eos_id, *cfg.lang_ids.values()}


def words_of(cfg: TransformerConfig, ids: list[int]) -> list[int]:
    """``ids`` without the target specials (what a detokeniser turns into text)."""
    specials = target_specials(cfg)
    return [i for i in ids if i not in specials]


# --------------------------------------------------------------------------- allowed tokens
def never_emitted(cfg: TransformerConfig) -> list[int]:
    """Target ids beam search never proposes: [PAD] and the start token (not output tokens)
    unless one of them is also the end token, and the config's ``tgt_banned_ids``. Greedy
    decoding leaves out only the latter (for a Marian model its <pad>, also its start token,
    as the ``bad_words_ids = [[pad]]`` of OPUS-MT's generation configs do)."""
    return sorted(({cfg.tgt_pad_id, cfg.tgt_sos_id} - {cfg.tgt_eos_id}) | set(cfg.tgt_banned_ids))


def allowed_logits(cfg: TransformerConfig, logits: torch.Tensor, banned: list[int] | None = None) -> torch.Tensor:
    """``logits`` (..., V) with the ids greedy decoding never emits at -inf (a copy; the
    model's own logits are not changed). ``banned`` overrides the config's ``tgt_banned_ids``."""
    banned = list(cfg.tgt_banned_ids) if banned is None else banned
    if not banned:
        return logits
    return logits.index_fill(-1, torch.tensor(banned, device=logits.device), float("-inf"))


def pick(cfg: TransformerConfig, logits: torch.Tensor) -> torch.Tensor:
    """The token greedy decoding emits for each row of ``logits`` (..., V): the argmax over
    the allowed ids. The one argmax over logits in the package."""
    return allowed_logits(cfg, logits).argmax(dim=-1)


def allowed_at(cfg: TransformerConfig, logits: torch.Tensor, forced: list[int], t: int) -> torch.Tensor:
    """``logits`` (..., V) as greedy decoding chooses from them at step ``t``: only the forced
    token is finite while ``forced`` lasts, else :func:`allowed_logits`."""
    if t < len(forced):
        only = torch.full_like(logits, float("-inf"))
        only[..., forced[t]] = logits[..., forced[t]]
        return only
    return allowed_logits(cfg, logits)


def pick_at(cfg: TransformerConfig, logits: torch.Tensor, forced: list[int], t: int) -> torch.Tensor:
    """Step ``t``'s output per row (R,): the forced token while ``forced`` lasts, else :func:`pick`."""
    if t < len(forced):
        return torch.full(logits.shape[:-1], forced[t], dtype=torch.long, device=logits.device)
    return pick(cfg, logits)


def picks_along(cfg: TransformerConfig, logits: torch.Tensor, forced: list[int]) -> torch.Tensor:
    """Teacher-forced logits (..., T, V) -> (..., T): what greedy decoding would emit at each
    step t given the prefix before it (:func:`pick_at`)."""
    out = pick(cfg, logits)
    for t in range(min(len(forced), logits.shape[-2])):
        out[..., t] = forced[t]
    return out


# --------------------------------------------------------------------------- running the model
def encode(model: Transformer, src: torch.Tensor, need_weights: bool = False, head_mask: dict | None = None, **kw):
    """The encoder on a padded batch ``src`` (B, S): (src_mask (B, 1, 1, S), memory (B, S, D),
    per-layer weights)."""
    src_mask = model.src_mask(src)
    memory, weights = model.encode(src, src_mask, need_weights=need_weights, head_mask=head_mask, **kw)
    return src_mask, memory, weights


def run_decoder(
    model: Transformer,
    tokens: torch.Tensor,
    memory: torch.Tensor,
    src_mask: torch.Tensor,
    cache: list[LayerCache] | None = None,
    **decode_kw,
) -> DecoderOutput:
    """The decoder on ``tokens`` (R, T), the new positions (with ``cache``, the earlier ones'
    K/V are reused; without, several positions get the causal mask). ``decode_kw`` goes to
    ``Transformer.decode`` (weights, head mask, hidden states, embeddings)."""
    return model.decode(tokens, memory, src_mask, cache=cache, **decode_kw)


def step(
    model: Transformer,
    tokens: torch.Tensor,
    memory: torch.Tensor,
    src_mask: torch.Tensor,
    cache: list[LayerCache] | None = None,
    **decode_kw,
) -> tuple[DecoderOutput, torch.Tensor]:
    """One decoding step: :func:`run_decoder`, and the logits of the last position (R, V)."""
    dec = run_decoder(model, tokens, memory, src_mask, cache, **decode_kw)
    return dec, model.project(dec.hidden[:, -1])


def decode_all(model: Transformer, tgt_in: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor, **decode_kw):
    """The whole decoder input ``tgt_in`` (B, T) at once, padding and future masked (teacher
    forcing): the decoder output and the logits of every position (B, T, V)."""
    dec = run_decoder(model, tgt_in, memory, src_mask, tgt_mask=model.tgt_mask(tgt_in), **decode_kw)
    return dec, model.project(dec.hidden)


def teacher_forced(
    model: Transformer,
    src: torch.Tensor,
    tgt_in: torch.Tensor,
    need_weights: bool = False,
    head_mask: dict | None = None,
    **decode_kw,
):
    """Encoder and :func:`decode_all` (a reference, a translation to explain): (encoder
    weights, decoder output, logits (B, T, V))."""
    src_mask, memory, enc_w = encode(model, src, need_weights, head_mask)
    kw = dict(need_weights=need_weights, head_mask=head_mask, **decode_kw)
    dec, logits = decode_all(model, tgt_in, memory, src_mask, **kw)
    return enc_w, dec, logits
