"""Back-translation: synthetic training pairs made from monolingual target-side text.

A reverse model (target -> source, trained with the project's own ``train.py``) translates
sentences written in the target language; each (synthetic source, real target) pair is
extra training data for the forward model (Sennrich et al. 2016, "Improving Neural Machine
Translation Models with Monolingual Data"). The target side is real text, so the decoder
learns from correct Italian even where the English is imperfect.

How the synthetic source is made matters (Edunov et al. 2018, "Understanding
Back-Translation at Scale"): beam search gives the most likely, and so the most bland,
sources; sampling from the model's distribution, or noising the beam output, gives richer
and harder ones. All three are here (``METHODS``). Tagging the synthetic sources (Caswell
et al. 2019, "Tagged Back-Translation") is a training-time choice: every pair written here
carries ``origin`` ``bt:<method>``, and ``train.py --tag-synthetic`` prefixes those sources
with a tag token.

The monolingual text is the target-language side of the Tatoeba test sets of other
language pairs (``Helsinki-NLP/OPUS-MT-testsets``): Tatoeba's own short, everyday
register. Hygiene is part of collecting it: a sentence that occurs in any evaluation file
of this language pair (either side, any release) and is not already a training sentence,
or in the corpus's own validation or test split, is never used, and neither is a pair
whose synthetic source happens to be such a sentence.

    python -m transformer.cli.backtranslate --testsets OPUS-MT-testsets/datasets/helsinki_nlp/tatoeba/testsets \\
        --checkpoint runs/rev-it-en/best --out data/tatoeba-en-it-bt
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from transformer.core import stepping
from transformer.core.decoding import max_new_tokens
from transformer.core.model import Transformer, select_cache_rows

METHODS = ("beam", "sample", "noised-beam")
# ISO 639-3 codes of the Tatoeba test-set folders (``eng-ita``) for the languages the
# checkpoints name with two letters
ISO3 = {"en": "eng", "it": "ita", "de": "deu", "fr": "fra", "es": "spa", "pt": "por", "nl": "nld"}
# how many hex digits of a sentence's SHA-1 the held-out list keeps: 48 bits, so a chance
# collision among ~10^5 x 10^5 sentence pairs has odds of about 10^-4
FINGERPRINT_HEX = 12
# sentences handed to the decoder at a time: fixed, so a rebuild sees the same batches
CHUNK = 2000


class BacktranslateError(ValueError):
    """The inputs cannot be used as asked (missing folder, wrong direction, bad method)."""


def normalize(text: str) -> str:
    """The form sentences are compared and stored in: NFC, spaces folded, stripped (the
    corpus in ``data/`` is NFC too)."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFC", text)).strip()


def fingerprint(text: str) -> str:
    """A short, stable fingerprint of a normalised sentence (for the held-out list)."""
    return hashlib.sha1(normalize(text).encode("utf-8")).hexdigest()[:FINGERPRINT_HEX]


def _read_lines(path: Path) -> list[str]:
    return [s for s in (normalize(line) for line in path.read_text(encoding="utf-8").splitlines()) if s]


@dataclass
class TestsetText:
    """What the Tatoeba test-set folder holds for one language pair (src, tgt)."""

    monolingual: list[str]  # target-language sentences of every *other* pair, deduplicated, in file order
    evaluation: set[str]  # every sentence, either side, of the (src, tgt) pair's own files


