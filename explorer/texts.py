"""The few texts the app's Python side writes about a trace; the browser draws the rest.

Every chart and every per-step text is made in the browser (``explorer/web/``) from the
payload of :mod:`explorer.payload`. What stays here needs the model or is shown outside
the viewer: the What-if prefix, the label of a forced translation, and the notices about
truncation, unknown characters and text that is not English. Steps are 1-based in every
text, as in the UI.
"""

from __future__ import annotations

import re

from transformer.trace import Trace

from .payload import unk_fraction

UNK = "[UNK]"
MEANINGLESS_UNK_SHARE = 0.5  # at least this share of [UNK] subwords: the output means nothing
DROPPED_PREVIEW_CHARS = 60  # how much of the dropped text the truncation notice quotes

# Frequent function words, to tell a sentence in a neighbouring language from English.
# Words that are also common English ("a", "i", "come", "me", "no", "do", "so") are left
# out, so an English sentence never counts as foreign.
FUNCTION_WORDS = {
    "English": {"the", "an", "and", "of", "to", "is", "are", "was", "were", "in", "it", "you", "he", "she", "we",
                "they", "that", "this", "have", "has", "had", "not", "my", "your", "for", "with", "on", "at", "be",
                "will", "what", "there", "his", "her", "our", "their", "can", "do", "does", "did", "don't", "from"},
    "Italian": {"il", "lo", "la", "gli", "le", "un", "una", "uno", "di", "del", "della", "dei", "delle", "che", "è",
                "non", "sono", "ho", "hai", "ha", "abbiamo", "avete", "hanno", "per", "con", "nel", "nella", "sul",
                "sulla", "al", "alla", "dal", "dalla", "mi", "ti", "si", "ci", "vi", "questo", "questa", "quello",
                "molto", "perché", "anche", "ma", "ed", "io", "lui", "lei", "noi", "voi", "loro", "mio", "mia",
                "tuo", "tua", "suo", "sua", "sei", "siamo", "era", "ogni", "più", "cosa", "dove", "quando", "oggi",
                "sto", "stai", "sta", "va", "vado", "fa", "ciao", "grazie", "buongiorno"},
    "Spanish": {"el", "los", "las", "una", "es", "está", "están", "son", "que", "del", "por", "para", "pero", "muy",
                "yo", "tengo", "tiene", "estoy", "hoy", "dónde", "cuando", "también", "mucho", "y"},
    "French": {"le", "les", "une", "des", "est", "sont", "que", "qui", "pas", "je", "tu", "nous", "vous", "avec",
               "pour", "dans", "sur", "mon", "ma", "très", "aussi", "c'est", "j'ai", "et", "du", "au"},
    "German": {"der", "die", "das", "ein", "eine", "ist", "sind", "und", "nicht", "ich", "du", "wir", "ihr",
               "mit", "für", "auf", "mein", "meine", "sehr", "auch", "heute", "wo", "wann", "habe", "hat"},
}


def display_token(tok: str) -> str:
    """A subword as a reader sees it: the word-start marker ▁ becomes nothing."""
    return tok.replace("▁", "").strip() or tok


def whatif_prefix(trace: Trace, step: int, rank: int) -> list[int]:
    """Target ids to force: the outputs of steps 1..step-1 as decoded, then candidate
    ``rank`` (0 = most likely) at ``step`` (1-based)."""
    t = step - 1
    return [*trace.tgt_ids[1 : t + 1], int(trace.topk_ids[t][rank])]


def forced_label(trace: Trace) -> str | None:
    """"step 4 forced to 'si'" for a What-if trace, None for a plain greedy one."""
    n = len(trace.forced_prefix)
    if not n or n >= len(trace.tgt_tokens):
        return None
    return f"step {n} forced to '{display_token(trace.tgt_tokens[n])}'"


def dropped_text(src_tok, text: str, kept: int) -> str:
    """The part of ``text`` after its first ``kept`` subword tokens (what truncation cut off),
    found through the tokenizer's character offsets; "" when nothing was cut."""
    offsets = src_tok.encode(text, add_special_tokens=False).offsets
    return text[offsets[kept][0]:].strip() if len(offsets) > kept else ""


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


def truncation_notice(trace: Trace, max_source_tokens: int, dropped: str) -> str:
    total = max_source_tokens + trace.n_src_tokens_dropped
    cut = dropped if len(dropped) <= DROPPED_PREVIEW_CHARS else dropped[:DROPPED_PREVIEW_CHARS].rstrip() + "…"
    where = f", from “{cut}” on" if cut else ""
    return (f"⚠️ Too long for the model: it reads at most {max_source_tokens} subword tokens and this text has "
            f"{total}. Only the first {max_source_tokens} were translated ({trace.n_src_tokens_dropped} tokens "
            f"dropped{where}).")


def notices(trace: Trace, max_source_tokens: int, dropped: str = "") -> list[str]:
    """Warnings that belong next to the translation, in the units the model works in
    (tokens). ``dropped``: the text that truncation cut off (:func:`dropped_text`)."""
    notes = []
    if trace.truncated:
        notes.append(truncation_notice(trace, max_source_tokens, dropped))
    share = unk_fraction(trace.src_tokens, trace.special_tokens, UNK)
    lang = language_guess(trace.src_text)
    if share >= MEANINGLESS_UNK_SHARE:
        n_real = sum(t not in trace.special_tokens or t == UNK for t in trace.src_tokens)
        n_unk = trace.src_tokens.count(UNK)
        notes.append(f"⚠️ This model reads English only: {n_unk} of the {n_real} subword tokens of this text are "
                     "unknown to it ([UNK], e.g. another script or emoji), so the translation below is meaningless.")
    elif lang:
        notes.append(f"⚠️ This model reads English only, and this text looks like {lang}. It translates English into "
                     "Italian, so the translation below is meaningless: type an English sentence.")
    elif UNK in trace.src_tokens:
        notes.append("Some characters are unknown to the tokenizer and were read as [UNK].")
    if not trace.finished:
        notes.append("⚠️ Decoding stopped at the length limit before the model emitted [EOS].")
    return notes
