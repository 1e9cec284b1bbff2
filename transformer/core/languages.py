"""English names of the language codes translation models use: ``language_name("it") == "Italian"``.

A checkpoint names its languages by code (``TransformerConfig.src_lang`` / ``tgt_lang``), and the
model families this project reads write those codes in four forms:

- ISO 639-1, two letters: ``it`` (ours, OPUS-MT, M2M100), plus the few ISO 639-3 codes M2M100
  uses for languages without a two-letter one (``ast``, ``ceb``, ``ilo``) and its own ``ns``;
- M2M100's language token: ``__it__``;
- NLLB-200's ISO 639-3 code and script: ``ita_Latn``, ``zho_Hant``;
- mBART-50's code and region: ``it_IT``, ``en_XX`` (a BCP 47 tag such as ``pt-BR`` reads the same way).

The tables hold every language of M2M100 and mBART-50, every language of NLLB-200 (which
names most macrolanguages by one of their members: ``arb`` Standard Arabic, ``pes`` Western
Persian, ``zsm`` Standard Malay, each given the macrolanguage's everyday name) and the ISO
639-3 code of each two-letter one. A code they do not hold is its own name, so a label never
goes blank. Plain data and one function: nothing to install, nothing to load.
"""

from __future__ import annotations

__all__ = ["ISO_639_1", "ISO_639_3", "language_name"]

