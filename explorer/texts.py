"""The few texts the app's Python side writes about a trace; the browser draws the rest.

Every chart and every per-step text is made in the browser (``explorer/web/``) from the
payload of :mod:`explorer.payload`. What stays here needs the model or is shown outside
the viewer: the What-if prefix, the label of a forced translation, and the notices about
truncation, unknown characters (emoji among them) and text that is not English (another
language, or no language at all, such as keyboard mashing). Steps are 1-based in every text,
as in the UI.
"""

from __future__ import annotations

import functools
import gzip
import html
import re
from pathlib import Path

from transformer.core.metrics import LONG_SENTENCE_WORDS, word_count
from transformer.core.trace import Trace

from .names import OURS, Names
from .payload import unk_fraction

MEANINGLESS_UNK_SHARE = 0.5  # at least this share of unknown subwords: the output means nothing
DROPPED_PREVIEW_CHARS = 60  # how much of the dropped text the truncation notice quotes

# Frequent function words, to tell a sentence in a neighbouring language from English.
# Words that are also common English ("a", "i", "come", "me", "no", "do", "so") are left
# out, so an English sentence never counts as foreign.
FUNCTION_WORDS = {
    "English": {
        "the",
        "an",
        "and",
        "of",
        "to",
        "is",
        "are",
        "was",
        "were",
        "in",
        "it",
        "you",
        "he",
        "she",
        "we",
        "they",
        "that",
        "this",
        "have",
        "has",
        "had",
        "not",
        "my",
        "your",
        "for",
        "with",
        "on",
        "at",
        "be",
        "will",
        "what",
        "there",
        "his",
        "her",
        "our",
        "their",
        "can",
        "do",
        "does",
        "did",
        "don't",
        "from",
    },
    "Italian": {
        "il",
        "lo",
        "la",
        "gli",
        "le",
        "un",
        "una",
        "uno",
        "di",
        "del",
        "della",
        "dei",
        "delle",
        "che",
        "è",
        "non",
        "sono",
        "ho",
        "hai",
        "ha",
        "abbiamo",
        "avete",
        "hanno",
        "per",
        "con",
        "nel",
        "nella",
        "sul",
        "sulla",
        "al",
        "alla",
        "dal",
        "dalla",
        "mi",
        "ti",
        "si",
        "ci",
        "vi",
        "questo",
        "questa",
        "quello",
        "molto",
        "perché",
        "anche",
        "ma",
        "ed",
        "io",
        "lui",
        "lei",
        "noi",
        "voi",
        "loro",
        "mio",
        "mia",
        "tuo",
        "tua",
        "suo",
        "sua",
        "sei",
        "siamo",
        "era",
        "ogni",
        "più",
        "cosa",
        "dove",
        "quando",
        "oggi",
        "sto",
        "stai",
        "sta",
        "va",
        "vado",
        "fa",
        "ciao",
        "grazie",
        "buongiorno",
    },
    "Spanish": {
        "el",
        "los",
        "las",
        "una",
        "es",
        "está",
        "están",
        "son",
        "que",
        "del",
        "por",
        "para",
        "pero",
        "muy",
        "yo",
        "tengo",
        "tiene",
        "estoy",
        "hoy",
        "dónde",
        "cuando",
        "también",
        "mucho",
        "y",
    },
    "French": {
        "le",
        "les",
        "une",
        "des",
        "est",
        "sont",
        "que",
        "qui",
        "pas",
        "je",
        "tu",
        "nous",
        "vous",
        "avec",
        "pour",
        "dans",
        "sur",
        "mon",
        "ma",
        "très",
        "aussi",
        "c'est",
        "j'ai",
        "et",
        "du",
        "au",
    },
    "German": {
        "der",
        "die",
        "das",
        "ein",
        "eine",
        "ist",
        "sind",
        "und",
        "nicht",
        "ich",
        "du",
        "wir",
        "ihr",
        "mit",
        "für",
        "auf",
        "mein",
        "meine",
        "sehr",
        "auch",
        "heute",
        "wo",
        "wann",
        "habe",
        "hat",
    },
}


# Markup and control characters are not text the model can read: they are taken out before
# tokenising (clean_input). Script and style elements go with their content (code, not words).
MARKUP = re.compile(
    r"<(script|style)\b[^>]*>.*?(</\1\s*>|$)|<!--.*?(-->|$)|</?[A-Za-z][^<>]*>|<![^<>]*>", re.IGNORECASE | re.DOTALL
)
# terminal colour codes and the like; other control characters, and the bidi overrides
ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# a word that reads as English-like text: letters (joined by ' . -), with punctuation around
WORDLIKE = re.compile(r"[(\"'“‘\[]*[^\W\d_]+(?:[.'’-][^\W\d_]+)*[.,!?;:)\"'”’\]…]*")
MOSTLY_NOT_WORDS = 0.5  # under this share of word-like words, the text is code, numbers or symbols

