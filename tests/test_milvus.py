"""The Milvus retrieval backend against a real milvus-lite gRPC server on 127.0.0.1.

The server is ``milvus-lite server`` (pymilvus's own protocol, the same client code as Milvus
Standalone), started once for the module. Outside CI the tests skip when pymilvus or
milvus-lite is not installed (``pip install 'side-citations[milvus]'``); in CI that is a failure.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_retrieval import ROWS

from side.cli import main
from side.config import load_config
from side.errors import IndexNotFoundError
from side.retrieval.backends import load_retriever
from side.retrieval.corpus import build_corpus, documents_from_jsonl, documents_from_scifact
from side.retrieval.retriever import build_index

from conftest import IN_CI, need_data


def need_milvus() -> None:
    """Skip (locally) or fail (CI) when the milvus extra is not installed."""
    missing = [name for name in ("pymilvus", "milvus_lite") if _importable(name) is False]
    if missing:
        message = f"{', '.join(missing)} not installed (pip install 'side-citations[milvus]')"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``milvus-lite server`` on a free 127.0.0.1 port: its URI, stopped after the module."""
    need_milvus()
    from pymilvus import MilvusClient

    data = tmp_path_factory.mktemp("milvus")
    port = _free_port()
    log = (data / "server.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "milvus_lite", "server", "--data-dir", str(data / "db"), "--host", "127.0.0.1",
         "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
    uri = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            MilvusClient(uri=uri, timeout=2).list_collections()
            break
        except Exception:  # noqa: BLE001 - not up yet
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"milvus-lite server did not start: {(data / 'server.log').read_text()[-2000:]}")
            time.sleep(0.3)
    yield uri
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    log.close()


@pytest.fixture(scope="module")
def jsonl(tmp_path_factory):
    path = tmp_path_factory.mktemp("docs") / "docs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def both(server, jsonl, tmp_path_factory):
    """(embedded, milvus) retrievers of one corpus in one directory (the embeddings are shared)."""
    from side.retrieval.milvus import MilvusSettings, build_milvus_index

    directory = tmp_path_factory.mktemp("index")
    corpus = build_corpus(documents_from_jsonl(jsonl), directory)
    embedded = build_index(corpus, directory, progress=False)
    milvus = build_milvus_index(corpus, directory, MilvusSettings(server, "side_test_rows"), progress=False)
    return embedded, milvus


QUERIES = [  # (sparse query, dense query)
    ("lactobacilli wild yeast", "how is sourdough bread leavened"),
    ("interest rates inflation", "felines napping all afternoon"),
    ("football penalty final", "who won the cup"),
    ("Krakatoa tsunamis", "a volcano blew up and a huge wave drowned many islanders"),
]


@pytest.mark.parametrize("mode", ["sparse", "dense", "hybrid"])
def test_milvus_finds_the_documents_the_embedded_index_finds(both, mode):
    embedded, milvus = both
    for sparse_q, dense_q in QUERIES:
        for fusion in ("union", "rrf"):
            a = [d.doc_id for d in embedded.search(sparse_q, dense_q, k=3, mode=mode, fusion=fusion)]
            b = [d.doc_id for d in milvus.search(sparse_q, dense_q, k=3, mode=mode, fusion=fusion)]
            assert b[:1] == a[:1], (sparse_q, fusion)
            if mode != "hybrid" or fusion == "union":  # union is merged by Side from Milvus's two lists
                assert b == a, (sparse_q, fusion)


def test_milvus_sparse_search_analyses_like_the_embedded_index(both):
    embedded, milvus = both
    # plural stemming ("tsunamis" -> "tsunami") and stopwords ("the") as bm25s does them
    assert [d.doc_id for d in milvus.search("the tsunami", mode="sparse")] == ["http://volcano.example"]
    assert milvus.search("the of and", mode="sparse") == embedded.search("the of and", mode="sparse") == []
    # a query of stopwords only still gets dense results in hybrid mode
    assert [d.doc_id for d in milvus.search("the", "bread", k=1)] == ["http://bread.example"]