# ISO 639-1 code -> (ISO 639-3 code, English name). "ns" is not ISO: it is M2M100's code for
# Northern Sotho, which has no two-letter code.
ISO_639_1: dict[str, tuple[str, str]] = {
    "af": ("afr", "Afrikaans"),
    "ak": ("aka", "Akan"),
    "am": ("amh", "Amharic"),
    "ar": ("ara", "Arabic"),
    "as": ("asm", "Assamese"),
    "ay": ("aym", "Aymara"),
    "az": ("aze", "Azerbaijani"),
    "ba": ("bak", "Bashkir"),
    "be": ("bel", "Belarusian"),
    "bg": ("bul", "Bulgarian"),
    "bm": ("bam", "Bambara"),
    "bn": ("ben", "Bengali"),
    "bo": ("bod", "Tibetan"),
    "br": ("bre", "Breton"),
    "bs": ("bos", "Bosnian"),
    "ca": ("cat", "Catalan"),
    "cs": ("ces", "Czech"),
    "cy": ("cym", "Welsh"),
    "da": ("dan", "Danish"),
    "de": ("deu", "German"),
    "dz": ("dzo", "Dzongkha"),
    "ee": ("ewe", "Ewe"),
    "el": ("ell", "Greek"),
    "en": ("eng", "English"),
    "eo": ("epo", "Esperanto"),
    "es": ("spa", "Spanish"),
    "et": ("est", "Estonian"),
    "eu": ("eus", "Basque"),
    "fa": ("fas", "Persian"),
    "ff": ("ful", "Fula"),
    "fi": ("fin", "Finnish"),
    "fj": ("fij", "Fijian"),
    "fo": ("fao", "Faroese"),
    "fr": ("fra", "French"),
    "fy": ("fry", "Western Frisian"),
    "ga": ("gle", "Irish"),
    "gd": ("gla", "Scottish Gaelic"),
    "gl": ("glg", "Galician"),
    "gn": ("grn", "Guarani"),
    "gu": ("guj", "Gujarati"),
    "ha": ("hau", "Hausa"),
    "he": ("heb", "Hebrew"),
    "hi": ("hin", "Hindi"),
    "hr": ("hrv", "Croatian"),
    "ht": ("hat", "Haitian Creole"),
    "hu": ("hun", "Hungarian"),
    "hy": ("hye", "Armenian"),
    "id": ("ind", "Indonesian"),
    "ig": ("ibo", "Igbo"),
    "is": ("isl", "Icelandic"),
    "it": ("ita", "Italian"),
    "ja": ("jpn", "Japanese"),
    "jv": ("jav", "Javanese"),
    "ka": ("kat", "Georgian"),
    "kg": ("kon", "Kongo"),
    "ki": ("kik", "Kikuyu"),
    "kk": ("kaz", "Kazakh"),
    "km": ("khm", "Khmer"),
    "kn": ("kan", "Kannada"),
    "ko": ("kor", "Korean"),
    "kr": ("kau", "Kanuri"),
    "ks": ("kas", "Kashmiri"),
    "ku": ("kur", "Kurdish"),
    "ky": ("kir", "Kyrgyz"),
    "lb": ("ltz", "Luxembourgish"),
    "lg": ("lug", "Ganda"),
    "li": ("lim", "Limburgish"),
    "ln": ("lin", "Lingala"),
    "lo": ("lao", "Lao"),
    "lt": ("lit", "Lithuanian"),
    "lv": ("lav", "Latvian"),
    "mg": ("mlg", "Malagasy"),
    "mi": ("mri", "Maori"),
    "mk": ("mkd", "Macedonian"),
    "ml": ("mal", "Malayalam"),
    "mn": ("mon", "Mongolian"),
    "mr": ("mar", "Marathi"),
    "ms": ("msa", "Malay"),
    "mt": ("mlt", "Maltese"),
    "my": ("mya", "Burmese"),
    "nb": ("nob", "Norwegian Bokmål"),
    "ne": ("nep", "Nepali"),
    "nl": ("nld", "Dutch"),
    "nn": ("nno", "Norwegian Nynorsk"),
    "no": ("nor", "Norwegian"),
    "ns": ("nso", "Northern Sotho"),
    "ny": ("nya", "Chichewa"),
    "oc": ("oci", "Occitan"),
    "om": ("orm", "Oromo"),
    "or": ("ori", "Odia"),
    "pa": ("pan", "Punjabi"),
    "pl": ("pol", "Polish"),
    "ps": ("pus", "Pashto"),
    "pt": ("por", "Portuguese"),
    "qu": ("que", "Quechua"),
    "rn": ("run", "Rundi"),
    "ro": ("ron", "Romanian"),
    "ru": ("rus", "Russian"),
    "rw": ("kin", "Kinyarwanda"),
    "sa": ("san", "Sanskrit"),
    "sc": ("srd", "Sardinian"),
    "sd": ("snd", "Sindhi"),
    "sg": ("sag", "Sango"),
    "si": ("sin", "Sinhala"),
    "sk": ("slk", "Slovak"),
    "sl": ("slv", "Slovenian"),
    "sm": ("smo", "Samoan"),
    "sn": ("sna", "Shona"),
    "so": ("som", "Somali"),
    "sq": ("sqi", "Albanian"),
    "sr": ("srp", "Serbian"),
    "ss": ("ssw", "Swati"),
    "st": ("sot", "Southern Sotho"),
    "su": ("sun", "Sundanese"),
    "sv": ("swe", "Swedish"),
    "sw": ("swa", "Swahili"),
    "ta": ("tam", "Tamil"),
    "te": ("tel", "Telugu"),
    "tg": ("tgk", "Tajik"),
    "th": ("tha", "Thai"),
    "ti": ("tir", "Tigrinya"),
    "tk": ("tuk", "Turkmen"),
    "tl": ("tgl", "Tagalog"),
    "tn": ("tsn", "Tswana"),
    "tr": ("tur", "Turkish"),
    "ts": ("tso", "Tsonga"),
    "tt": ("tat", "Tatar"),
    "tw": ("twi", "Twi"),
    "ug": ("uig", "Uyghur"),
    "uk": ("ukr", "Ukrainian"),
    "ur": ("urd", "Urdu"),
    "uz": ("uzb", "Uzbek"),
    "vi": ("vie", "Vietnamese"),
    "wo": ("wol", "Wolof"),
    "xh": ("xho", "Xhosa"),
    "yi": ("yid", "Yiddish"),
    "yo": ("yor", "Yoruba"),
    "zh": ("zho", "Chinese"),
    "zu": ("zul", "Zulu"),
}

