"""The retrieval engine on a small corpus built in the test: sparse, dense, hybrid, persistence."""

from __future__ import annotations

import json

import numpy as np
import pytest

from side.cli import main
from side.errors import IndexNotFoundError
from side.retrieval.corpus import Document, build_corpus, documents_from_jsonl
from side.retrieval.dense import DenseIndex
from side.retrieval.encoder import shared_encoder
from side.retrieval.fusion import Hit, fuse, group_by_document
from side.retrieval.retriever import Retriever, build_index
from side.retrieval.sparse import SparseIndex, light_stem

ROWS = [
    {"url": "http://volcano.example", "title": "Krakatoa",
     "text": "The 1883 eruption of Krakatoa was one of the deadliest volcanic events in history. "
             "Tsunamis killed more than thirty thousand people on Java and Sumatra."},
    {"url": "http://cats.example", "title": "House cats",
     "text": "Domestic cats sleep for most of the day and are active around dawn and dusk."},
    {"url": "http://bank.example", "title": "Monetary policy",
     "text": "The central bank raised interest rates to bring inflation back to its target."},
    {"url": "http://football.example", "title": "World Cup",
     "text": "The national football team won the tournament after a penalty shoot-out in the final."},
    {"url": "http://bread.example", "title": "Sourdough",
     "text": "Sourdough bread is leavened by wild yeast and lactobacilli instead of baker's yeast."},
]


class CountingEncoder:
    """The real encoder, counting how many texts it was asked to embed."""

    def __init__(self) -> None:
        self.inner = shared_encoder()
        self.count = 0

    @property
    def dim(self) -> int:
        return self.inner.dim

    def encode(self, texts, **kwargs):
        self.count += len(texts)
        return self.inner.encode(texts, **kwargs)


@pytest.fixture(scope="module")
def jsonl(tmp_path_factory):
    path = tmp_path_factory.mktemp("docs") / "docs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def index_dir(jsonl, tmp_path_factory):
    directory = tmp_path_factory.mktemp("index")
    build_index(build_corpus(documents_from_jsonl(jsonl), directory), directory, progress=False)
    return directory


@pytest.fixture(scope="module")
def retriever(index_dir):
    return Retriever.load(index_dir)


def test_sparse_ranks_rare_words_first(retriever):
    hits = retriever.search("lactobacilli wild yeast", mode="sparse")
    assert hits[0].url == "http://bread.example"
    assert all(h.best_passage.passage_id >= 0 for h in hits)


def test_dense_finds_a_paraphrase(retriever):
    hits = retriever.search("xx", "a volcano blew up and a huge wave drowned many islanders", mode="dense")
    assert hits[0].url == "http://volcano.example"


def test_sparse_with_no_known_word_finds_nothing(retriever):
    assert retriever.search("qwxyzzy", mode="sparse") == []


def test_hybrid_is_the_union_of_both_lists(retriever):
    sparse_q, dense_q = "interest rates inflation", "felines napping all afternoon"
    sparse = {h.passage.passage_id for h in retriever.retrieve_passages([sparse_q], [dense_q], mode="sparse")[0]}
    dense = {h.passage.passage_id for h in retriever.retrieve_passages([sparse_q], [dense_q], mode="dense")[0]}
    for fusion in ("union", "rrf"):
        hybrid = retriever.retrieve_passages([sparse_q], [dense_q], mode="hybrid", fusion=fusion)[0]
        assert {h.passage.passage_id for h in hybrid} == sparse | dense
        assert [h.score for h in hybrid] == sorted((h.score for h in hybrid), reverse=True)
    top = retriever.search(sparse_q, dense_q, k=2, mode="hybrid")
    assert {d.url for d in top} == {"http://bank.example", "http://cats.example"}


def test_save_load_round_trip_gives_identical_results(index_dir, retriever):
    again = Retriever.load(index_dir)
    for mode in ("sparse", "dense", "hybrid"):
        a = retriever.search("football penalty final", "who won the cup", k=5, mode=mode)
        b = again.search("football penalty final", "who won the cup", k=5, mode=mode)
        assert [d.to_dict() for d in a] == [d.to_dict() for d in b]
    assert retriever.passages_for(a[0].doc_id)[0].doc_id == a[0].doc_id