def read_testsets(folder: str | Path, src_lang: str, tgt_lang: str) -> TestsetText:
    """Read ``folder`` (``.../tatoeba/testsets``): one sub-folder per language pair
    (``ara-ita``), holding ``tatoeba-test-<release>.<lang>`` files, one sentence a line."""
    folder = Path(folder)
    if not folder.is_dir():
        raise BacktranslateError(f"{folder}: no such folder (expected OPUS-MT-testsets' tatoeba/testsets)")
    src3, tgt3 = (ISO3.get(lang, lang) for lang in (src_lang, tgt_lang))
    own = {f"{src3}-{tgt3}", f"{tgt3}-{src3}"}
    mono: dict[str, None] = {}
    evaluation: set[str] = set()
    for pair_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
        langs = pair_dir.name.split("-")
        if pair_dir.name in own:
            for f in sorted(pair_dir.glob("*.*")):
                if f.suffix in (f".{src3}", f".{tgt3}"):
                    evaluation.update(_read_lines(f))
        elif tgt3 in langs:
            for f in sorted(pair_dir.glob(f"*.{tgt3}")):
                mono.update(dict.fromkeys(_read_lines(f)))
    if not evaluation:
        raise BacktranslateError(f"{folder}: no {src3}-{tgt3} evaluation files found")
    if not mono:
        raise BacktranslateError(f"{folder}: no {tgt3} sentences of other language pairs found")
    return TestsetText(list(mono), evaluation)


def held_out(
    evaluation: Iterable[str], train: Sequence[tuple[str, str]], splits: Iterable[Sequence[tuple[str, str]]]
) -> set[str]:
    """Sentences no training file may contain: those of the evaluation files that are not
    already in ``train`` (either side), plus every sentence of ``splits`` (validation, test)."""
    in_train = {normalize(s) for pair in train for s in pair}
    blocked = {s for s in evaluation if s not in in_train}
    for split in splits:
        blocked.update(normalize(s) for pair in split for s in pair)
    return blocked


def select_monolingual(sentences: Iterable[str], blocked: set[str], known: set[str], max_chars: int = 300) -> list[str]:
    """The sentences worth back-translating: not held out, not already a training target
    (``known``), not absurdly long; duplicates dropped, order kept."""
    out = dict.fromkeys(s for s in sentences if s not in blocked and s not in known and len(s) <= max_chars)
    return list(out)


# ---------------------------------------------------------------- decoding


@torch.no_grad()
def sample_decode(
    model: Transformer, src: torch.Tensor, generator: torch.Generator, temperature: float = 1.0, top_k: int = 0
) -> list[list[int]]:
    """Sampling (Edunov et al. 2018): each step draws the next token from the model's
    distribution instead of taking its argmax; from all of it (``top_k`` 0, their
    "sampling") or from its ``top_k`` most likely tokens (their "top10" with 10). ``src``
    (B, S) padded ids; returns each row's ids up to and including [EOS]. A row that has
    finished leaves the batch, as in greedy decoding. The draw is over the tokens greedy
    decoding may emit (``stepping.allowed_at``: banned ids and a forced start honoured)."""
    cfg = model.cfg
    limits = max_new_tokens(model, (src != cfg.src_pad_id).sum(dim=1))  # (B,)
    src_mask, memory, _ = stepping.encode(model, src)
    rows = torch.arange(src.shape[0])  # batch position of each running row
    last = stepping.start_tokens(cfg, len(rows))
    forced = stepping.forced_start(cfg)
    out: list[list[int]] = [[] for _ in range(len(rows))]
    cache = None
    for t in range(int(limits.max())):
        dec, logits = stepping.step(model, last, memory, src_mask, cache)
        logits = stepping.allowed_at(cfg, logits.float() / temperature, forced, t)  # (R, V)
        if top_k:
            kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]  # (R, 1)
            logits = logits.masked_fill(logits < kth, float("-inf"))
        nxt = torch.multinomial(logits.softmax(dim=-1), 1, generator=generator).squeeze(1)  # (R,)
        for b, tok in zip(rows.tolist(), nxt.tolist()):
            out[b].append(tok)
        running = (nxt != cfg.tgt_eos_id) & (t + 1 < limits[rows])  # (R,)
        if not bool(running.any()):
            break
        keep = running.nonzero().squeeze(1)
        rows, last = rows[keep], nxt[keep, None]
        memory, src_mask = memory.index_select(0, keep), src_mask.index_select(0, keep)
        cache = select_cache_rows(dec.cache, keep)
    return out


