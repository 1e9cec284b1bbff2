"""What the page calls the model's languages and special tokens: the checkpoint's own names.

Every label that names a language ("Italian translation (greedy)") or a special token ("before
the model emitted [EOS]") takes the name from a :class:`Names`, so the page of a converted Marian
model says ``</s>`` where ours says ``[EOS]``, and an en→de model's page says German. The
tokens' names come from the tokenizers (the config holds only their ids), the languages' from
their codes (:func:`transformer.core.languages.language_name`).

A model of one pair has one :class:`Names` (:func:`of_translator`). A multilingual model
translates into the language each request asks for, so names travel with each trace: a trace
that names its own languages (``src_lang`` / ``tgt_lang``) gets them (:func:`of_trace`), and the
viewer's payload carries the names of its trace (``names``, :meth:`Names.payload`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from transformer.core.languages import language_name

ROLES = ("pad", "unk", "sos", "eos")
OUR_TOKENS = {"pad": "[PAD]", "unk": "[UNK]", "sos": "[SOS]", "eos": "[EOS]"}


@dataclass(frozen=True)
class Names:
    """Languages (codes) and each tokenizer's special tokens by role (``pad``, ``unk``, ``sos``,
    ``eos``; a role the tokenizer lacks, such as a Marian source's start, is None). The
    defaults are the shipped model's."""

    src_lang: str = "en"
    tgt_lang: str = "it"
    src_tokens: dict = field(default_factory=lambda: dict(OUR_TOKENS))
    tgt_tokens: dict = field(default_factory=lambda: dict(OUR_TOKENS))
    multilingual: bool = False  # the model reads and writes many languages: a link keeps the pair

    @property
    def src(self) -> str:
        """The source language's English name ("English")."""
        return language_name(self.src_lang)

    @property
    def tgt(self) -> str:
        """The target language's English name ("Italian")."""
        return language_name(self.tgt_lang)

    @property
    def eos(self) -> str:
        """The token that ends a translation: ours [EOS], Marian's </s>."""
        return self.tgt_tokens["eos"]

    @property
    def sos(self) -> str:
        """The token the decoder reads first: ours [SOS], Marian's <pad>."""
        return self.tgt_tokens["sos"]

    @property
    def unk(self) -> str:
        """The token a source word the tokenizer cannot read becomes: ours [UNK], Marian's <unk>."""
        return self.src_tokens["unk"]

    def translation(self, how: str) -> str:
        """The translation box's label: "Italian translation (greedy)"."""
        return f"{self.tgt} translation ({how})"

    def a_sentence(self) -> str:
        """ "an English sentence", "a German sentence": what the sentence box asks for."""
        return f"{article(self.src)} {self.src} sentence"

    def with_languages(self, src_lang: str | None = None, tgt_lang: str | None = None) -> Names:
        """These names with the languages a request chose (None: the checkpoint's)."""
        return dataclasses.replace(self, src_lang=src_lang or self.src_lang, tgt_lang=tgt_lang or self.tgt_lang)

    def payload(self) -> dict:
        """What the browser gets (``names`` in the viewer's payload, read by ``web/names.js``)."""
        return {
            "src_lang": self.src_lang,
            "tgt_lang": self.tgt_lang,
            "src": self.src,
            "tgt": self.tgt,
            "tokens": {"src": dict(self.src_tokens), "tgt": dict(self.tgt_tokens)},
            **({"multilingual": True} if self.multilingual else {}),
        }


OURS = Names()


def article(word: str) -> str:
    """ "an" before a name said with a vowel first ("an English"), else "a" ("a German"). A
    U said as "you" takes "a" ("a Ukrainian", "a Uyghur"); "an Urdu", "an Uzbek" do not."""
    first = word[:1].upper()
    said_with_a_vowel = first != "" and first in "AEIO" or (first == "U" and word[:2].lower() not in ("uk", "uy"))
    return "an" if said_with_a_vowel else "a"


def of_translator(tr) -> Names:
    """The names of a loaded model's languages and special tokens (``Translator``: its ``cfg``
    and tokenizers)."""
    cfg = tr.cfg

    def tokens(tok, side: str) -> dict:
        ids = {role: getattr(cfg, f"{side}_{role}_id", None) for role in ROLES}
        return {role: None if i is None else tok.id_to_token(int(i)) for role, i in ids.items()}

    multilingual = bool(getattr(cfg, "lang_ids", None))
    return Names(cfg.src_lang, cfg.tgt_lang, tokens(tr.src_tok, "src"), tokens(tr.tgt_tok, "tgt"), multilingual)


def of_trace(names: Names, trace) -> Names:
    """``names`` (the model's) with the languages of ``trace`` when it names its own: a
    multilingual model's trace says which language this request read and wrote."""
    if trace is None:
        return names
    return names.with_languages(getattr(trace, "src_lang", None), getattr(trace, "tgt_lang", None))
