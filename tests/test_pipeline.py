"""Side's decision flow on a real index, a real local web server and the shipped verifier."""

from __future__ import annotations

from datetime import date

import pytest

from side.cli import main
from side.config import FetchConfig
from side.extract.wikitext import extract_claims
from side.pipeline import Pipeline, cite_web, make_source_loader, url_depth
from side.retrieval.corpus import Document, build_corpus
from side.retrieval.retriever import build_index
from side.sources.fetch import fetch_source
from side.verify.verifier import Verifier

from httpserver import LocalServer, Response


@pytest.mark.parametrize("url, depth", [
    ("https://example.org", 0), ("https://example.org/", 0), ("https://example.org/news/2020/story.html", 3),
    ("http://example.org/a//b/?q=1", 2), (None, None),
])
def test_url_depth(url, depth):
    assert url_depth(url) == depth


def test_cite_web_is_ready_to_paste():
    cite = cite_web("https://www.example.org/a/b", "A | title", today=date(2026, 11, 22))
    assert cite == ("{{cite web |url=https://www.example.org/a/b |title=A {{!}} title |website=example.org "
                    "|access-date=2026-11-22}}")


DOCS = [
    Document("d1", "https://museum.example/eiffel/height", "Eiffel Tower facts",
             "The Eiffel Tower is 330 metres (1,083 ft) tall. It was the tallest man-made structure in the "
             "world until 1930. Gustave Eiffel's engineering company designed and built the tower."),
    Document("d2", "https://fish.example/salmon", "Salmon",
             "Salmon migrate upstream to spawn in freshwater rivers. Many species of trout live in cold lakes."),
    Document("d3", "https://trains.example/gauge", "Rail gauge",
             "Standard gauge railways use a track gauge of 1,435 mm. Broad gauge lines are wider."),
]

ARTICLE = """'''Eiffel Tower''' is a landmark.

== Design ==
The tower was completed in 1889. The Eiffel Tower is 330 metres tall.<ref>{{cite web |url=BAD_URL |title=Salmon}}</ref>
Gustave Eiffel's engineering company designed and built the tower.<ref>[GOOD_URL Tower history]</ref>
"""

GOOD_PAGE = b"""<html><head><title>Tower history</title></head><body><article>
<h1>Tower history</h1><p>The tower was built for the 1889 World's Fair in Paris.</p>
<p>Gustave Eiffel's engineering company designed and built the tower between 1887 and 1889.</p>
<p>It remains one of the most visited monuments in the world.</p></article></body></html>"""

BAD_PAGE = b"""<html><head><title>Salmon</title></head><body><article><h1>Salmon</h1>
<p>Salmon migrate upstream to spawn in freshwater rivers.</p>
<p>Many species of trout live in cold lakes, and fishing licences are required in most regions.</p>
</article></body></html>"""


@pytest.fixture(scope="module")
def verifier():
    return Verifier.load(device="cpu")


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("index")
    build_index(build_corpus(DOCS, directory / "corpus"), directory, progress=False)
    return directory


@pytest.fixture()
def article(tmp_path):
    server = LocalServer()
    with server:
        good = server.add("/tower/history.html", Response(GOOD_PAGE))
        bad = server.add("/", Response(BAD_PAGE))
        yield ARTICLE.replace("GOOD_URL", good).replace("BAD_URL", bad), tmp_path


def test_unsupported_citation_is_flagged_with_a_better_source(verifier, index_dir, article):
    from side.retrieval.retriever import Retriever

    wikitext, tmp_path = article
    config = FetchConfig(allow_hosts=["127.0.0.1"], timeout_s=2)
    retriever = Retriever.load(index_dir)
    loader = make_source_loader(retriever, lambda url: fetch_source(url, config, tmp_path / "cache"))
    checks = Pipeline(verifier, retriever, loader).verify_claims(extract_claims(wikitext, "Eiffel Tower"))
    by_title = {c.claim.citation.title: c for c in checks}
    bad, good = by_title["Salmon"], by_title["Tower history"]
    assert bad.source_status == good.source_status == "fetched"
    assert bad.url_depth == 0 and "generic URL" in " ".join(bad.reasons)
    assert bad.verdict.score < good.verdict.score
    assert bad.flagged and not good.flagged
    assert bad.suggestions and bad.suggestions[0].url == DOCS[0].url
    assert "{{cite web |url=https://museum.example/eiffel/height" in bad.suggestions[0].cite
    assert "330 metres" in bad.suggestions[0].evidence.text


