"""The corpus: passaging, incremental rebuilds, and the document loaders."""

from __future__ import annotations

import gzip
import json
from itertools import pairwise
from pathlib import Path

import pytest

from side.errors import IndexNotFoundError, InputError
from side.retrieval.corpus import (
    Corpus,
    Document,
    Passage,
    build_corpus,
    documents_from_jsonl,
    documents_from_scifact,
    documents_from_web_html,
    documents_from_wice,
)


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def long_text(topic: str, n: int) -> str:
    return " ".join(f"Sentence {i} talks about {topic} in some detail with several more words." for i in range(n))


DOCS = [
    Document("a", "http://a.example", "Alpha", long_text("alpha particles", 40)),
    Document("b", "http://b.example", "Beta", long_text("beta decay", 5)),
]


def test_passages_cover_every_sentence_in_order(tmp_path):
    corpus = build_corpus(DOCS, tmp_path, words=50, stride=25)
    assert [p.passage_id for p in corpus.passages] == list(range(len(corpus.passages)))
    alpha = corpus.passages_for("a")
    assert len(alpha) > 2 and alpha[0].sentence_start == 0
    assert alpha[-1].sentence_end == 40
    assert all(a.sentence_start < b.sentence_start < a.sentence_end for a, b in pairwise(alpha))
    assert Corpus.load(tmp_path).passages == corpus.passages


def test_rebuild_with_same_documents_does_no_work(tmp_path):
    first = build_corpus(DOCS, tmp_path)
    stamp = (tmp_path / "passages.jsonl").stat().st_mtime_ns
    again = build_corpus(DOCS, tmp_path)
    assert again.fingerprint == first.fingerprint
    assert (tmp_path / "passages.jsonl").stat().st_mtime_ns == stamp


def test_new_documents_are_appended_and_changed_ones_repassaged(tmp_path):
    first = build_corpus(DOCS, tmp_path)
    new = Document("c", "http://c.example", "Gamma", long_text("gamma rays", 3))
    grown = build_corpus([new], tmp_path)
    assert [d.doc_id for d in grown.documents] == ["a", "b", "c"]
    assert grown.passages[: len(first.passages)] == first.passages
    changed = Document("b", "http://b.example", "Beta", "Completely different text now.")
    after = build_corpus([changed], tmp_path)
    assert [p.text for p in after.passages_for("b")] == ["Completely different text now."]
    assert after.passages_for("a") == first.passages_for("a")
    assert after.fingerprint != grown.fingerprint


def test_changed_settings_rebuild(tmp_path):
    build_corpus(DOCS, tmp_path, words=100, stride=50)
    smaller = build_corpus(DOCS, tmp_path, words=30, stride=30)
    assert smaller.manifest["words"] == 30


def test_round_trips():
    doc = Document("x", "u", "t", "text", ("text",))
    assert Document.from_dict(doc.to_dict()) == doc
    passage = Passage(3, "x", "u", "t", "text", 0, 1)
    assert Passage.from_dict(passage.to_dict()) == passage


def test_missing_corpus_raises(tmp_path):
    with pytest.raises(IndexNotFoundError):
        Corpus.load(tmp_path)


def test_jsonl_loader_names_the_bad_line(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [{"url": "u1", "title": "T", "text": "x"}, {"url": "u2", "text": "y"}])
    with pytest.raises(InputError, match=r"d.jsonl:2: missing field\(s\) title"):
        list(documents_from_jsonl(path))
    good = write_jsonl(tmp_path / "g.jsonl", [{"url": "u1", "title": "T", "text": "x"}])
    assert list(documents_from_jsonl(good)) == [Document("u1", "u1", "T", "x")]


