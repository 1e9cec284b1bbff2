"""Batched beam search with a KV cache.

Why beam search: greedy decoding commits to the single most likely token at every step,
so one early, locally good choice can force a worse sentence. Beam search keeps the
``k`` best partial translations (*hypotheses*) alive and only decides at the end.

The algorithm, per sentence of the batch:

1. The encoder runs once. Step 0 decodes the start token with one hypothesis per sentence;
   after it every sentence has exactly ``k`` alive hypotheses (rows of the batch). A
   multilingual model's forced start (``stepping.forced_start``, its target-language token)
   is the only candidate of the steps it covers, scored with the model's own log-prob, so
   the ``k`` hypotheses branch after it.
2. At each step every alive hypothesis proposes its best next tokens; the ``2k`` best
   (hypothesis, token) pairs of the sentence by cumulative log-probability are the
   *candidates* of that step, in rank order. Walking them best first:
   - an ``[EOS]`` candidate ranked among the first ``k`` ends a hypothesis ("finished");
     an ``[EOS]`` ranked lower is dropped ("pruned"), so it cannot pre-empt a better
     alive hypothesis (this is what makes a beam of 1 exactly greedy);
   - the first ``k`` non-``[EOS]`` candidates become the new alive hypotheses ("kept");
   - the rest are "pruned".
   ``[PAD]`` and ``[SOS]`` are never proposed: they are not output tokens.
3. Finished hypotheses are ranked by the GNMT length-normalised score (Wu et al. 2016)::

       score(Y) = log P(Y | X) / lp(Y),    lp(Y) = ((5 + |Y|) / 6) ** alpha

   where ``|Y|`` counts the emitted tokens including the final ``[EOS]`` (not ``[SOS]``)
   and ``alpha`` is ``length_penalty``. ``alpha = 0`` ranks by raw log-probability, which
   favours short outputs; larger ``alpha`` favours longer ones. A sentence keeps its
   ``k`` best finished hypotheses.
4. A sentence stops when
   - ``early_stopping=True``: it has ``k`` finished hypotheses;
   - ``early_stopping=False``: it has ``k`` finished hypotheses and no alive hypothesis
     can still beat the worst of them. The bound is exact: log-probabilities only
     decrease, so an alive hypothesis with log-prob ``c < 0`` can at best reach
     ``c / lp(max_len)``;
   - or it has emitted its maximum number of tokens (the same per-row limit as greedy's
     :func:`~transformer.core.decoding.max_new_tokens`); its alive hypotheses are then ranked
     with the finished ones, marked ``eos=False``.

The KV cache (one :class:`~transformer.core.model.LayerCache` per decoder layer) holds one row
per alive hypothesis. After each step the rows are reordered with ``index_select`` so
row ``r`` holds the prefix of the hypothesis it now continues: self-attention K/V (which
grow by one position per step) are gathered, never recomputed. Cross-attention K/V are
the same for every hypothesis of a sentence, so they are only gathered when the layout
of sentences changes: once when step 0 expands 1 row to ``k``, and when a sentence
finishes and leaves the batch (finished sentences stop costing compute).

The search keeps what a picture of it needs only when asked: with ``return_records=True`` it
keeps a :class:`SearchRecord` per sentence (every candidate it ranked, with a backpointer to
the hypothesis it extends, and the greedy next token of every hypothesis it expanded), which
``transformer.interpret.beam_tree`` turns into the tree a viewer draws.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import torch

from transformer.core import stepping
from transformer.core.decoding import max_new_tokens
from transformer.core.model import Transformer, select_cache_rows
from transformer.core.stepping import never_emitted


@dataclass
class Hypothesis:
    """One complete hypothesis; ``ids`` exclude ``[SOS]`` and end with ``[EOS]`` if ``eos``."""

    ids: list[int]
    logprob: float  # log P(ids | source), summed over the emitted tokens
    score: float  # logprob / lp(len(ids))
    eos: bool  # False: cut at the maximum length
    node: int | None = None  # its hypothesis id in the search record, its node in a tree (return_records only)


@dataclass
class BeamResult:
    ids: list[list[int]]  # best hypothesis per sentence (no [SOS]; ends with [EOS] when finished)
    scores: list[float]  # its score
    hypotheses: list[list[Hypothesis]]  # up to k per sentence, best first
    settings: SearchSettings | None = None  # the checked arguments of the search
    records: list[SearchRecord] | None = None  # one per sentence (return_records only)


def gnmt_length_penalty(length: int, alpha: float) -> float:
    """GNMT lp(Y) = ((5 + |Y|) / 6) ** alpha; 1 for a single token, so alpha=0 disables it."""
    return ((5.0 + length) / 6.0) ** alpha


def hypothesis_score(logprob: float, length: int, alpha: float) -> float:
    """The documented ranking score of a finished hypothesis."""
    return logprob / gnmt_length_penalty(length, alpha)


def check_beam_size(beam_size, upper: int | None = None) -> int:
    if isinstance(beam_size, bool) or not isinstance(beam_size, (int, float)):
        raise ValueError(f"beam size must be a whole number, got {beam_size!r}")
    if isinstance(beam_size, float):
        if not beam_size.is_integer():
            raise ValueError(f"beam size must be a whole number, got {beam_size!r}")
        beam_size = int(beam_size)
    if beam_size < 1 or (upper is not None and beam_size > upper):
        bound = f"between 1 and {upper}" if upper is not None else "at least 1"
        raise ValueError(f"beam size must be {bound}, got {beam_size}")
    return int(beam_size)


@dataclass(frozen=True)
class SearchSettings:
    """The checked arguments of one :func:`beam_search` call."""

    beam_size: int  # k
    length_penalty: float  # GNMT alpha
    early_stopping: bool
    max_steps: int | None  # as given: None means each row's own limit
    forced: list[int] = field(default_factory=list)  # the model's forced start (stepping.forced_start)


@dataclass
class Candidate:
    """One (hypothesis, next token) pair the search ranked at a step: a node of the beam tree."""

    parent: int  # id of the hypothesis it extends: 0 is [SOS], i > 0 is candidate i - 1 of the record
    step: int  # tokens emitted up to and including this one
    token_id: int
    logprob: float  # cumulative log P(prefix up to this token)
    token_logprob: float  # log P(this token | parent prefix)
    rank: int  # among the step's candidates, 0 = best
    status: str  # "kept" | "pruned" | "finished", as in the tree


@dataclass
class SearchRecord:
    """What the search saw of one sentence, kept with ``return_records``: every candidate in
    the order it was ranked (step by step, best first, so parents come before children), and
    for every hypothesis it expanded the greedy next token (``stepping.pick``) and its log-prob, which
    places the greedy path in the tree for free while greedy stays inside the beam."""

    limit: int  # the sentence's limit on emitted tokens
    candidates: list[Candidate] = field(default_factory=list)
    greedy_next: dict[int, tuple[int, float]] = field(default_factory=dict)  # hypothesis id -> (token, log-prob)

    def add(self, candidate: Candidate) -> int:
        """Append ``candidate``; returns its hypothesis id."""
        self.candidates.append(candidate)
        return len(self.candidates)


@torch.no_grad()
def beam_search(
    model: Transformer,
    src: torch.Tensor,
    beam_size: int,
    max_steps: int | None = None,
    length_penalty: float = 0.6,
    early_stopping: bool = True,
    return_records: bool = False,
    tgt_lang: str | None = None,
) -> BeamResult:
    """Beam search over a padded batch ``src`` (B, S) of source ids (see the module docstring).

    ``max_steps``: cap on emitted tokens for every sentence (default: per row,
    :func:`~transformer.core.decoding.max_new_tokens`, as greedy). ``length_penalty``: GNMT
    alpha >= 0. ``return_records``: also keep one :class:`SearchRecord` per sentence (what
    ``transformer.interpret.beam_tree`` draws). ``tgt_lang``: a multilingual model's target
    language. The model must be in eval mode: dropout would make the search random.
    """
    settings = _check_search(model, src, beam_size, max_steps, length_penalty, early_stopping)
    settings = dataclasses.replace(settings, forced=stepping.forced_start(model.cfg, tgt_lang))
    limits = _limits(model, src, max_steps)
    records = [SearchRecord(limit) for limit in limits] if return_records else None
    finished = _search(model, src, settings, limits, records)
    ids, scores = [f[0].ids for f in finished], [f[0].score for f in finished]
    return BeamResult(ids, scores, finished, settings, records)


def _check_search(model, src, beam_size, max_steps, length_penalty, early_stopping) -> SearchSettings:
    """Bad arguments raise ``ValueError`` before any compute."""
    cfg = model.cfg
    if model.training:
        raise ValueError("beam_search needs model.eval(): dropout would make the search random")
    if src.dim() != 2 or src.shape[0] == 0 or src.shape[1] == 0:
        raise ValueError(f"src must be a non-empty (B, S) batch of ids, got shape {tuple(src.shape)}")
    k = check_beam_size(beam_size)
    alpha = float(length_penalty)
    if not math.isfinite(alpha) or alpha < 0:
        raise ValueError(f"length_penalty must be a finite number >= 0, got {length_penalty!r}")
    if 2 * k > cfg.tgt_vocab_size - len(_banned(cfg)):
        raise ValueError(f"beam size {k} is too large for a target vocabulary of {cfg.tgt_vocab_size} tokens")
    if max_steps is not None and int(max_steps) < 1:
        raise ValueError(f"max_steps must be at least 1, got {max_steps}")
    return SearchSettings(k, alpha, early_stopping, max_steps)


def _banned(cfg) -> list[int]:
    """[PAD] and [SOS]: never proposed, they are not output tokens (and the config's tgt_banned_ids)."""
    return never_emitted(cfg)


def _limits(model, src, max_steps) -> list[int]:
    """Each sentence's limit on emitted tokens."""
    cfg = model.cfg
    if max_steps is None:
        return max_new_tokens(model, (src != cfg.src_pad_id).sum(dim=1)).tolist()  # (B,)
    return [min(int(max_steps), cfg.max_positions)] * src.shape[0]


def _banned_mask(cfg, device, forced: list[int], t: int) -> torch.Tensor:
    """(V,) True for the tokens a hypothesis may not emit at step ``t``: every token but the
    forced one while ``forced`` lasts, else the ones never emitted."""
    if t < len(forced):
        mask = torch.ones(cfg.tgt_vocab_size, dtype=torch.bool, device=device)
        mask[forced[t]] = False
        return mask
    mask = torch.zeros(cfg.tgt_vocab_size, dtype=torch.bool, device=device)
    mask[_banned(cfg)] = True
    return mask


def _search(
    model, src, settings: SearchSettings, limits: list[int], records: list[SearchRecord] | None
) -> list[list[Hypothesis]]:
    """The search itself: the k best finished hypotheses per sentence, best first. With
    ``records``, every ranked candidate is also appended to its sentence's record."""
    cfg = model.cfg
    k, device, B = settings.beam_size, src.device, src.shape[0]
    n_cand = 2 * k
    src_mask, memory, _ = stepping.encode(model, src)  # (B, 1, 1, S), (B, S, D)
    finished: list[list[Hypothesis]] = [[] for _ in range(B)]
    # the alive hypotheses: rows of the batch, `nb` consecutive rows per active sentence
    active = list(range(B))
    nb = 1
    seqs: list[list[int]] = [[] for _ in range(B)]  # emitted ids per row
    row_hyp: list[int | None] = [0 if records is not None else None] * B  # record id per row
    cum = torch.zeros(B, device=device)  # (R,) cumulative log-prob per row
    dec, logits = stepping.step(model, stepping.start_tokens(cfg, B, device), memory, src_mask)  # logits: (R, V)
    cache = dec.cache

    t = 0
    while True:
        logp = logits.float().log_softmax(dim=-1)  # (R, V): the model's own probabilities
        banned_mask = _banned_mask(cfg, device, settings.forced, t)
        sel_tok, sel_total, sel_lp, sel_beam = _best_candidates(logits, logp, cum, banned_mask, len(active), nb, n_cand)
        if records is not None:
            _record_greedy_next(records, stepping.pick_at(cfg, logits, settings.forced, t), logp, active, nb, row_hyp)
        next_rows, next_tok, next_cum, next_seqs, next_hyps, next_active = [], [], [], [], [], []
        for a, i in enumerate(active):
            kept = _step_sentence(
                i,
                a * nb,
                t,
                [s[a] for s in (sel_tok, sel_total, sel_lp, sel_beam)],
                settings,
                limits[i],
                records,
                finished[i],
                seqs,
                row_hyp,
                cfg.tgt_eos_id,
            )
            if kept is None:
                continue
            next_active.append(i)
            for row, tok, tot, hyp in kept:
                next_rows.append(row)
                next_tok.append(tok)
                next_cum.append(tot)
                next_seqs.append(seqs[row] + [tok])
                next_hyps.append(hyp)
        if not next_active:
            return finished
        rows = torch.tensor(next_rows, dtype=torch.long, device=device)
        next_nb = len(next_rows) // len(next_active)  # k, or 1 after a forced step
        layout_changed = nb != next_nb or next_active != active
        cache, memory, src_mask, logits = _decode_next(model, cache, memory, src_mask, rows, next_tok, layout_changed)
        active, nb = next_active, next_nb
        seqs, row_hyp = next_seqs, next_hyps
        cum = torch.tensor(next_cum, device=device)
        t += 1


def _step_sentence(
    i: int,
    first_row: int,
    t: int,
    selected: list,
    settings: SearchSettings,
    limit: int,
    records: list[SearchRecord] | None,
    finished: list[Hypothesis],
    seqs: list[list[int]],
    row_hyp: list[int | None],
    eos_id: int,
) -> list[tuple] | None:
    """Sentence ``i``'s ranked candidates at step ``t`` (``selected``: its tokens, totals,
    log-probs and beam rows, best first): a finished one is offered to ``finished``, and
    every one is recorded when ``records`` is given. Returns the kept (row, token, cum,
    record id) that go on, or None when the sentence is done."""
    k = settings.beam_size
    sel_tok, sel_total, sel_lp, sel_beam = selected
    last_step = t + 1 >= limit
    kept = []  # (row, token, cum, record id)
    for rank, status in enumerate(candidate_statuses(sel_tok, k, eos_id)):
        tok, tot, lp = sel_tok[rank], sel_total[rank], sel_lp[rank]
        if tot == -math.inf:
            break  # past the only candidate of a forced step: not a candidate at all
        row = first_row + sel_beam[rank]
        hyp = None
        if records is not None:
            # out of steps, the kept candidates end hypotheses too
            final = "finished" if status == "kept" and last_step else status
            hyp = records[i].add(Candidate(row_hyp[row], t + 1, tok, tot, lp, rank, final))
        if status == "finished":
            _offer(finished, _hypothesis(seqs[row] + [tok], tot, True, hyp, settings.length_penalty), k)
        elif status == "kept":
            kept.append((row, tok, tot, hyp))
    if last_step:  # out of steps: the alive hypotheses compete as they are
        for row, tok, tot, hyp in kept:
            _offer(finished, _hypothesis(seqs[row] + [tok], tot, False, hyp, settings.length_penalty), k)
    if last_step or _sentence_done(finished, kept, settings, limit):
        return None
    return kept


def _decode_next(model, cache, memory, src_mask, rows: torch.Tensor, tokens: list[int], layout_changed: bool):
    """Reorder the KV cache so that row r continues the hypothesis of old row ``rows[r]``,
    then decode one step of ``tokens``: (cache, memory, src_mask, logits (R, V)).

    Self-attention K/V are gathered every step; cross-attention K/V (and memory and mask)
    only when the layout of sentences changed, since they are shared by a sentence's rows.
    """
    cache = select_cache_rows(cache, rows, cross=layout_changed)
    if layout_changed:
        # memory is not read once the cross K/V are cached; kept aligned for clarity
        memory = memory.index_select(0, rows)
        src_mask = src_mask.index_select(0, rows)
    dec, logits = stepping.step(model, torch.tensor(tokens, device=rows.device)[:, None], memory, src_mask, cache)
    return dec.cache, memory, src_mask, logits


def _best_candidates(logits, logp, cum, banned_mask, A: int, nb: int, n_cand: int):
    """The ``n_cand`` best (row, token) pairs of each of the ``A`` active sentences by
    cumulative log-prob, best first, as lists (A, n_cand): token, cumulative log-prob,
    the token's own log-prob, and the row within the sentence's ``nb`` rows.
    ``logp`` (R, V) is ``logits`` log-softmaxed in float32."""
    # rank each row's tokens by logit (same order as greedy's argmax), then take logp
    _, cand_tok = logits.masked_fill(banned_mask, float("-inf")).topk(n_cand, dim=-1)  # (R, n_cand)
    # a token the step does not allow (banned, or not the forced one) is no candidate at all
    cand_lp = logp.masked_fill(banned_mask, float("-inf")).gather(1, cand_tok)  # (R, n_cand)
    total = (cum[:, None] + cand_lp).view(A, nb * n_cand)  # (A, nb * n_cand)
    # stable sort: on exact ties, keep the row-major, best-logit-first order
    order = total.sort(dim=1, descending=True, stable=True).indices[:, :n_cand]  # (A, n_cand)
    return (
        cand_tok.view(A, -1).gather(1, order).tolist(),
        total.gather(1, order).tolist(),
        cand_lp.view(A, -1).gather(1, order).tolist(),
        (order // n_cand).tolist(),
    )


def _record_greedy_next(records, g_tok, logp, active, nb, row_hyp) -> None:
    """Where greedy would go from each row: its token ``g_tok`` (R,) (``stepping.pick``) and
    that token's log-prob."""
    g_lp = logp.gather(1, g_tok[:, None])[:, 0]  # (R,)
    for row, nxt in enumerate(zip(g_tok.tolist(), g_lp.tolist())):
        records[active[row // nb]].greedy_next[row_hyp[row]] = nxt


def candidate_statuses(tokens: list[int], k: int, eos_id: int) -> list[str]:
    """The walk over one sentence's candidates of a step, best first (module docstring,
    step 2): an [EOS] among the first ``k`` finishes a hypothesis, the first ``k`` others
    are kept, every other candidate is pruned."""
    statuses, n_kept = [], 0
    for rank, tok in enumerate(tokens):
        if tok == eos_id:
            statuses.append("finished" if rank < k else "pruned")
        elif n_kept < k:
            statuses.append("kept")
            n_kept += 1
        else:
            statuses.append("pruned")
    return statuses


def _hypothesis(ids: list[int], logprob: float, eos: bool, node: int | None, alpha: float) -> Hypothesis:
    return Hypothesis(ids, logprob, hypothesis_score(logprob, len(ids), alpha), eos, node)


def _sentence_done(pool: list[Hypothesis], kept: list, settings: SearchSettings, limit: int) -> bool:
    """Whether a sentence with ``pool`` finished and ``kept`` alive hypotheses stops
    before its limit (module docstring, step 4)."""
    if len(pool) < settings.beam_size:
        return False
    if settings.early_stopping:
        return True
    best_alive = max(tot for _, _, tot, _ in kept)
    return best_alive / gnmt_length_penalty(limit, settings.length_penalty) <= pool[-1].score


def _offer(pool: list[Hypothesis], hyp: Hypothesis, k: int) -> None:
    """Insert ``hyp`` into the best-first ``pool``, keeping the ``k`` best (stable on ties)."""
    pos = len(pool)
    while pos > 0 and pool[pos - 1].score < hyp.score:
        pos -= 1
    pool.insert(pos, hyp)
    del pool[k:]


def _batches(translator, sentences: list[str], batch_size: int, src_lang: str | None = None):
    """Encode, sort by length (little padding), and yield (input indices, padded src)."""
    encoded = []
    for i, s in enumerate(sentences):
        try:
            encoded.append(translator.encode_source(s, src_lang).ids)
        except ValueError as exc:
            raise ValueError(f"sentence {i}: {exc}") from None
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        yield idx, stepping.source_batch(translator.cfg, [encoded[i] for i in idx])


@torch.no_grad()
def translate_beam(
    translator,
    sentences: list[str],
    beam_size: int,
    batch_size: int = 64,
    length_penalty: float = 0.6,
    early_stopping: bool = True,
    src_lang: str | None = None,
    tgt_lang: str | None = None,
) -> list[str]:
    """Batched beam-search translation, results in input order (``Translator.translate``
    calls this when ``beam_size > 1``). Empty sentences raise ``ValueError``."""
    kw = dict(length_penalty=length_penalty, early_stopping=early_stopping, src_lang=src_lang, tgt_lang=tgt_lang)
    return [texts[0] for texts in translate_nbest(translator, sentences, beam_size, batch_size, **kw)]


@torch.no_grad()
def translate_nbest(
    translator,
    sentences: list[str],
    beam_size: int,
    batch_size: int = 64,
    length_penalty: float = 0.6,
    early_stopping: bool = True,
    src_lang: str | None = None,
    tgt_lang: str | None = None,
) -> list[list[str]]:
    """Each sentence's beam, as text: its up to ``beam_size`` hypotheses, best first, in input
    order (the first of each is :func:`translate_beam`'s translation, in the same batches)."""
    if isinstance(sentences, str):
        sentences = [sentences]
    k = check_beam_size(beam_size)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    results: list[list[str]] = [[] for _ in sentences]
    for idx, src in _batches(translator, list(sentences), batch_size, src_lang):
        out = beam_search(
            translator.model, src, k, length_penalty=length_penalty, early_stopping=early_stopping, tgt_lang=tgt_lang
        )
        for row, i in enumerate(idx):
            results[i] = [translator._decode_text(h.ids) for h in out.hypotheses[row]]
    return results
