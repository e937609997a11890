"""BM25 with pruned posting lists (retrieval.bm25_max_postings): exact where nothing is cut,
within the documented bound where lists are cut, off by default, set through the config."""

from __future__ import annotations

import json

import numpy as np
import pytest

from side.config import RetrievalConfig, load_config
from side.errors import InputError
from side.retrieval.corpus import build_corpus, documents_from_jsonl
from side.retrieval.retriever import Retriever, build_index
from side.retrieval.sparse import SparseIndex, _sum_by_passage, prune_postings, score_top_k

K = 10


def zipf_texts(n: int, vocabulary: int = 80, seed: int = 0) -> list[str]:
    """``n`` texts of made-up words with Zipf-like frequencies: frequent words get long posting
    lists (longer than a small max_postings), rare ones short lists, as in real text."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}q" for i in range(vocabulary)]
    weights = 1.0 / np.arange(1, vocabulary + 1)
    weights /= weights.sum()
    return [" ".join(rng.choice(words, size=rng.integers(5, 40), p=weights)) for _ in range(n)]


@pytest.fixture(scope="module")
def corpus_texts() -> list[str]:
    return zipf_texts(400)


@pytest.fixture(scope="module")
def queries() -> list[str]:
    return zipf_texts(40, seed=1)


@pytest.fixture(scope="module")
def whole(corpus_texts) -> SparseIndex:
    return SparseIndex.build(corpus_texts)


def longest_list(index: SparseIndex) -> int:
    return int(np.diff(index.bm25.scores["indptr"]).max())


def true_scores(index: SparseIndex, query: str) -> np.ndarray:
    """bm25s's own score of every passage for ``query`` (whole lists)."""
    words = [w for w in index.tokenize([query])[0] if w in index.bm25.vocab_dict]
    return index.bm25.get_scores(words)


def test_lists_with_room_give_exactly_whole_bm25(whole, queries):
    longest = longest_list(whole)
    same = whole.with_max_postings(longest)
    assert same.pruned is None  # nothing cut: bm25s answers, unchanged
    for a, b in zip(whole.retrieve(queries, K), same.retrieve(queries, K), strict=True):
        np.testing.assert_array_equal(a, b)
    # the pruned query path itself, over uncut lists, scores as bm25s does
    postings = prune_postings(whole.bm25.scores, longest)
    assert postings.pruned_words == 0
    for query in queries:
        truth = true_scores(whole, query)
        ids, scores, bound = score_top_k(postings, [whole.bm25.vocab_dict[w] for w in whole.tokenize([query])[0]
                                                    if w in whole.bm25.vocab_dict], K)
        assert bound == 0.0
        np.testing.assert_allclose(scores, np.sort(truth)[::-1][:K], rtol=1e-5)
        np.testing.assert_allclose(truth[ids], scores, rtol=1e-5)


def test_pruned_lists_keep_each_words_best_postings(whole):
    m = 20
    postings = prune_postings(whole.bm25.scores, m)
    full = whole.bm25.scores
    lengths = np.diff(full["indptr"])
    assert postings.pruned_words == int((lengths > m).sum()) > 0
    for word in range(len(lengths)):
        kept = postings.data[postings.indptr[word]:postings.indptr[word + 1]]
        everything = full["data"][full["indptr"][word]:full["indptr"][word + 1]]
        assert len(kept) == min(m, len(everything))
        np.testing.assert_array_equal(np.sort(kept), np.sort(everything)[::-1][:len(kept)][::-1])
        if len(everything) > m:
            assert postings.dropped_max[word] == np.sort(everything)[::-1][m]


