"""The public API: ``Translator.load(path_or_hub_id)`` (``transformer.load_translator``) -> :class:`Translator`.

tr = Translator.load("checkpoints/en-it")
tr.translate(["The black cat sleeps."])   # batched greedy decoding
tr.trace("The black cat sleeps.")         # everything the viewer shows, in one call
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import torch
from tokenizers import Tokenizer

from transformer.core import readings, stepping
from transformer.core.checkpoint import load_checkpoint, read_metrics
from transformer.core.decoding import greedy_decode, logit_lens_of
from transformer.core.trace import Trace
from transformer.core.model import Transformer
from transformer.core.tokenizer import encode


# the largest target vocabulary whose trace computes the logit lens at once. Over a published
# model's vocabulary (OPUS-MT's 58k-80k, M2M100's 128k, NLLB-200's 256k, mBART-50's 250k) the lens,
# every decoder layer's output at every step projected onto every token, is 30-40% of the trace's
# time (benchmarks/published_sizes.py); such a trace leaves it out and Translator.logit_lens computes
# it when its view opens. Ours (4k tokens) keeps it in the trace
LENS_IN_TRACE_MAX_VOCAB = 50_000


@dataclass
class EncodedSource:
    ids: list[int]  # [SOS] ... [EOS] (a Marian model's: ... </s>)
    truncated: bool
    n_dropped: int


class Translator:
    """A loaded model plus its two tokenizers. Read-only after construction, so one
    instance can serve many concurrent users."""

    def __init__(self, model: Transformer, src_tok: Tokenizer, tgt_tok: Tokenizer, directory: Path | None = None):
        self.model = model.eval()
        self.cfg = model.cfg
        self.src_tok = src_tok
        self.tgt_tok = tgt_tok
        self.directory = directory
        self.metrics = read_metrics(directory) if directory is not None else {}
        # whether trace() computes the logit lens by default: unless the target vocabulary is over
        # LENS_IN_TRACE_MAX_VOCAB tokens (a server may set it either way: app.py --lens-on-demand)
        self.lens_in_trace = self.cfg.tgt_vocab_size <= LENS_IN_TRACE_MAX_VOCAB

    @classmethod
    def load(cls, name_or_path: str | Path) -> Translator:
        """A checkpoint from a local directory or a hub repo id ('owner/name'), laid out for
        decoding. ``transformer.load_translator`` (the package's) also takes None for the shipped one."""
        model, src_tok, tgt_tok, directory = load_checkpoint(name_or_path, for_decoding=True)
        return cls(model, src_tok, tgt_tok, directory)

    @property
    def max_source_tokens(self) -> int:
        """Subword tokens a source may have before truncation ([SOS]/[EOS] take two; a
        Marian model's sources have no start token, so its </s> takes one)."""
        return self.cfg.max_positions - self.cfg.src_frame_len

    @property
    def special_tokens(self) -> list[str]:
        """The special tokens as the trace names them: ours ``[PAD] [UNK] [SOS] [EOS]``,
        a Marian model's ``<pad> <unk> </s>`` (its start token is its <pad>)."""
        cfg, names = self.cfg, []
        for tok, ids in (
            (self.src_tok, (cfg.src_pad_id, cfg.src_unk_id, cfg.src_sos_id, cfg.src_eos_id)),
            (self.tgt_tok, (cfg.tgt_pad_id, cfg.tgt_unk_id, cfg.tgt_sos_id, cfg.tgt_eos_id)),
        ):
            names += [tok.id_to_token(i) for i in ids if i is not None]
        return list(dict.fromkeys(names))

    def encode_source(self, text: str, src_lang: str | None = None) -> EncodedSource:
        """``text`` framed as the encoder reads it (``stepping.frame_source``), cut to
        :attr:`max_source_tokens`. ``src_lang``: a multilingual model's source language."""
        stepping.check_languages(self.cfg, src_lang, None)
        if not isinstance(text, str):
            raise TypeError(f"expected a string, got {type(text).__name__}")
        ids = encode(self.src_tok, text)
        if not ids:
            raise ValueError("empty sentence: type some text to translate")
        n_dropped = max(0, len(ids) - self.max_source_tokens)
        ids = ids[: self.max_source_tokens]
        return EncodedSource(stepping.frame_source(self.cfg, ids, src_lang), n_dropped > 0, n_dropped)

    def _decode_text(self, ids: list[int]) -> str:
        return self.tgt_tok.decode(stepping.words_of(self.cfg, ids), skip_special_tokens=False)

    @torch.no_grad()
    def translate(
        self,
        sentences: list[str],
        batch_size: int = 64,
        beam_size: int = 1,
        src_lang: str | None = None,
        tgt_lang: str | None = None,
    ) -> list[str]:
        """Batched translation of a list of sentences, greedy when ``beam_size`` is 1,
        beam search (``transformer.core.beam``) otherwise. Sentences are sorted by length so
        each batch pads little; results come back in input order. Empty sentences raise
        ``ValueError``; anything but a list (or tuple) of strings raises ``TypeError``.
        ``src_lang`` / ``tgt_lang``: a multilingual model's languages (default the config's)."""
        if not isinstance(sentences, (list, tuple)):
            hint = " (wrap one sentence in a list: translate([text]))" if isinstance(sentences, str) else ""
            raise TypeError(f"sentences must be a list of strings, got {type(sentences).__name__}{hint}")
        if isinstance(beam_size, bool) or not isinstance(beam_size, int) or beam_size < 1:
            raise ValueError(f"beam_size must be an integer >= 1, got {beam_size!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        stepping.check_languages(self.cfg, src_lang, tgt_lang)
        if beam_size > 1:
            from transformer.core.beam import translate_beam

            return translate_beam(
                self, list(sentences), beam_size, batch_size=batch_size, src_lang=src_lang, tgt_lang=tgt_lang
            )
        encoded = []
        for i, s in enumerate(sentences):
            try:
                encoded.append(self.encode_source(s, src_lang).ids)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"sentence {i}: {exc}") from None
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
        results: list[str] = [""] * len(encoded)
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            src = stepping.source_batch(self.cfg, [encoded[i] for i in idx])  # (B, S)
            out = greedy_decode(self.model, src, tgt_lang=tgt_lang)
            for row, i in enumerate(idx):
                results[i] = self._decode_text(out.ids[row])
        return results

    @torch.no_grad()
    def trace(
        self,
        text: str,
        forced_prefix: list[int] | None = None,
        top_k: int = 10,
        head_mask: dict | None = None,
        src_lang: str | None = None,
        tgt_lang: str | None = None,
        logit_lens: bool | None = None,
    ) -> Trace:
        """Decode one sentence greedily and record everything (see ``trace.Trace``):
        attention, top-k, logit lens, attention rollout and per-head diagnostics.

        ``forced_prefix``: target ids to emit first, e.g. the original output up to step
        t with the 2nd candidate at step t, after which decoding goes on greedily.
        ``head_mask``: silence heads while decoding (``Transformer.forward``), e.g. to
        step through a knocked-out model. ``src_lang`` / ``tgt_lang``: a multilingual
        model's languages (default the config's). ``logit_lens``: record the logit lens (default
        :attr:`lens_in_trace`); without it the trace says ``logit_lens_left_out`` and
        :meth:`logit_lens` adds it when it is wanted.
        """
        for i in forced_prefix or []:
            if not 0 <= int(i) < self.cfg.tgt_vocab_size:
                raise ValueError(f"forced token id {i} is outside the target vocabulary")
            if int(i) == self.cfg.tgt_pad_id:
                raise ValueError(f"forced token id {i} is [PAD], which the decoder never emits")
        return self._traces([text], forced_prefix, top_k, head_mask, (src_lang, tgt_lang), logit_lens)[0]

    @torch.no_grad()
    def trace_batch(
        self,
        texts: list[str],
        top_k: int = 10,
        src_lang: str | None = None,
        tgt_lang: str | None = None,
        logit_lens: bool | None = None,
    ) -> list[Trace]:
        """:meth:`trace` for several sentences in one padded batch: what a server does with
        the sentences that arrive together (``serving.TraceBatcher``). Each trace equals
        the one-sentence trace up to float rounding; a bad sentence raises ``ValueError``
        naming it, so check sentences first when one must not fail the others. Every
        sentence of a batch has the same languages."""
        if not texts:
            return []
        return self._traces(list(texts), None, top_k, None, (src_lang, tgt_lang), logit_lens)

    @torch.no_grad()
    def logit_lens(self, trace: Trace, head_mask: dict | None = None) -> Trace:
        """``trace`` with its logit lens: the trace itself when it has one, else a copy with the
        lens computed now (``decoding.logit_lens_of``: one teacher-forced pass over its source
        and output ids, then every layer's top 5 in one matmul; what :meth:`trace` records, up to
        float rounding). ``head_mask``: the one the trace was made with, if any."""
        if trace.logit_lens_ids is not None:
            return trace
        ids, probs = logit_lens_of(self.model, trace.src_ids, trace.tgt_ids, head_mask)
        tok = self.tgt_tok.id_to_token
        tokens = [[[tok(i) for i in rank] for rank in layer] for layer in ids.tolist()]
        return replace(
            trace, logit_lens_ids=ids, logit_lens_probs=probs, logit_lens_tokens=tokens, logit_lens_left_out=False
        )

    def _traces(self, texts, forced_prefix, top_k, head_mask, langs, logit_lens=None) -> list[Trace]:
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
        stepping.check_languages(self.cfg, *langs)
        sources = []
        for n, text in enumerate(texts, 1):
            try:
                sources.append(self.encode_source(text, langs[0]))
            except ValueError as exc:
                raise ValueError(str(exc) if len(texts) == 1 else f"sentence {n}: {exc}") from None
        batch = stepping.source_batch(self.cfg, [src.ids for src in sources])  # (B, S)
        forced = stepping.with_forced_start(self.cfg, forced_prefix, langs[1])  # what the trace records
        lens = self.lens_in_trace if logit_lens is None else bool(logit_lens)
        # greedy_decode adds the language start itself: a batch of several sentences has no prefix of
        # its own, but every row of a multilingual batch is forced to start with the language token
        kw = dict(need_trace=True, top_k=top_k, head_mask=head_mask, tgt_lang=langs[1], logit_lens=lens)
        res = greedy_decode(self.model, batch, forced_prefix=forced_prefix, **kw)
        return [
            self._make_trace(text, src, out_ids, rec, forced, langs)
            for text, src, out_ids, rec in zip(texts, sources, res.ids, res.records)
        ]

    def _frame_names(self) -> tuple[list[str], list[str]]:
        """The names of the start and end tokens a trace's sink measures look for, read
        from the config's ids (never recognised by their names)."""
        cfg, src, tgt = self.cfg, self.src_tok.id_to_token, self.tgt_tok.id_to_token
        starts = [tgt(cfg.tgt_sos_id)] + ([] if cfg.src_sos_id is None else [src(cfg.src_sos_id)])
        return list(dict.fromkeys(starts)), list(dict.fromkeys([src(cfg.src_eos_id), tgt(cfg.tgt_eos_id)]))

    def _make_trace(self, text, src: EncodedSource, out_ids, rec, forced_prefix, langs) -> Trace:
        cfg = self.cfg
        tgt_ids = stepping.decoder_inputs(cfg, out_ids)
        tok = self.tgt_tok.id_to_token
        # a multilingual trace's own language tokens are specials too (its source's first
        # token, its forced first output)
        lang_tokens = [tok(i) for i in (src.ids[:1] + out_ids[:1]) if i in cfg.lang_ids.values()]
        starts, ends = self._frame_names()
        trace = Trace(
            src_text=text,
            translation=self._decode_text(out_ids),
            src_tokens=[self.src_tok.id_to_token(i) for i in src.ids],
            src_ids=src.ids,
            tgt_tokens=[tok(i) for i in tgt_ids],
            tgt_ids=tgt_ids,
            special_tokens=list(dict.fromkeys(self.special_tokens + lang_tokens)),
            unk_token=self.src_tok.id_to_token(self.cfg.src_unk_id),
            encoder_attn=rec.encoder_attn,
            decoder_self_attn=rec.self_attn,
            cross_attn=rec.cross_attn,
            topk_ids=rec.topk_ids,
            topk_tokens=[[tok(i) for i in row] for row in rec.topk_ids.tolist()],
            topk_probs=rec.topk_probs,
            positional_encoding=self.model.pos_encoding.pe.numpy(),
            truncated=src.truncated,
            n_src_tokens_dropped=src.n_dropped,
            finished=bool(out_ids) and out_ids[-1] == cfg.tgt_eos_id,
            forced_prefix=list(forced_prefix),
            logit_lens_tokens=None
            if rec.lens_ids is None
            else [[[tok(i) for i in rank] for rank in layer] for layer in rec.lens_ids.tolist()],
            logit_lens_ids=rec.lens_ids,
            logit_lens_probs=rec.lens_probs,
            logit_lens_left_out=rec.lens_ids is None,
            src_lang=langs[0] or cfg.src_lang,
            tgt_lang=langs[1] or cfg.tgt_lang,
            start_tokens=starts + lang_tokens[:1],
            end_tokens=ends,
        )
        trace.encoder_rollout = readings.encoder_rollout(trace.encoder_attn)
        trace.rollout = readings.source_relevance(trace.encoder_attn, trace.decoder_self_attn, trace.cross_attn)
        trace.head_stats = readings.head_stats(trace)
        return trace