@pytest.mark.parametrize(("record", "message"), [
    ({"url": ["a"], "title": "T", "text": "x"}, ":1: url must be text"),
    ({"url": "u", "title": {"a": 1}, "text": 5}, ":1: title, text must be text"),
    ({"url": "u", "title": "T", "text": "x", "doc_id": [1]}, ":1: doc_id must be text"),
    ({"url": " ", "title": "T", "text": "x"}, ":1: url is empty"),
])
def test_jsonl_loader_refuses_fields_of_the_wrong_kind(tmp_path, record, message):
    """They used to be stored as their Python text ("['a']", "{'a': 1}", "5")."""
    path = write_jsonl(tmp_path / "d.jsonl", [record])
    with pytest.raises(InputError, match=message):
        list(documents_from_jsonl(path))
    nulls = write_jsonl(tmp_path / "n.jsonl", [{"url": "u", "title": None, "text": None, "doc_id": 7}])
    assert list(documents_from_jsonl(nulls)) == [Document("7", "u", "", "")]
    with pytest.raises(InputError, match="no documents in it"):  # not an empty index
        list(documents_from_jsonl(write_jsonl(tmp_path / "e.jsonl", [])))


def test_jsonl_loader_says_how_many_records_repeat_an_id(tmp_path, caplog):
    """Two records of one url became one document without a word."""
    rows = [{"url": "u1", "title": "A", "text": "x"}, {"url": "u1", "title": "B", "text": "y"},
            {"url": "u2", "title": "C", "text": "z", "doc_id": "d"},
            {"url": "u3", "title": "D", "text": "w", "doc_id": "d"}]
    with caplog.at_level("WARNING", logger="side.retrieval.corpus"):
        documents = list(documents_from_jsonl(write_jsonl(tmp_path / "d.jsonl", rows)))
    assert [d.doc_id for d in documents] == ["u1", "u1", "d", "d"]
    assert [r.getMessage().split(": ", 1)[1] for r in caplog.records] == [
        "2 records repeat the doc_id (or url) of an earlier one; the last of each is indexed"]


def test_wice_loader_dedupes_pages_and_skips_meta(tmp_path):
    page = ["(meta data) TITLE: A Page", "(meta data) PUBLISHED DATETIME: 2020", "First fact.", "Second fact."]
    rows = [
        {"claim": "c1", "label": "supported", "evidence": page, "supporting_sentences": [[2]], "meta": {"id": "dev1"}},
        {"claim": "c2", "label": "supported", "evidence": page, "supporting_sentences": [[3]], "meta": {"id": "dev2"}},
        {"claim": "c3", "label": "supported", "evidence": ["Other page."], "supporting_sentences": [],
         "meta": {"id": "dev3"}},
    ]
    docs = list(documents_from_wice(write_jsonl(tmp_path / "w.jsonl", rows)))
    assert len(docs) == 2
    assert docs[0].title == "A Page" and docs[0].url == "wice:dev1"
    assert docs[0].sentences == ("First fact.", "Second fact.")


def test_scifact_loader(tmp_path):
    rows = [{"doc_id": 7, "title": "T", "abstract": ["One.", "Two."], "structured": False}]
    (doc,) = documents_from_scifact(write_jsonl(tmp_path / "c.jsonl", rows))
    assert (doc.doc_id, doc.title, doc.sentences, doc.text) == ("7", "T", ("One.", "Two."), "One. Two.")


def test_web_html_loader_reads_plain_and_gzipped_pages(tmp_path):
    body = "<p>" + "Volcanoes erupt when magma rises through the crust of the planet. " * 8 + "</p>"
    html = f"<html><head><title>Volcanoes</title></head><body><article>{body}</article></body></html>"
    (tmp_path / "one.html").write_text(html, encoding="utf-8")
    (tmp_path / "two.html.gz").write_bytes(gzip.compress(html.replace("Volcanoes", "Geysers").encode()))
    docs = list(documents_from_web_html(tmp_path))
    assert len(docs) == 2
    assert all("magma" in d.text for d in docs)
    assert {d.url for d in docs} == {"file:one.html", "file:two.html.gz"}