def test_incremental_build_embeds_only_new_passages(jsonl, tmp_path):
    encoder = CountingEncoder()
    corpus = build_corpus(documents_from_jsonl(jsonl), tmp_path)
    build_index(corpus, tmp_path, encoder=encoder, progress=False)
    assert encoder.count == len(corpus.passages)
    build_index(build_corpus(documents_from_jsonl(jsonl), tmp_path), tmp_path, encoder=encoder, progress=False)
    assert encoder.count == len(corpus.passages)
    extra = Document("new", "http://new.example", "Tides", "The moon's gravity raises the ocean tides twice a day.")
    grown = build_corpus([extra], tmp_path)
    retriever = build_index(grown, tmp_path, encoder=encoder, progress=False)
    assert encoder.count == len(corpus.passages) + 1
    assert np.load(tmp_path / "embeddings.npy").shape == (len(grown.passages), encoder.dim)
    assert retriever.search("ocean tides moon", mode="sparse")[0].doc_id == "new"


def test_missing_index_raises(tmp_path):
    with pytest.raises(IndexNotFoundError):
        Retriever.load(tmp_path)


@pytest.mark.parametrize("kind", ["ivf", "hnsw"])
def test_approximate_faiss_indexes_find_the_nearest(kind, tmp_path):
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(400, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = DenseIndex.build(vectors, kind)
    index.save(tmp_path / "d.faiss")
    ids, scores = DenseIndex.load(tmp_path / "d.faiss", kind).retrieve(vectors[:5], k=3)
    assert ids.shape == scores.shape == (5, 3)
    assert (ids[:, 0] == np.arange(5)).mean() >= 0.8


def test_sparse_index_shapes_and_round_trip(tmp_path):
    index = SparseIndex.build(["red apples and pears", "green pears", "blue sky"])
    ids, scores = index.retrieve(["pears", "apples", "nothing here"], k=2)
    assert ids.shape == scores.shape == (3, 2)
    assert ids[1, 0] == 0 and ids[1, 1] == -1 and (ids[2] == -1).all()
    index.save(tmp_path)
    again = SparseIndex.load(tmp_path)
    assert (again.retrieve(["pears"], 2)[0] == index.retrieve(["pears"], 2)[0]).all()
    assert light_stem("pears") == "pear" and light_stem("studies") == "study" and light_stem("glass") == "glass"


def test_sparse_index_of_stopwords_only_matches_nothing(tmp_path):
    index = SparseIndex.build(["the a of", "and"])
    assert (index.retrieve(["the"], 2)[0] == -1).all()
    index.save(tmp_path)
    assert (SparseIndex.load(tmp_path).retrieve(["anything"], 2)[0] == -1).all()


def test_fusions_order_and_rank_bookkeeping():
    sparse = (np.array([1, 2, -1]), np.array([5.0, 1.0, 0.0]))
    dense = (np.array([2, 3, 4]), np.array([0.9, 0.5, 0.1]))
    rrf = fuse(sparse, dense, "rrf")
    assert rrf[0][0] == 2 and rrf[0][2:] == (2, 1)
    union = fuse(sparse, dense, "union")
    assert {p for p, *_ in union} == {1, 2, 3, 4}
    assert union[-1][0] == 4 and union[-1][1] == 0.0


def test_group_by_document_scores_by_best_passage(retriever):
    passages = retriever.corpus.passages
    hits = [Hit(passages[0], 0.2), Hit(passages[1], 0.9), Hit(passages[0], 0.1)]
    docs = group_by_document(hits)
    assert docs[0].doc_id == passages[1].doc_id and docs[0].score == 0.9
    assert docs[1].score == 0.2 and len(docs[1].passages) == 2


def test_cli_build_search_and_info(jsonl, tmp_path, capsys):
    out = tmp_path / "idx"
    assert main(["index", "build", "--jsonl", str(jsonl), "--out", str(out)]) == 0
    assert "5 documents" in capsys.readouterr().out
    assert main(["search", "sourdough wild yeast", "--index", str(out), "--json", "--k", "3"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert results[0]["url"] == "http://bread.example" and len(results) <= 3
    assert main(["search", "central bank rates", "--index", str(out), "--mode", "sparse"]) == 0
    assert "Monetary policy" in capsys.readouterr().out
    assert main(["index", "info", "--out", str(out)]) == 0
    assert "n_passages: 5" in capsys.readouterr().out


def test_cli_search_without_index_is_a_one_line_error(tmp_path, capsys):
    assert main(["search", "anything", "--index", str(tmp_path)]) == 2
    assert "no index" in capsys.readouterr().err


def test_demo_truncation_keeps_whole_sentences():
    from side.cli.index import truncate_document

    doc = Document("d", "u", "t", "", tuple(f"Sentence number {i} has five words." for i in range(10)))
    cut = truncate_document(doc, 12)
    assert cut.sentences == doc.sentences[:2] and cut.doc_id == "d"