# The English words of the project's own corpus (data/build_english_words.py writes the list):
# text most of whose words are not in it is keyboard mashing, random letters or babble, which
# the model still turns into fluent-looking Italian.
ENGLISH_WORDS = Path(__file__).resolve().parent / "english_words.txt.gz"
MOSTLY_NOT_ENGLISH = 0.5  # over this share of words not in the list, the text is not English
# a word: letters, joined by an apostrophe, a dot (U.S.) or a hyphen (e-mail); digits are not words
WORD = re.compile(r"[^\W\d_]+(?:['.-][^\W\d_]+)*")
# endings an inflected or derived word may add to a listed one ("debatable", "balding",
# "stopped"): (ending, what the listed word may end with instead)
ENDINGS = (
    ("'s", ("",)),
    ("s", ("",)),
    ("es", ("",)),
    ("ies", ("y",)),
    ("ed", ("", "e")),
    ("ied", ("y",)),
    ("ing", ("", "e")),
    ("ly", ("", "le")),
    ("ily", ("y",)),
    ("er", ("", "e")),
    ("ers", ("", "e")),
    ("est", ("", "e")),
    ("able", ("", "e", "ate")),
    ("ness", ("",)),
    ("ment", ("",)),
    ("ist", ("", "y")),
    ("ists", ("", "y")),
    ("ful", ("",)),
    ("less", ("",)),
)
PREFIXES = ("un", "re", "dis", "mis", "non", "over", "pre")  # "misinformed"
# a syllable said again and again ("hahaha", "lololo", "zzzzzz"): laughter or babble, not a word
# to translate, even where the corpus's word list holds it
BABBLE = re.compile(r"([^\W\d_]{1,3})\1{2,}")
# emoji: pictographs and symbols, and the characters that join or modify them (zero-width joiner,
# variation selectors, keycap, tags). The tokenizer reads them as unknown or not at all; they
# are said apart, and the junk checks judge the words around them.
EMOJI = re.compile(
    "[\U0001f000-\U0001faff\u2300-\u23ff\u2600-\u27bf\u2b00-\u2bff\u200d\ufe0e\ufe0f\u20e3\U000e0020-\U000e007f]+"
)
EMOJI_NAMED = 5  # how many different emoji the notice quotes


def clean_input(text: str) -> tuple[str, str]:
    """``text`` with markup (HTML tags, comments, script and style elements) and control
    characters (terminal escape codes, bidi overrides) taken out and the spaces left behind
    collapsed, and the notice that says what was taken out; text with none of them comes
    back as it is, with notice "". Raises ValueError when nothing readable is left, in words
    for the visitor."""
    taken = []
    unescaped = html.unescape(text) if "&" in text else text
    without_markup = MARKUP.sub(" ", unescaped)
    if without_markup != unescaped:
        taken.append("markup (HTML tags)")
    without_controls = CONTROL.sub(" ", ANSI.sub(" ", without_markup))
    if without_controls != without_markup:
        taken.append("control characters")
    if not taken:
        return text, ""  # text with nothing to take out is read exactly as typed
    clean = " ".join(without_controls.split())  # the spaces left where things were taken out
    if not clean:
        raise ValueError(f"That text is only {' and '.join(taken)}: there is no English sentence in it to translate.")
    return clean, f"Taken out before translating: {' and '.join(taken)}. What the model read: “{clean}”"


def word_share(text: str) -> float:
    """The share of ``text``'s words (runs without spaces) that read as words: letters,
    maybe joined by an apostrophe, a hyphen or a dot, with punctuation around. Code, numbers,
    addresses and symbols score low; a sentence in any alphabet scores high (its language is
    :func:`language_guess`'s or the tokenizer's business)."""
    words = text.split()
    return sum(bool(WORDLIKE.fullmatch(w)) for w in words) / len(words) if words else 0.0


def english_word_list(text: str) -> list[str]:
    """The words of ``text`` as the English word list holds them: lower case, typographic
    apostrophes made plain, numbers and symbols left out."""
    return WORD.findall(text.lower().replace("’", "'"))


@functools.cache
def english_words() -> frozenset[str]:
    """The shipped list of English words (read once: tens of milliseconds)."""
    with gzip.open(ENGLISH_WORDS, "rt", encoding="utf-8") as f:
        return frozenset(f.read().split())


def is_english(word: str) -> bool:
    """Whether ``word`` (as :func:`english_word_list` gives it) is in the list, or is a listed
    word with a common ending or prefix added, or joins listed words with hyphens."""
    known = english_words()
    if BABBLE.fullmatch(word):
        return False
    if word in known:
        return True
    if "-" in word:
        return all(is_english(part) for part in word.split("-"))
    for ending, instead in ENDINGS:
        stem = word[: -len(ending)]
        if word.endswith(ending) and len(stem) >= 3:
            if any(stem + e in known for e in instead):
                return True
            if stem[-1] == stem[-2] and stem[:-1] in known:  # stopped, bigger
                return True
    return any(word.startswith(p) and len(word) - len(p) >= 4 and word[len(p) :] in known for p in PREFIXES)