def test_cli_check_offline_json(index_dir, tmp_path, capsys):
    import json

    path = tmp_path / "Eiffel_Tower.wikitext"
    path.write_text(ARTICLE.replace("GOOD_URL", "https://unreachable.invalid/a").replace("BAD_URL", "https://x.invalid/"))
    code = main(["verify", str(path), "--index", str(index_dir), "--offline", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["title"] == "Eiffel Tower" and report["citations"] == 2
    statuses = {c["source_status"] for c in report["results"]}
    assert statuses == {"unavailable"}
    assert all(c["suggestions"] is not None for c in report["results"])
    # unread sources are neither flagged nor unsure, and --json says so
    assert all(c["unsure"] is False and c["flagged"] is False for c in report["results"])
    assert report["unsure"] == 0


@pytest.mark.parametrize("argv, message", [
    (["verify", "/no/such/article.wikitext"], "no such file"),
    (["verify", "--offline", "--no-index", "BINARY"], "not UTF-8"),
])
def test_cli_check_bad_input_is_one_line(argv, message, tmp_path, capsys):
    binary = tmp_path / "binary.wikitext"
    binary.write_bytes(b"\xff\xfe\x00garbage\x80")
    argv = [str(binary) if a == "BINARY" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("side: error:") and message in err and "\n" not in err


@pytest.mark.parametrize("candidate_score, suggested", [(0.38, False), (0.70, True)])
def test_better_source_reason_names_the_page(verifier, candidate_score, suggested):
    """A page that outscores the citation is named; below the flag threshold it is not suggested."""
    from side.pipeline import Result
    from side.retrieval.corpus import Passage
    from side.retrieval.fusion import DocumentHit
    from side.verify.verifier import Verdict

    claim = extract_claims(ARTICLE.replace("BAD_URL", "https://fish.example/salmon").replace("GOOD_URL", "https://x.example/a"),
                           "Eiffel Tower")[0]
    pipeline = Pipeline(verifier, flag_threshold=0.5)
    # verdicts as the verifier gives them, levelled with the pipeline's cuts
    check = Result(claim, "fetched", verdict=Verdict("NOT ENOUGH INFO", 0.10, level=pipeline.levels.level(0.10)),
                   url_depth=1)
    passage = Passage(0, "d1", DOCS[0].url, DOCS[0].title, DOCS[0].text, 0, 3)
    hit = DocumentHit("d1", DOCS[0].url, DOCS[0].title, 1.0, passage)
    pipeline._decide(check, [(hit, Verdict("SUPPORTS", candidate_score, level=pipeline.levels.level(candidate_score)))])
    assert check.flagged and check.rank == 2
    reason = next(r for r in check.reasons if "supports the claim better" in r)
    assert '"Eiffel Tower facts"' in reason
    assert bool(check.suggestions) is suggested
    assert ("too weakly to suggest" in reason) is not suggested


RICH_REFS = "\n".join([
    "'''Alsea''' is a restaurant operator.<ref name=\"ar\">{{cite web |url=BASE/alsea/report |title=Annual report "
    "|website=Alsea |date=2023-04-01 |archive-url=BASE/archive/alsea/report}}</ref>",
    "",
    "== History ==",
    "=== Founding ===",
    "It was founded in 1997.<ref name=\"ar\" /> It runs Starbucks in Mexico.<ref>BASE/news/</ref>",
    "It opened its first store in 1990.<ref>Smith, ''Restaurants'' (2001), p. 4.</ref>",
    "",
])


def test_records_round_trip_through_their_dicts(verifier, index_dir, article):
    """What the store keeps (``to_dict`` as JSON) reads back (``from_dict``) as the same records."""
    import json
    import re

    from side.extract.claims import Citation, Claim
    from side.pipeline import Result, SourceStatus, Suggestion
    from side.retrieval.retriever import Retriever
    from side.verify.verifier import Evidence, Verdict, VerdictLabel

    wikitext, tmp_path = article
    config = FetchConfig(allow_hosts=["127.0.0.1"], timeout_s=2)
    retriever = Retriever.load(index_dir)
    loader = make_source_loader(retriever, lambda url: fetch_source(url, config, tmp_path / "cache"))
    base = re.search(r"http://127\.0\.0\.1:\d+", wikitext).group(0)  # missing pages there: unavailable
    claims = extract_claims(wikitext + RICH_REFS.replace("BASE", base), "Eiffel Tower")
    results = Pipeline(verifier, retriever, loader).verify_claims(claims)
    # the records cover every shape: scored and flagged with suggestions, unreadable, and without a URL
    assert {r.source_status for r in results} >= {SourceStatus.FETCHED, SourceStatus.UNAVAILABLE, SourceStatus.NO_URL}
    assert any(r.suggestions and r.suggestions[0].evidence for r in results)
    assert any(r.verdict is None for r in results) and any(c.use_index == 1 for c in claims)
    assert any(c.citation.archive_url and c.citation.date and c.citation.website for c in claims)
    assert all(isinstance(r.verdict.label, VerdictLabel) for r in results if r.verdict)

    def same(record, kind) -> None:
        assert kind.from_dict(record.to_dict()) == record
        assert kind.from_dict(json.loads(json.dumps(record.to_dict()))) == record

    for result in results:
        same(result, Result)
        same(result.claim, Claim)
        same(result.claim.citation, Citation)
        if result.verdict:
            same(result.verdict, Verdict)
            for evidence in result.verdict.evidence:
                same(evidence, Evidence)
        for suggestion in result.suggestions:
            same(suggestion, Suggestion)
    again = Result.from_dict(json.loads(json.dumps(results[0].to_dict())))
    assert type(again.source_status) is SourceStatus and type(again.verdict.label) is VerdictLabel
    assert again.failure_likelihood == results[0].failure_likelihood


def test_the_text_report_counts_citations_per_level_in_its_title(capsys):
    """``side verify``'s table says how many citations are at each level, zeros too, and keeps the rest."""
    from side.cli.verify import print_report
    from side.pipeline import ArticleResults, Result, SourceStatus
    from side.verify.levels import VerdictLevel
    from side.verify.verifier import Verdict

    claims = extract_claims("'''Port''' is a town.\n\n== History ==\n" + "\n".join(
        f"Fact {n} about the port.<ref>[https://news.example/{n} Report {n}]</ref>" for n in range(4)), "Port")
    results = [Result(claims[0], SourceStatus.FETCHED, Verdict("SUPPORTS", 0.9, level=VerdictLevel.SUPPORTED)),
               Result(claims[1], SourceStatus.FETCHED, Verdict("SUPPORTS", 0.4, level=VerdictLevel.NOT_SUPPORTED),
                      flagged=True, reasons=["not supported: support 0.40 below 0.50"]),
               Result(claims[2], SourceStatus.FETCHED, Verdict("SUPPORTS", 0.8, level=VerdictLevel.SUPPORTED)),
               Result(claims[3], SourceStatus.CANNOT_CHECK, source_error="paywall", reasons=["cannot check: paywall"])]
    report = ArticleResults("Port", results)
    assert report.level_counts() == {VerdictLevel.SUPPORTED: 2, VerdictLevel.PARTIALLY_SUPPORTED: 0,
                                     VerdictLevel.NOT_SUPPORTED: 1, VerdictLevel.CANNOT_CHECK: 1}
    assert report.to_dict()["levels"] == {"supported": 2, "partially_supported": 0, "not_supported": 1,
                                          "cannot_check": 1}
    print_report(report)
    out = " ".join(capsys.readouterr().out.split())
    assert ("Port: 4 citations: 2 supported, 0 partially supported, 1 not supported, 1 cannot check; "
            "1 flagged") in out
    assert "cannot check: paywall" in out and "not supported: support 0.40 below 0.50" in out


def _decided(score: float, cuts, level=None, decided_by: str = ""):
    """A Result at ``score`` as a Pipeline with ``cuts`` decides it (no corpus candidates)."""
    from types import SimpleNamespace

    from side.pipeline import Result, SourceStatus
    from side.verify.verifier import Verdict

    claim = extract_claims("'''Port''' is a town.\n\n== History ==\nThe port opened in 1901."
                           "<ref>[https://news.example/port Port opens]</ref>", "Port")[0]
    pipeline = Pipeline(SimpleNamespace(flag_threshold=cuts.supported, levels=cuts))
    result = Result(claim, SourceStatus.FETCHED, Verdict("SUPPORTS", score, level=level or cuts.level(score)),
                    url_depth=1)
    if decided_by:
        result.decided_by = decided_by
    pipeline._decide(result, [])
    return result


def test_sure_or_unsure_between_the_flag_cut_and_the_supported_cut():
    from side.verify.levels import LevelThresholds, VerdictLevel

    cuts = LevelThresholds(supported=0.7, not_supported=0.5, report=0.2, flag=0.4)
    unsure_partial, unsure_not = _decided(0.6, cuts), _decided(0.45, cuts)
    for result in (unsure_partial, unsure_not):
        assert result.unsure and not result.flagged and not result.reportable
    assert unsure_partial.level_text == "probably partially supported; Side is unsure"
    assert unsure_not.level_text == "probably not supported; Side is unsure"
    assert any("probably not supported; Side is unsure" in r for r in unsure_not.reasons)
    sure_not, reported = _decided(0.3, cuts), _decided(0.1, cuts)
    assert sure_not.flagged and not sure_not.unsure and not sure_not.reportable
    assert reported.flagged and reported.reportable and reported.level_text == "not supported"
    supported = _decided(0.8, cuts)
    assert not (supported.flagged or supported.unsure)
    # the judge's level is sure: asked because Side was unsure, its needs-review verdict is flagged
    judged = _decided(0.6, cuts, VerdictLevel.NOT_SUPPORTED, decided_by="LLM: qwen")
    assert judged.flagged and not judged.unsure and not judged.reportable
    # an old combiner (no flag cut): the flag cut is the supported cut, every needs-review level sure
    old = LevelThresholds(supported=0.7, not_supported=0.5, report=0.2)
    assert old.flag == 0.7 and _decided(0.6, old).flagged and not _decided(0.6, old).unsure
    with pytest.raises(ValueError):
        LevelThresholds(supported=0.7, not_supported=0.5, report=0.3, flag=0.2)  # report above the flag cut
    with pytest.raises(ValueError):
        LevelThresholds(supported=0.7, not_supported=0.5, report=0.2, flag=0.8)  # flag above supported


def test_an_unsure_result_is_not_flagged_by_a_better_corpus_page():
    from types import SimpleNamespace

    from side.pipeline import Result, SourceStatus
    from side.retrieval.corpus import Passage
    from side.retrieval.fusion import DocumentHit
    from side.verify.levels import LevelThresholds
    from side.verify.verifier import Verdict

    cuts = LevelThresholds(supported=0.7, not_supported=0.5, report=0.2, flag=0.4)
    pipeline = Pipeline(SimpleNamespace(flag_threshold=cuts.supported, levels=cuts))
    passage = Passage(0, "d1", DOCS[0].url, DOCS[0].title, DOCS[0].text, 0, 3)
    hit = DocumentHit("d1", DOCS[0].url, DOCS[0].title, 1.0, passage)
    outcomes = {}
    for score in (0.3, 0.45):
        claim = extract_claims("'''Port''' is a town.\n\n== History ==\nThe port opened in 1901."
                               "<ref>[https://news.example/port Port opens]</ref>", "Port")[0]
        result = Result(claim, SourceStatus.FETCHED, Verdict("SUPPORTS", score, level=cuts.level(score)), url_depth=1)
        pipeline._decide(result, [(hit, Verdict("SUPPORTS", 0.95, level=cuts.level(0.95)))])
        outcomes[score] = result
    assert outcomes[0.3].flagged
    assert outcomes[0.45].unsure and not outcomes[0.45].flagged
    assert any("supports the claim better" in r for r in outcomes[0.45].reasons)


def test_the_json_report_carries_unsure_and_ranks_it_after_the_flags():
    from side.pipeline import ArticleResults, Result
    from side.verify.levels import LevelThresholds

    cuts = LevelThresholds(supported=0.7, not_supported=0.5, report=0.2, flag=0.4)
    results = [_decided(0.6, cuts), _decided(0.8, cuts), _decided(0.35, cuts)]
    data = ArticleResults("Port", results).to_dict()
    assert data["unsure"] == 1 and data["flagged"] == 1
    assert [(r["flagged"], r["unsure"]) for r in data["results"]] == [(True, False), (False, True), (False, False)]
    assert data["results"][1]["level_text"] == "probably partially supported; Side is unsure"
    again = Result.from_dict(data["results"][1])
    assert again.unsure and not again.flagged


def test_the_text_report_words_an_unsure_level_as_sides_guess(capsys):
    from side.cli.verify import print_report
    from side.pipeline import ArticleResults
    from side.verify.levels import LevelThresholds

    cuts = LevelThresholds(supported=0.7, not_supported=0.5, report=0.2, flag=0.4)
    print_report(ArticleResults("Port", [_decided(0.6, cuts), _decided(0.3, cuts)]))
    out = " ".join(capsys.readouterr().out.split())
    assert "1 flagged, 1 unsure" in out
    assert "FLAG not supported" in out and "FLAG probably" not in out
    assert "probably partially supported; Side is unsure" in out