# ISO 639-3 codes that are no two-letter code's: the members of a macrolanguage NLLB-200 names
# it by (under the macrolanguage's everyday name where NLLB has that member alone), and the
# languages that have no two-letter code at all.
_MORE_639_3: dict[str, str] = {
    "ace": "Acehnese",
    "acm": "Mesopotamian Arabic",
    "acq": "Ta'izzi-Adeni Arabic",
    "aeb": "Tunisian Arabic",
    "ajp": "South Levantine Arabic",
    "als": "Albanian",
    "apc": "North Levantine Arabic",
    "arb": "Arabic",
    "ars": "Najdi Arabic",
    "ary": "Moroccan Arabic",
    "arz": "Egyptian Arabic",
    "ast": "Asturian",
    "awa": "Awadhi",
    "ayr": "Aymara",
    "azb": "South Azerbaijani",
    "azj": "Azerbaijani",
    "ban": "Balinese",
    "bem": "Bemba",
    "bho": "Bhojpuri",
    "bjn": "Banjar",
    "bug": "Buginese",
    "ceb": "Cebuano",
    "cjk": "Chokwe",
    "ckb": "Central Kurdish",
    "crh": "Crimean Tatar",
    "dik": "Southwestern Dinka",
    "dyu": "Dyula",
    "fon": "Fon",
    "fur": "Friulian",
    "fuv": "Fula",
    "gaz": "Oromo",
    "hne": "Chhattisgarhi",
    "ilo": "Ilocano",
    "kab": "Kabyle",
    "kac": "Jingpho",
    "kam": "Kamba",
    "kbp": "Kabiyè",
    "kea": "Kabuverdianu",
    "khk": "Mongolian",
    "kmb": "Kimbundu",
    "kmr": "Northern Kurdish",
    "knc": "Kanuri",
    "lij": "Ligurian",
    "lmo": "Lombard",
    "ltg": "Latgalian",
    "lua": "Luba-Kasai",
    "luo": "Luo",
    "lus": "Mizo",
    "lvs": "Latvian",
    "mag": "Magahi",
    "mai": "Maithili",
    "min": "Minangkabau",
    "mni": "Meitei",
    "mos": "Mossi",
    "npi": "Nepali",
    "nus": "Nuer",
    "ory": "Odia",
    "pag": "Pangasinan",
    "pap": "Papiamento",
    "pbt": "Pashto",
    "pes": "Persian",
    "plt": "Malagasy",
    "prs": "Dari",
    "quy": "Quechua",
    "sat": "Santali",
    "scn": "Sicilian",
    "shn": "Shan",
    "swh": "Swahili",
    "szl": "Silesian",
    "taq": "Tamasheq",
    "tpi": "Tok Pisin",
    "tum": "Tumbuka",
    "tzm": "Central Atlas Tamazight",
    "umb": "Umbundu",
    "uzn": "Uzbek",
    "vec": "Venetian",
    "war": "Waray",
    "ydd": "Yiddish",
    "yue": "Cantonese",
    "zsm": "Malay",
}

# ISO 639-3 code -> English name: the two-letter languages' codes and the rest
ISO_639_3: dict[str, str] = {three: name for three, name in ISO_639_1.values()} | _MORE_639_3

# the scripts a name has to say: NLLB-200 writes Chinese in two (zho_Hans, zho_Hant)
_SCRIPTS = {"hans": "Simplified", "hant": "Traditional"}
_TWO_SCRIPTS = ("zh", "zho")


def language_name(code: str) -> str:
    """The English name of a language ``code`` in any of the module's forms (``it``, ``__it__``,
    ``ita_Latn``, ``it_IT``, ``pt-BR``), case aside; the code itself when the tables do not hold
    it. Chinese says its script when the code names one: ``zho_Hant`` is "Chinese (Traditional)"."""
    if not isinstance(code, str):
        return str(code)
    tag = code.strip()
    if len(tag) > 4 and tag.startswith("__") and tag.endswith("__"):
        tag = tag[2:-2]
    base, *rest = tag.replace("-", "_").split("_")
    base = base.lower()
    name = ISO_639_1[base][1] if base in ISO_639_1 else ISO_639_3.get(base)
    if name is None:
        return code
    script = _SCRIPTS.get(rest[0].lower()) if rest and base in _TWO_SCRIPTS else None
    return f"{name} ({script})" if script else name