def not_english_share(text: str) -> float:
    """The share of ``text``'s words that are not English words (:func:`is_english`); 0 for
    text without words (numbers and symbols are :func:`word_share`'s business)."""
    words = english_word_list(text)
    return sum(not is_english(w) for w in words) / len(words) if words else 0.0


def display_token(tok: str) -> str:
    """A subword as a reader sees it: the word-start marker ▁ becomes nothing."""
    return tok.replace("▁", "").strip() or tok


def whatif_prefix(trace: Trace, step: int, rank: int) -> list[int]:
    """Target ids to force: the outputs of steps 1..step-1 as decoded, then candidate
    ``rank`` (0 = most likely) at ``step`` (1-based)."""
    t = step - 1
    return [*trace.tgt_ids[1 : t + 1], int(trace.topk_ids[t][rank])]


def forced_label(trace: Trace) -> str | None:
    """ "step 4 forced to 'si'" for a What-if trace, None for a plain greedy one."""
    n = len(trace.forced_prefix)
    if not n or n >= len(trace.tgt_tokens):
        return None
    return f"step {n} forced to '{display_token(trace.tgt_tokens[n])}'"


def dropped_text(src_tok, text: str, kept: int) -> str:
    """The part of ``text`` after its first ``kept`` subword tokens (what truncation cut off),
    found through the tokenizer's character offsets; "" when nothing was cut."""
    offsets = src_tok.encode(text, add_special_tokens=False).offsets
    return text[offsets[kept][0] :].strip() if len(offsets) > kept else ""


def language_guess(text: str) -> str | None:
    """The language ``text`` seems to be written in when that is not English, else None.

    Counts frequent function words of English and of a few neighbouring languages; the
    text is foreign when it has some of another language's and no more of English's.
    Most sentences in another script are caught earlier, as unknown characters."""
    words = re.findall(r"[^\W\d_]+(?:'[^\W\d_]+)?", text.lower())
    hits = {lang: sum(w in vocab for w in words) for lang, vocab in FUNCTION_WORDS.items()}
    english = hits.pop("English")
    lang, n = max(hits.items(), key=lambda kv: kv[1])  # ties go to the first listed: Italian
    return lang if n >= 1 and (english == 0 or n > english + 1) else None


def read_part(text: str, dropped: str) -> str:
    """The part of ``text`` the model read: what comes before ``dropped`` (:func:`dropped_text`,
    a suffix of ``text`` but for the spaces around it); all of ``text`` when nothing was dropped."""
    return text[: text.rfind(dropped)] if dropped else text


def truncation_notice(trace: Trace, max_source_tokens: int, dropped: str) -> str:
    """What the token cap cut off, in tokens and, when ``dropped`` says where the cut is, in
    words: a word cut in two counts as read."""
    total = max_source_tokens + trace.n_src_tokens_dropped
    cut = dropped if len(dropped) <= DROPPED_PREVIEW_CHARS else dropped[:DROPPED_PREVIEW_CHARS].rstrip() + "…"
    where = f", from “{cut}” on" if cut else ""
    words = ""
    if dropped:
        n, read = word_count(trace.src_text), word_count(read_part(trace.src_text, dropped))
        words = f": {read} of its {n} words were read and {n - read} were dropped"
    return (
        f"⚠️ Too long for the model: it reads at most {max_source_tokens} subword tokens and this text has "
        f"{total}. Only the first {max_source_tokens} were translated{words} ({trace.n_src_tokens_dropped} tokens "
        f"dropped{where})."
    )


def long_sentence_notice(text: str, test: dict | None, cut: bool = False) -> str | None:
    """A warning for a sentence as long as the ones the model was measured to translate badly,
    with that measurement: ``test`` is the checkpoint's ``metrics.json`` test entry, whose
    ``long`` slice ``python -m transformer.cli.evaluate --save`` records. None for a shorter text.
    ``cut``: ``text`` is the part of a longer text that the model read (its words are counted as read)."""
    long = (test or {}).get("long")
    least = long["min_words"] if long else LONG_SENTENCE_WORDS
    words = word_count(text)
    if words < least:
        return None
    head = (
        f"⚠️ A long sentence ({words} words{' read' if cut else ''}). This model learned from short everyday sentences"
    )
    if not long:
        return head + ", so expect mistakes in this translation."
    return (
        f"{head}: on the {long['n']} test sentences of {least} words or more it scores {long['bleu']:.1f} BLEU "
        f"(chrF {long['chrf']:.1f}), against {test['bleu']:.1f} on the whole test set, so expect mistakes in "
        "this translation."
    )


