"""The demo: the shipped demo set and its article, and the WiCE demo article of the shared data."""

from __future__ import annotations

import json

import mwparserfromhell
import pytest

from side.cli import main
from side.demo import DEFAULT_TITLE, DEMO_ARTICLE, demo_article, demo_documents, wice_claims
from side.errors import InputError
from side.extract.wikitext import extract_claims
from side.retrieval.corpus import build_corpus, documents_from_wice
from side.retrieval.retriever import build_index

from conftest import need_data

PAGE = ["(meta data) TITLE: Harbour history", "The harbour opened in 1850.", "It was rebuilt in 1901."]
OTHER = ["(meta data) TITLE: Ferry news", "A ferry to the island started in 1960."]


def record(claim_id, title, section, context, claim, evidence, label="supported"):
    return {"label": label, "claim": claim, "evidence": evidence, "supporting_sentences": [[1]],
            "meta": {"id": claim_id, "claim_title": title, "claim_section": section, "claim_context": context}}


@pytest.fixture()
def wice_file(tmp_path):
    path = tmp_path / "claim_dev.jsonl"
    rows = [
        record("dev1", "Port Town", "History.:Harbour", "Port Town lies on the coast.\nFishing was its trade.",
               "The harbour opened in 1850.", PAGE),
        record("dev2", "Elsewhere", "Intro", "", "Something else.", OTHER),
        record("dev3", "Port Town", "Transport", "Boats left daily.", "The harbour was rebuilt in 1901.", PAGE,
               label="partially_supported"),
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_claims_cite_the_url_the_demo_index_gives_their_page(wice_file):
    claims = wice_claims(wice_file)["Port Town"]
    index_urls = {d.url for d in documents_from_wice(wice_file)}
    # Both claims cite one page; the index names it after the first claim citing it.
    assert [c.url for c in claims] == ["wice:dev1", "wice:dev1"]
    assert {c.url for c in claims} <= index_urls
    assert [c.section for c in claims] == ["Harbour", "Transport"]


def test_article_wikitext_gives_back_each_claim_with_its_context_and_citation(wice_file):
    text = demo_article(wice_file, "Port Town")
    claims = extract_claims(text, "Port Town")
    assert [c.text for c in claims] == ["The harbour opened in 1850.", "The harbour was rebuilt in 1901."]
    assert [c.citation.url for c in claims] == ["wice:dev1", "wice:dev1"]
    assert [c.section for c in claims] == [("Harbour",), ("Transport",)]
    assert "Fishing was its trade." in claims[0].left_context
    assert claims[0].citation.title == "Harbour history"


def test_unknown_title_is_a_clear_error_naming_titles_that_exist(wice_file, tmp_path, capsys, monkeypatch):
    with pytest.raises(InputError, match="Port Town"):
        demo_article(wice_file, "Atlantis")
    (tmp_path / "wice").mkdir()
    wice_file.rename(tmp_path / "wice" / "claim_dev.jsonl")
    monkeypatch.setenv("SIDE_DATA_DIR", str(tmp_path))
    assert main(["index", "demo-article", "--title", "Atlantis"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("side: error:") and "Atlantis" in err and "\n" not in err


def test_cli_writes_the_article_to_a_file(wice_file, tmp_path, monkeypatch):
    (tmp_path / "wice").mkdir()
    wice_file.rename(tmp_path / "wice" / "claim_dev.jsonl")
    monkeypatch.setenv("SIDE_DATA_DIR", str(tmp_path))
    out = tmp_path / "demo" / "Port_Town.wikitext"
    assert main(["index", "demo-article", "--title", "Port Town", "--out", str(out)]) == 0
    assert len(extract_claims(out.read_text(encoding="utf-8"), "Port Town")) == 2


def test_side_check_reads_every_source_of_the_real_demo_article_from_the_index(tmp_path, capsys):
    """The demo's promise: offline, each citation of the demo article is scored from the index."""
    claims_path = need_data("wice/claim_dev.jsonl")
    urls = {c.url for c in wice_claims(claims_path)[DEFAULT_TITLE]}
    pages = [d for d in documents_from_wice(claims_path) if d.url in urls]
    index = tmp_path / "index"
    build_index(build_corpus(pages, index / "corpus"), index, progress=False)
    article = tmp_path / "Starbucks.wikitext"
    article.write_text(demo_article(claims_path), encoding="utf-8")
    assert main(["verify", str(article), "--index", str(index), "--offline", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["citations"] == len(urls) == 3
    assert sum(report["levels"].values()) == 3 and report["levels"]["cannot_check"] == 0
    levels = report["levels"]
    assert levels == {level: sum(c["level"] == level for c in report["results"]) for level in levels}
    assert {c["source_status"] for c in report["results"]} == {"corpus"}
    assert all(c["verdict"] and c["verdict"]["evidence"] for c in report["results"])


def test_every_citation_of_the_shipped_article_is_a_shipped_source():
    """Offline, the demo article's sources are all read from the demo index, none is "cannot check"."""
    urls = {d.url for d in demo_documents()}
    claims = extract_claims(DEMO_ARTICLE.read_text(encoding="utf-8"), "Scientific claims")
    assert claims and {c.citation.url for c in claims} <= urls


def test_demo_without_shared_data_flags_a_citation_and_suggests_a_pasteable_cite(tmp_path, monkeypatch, capsys):
    """scripts/demo.sh's path where no shared data exists: the shipped set alone gives a flagged
    citation with its evidence, and a better source from the index as one {{cite web}}."""
    monkeypatch.setenv("SIDE_DATA_DIR", str(tmp_path / "missing"))
    index = tmp_path / "index"
    assert main(["index", "build", "--demo", "--out", str(index)]) == 0
    capsys.readouterr()
    assert main(["verify", str(DEMO_ARTICLE), "--index", str(index), "--offline", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert {r["source_status"] for r in results} == {"corpus"}
    flagged = [r for r in results if r["flagged"]]
    assert flagged and all(r["verdict"]["evidence"] for r in flagged)
    suggested = [r for r in flagged if r["suggestions"]]
    assert suggested
    shipped = {d.url for d in demo_documents()}
    for result in suggested:
        suggestion = result["suggestions"][0]
        assert suggestion["url"] in shipped and suggestion["url"] != result["claim"]["citation"]["url"]
        assert suggestion["evidence"]["text"]
        templates = mwparserfromhell.parse(suggestion["cite"]).filter_templates(recursive=True)
        assert len(templates) == 1 and str(templates[0]) == suggestion["cite"]
        assert templates[0].name.strip().lower() == "cite web"
        assert str(templates[0].get("url").value).strip() == suggestion["url"]
