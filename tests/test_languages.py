"""The English names of language codes (``transformer.core.languages``), in every form the model
families write them, and every code those families use."""

from __future__ import annotations

import pytest

from transformer.core.languages import ISO_639_1, ISO_639_3, language_name


@pytest.mark.parametrize(
    "code, name",
    [
        ("it", "Italian"),  # ours, OPUS-MT and M2M100
        ("en", "English"),
        ("__it__", "Italian"),  # M2M100's language token
        ("__de__", "German"),
        ("ita_Latn", "Italian"),  # NLLB-200: ISO 639-3 and script
        ("deu_Latn", "German"),
        ("arb_Arab", "Arabic"),  # a macrolanguage named by one of its members
        ("zsm_Latn", "Malay"),
        ("zho_Hans", "Chinese (Simplified)"),  # one language in two scripts says which
        ("zho_Hant", "Chinese (Traditional)"),
        ("it_IT", "Italian"),  # mBART-50: code and region
        ("en_XX", "English"),
        ("zh_CN", "Chinese"),
        ("pt-BR", "Portuguese"),  # a BCP 47 tag
        ("IT", "Italian"),
        ("ns", "Northern Sotho"),  # M2M100's own code
        ("ceb", "Cebuano"),  # three letters in M2M100 too
        ("ita", "Italian"),
    ],
)
def test_every_form_of_a_code_names_its_language(code, name):
    assert language_name(code) == name


@pytest.mark.parametrize("code", ["xx", "qqq_Latn", "__zz__", "", "x"])
def test_an_unknown_code_is_its_own_name(code):
    assert language_name(code) == code


def test_every_two_letter_code_has_its_three_letter_one():
    assert all(len(two) == 2 and len(three) == 3 and name for two, (three, name) in ISO_639_1.items())
    for three, name in ISO_639_1.values():
        assert language_name(three) == name == ISO_639_3[three]


def test_every_language_of_m2m100_nllb_and_mbart50_is_named():
    """The codes as the tokenizers of the three families list them (transformers holds the lists)."""
    pytest.importorskip("transformers")
    from transformers.models.m2m_100.tokenization_m2m_100 import FAIRSEQ_LANGUAGE_CODES as M2M
    from transformers.models.mbart50.tokenization_mbart50 import FAIRSEQ_LANGUAGE_CODES as MBART
    from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES as NLLB

    codes = [*M2M["m2m100"], *(f"__{c}__" for c in M2M["m2m100"]), *NLLB, *MBART]
    assert len(codes) > 350
    unnamed = [c for c in codes if language_name(c) == c]
    assert unnamed == []
    # a language both write names the same in each family's form
    assert {language_name(c) for c in ("it", "__it__", "ita_Latn", "it_IT")} == {"Italian"}
