"""A sequence-level ensemble of models that need not share a vocabulary.

Models trained apart each learn their own subwords, so they cannot average their next-token
distributions step by step, as an ensemble of one vocabulary does. They can judge each other's
sentences: each model's beam gives its ``k`` best translations of a source; every distinct
one is scored by every model, teacher-forced, as the mean log-probability of its tokens
([EOS] included, in that model's own tokenisation); the highest sum of the models' scores
wins (n-best reranking, as in Och & Ney's log-linear models, with equal weights).

Scores go through the decoding core (``stepping``: the source framing, a multilingual model's
forced start, the decoder's inputs) and are the model's own log-probabilities, as beam search
sums them and as ``transformer.interpret.reference`` reads them for one sentence: a model's
own beam output is scored as it was found.
"""

from __future__ import annotations

import torch

from transformer.core import stepping
from transformer.core.beam import translate_nbest
from transformer.core.tokenizer import encode


def target_ids(translator, text: str) -> list[int]:
    """``text`` as the decoder must emit it: the forced start, its tokens, [EOS], cut to the
    decoder's positions (a sentence of no tokens is only [EOS])."""
    cfg = translator.cfg
    ids = [*stepping.forced_start(cfg), *encode(translator.tgt_tok, text), cfg.tgt_eos_id]
    return ids[: cfg.max_positions]


@torch.no_grad()
def candidate_scores(
    translator, sources: list[str], candidates: list[list[str]], batch_size: int = 32
) -> list[list[float]]:
    """The mean log-probability of each candidate translation of each source under
    ``translator``'s model: one list per source, in the order of its candidates. Each source
    is encoded once; its candidates are decoded against its encoder output, repeated."""
    model, cfg = translator.model, translator.cfg
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    out: list[list[float]] = [[] for _ in sources]
    for start in range(0, len(order), batch_size):
        idx = [i for i in order[start : start + batch_size] if candidates[i]]
        if not idx:
            continue
        src = stepping.source_batch(cfg, [translator.encode_source(sources[i]).ids for i in idx])  # (B, S)
        src_mask, memory, _ = stepping.encode(model, src)
        rows = [(b, target_ids(translator, text)) for b, i in enumerate(idx) for text in candidates[i]]
        T = max(len(ids) for _, ids in rows)
        ids = torch.full((len(rows), T), cfg.tgt_pad_id)  # (R, T)
        tgt_in = torch.full((len(rows), T), cfg.tgt_pad_id)  # (R, T)
        for r, (_, y) in enumerate(rows):
            ids[r, : len(y)] = torch.tensor(y)
            tgt_in[r, : len(y)] = torch.tensor(stepping.decoder_inputs(cfg, y[:-1]))
        which = torch.tensor([b for b, _ in rows])
        _, logits = stepping.decode_all(model, tgt_in, memory[which], src_mask[which])  # (R, T, V)
        logp = logits.float().log_softmax(-1).gather(-1, ids[..., None])[..., 0]  # (R, T)
        r = 0
        for i in idx:
            for _ in candidates[i]:
                out[i].append(float(logp[r, : len(rows[r][1])].double().mean()))
                r += 1
    return out


def ensemble_translate(translators, sentences: list[str], beam_size: int = 4, batch_size: int = 64) -> list[str]:
    """Each sentence's translation by the models together (module docstring): every model's
    beam, every distinct candidate scored by every model, the highest sum of scores. With one
    model it is that model's beam translation."""
    if len(translators) == 1:
        return [texts[0] for texts in translate_nbest(translators[0], sentences, beam_size, batch_size)]
    beams = [translate_nbest(tr, sentences, beam_size, batch_size) for tr in translators]
    candidates = [sorted({text for beam in beams for text in beam[i]}) for i in range(len(sentences))]
    scores = [candidate_scores(tr, sentences, candidates) for tr in translators]
    picks = []
    for i, texts in enumerate(candidates):
        totals = [sum(model_scores[i][j] for model_scores in scores) for j in range(len(texts))]
        picks.append(texts[max(range(len(texts)), key=totals.__getitem__)])
    return picks