def test_milvus_search_batch_and_passages_come_from_the_collection(both):
    _, milvus = both
    rows = milvus.search_batch(["sourdough", "central bank"], ["bread", "money"], k=2)
    assert [row[0].url for row in rows] == ["http://bread.example", "http://bank.example"]
    hit = rows[0][0]
    assert hit.best_passage.text.startswith("Sourdough bread") and hit.score > 0
    assert milvus.corpus.document(hit.doc_id).title == "Sourdough"


def test_scifact_subset_top_documents_match(server, tmp_path):
    """On the SciFact subset of tests/test_eval_retrieval.py, both backends rank alike."""
    from side.data import load_scifact_claims
    from side.retrieval.milvus import MilvusSettings, build_milvus_index

    claims = [c for c in load_scifact_claims(need_data("scifact/claims_dev.jsonl")) if c.evidence][:10]
    gold_ids = {d for c in claims for d in c.evidence}
    documents, others = [], 0
    for doc in documents_from_scifact(need_data("scifact/corpus.jsonl")):
        if doc.doc_id in gold_ids or others < 40:
            others += doc.doc_id not in gold_ids
            documents.append(doc)
    corpus = build_corpus(documents, tmp_path, words=1000, stride=500)
    embedded = build_index(corpus, tmp_path, progress=False)
    milvus = build_milvus_index(corpus, tmp_path, MilvusSettings(server, "side_test_scifact"), progress=False)
    texts = [c.claim for c in claims]
    vectors = embedded.embed(texts)
    for mode in ("sparse", "dense"):
        a = [[d.doc_id for d in row] for row in embedded.search_batch(texts, vectors, k=3, mode=mode)]
        b = [[d.doc_id for d in row] for row in milvus.search_batch(texts, vectors, k=3, mode=mode)]
        assert [r[:1] for r in b] == [r[:1] for r in a], mode
        assert sum(set(x) == set(y) for x, y in zip(a, b, strict=True)) >= 8, mode
    a = [[d.doc_id for d in row] for row in embedded.search_batch(texts, vectors, k=3, fusion="rrf")]
    b = [[d.doc_id for d in row] for row in milvus.search_batch(texts, vectors, k=3, fusion="rrf")]
    assert sum(x[0] == y[0] for x, y in zip(a, b, strict=True)) >= 9
    # union: Side's own fusion of Milvus's two lists, so the ranking and the per-list ranks agree
    a = embedded.retrieve_passages(texts, vectors, k=10, fusion="union")
    b = milvus.retrieve_passages(texts, vectors, k=10, fusion="union")
    assert sum([h.passage.passage_id for h in x[:3]] == [h.passage.passage_id for h in y[:3]]
               for x, y in zip(a, b, strict=True)) >= 9
    assert all(h.sparse_rank is not None or h.dense_rank is not None for row in b for h in row)


