"""Evidence selection: how the lexical and dense signals are fused."""

from __future__ import annotations

import numpy as np

from side.verify.evidence import standardized, standardized_sum


def test_fusion_keeps_margins_that_rank_fusion_would_lose():
    # Sentence 0 is far ahead on cosine and a close second on BM25; sentence 1 wins BM25 by a
    # hair and is mediocre on cosine. Reciprocal-rank fusion ties them; score fusion must not.
    cosine = np.array([0.9, 0.3, 0.2, 0.1])
    bm25 = np.array([7.9, 8.0, 0.0, 0.0])
    fused = standardized_sum(cosine, bm25)
    assert int(np.argmax(fused)) == 0
    assert fused[1] > fused[2] > fused[3]


def test_a_signal_that_does_not_vary_has_no_say():
    cosine = np.array([0.2, 0.8, 0.5])
    no_claim_word = np.zeros(3)
    assert np.array_equal(standardized(no_claim_word), np.zeros(3))
    assert list(np.argsort(-standardized_sum(cosine, no_claim_word))) == [1, 2, 0]
    assert np.array_equal(standardized_sum(np.array([0.7]), np.array([3.0])), np.zeros(1))