def noise_words(
    text: str, rng: random.Random, p_drop: float = 0.1, p_blank: float = 0.1, k_swap: int = 3, blank: str = "<blank>"
) -> str:
    """Edunov et al.'s noise on a beam output (after Lample et al. 2018): each word is
    deleted with probability ``p_drop`` or replaced by a filler with ``p_blank``, and words
    are shuffled by at most ``k_swap`` positions (each word's key is its position plus a
    uniform draw from [0, ``k_swap`` + 1), so a word can pass at most ``k_swap`` others).
    Never returns an empty string."""
    words = text.split()
    if not words:
        return text
    kept = []
    for w in words:
        r = rng.random()
        if r < p_drop:
            continue
        kept.append(blank if r < p_drop + p_blank else w)
    if not kept:
        kept = [rng.choice(words)]
    keys = [i + rng.uniform(0, k_swap + 1) for i in range(len(kept))]
    return " ".join(w for _, w in sorted(zip(keys, kept), key=lambda kw: kw[0]))


def backtranslate(
    translator,
    sentences: Sequence[str],
    method: str,
    seed: int = 0,
    beam_size: int = 4,
    top_k: int = 0,
    batch_size: int = 64,
    progress: Callable[[int, int], None] | None = None,
) -> list[str]:
    """The reverse model's translation of every sentence, made by ``method`` (``METHODS``;
    ``top_k`` restricts sampling, see :func:`sample_decode`), in input order.
    Deterministic for a given (model, sentences, method, seed)."""
    if method not in METHODS:
        raise BacktranslateError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    from transformer.core.beam import translate_beam

    generator = torch.Generator().manual_seed(seed)
    rng = random.Random(seed)
    out: list[str] = []
    for start in range(0, len(sentences), CHUNK):
        chunk = list(sentences[start : start + CHUNK])
        if method == "sample":
            out += _sample_chunk(translator, chunk, generator, batch_size, top_k)
        else:
            beams = translate_beam(translator, chunk, beam_size, batch_size=batch_size)
            out += [noise_words(b, rng) for b in beams] if method == "noised-beam" else beams
        if progress is not None:
            progress(len(out), len(sentences))
    return out


def _sample_chunk(
    translator, sentences: list[str], generator: torch.Generator, batch_size: int, top_k: int
) -> list[str]:
    """``sample_decode`` over length-sorted batches; results in input order."""
    cfg = translator.cfg
    encoded = [translator.encode_source(s).ids for s in sentences]
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    results = [""] * len(encoded)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        src = torch.full((len(idx), max(len(encoded[i]) for i in idx)), cfg.src_pad_id, dtype=torch.long)
        for row, i in enumerate(idx):
            src[row, : len(encoded[i])] = torch.tensor(encoded[i])
        for row, ids in zip(idx, sample_decode(translator.model, src, generator, top_k=top_k)):
            results[row] = translator._decode_text(ids)
    return results


# ---------------------------------------------------------------- the folder


def synthetic_pairs(targets: Sequence[str], sources: Sequence[str], blocked: set[str]) -> list[tuple[str, str]]:
    """(synthetic source, real target) pairs, dropping empty sources and any pair whose
    source is a held-out sentence (a model can happen to write one)."""
    pairs = []
    for tgt, src in zip(targets, sources):
        src = normalize(src)
        if src and src not in blocked:
            pairs.append((src, tgt))
    return pairs


def write_pairs(path: str | Path, pairs: Sequence[tuple[str, str]], src_lang: str, tgt_lang: str, origin: str) -> None:
    """One JSON object a line, in the corpus's schema, with each pair's ``origin``."""
    with Path(path).open("w", encoding="utf-8") as f:
        for i, (src, tgt) in enumerate(pairs):
            row = {"id": str(i), "translation": {src_lang: src, tgt_lang: tgt}, "origin": origin}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def write_fingerprints(path: str | Path, sentences: Iterable[str]) -> None:
    """The held-out sentences as sorted short fingerprints, one a line: enough for a test
    to check every training file without shipping the evaluation text itself."""
    Path(path).write_text("".join(f"{h}\n" for h in sorted({fingerprint(s) for s in sentences})), encoding="utf-8")


def read_fingerprints(path: str | Path) -> set[str]:
    return {line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()}
