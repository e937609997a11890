"""The embedded backend's approximate dense indexes (``retrieval.faiss_index``: hnsw, ivf, ivfpq) on
real text: SciFact titles embedded with the shipped encoder, searched with real SciFact claims, and
compared with exact (flat) search."""

from __future__ import annotations

import json

import numpy as np
import pytest

from side.cli import main
from side.data import load_scifact_claims, read_jsonl
from side.errors import InputError
from side.retrieval.corpus import Document, build_corpus
from side.retrieval.dense import DenseIndex, FaissSpec, embed_passages
from side.retrieval.encoder import shared_encoder
from side.retrieval.retriever import Retriever, build_index, read_index_meta

from conftest import need_data

#: Enough titles to train an IVF-PQ code book (side.retrieval.dense needs 1,000).
N_TITLES = 1_000
K = 10


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """SciFact titles as one-passage documents, in a directory that also caches their embeddings."""
    rows = [r for r in read_jsonl(need_data("scifact/corpus.jsonl")) if r.get("title")][:N_TITLES]
    documents = [Document(str(r["doc_id"]), f"scifact:{r['doc_id']}", "", r["title"]) for r in rows]
    return build_corpus(documents, tmp_path_factory.mktemp("titles"))


@pytest.fixture(scope="module")
def vectors(corpus) -> tuple[np.ndarray, np.ndarray]:
    """(title vectors, claim vectors), both from the shipped encoder (titles cached with the corpus)."""
    claims = [c.claim for c in load_scifact_claims(need_data("scifact/claims_dev.jsonl"))][:40]
    docs = embed_passages(corpus.passages, corpus.directory, progress=False)
    return docs, shared_encoder().encode(claims)


def _top(index: DenseIndex, queries: np.ndarray) -> list[set[int]]:
    return [set(row) for row in index.retrieve(queries, K)[0].tolist()]


def _recall(found: list[set[int]], truth: list[set[int]]) -> float:
    return float(np.mean([len(f & t) / len(t) for f, t in zip(found, truth, strict=True)]))


def test_exhaustive_settings_give_flat_results(vectors):
    """Probing every list and re-scoring with full vectors is exact search; HNSW with a beam as
    wide as the corpus finds what flat finds."""
    docs, claims = vectors
    flat = _top(DenseIndex.build(docs, "flat"), claims)
    exact_ivfpq = DenseIndex.build(docs, "ivfpq:nlist=8,nprobe=8,refine=flat,k_factor=100")
    assert _top(exact_ivfpq, claims) == flat
    wide_hnsw = DenseIndex.build(docs, f"hnsw:ef_search={N_TITLES}")
    assert _recall(_top(wide_hnsw, claims), flat) > 0.99


def test_cheaper_settings_trade_recall(vectors):
    """Fewer probed lists and PQ scores alone find less of flat's top 10 than refined, well-probed ones."""
    docs, claims = vectors
    flat = _top(DenseIndex.build(docs, "flat"), claims)
    good = _recall(_top(DenseIndex.build(docs, "ivfpq:nlist=16,nprobe=16,refine=sq8,k_factor=8"), claims), flat)
    poor = _recall(_top(DenseIndex.build(docs, "ivfpq:nlist=16,nprobe=1,refine=none,m=8"), claims), flat)
    assert poor < good


@pytest.mark.parametrize("spec", ["hnsw:m=16,ef_search=64", "ivfpq:nprobe=4", "ivf"])
def test_index_spec_persists_through_build_and_load(spec, corpus, vectors):
    """The spec (with its parameters) is what index.json records, and a reloaded retriever searches
    with the same index as the one built; building again with the same spec does nothing."""
    directory = corpus.directory
    built = build_index(corpus, directory, faiss_index=spec, progress=False)
    assert read_index_meta(directory)["faiss"] == spec
    loaded = Retriever.load(directory)
    query = "vitamin D deficiency and bone fractures"
    assert [d.doc_id for d in built.search(query, k=5, mode="dense")] == \
           [d.doc_id for d in loaded.search(query, k=5, mode="dense")]
    mtime = (directory / "dense.faiss").stat().st_mtime_ns
    build_index(corpus, directory, faiss_index=spec, progress=False)
    assert (directory / "dense.faiss").stat().st_mtime_ns == mtime


def test_too_few_vectors_for_ivfpq_search_exactly(vectors):
    docs, claims = vectors
    small = DenseIndex.build(docs[:50], "ivfpq")
    assert _top(small, claims) == _top(DenseIndex.build(docs[:50], "flat"), claims)


@pytest.mark.parametrize("spec, words", [
    ("annoy", "unknown faiss index"),
    ("hnsw:efsearch=64", "bad parameter"),
    ("hnsw:m=-1", "whole number"),
    ("ivfpq:refine=pq", "refine must be"),
])
def test_bad_specs_are_refused(spec, words):
    with pytest.raises(InputError, match=words):
        FaissSpec.parse(spec)


def test_cli_refuses_a_bad_spec_in_one_line(tmp_path, capsys):
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text(json.dumps({"url": "http://a.example", "title": "A", "text": "Some text."}) + "\n")
    code = main(["index", "build", "--jsonl", str(jsonl), "--out", str(tmp_path / "ix"), "--faiss", "hnsw:m=x"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "hnsw" in err
    assert not (tmp_path / "ix").exists()
