"""Translation scores (transformer/core/metrics.py): the long-sentence slice is the pairs whose
source has at least N words, scored on their own with sacrebleu."""

import sacrebleu

from transformer.core.metrics import LONG_SENTENCE_WORDS, long_slice_scores, word_count


def test_words_are_counted_as_a_reader_counts_them():
    assert word_count("  Tom gave Mary\ta present. ") == 5 and word_count("") == 0


def test_the_long_slice_scores_only_the_long_sources():
    sources = ["short one.", "one two three four five.", "a b c d e f"]
    refs = ["uno.", "il gatto nero dorme sul divano.", "la casa è grande e bella."]
    hyps = ["uno.", "il gatto nero dorme sul letto.", "la casa è piccola."]
    got = long_slice_scores(sources, hyps, refs, min_words=5)
    want = sacrebleu.corpus_bleu(hyps[1:], [refs[1:]]).score
    assert got["n"] == 2 and got["min_words"] == 5 and got["bleu"] == round(want, 2)
    assert got["chrf"] == round(sacrebleu.corpus_chrf(hyps[1:], [refs[1:]]).score, 2)
    assert long_slice_scores(sources, hyps, refs, min_words=50) is None
    assert LONG_SENTENCE_WORDS == 15
