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


def whole_vocabulary_bm25(query: str, sentences: list[str]):
    """BM25 as bm25s gives it over the sentences' whole vocabulary (bm25_scores before it kept
    only the query's tokens apart)."""
    import numpy as np

    from side.retrieval.sparse import quiet_bm25s

    bm25s = quiet_bm25s()
    tokens = bm25s.tokenize(sentences, stopwords="en", show_progress=False)
    query_tokens = [t for t in bm25s.tokenize([query], stopwords="en", show_progress=False, return_ids=False)[0]
                    if t in tokens.vocab]
    if not query_tokens:
        return np.zeros(len(sentences), dtype=np.float32)
    retriever = bm25s.BM25(k1=1.2, b=0.75)
    retriever.index(tokens, show_progress=False)
    return retriever.get_scores(query_tokens).astype(np.float32)


def test_bm25_over_the_query_terms_alone_gives_the_whole_vocabularys_scores():
    """Every WiCE dev claim against its page's sentences (and a claim repeating a word, and one
    whose words no sentence has): the same float32 scores, bit for bit."""
    import numpy as np

    from side.data import WICE_META_PREFIX, load_wice
    from side.verify.evidence import bm25_scores

    from conftest import need_data

    rows = load_wice(need_data("wice") / "claim_dev.jsonl")
    cases = [(row.claim, [s for s in row.evidence if not s.startswith(WICE_META_PREFIX)]) for row in rows]
    cases = [(claim, sentences) for claim, sentences in cases if sentences]
    assert len(cases) > 100
    claim, sentences = cases[0]
    cases += [(claim + " " + " ".join(claim.split()[-1:] * 3), sentences), ("zyxxy quorble", sentences)]
    differ = [n for n, (claim, sentences) in enumerate(cases)
              if not np.array_equal(bm25_scores(claim, sentences), whole_vocabulary_bm25(claim, sentences))]
    assert not differ
    assert any(bm25_scores(claim, sentences).any() for claim, sentences in cases)


def test_bm25_over_the_query_terms_alone_counts_sentences_without_a_token_as_before():
    """Sentences of stopwords, punctuation or nothing are documents without a token: the same
    scores, bit for bit, for claims with repeated, shared and missing words."""
    import numpy as np

    from side.verify.evidence import bm25_scores

    sentences = ["The cat sat on the mat.", "a an the", "!", "", "Cats and dogs: the cat, the dog."]
    for query in ("the cat", "cat dog mat", "mat mat cat", "zebra"):
        ours = bm25_scores(query, sentences)
        assert np.array_equal(ours, whole_vocabulary_bm25(query, sentences)), query
    assert bm25_scores("mat mat cat", sentences)[0] > bm25_scores("cat", sentences)[0] > 0
