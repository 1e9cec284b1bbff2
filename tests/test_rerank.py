"""transformer.core.rerank: an ensemble of models with vocabularies of their own, by reranking
their beams. A candidate's score is the mean log-probability the reference scorer reads for it
one token at a time; the translation is the candidate with the highest sum of the models' scores."""

from __future__ import annotations

import pytest
from tests.helpers import PAIRS
from transformer import load_translator
from transformer.core.beam import translate_nbest
from transformer.core.rerank import candidate_scores, ensemble_translate
from transformer.interpret.reference import score_reference

SOURCES = [en for en, _ in PAIRS[:8]]


@pytest.fixture(scope="module")
def other(other_checkpoint):
    return load_translator(other_checkpoint)


def test_the_beams_first_is_the_beam_translation(translator):
    beams = translate_nbest(translator, SOURCES, 3, batch_size=4)
    assert [b[0] for b in beams] == translator.translate(SOURCES, beam_size=3, batch_size=4)
    assert all(1 <= len(b) <= 3 for b in beams)


def test_a_candidates_score_is_the_reference_scorers_mean_log_probability(translator):
    candidates = [[it, "il gatto."] for _, it in PAIRS[:8]]
    got = candidate_scores(translator, SOURCES, candidates, batch_size=3)
    for source, texts, scores in zip(SOURCES, candidates, got):
        for text, score in zip(texts, scores):
            assert score == pytest.approx(score_reference(translator, source, text).mean_log_prob, abs=1e-4)


def test_a_forced_language_token_is_scored_as_the_reference_scorer_scores_it(nllb_like):
    tr = load_translator(nllb_like)
    (score,) = candidate_scores(tr, ["Hello there."], [["Ciao a tutti."]])[0]
    assert score == pytest.approx(score_reference(tr, "Hello there.", "Ciao a tutti.").mean_log_prob, abs=1e-4)


def test_one_model_is_its_own_beam(translator):
    assert ensemble_translate([translator], SOURCES, beam_size=3) == translator.translate(SOURCES, beam_size=3)


def test_two_models_pick_the_candidate_of_the_highest_summed_score(translator, other):
    got = ensemble_translate([translator, other], SOURCES, beam_size=3)
    beams = [translate_nbest(tr, SOURCES, 3) for tr in (translator, other)]
    for i, source in enumerate(SOURCES):
        texts = sorted({t for beam in beams for t in beam[i]})
        totals = {
            t: sum(score_reference(tr, source, t).mean_log_prob for tr in (translator, other)) for t in texts if t
        }
        assert got[i] in texts
        assert totals[got[i]] == pytest.approx(max(totals.values()), abs=1e-4)