def test_pruned_top_k_within_the_documented_bound(whole, queries):
    pruned = whole.with_max_postings(20)
    assert pruned.pruned is not None
    vocab = whole.bm25.vocab_dict
    differs = 0
    for query in queries:
        truth = true_scores(whole, query)
        ids, scores, bound = score_top_k(pruned.pruned, [vocab[w] for w in whole.tokenize([query])[0] if w in vocab], K)
        # a pruned score never exceeds the true one, and falls short of it by at most the bound
        assert (scores <= truth[ids] + 1e-5).all() and (truth[ids] <= scores + bound + 1e-5).all()
        full_top = np.argsort(-truth, kind="stable")[:K]
        missing = set(full_top.tolist()) - set(ids.tolist())
        differs += bool(missing)
        for passage in missing:  # lost from the top k: its true score is within the bound of the k-th
            assert truth[passage] <= scores[-1] + bound + 1e-5
        found, values = pruned.retrieve([query], K)
        np.testing.assert_array_equal(found[0][:len(ids)], ids)
    assert differs  # the cut is real at this M: some top k changed, and stayed within the bound


def test_default_setting_leaves_an_index_unchanged(tmp_path):
    """The default configuration queries the same lists as no pruning at all."""
    default = RetrievalConfig().bm25_max_postings
    rows = [{"url": f"http://d{i}.example", "title": f"doc {i}", "text": text}
            for i, text in enumerate(zipf_texts(60, seed=2))]
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    directory = tmp_path / "index"
    build_index(build_corpus(documents_from_jsonl(jsonl), directory), directory, progress=False)
    whole = Retriever.load(directory)
    configured = Retriever.load(directory, bm25_max_postings=default)
    assert configured.sparse.pruned is None
    questions = zipf_texts(10, seed=3)
    for mode in ("sparse", "hybrid"):
        a = whole.retrieve_passages(questions, k=K, mode=mode)
        b = configured.retrieve_passages(questions, k=K, mode=mode)
        assert [[h.passage.passage_id for h in row] for row in a] == [[h.passage.passage_id for h in row] for row in b]
        assert [[h.score for h in row] for row in a] == [[h.score for h in row] for row in b]


def test_setting_read_from_toml_and_environment(tmp_path):
    toml = tmp_path / "side.toml"
    toml.write_text("[retrieval]\nbm25_max_postings = 5000\n", encoding="utf-8")
    assert load_config(toml, environ={}).retrieval.bm25_max_postings == 5000
    config = load_config(toml, environ={"SIDE_RETRIEVAL_BM25_MAX_POSTINGS": "300"})
    assert config.retrieval.bm25_max_postings == 300
    assert load_config(tmp_path / "side.toml", environ={}).retrieval.bm25_max_postings == 5000


def test_negative_setting_is_refused(whole):
    with pytest.raises(InputError):
        whole.with_max_postings(-1)


def test_loading_pruned_keeps_only_the_cut_lists(whole, queries, tmp_path):
    whole.save(tmp_path)
    loaded = SparseIndex.load(tmp_path, max_postings=20)
    assert not loaded.whole and len(loaded.bm25.scores["data"]) < len(whole.bm25.scores["data"])
    for a, b in zip(whole.with_max_postings(20).retrieve(queries, K), loaded.retrieve(queries, K), strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError):
        loaded.save(tmp_path / "again")
    roomy = SparseIndex.load(tmp_path, max_postings=longest_list(whole))
    assert roomy.whole and not isinstance(roomy.bm25.scores["data"], np.memmap)
    for a, b in zip(whole.retrieve(queries, K), roomy.retrieve(queries, K), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("num_docs", [50, 100_000])
def test_both_ways_of_summing_postings_agree(num_docs):
    """A few postings are summed after sorting, many into a corpus-long array: same sums."""
    rng = np.random.default_rng(4)
    passages = rng.integers(0, 50, 400).astype(np.int32)
    values = rng.random(400).astype(np.float32)
    found, totals = _sum_by_passage(passages, values, num_docs)
    expected = np.unique(passages)
    np.testing.assert_array_equal(found, expected)
    np.testing.assert_allclose(totals, [values[passages == p].sum() for p in expected], rtol=1e-5)