def emoji_notice(text: str, src_tok, unk: str) -> str | None:
    """What became of the emoji of ``text``, quoted (each run once): turned into ``unk`` or left
    out by the tokenizer. None when it knows them all, or there are none."""
    runs = list(dict.fromkeys(EMOJI.findall(text)))
    if not runs:
        return None
    tokens = src_tok.encode(" ".join(runs), add_special_tokens=False).tokens
    quoted = " ".join(runs[:EMOJI_NAMED]) + (" …" if len(runs) > EMOJI_NAMED else "")
    if unk in tokens:  # the model reads a token it knows nothing about, and may still write a word for it
        fate = (
            f"turns them into {unk}, which means nothing to the model (an odd word in the translation may come from it)"
        )
    elif all(not t.strip("▁ ") for t in tokens):
        fate = "leaves them out, so the model never sees them"
    else:
        return None
    return f"The emoji {quoted} are not read: the tokenizer {fate}."


def meaningless_notice(trace: Trace, text: str, share: float, names: Names = OURS) -> str | None:
    """Why the translation of ``text`` (the trace's text, or its words without its emoji) means
    nothing, if it does: ``share`` of its subwords are unknown, or it looks like another language,
    or it is mostly not words, or most of its words are not English. ``names``: the model's
    languages; the checks that know English words alone run where the model reads English."""
    unk = trace.unk_token  # [UNK], or a converted Marian model's <unk>
    src, sentence, english = names.src, names.a_sentence(), names.src_lang == "en"
    lang = language_guess(text) if english else None
    if share >= MEANINGLESS_UNK_SHARE:
        n_real = sum(t not in trace.special_tokens or t == unk for t in trace.src_tokens)
        n_unk = trace.src_tokens.count(unk)
        return (
            f"⚠️ This model reads {src} only: {n_unk} of the {n_real} subword tokens of this text are "
            f"unknown to it ({unk}, e.g. another script or emoji), so the translation below is meaningless."
        )
    if lang:
        return (
            f"⚠️ This model reads {src} only, and this text looks like {lang}. It translates {src} into "
            f"{names.tgt}, so the translation below is meaningless: type {sentence}."
        )
    if word_share(text) < MOSTLY_NOT_WORDS:
        return (
            f"⚠️ This model reads {src} sentences, and most of this text is not words (code, numbers, "
            f"symbols or markup), so the translation below is meaningless: type {sentence}."
        )
    if english and not_english_share(text) > MOSTLY_NOT_ENGLISH:
        return (
            "⚠️ This model reads English sentences, and most words of this text are not English (random letters "
            "or keyboard mashing?), so the translation below is meaningless: type an English sentence."
        )
    return None


def notices(
    trace: Trace, max_source_tokens: int, dropped: str = "", test: dict | None = None, src_tok=None, names: Names = OURS
) -> list[str]:
    """Warnings that belong next to the translation, in the units the model works in
    (tokens). ``dropped``: the text that truncation cut off (:func:`dropped_text`), which the
    notice quotes and counts in words; ``test``: the checkpoint's test scores (``metrics.json``),
    for the long-sentence warning; ``src_tok``: the source tokenizer, which reads the words
    without the emoji, so that emoji do not count against the words around them (without it
    they count as unknown characters); ``names``: the model's languages and special tokens."""
    notes = []
    if trace.truncated:
        notes.append(truncation_notice(trace, max_source_tokens, dropped))
    long = long_sentence_notice(read_part(trace.src_text, dropped), test, cut=bool(dropped))
    if long:
        notes.append(long)
    unk = trace.unk_token
    text, share, unknown = (
        trace.src_text,
        unk_fraction(trace.src_tokens, trace.special_tokens, unk),
        unk in trace.src_tokens,
    )
    emoji = None
    if src_tok is not None and EMOJI.search(text):
        words = " ".join(EMOJI.sub(" ", text).split())
        tokens = src_tok.encode(words, add_special_tokens=False).tokens if words else []
        if tokens:  # words besides the emoji: they are judged alone (emoji alone stay unknown characters)
            text, share, unknown = words, tokens.count(unk) / len(tokens), unk in tokens
            emoji = emoji_notice(trace.src_text, src_tok, unk)
    meaningless = meaningless_notice(trace, text, share, names)
    if meaningless:
        notes.append(meaningless)
    else:
        notes.extend([emoji] if emoji else [])
        if unknown:
            other = " other" if emoji else ""
            notes.append(f"Some{other} characters are unknown to the tokenizer and were read as {unk}.")
    if not trace.finished:
        notes.append(f"⚠️ Decoding stopped at the length limit before the model emitted {names.eos}.")
    return notes