def test_config_selects_the_backend(server, jsonl, tmp_path, monkeypatch, capsys):
    from side.retrieval.milvus import MilvusRetriever, MilvusSettings

    out = tmp_path / "idx"
    monkeypatch.setenv("SIDE_RETRIEVAL_BACKEND", "milvus")
    monkeypatch.setenv("SIDE_RETRIEVAL_MILVUS_URI", server)
    monkeypatch.setenv("SIDE_RETRIEVAL_MILVUS_COLLECTION", "side_test_config")
    assert main(["index", "build", "--jsonl", str(jsonl), "--out", str(out)]) == 0
    assert "Milvus collection side_test_config" in capsys.readouterr().out
    assert (out / "milvus.json").is_file() and not (out / "index.json").exists()
    assert main(["search", "sourdough wild yeast", "--index", str(out), "--json", "--k", "2"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["url"] == "http://bread.example"
    assert main(["index", "info", "--out", str(out)]) == 0
    assert "collection: side_test_config" in capsys.readouterr().out
    config = load_config(environ={"SIDE_RETRIEVAL_BACKEND": "milvus", "SIDE_RETRIEVAL_MILVUS_URI": server,
                                  "SIDE_RETRIEVAL_MILVUS_COLLECTION": "side_test_config"})
    retriever = load_retriever(out, config.retrieval.backend, MilvusSettings.from_config(config))
    assert isinstance(retriever, MilvusRetriever)
    # the default backend is the embedded one, and this directory has no embedded index
    monkeypatch.delenv("SIDE_RETRIEVAL_BACKEND")
    assert load_config(environ={}).retrieval.backend == "embedded"
    assert main(["search", "sourdough", "--index", str(out)]) == 2
    assert "no index" in capsys.readouterr().err
    # ... and --backend chooses per command
    assert main(["search", "sourdough", "--index", str(out), "--backend", "milvus", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["url"] == "http://bread.example"


def test_a_local_milvus_lite_file_uri_works_too(jsonl, tmp_path, capsys):
    need_milvus()
    out, uri = tmp_path / "idx", str(tmp_path / "lite" / "side.db")
    args = ["--backend", "milvus"]
    env = {"SIDE_RETRIEVAL_MILVUS_URI": uri}
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        assert main(["index", "build", "--jsonl", str(jsonl), "--out", str(out), *args]) == 0
        capsys.readouterr()
        assert main(["search", "interest rates", "--index", str(out), "--json", "--k", "1", *args]) == 0
    assert json.loads(capsys.readouterr().out)[0]["url"] == "http://bank.example"


def test_a_missing_collection_is_index_not_found(server, both):
    from side.retrieval.milvus import MilvusRetriever, MilvusSettings

    _, milvus = both
    with pytest.raises(IndexNotFoundError, match="no Milvus collection 'side_test_absent'"):
        MilvusRetriever.load(milvus.corpus.directory, milvus=MilvusSettings(server, "side_test_absent"))


@pytest.mark.parametrize("uri", ["http://127.0.0.1:{port}", "bogus://nowhere"])
def test_a_bad_uri_is_a_one_line_error(uri, jsonl, tmp_path, monkeypatch, capsys):
    need_milvus()
    monkeypatch.setenv("SIDE_RETRIEVAL_MILVUS_URI", uri.format(port=_free_port()))
    started = time.monotonic()
    assert main(["index", "build", "--jsonl", str(jsonl), "--out", str(tmp_path), "--backend", "milvus"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("side: error: cannot connect to Milvus at ") and err.count("\n") == 1
    assert not (tmp_path / "passages.jsonl").exists()  # reported before any work
    assert time.monotonic() - started < 30


def test_ivf_pq_is_refused_on_milvus_lite_in_one_line(server, jsonl, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SIDE_RETRIEVAL_MILVUS_URI", server)
    monkeypatch.setenv("SIDE_RETRIEVAL_MILVUS_INDEX", "ivf_pq")
    assert main(["index", "build", "--jsonl", str(jsonl), "--out", str(tmp_path), "--backend", "milvus"]) == 2
    err = capsys.readouterr().err
    assert "has no IVF_PQ index" in err and err.count("\n") == 1
    assert not (tmp_path / "passages.jsonl").exists()


def test_side_imports_pymilvus_only_for_the_milvus_backend():
    code = ("import sys; import side.cli, side.cli.index, side.cli.eval_retrieval, side.pipeline, "
            "side.retrieval.retriever, side.retrieval.milvus, side.evaluation.retrieval; "
            "sys.exit(1 if {'pymilvus', 'milvus_lite'} & set(sys.modules) else 0)")
    repo = Path(__file__).resolve().parent.parent
    assert subprocess.run([sys.executable, "-c", code], cwd=repo, timeout=120).returncode == 0
