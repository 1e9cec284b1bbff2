"""Subword tokenizers built with the ``tokenizers`` library.

BPE over SentencePiece-style "▁word" pieces (Metaspace pre-tokenizer), so tokens read as
text in the viewer and decode back to the sentence without guesswork. The normaliser
NFC-normalises and turns control and format characters into spaces, so any input string
encodes; characters never seen in training (most emoji) become ``[UNK]``.

With ``split_punctuation`` the pre-tokenizer also cuts punctuation and symbols off the
words they touch (``car.`` is ``▁car`` + ``.``), so "car" and "car." are the same word to
the model and the token chips read naturally; apostrophes and hyphens stay inside words
(``▁l'amico``, ``▁e-mail``), where they belong to the word in both languages. Decoding is
unchanged: a piece without ``▁`` joins the one before it.

Every tokenizer has the same four specials, trained first so their ids are fixed:
``[PAD]=0 [UNK]=1 [SOS]=2 [EOS]=3``. The ids are still read from each tokenizer and kept
per side in the config, never assumed to be shared. A run that tags its back-translated
sources adds ``SYNTHETIC_TAG`` as a fifth special (id 4).

A checkpoint converted from a published model (``transformer.cli.convert``) has that model's
tokenizer instead, written in the same JSON format: Marian's SentencePiece unigram models with
``<pad> <unk> </s>`` and no start token, M2M100's, NLLB-200's and mBART-50's with their language
tokens. Their special ids are the config's to say (``load_checkpoint`` checks that each is a
special token of its tokenizer); :func:`special_ids` reads ours or Marian's by name, for a config
made from freshly trained tokenizers.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

PAD, UNK, SOS, EOS = "[PAD]", "[UNK]", "[SOS]", "[EOS]"
SPECIAL_TOKENS = [PAD, UNK, SOS, EOS]
# prefixed to synthetic (back-translated) sources in training when a run tags them
# (Caswell et al. 2019, "Tagged Back-Translation"); real input never carries it
SYNTHETIC_TAG = "[BT]"
# punctuation and symbols, except apostrophes, hyphens and Metaspace's own "▁"
PUNCTUATION = r"[\p{P}\p{S}&&[^'’\-▁]]"


def _normalizer():
    return normalizers.Sequence(
        [
            normalizers.NFC(),
            # control (Cc) and format (Cf, e.g. zero-width, bidi marks) characters -> space
            normalizers.Replace(Regex(r"[\p{Cc}\p{Cf}]"), " "),
            normalizers.Replace(Regex(r"\s+"), " "),
            normalizers.Strip(),
        ]
    )


class VocabularyError(ValueError):
    """A vocabulary size the tokenizer cannot honour: too small for its special tokens and
    the characters of the text it learns from. ``n_characters`` is None when the size was
    refused before any text was read."""

    def __init__(self, vocab_size: int, n_specials: int, needed: int, n_characters: int | None = None) -> None:
        self.vocab_size, self.n_specials, self.needed, self.n_characters = vocab_size, n_specials, needed, n_characters
        if n_characters is None:
            message = (
                f"vocabulary size {vocab_size} is too small: the {n_specials} special tokens and one id per "
                f"distinct character need at least {needed}"
            )
        else:
            message = (
                f"vocabulary size {vocab_size} is too small for this text: its {n_specials} special tokens "
                f"and {n_characters} distinct characters need at least {needed}"
            )
        super().__init__(message)


def min_vocab_size(extra_special_tokens: Iterable[str] = ()) -> int:
    """The smallest ``vocab_size`` worth training with, known before any text is seen: the
    special tokens plus one character. The alphabet is every distinct character of the
    training text (there is no fixed byte alphabet), so a real corpus needs more;
    :func:`train_tokenizer` says how much once it has seen the text."""
    return len(SPECIAL_TOKENS) + len(list(extra_special_tokens)) + 1


def new_bpe_tokenizer(split_punctuation: bool = False) -> Tokenizer:
    tok = Tokenizer(models.BPE(unk_token=UNK))
    tok.normalizer = _normalizer()
    steps = [pre_tokenizers.Metaspace()]
    if split_punctuation:
        steps.append(pre_tokenizers.Split(Regex(PUNCTUATION), behavior="isolated"))
    steps.append(pre_tokenizers.Digits(individual_digits=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence(steps)
    tok.decoder = decoders.Metaspace()
    return tok


def train_tokenizer(
    texts: Iterable[str] | Iterable[list[str]],
    vocab_size: int,
    min_frequency: int = 2,
    length: int | None = None,
    split_punctuation: bool = False,
    extra_special_tokens: Iterable[str] = (),
) -> Tokenizer:
    """Train a BPE tokenizer on ``texts``: any iterable of sentences, or of *lists* of
    sentences (batches, e.g. :func:`transformer.training.data.text_batches`). Batches are how a large
    corpus should come in: nothing holds the whole corpus as Python strings, and the Rust
    trainer counts each batch in parallel. ``length`` (number of items, optional) only
    feeds the trainer's progress estimate. ``extra_special_tokens`` come after the four
    fixed ones (e.g. ``SYNTHETIC_TAG``).

    Raises :class:`VocabularyError` when ``vocab_size`` cannot hold the specials and every
    distinct character of the text: the trainer would silently return a larger vocabulary
    than asked for, and a model sized from the request would not match it."""
    extra = list(extra_special_tokens)
    specials = SPECIAL_TOKENS + extra
    if vocab_size < min_vocab_size(extra):
        raise VocabularyError(vocab_size, len(specials), min_vocab_size(extra))
    tok = new_bpe_tokenizer(split_punctuation)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=specials, show_progress=False
    )
    tok.train_from_iterator(texts, trainer=trainer, length=length)
    if tok.get_vocab_size() > vocab_size:  # no merges were learnt: specials + alphabet only
        need = tok.get_vocab_size()
        raise VocabularyError(vocab_size, len(specials), need, n_characters=need - len(specials))
    return tok


# Marian's (OPUS-MT's) specials: no start-of-sentence token, its decoder starts from <pad>
MARIAN_SPECIAL_TOKENS = {"pad": "<pad>", "unk": "<unk>", "eos": "</s>"}


def special_ids(tok: Tokenizer) -> dict[str, int | None]:
    """The ids of pad, unk, sos and eos in ``tok``: ours ([PAD] [UNK] [SOS] [EOS]), or
    Marian's (<pad> <unk> </s>, where sos is None: Marian has no start-of-sentence token)."""
    ids = {name: tok.token_to_id(t) for name, t in zip(("pad", "unk", "sos", "eos"), SPECIAL_TOKENS)}
    missing = [SPECIAL_TOKENS[i] for i, v in enumerate(ids.values()) if v is None]
    if missing:
        marian = {name: tok.token_to_id(t) for name, t in MARIAN_SPECIAL_TOKENS.items()}
        if None not in marian.values():
            return {"pad": marian["pad"], "unk": marian["unk"], "sos": None, "eos": marian["eos"]}
        raise ValueError(f"tokenizer lacks special tokens: {', '.join(missing)}")
    return ids


def load_tokenizer(path: str | Path) -> Tokenizer:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: tokenizer file not found")
    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as exc:  # the Rust side raises a bare Exception on bad JSON
        raise ValueError(f"{path}: not a valid tokenizers JSON file ({exc})") from exc
    return tok


def encode(tok: Tokenizer, text: str) -> list[int]:
    """Subword ids of ``text`` without specials (callers add [SOS]/[EOS] themselves)."""
    return tok.encode(text, add_special_tokens=False).ids
