"""The two halves of the decision flow: a check prepared without a model, scored with one.

The prepared check crosses a process boundary as JSON, so the tests score what came back
from JSON and compare it with the single-process ``verify_claims``.
"""

from __future__ import annotations

import json

import pytest

from side.config import FetchConfig
from side.extract.claims import Citation, Claim
from side.pipeline import Pipeline, make_source_loader
from side.prepared import PreparedCheck, PreparedCheckError, Preparer
from side.sources.fetch import fetch_source
from side.verify.cascade import Cascade, CascadeSettings
from side.verify.judge import Judge, JudgeSettings
from side.verify.verifier import Verifier

from harness.llm import ScriptedServer, chat_answer
from httpserver import LocalServer, Response

REPORT = (b"<html><head><title>Alsea annual report</title></head><body>"
          b"<p>Alsea operates Starbucks coffee shops in Mexico, Argentina and Chile.</p>"
          b"<p>The company was founded in 1990 in Mexico City.</p>"
          b"<p>It also operates Domino's Pizza and Burger King restaurants.</p></body></html>")
WEATHER = (b"<html><head><title>Weather</title></head><body>"
           b"<p>Tomorrow will be sunny with light winds along the coast.</p></body></html>")
SPANISH = ("<html><head><title>Alsea</title></head><body>"
           "<p>Alsea es una empresa mexicana que opera restaurantes en Am\u00e9rica Latina y Europa.</p>"
           "<p>La compa\u00f1\u00eda fue fundada en 1990 en la Ciudad de M\u00e9xico por la familia Torrado.</p>"
           "<p>Hoy opera m\u00e1s de cuatro mil unidades de marcas como Starbucks, Domino's Pizza y Burger King.</p>"
           "<p>Sus oficinas centrales est\u00e1n en la Ciudad de M\u00e9xico, y cotiza en la Bolsa Mexicana de "
           "Valores.</p></body></html>").encode()


@pytest.fixture(scope="module")
def verifier():
    return Verifier.load(device="cpu", precision="fp32")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with LocalServer() as server:
        server.add("/report", Response(REPORT))
        server.add("/weather", Response(WEATHER))
        server.add("/gone", Response(status=404))
        server.add("/es", Response(SPANISH))
        yield server, tmp_path_factory.mktemp("cache")


def claim(text: str, url: str | None, key: str) -> Claim:
    return Claim(article_title="Alsea (company)", section=("History",), text=text, left_context=text,
                 citation=Citation(id=key, kind="external_link", url=url))


def claims_of(server: LocalServer) -> list[Claim]:
    return [claim("Alsea operates Starbucks coffee shops in Mexico.", server.url("/report"), "r1"),
            claim("The company was founded in 1975 in Buenos Aires.", server.url("/report"), "r2"),
            claim("Alsea operates Burger King restaurants.", server.url("/weather"), "r3"),
            claim("Alsea has 80,000 employees.", server.url("/gone"), "r4"),
            claim("Alsea is listed in Mexico.", None, "r5")]


def pipeline(verifier: Verifier, cache, cascade: Cascade | None = None) -> Pipeline:
    config = FetchConfig(allow_hosts=["127.0.0.1"], timeout_s=2)
    return Pipeline(verifier, None, make_source_loader(None, lambda url: fetch_source(url, config, cache)),
                    cascade=cascade)


def cascade_to(server: ScriptedServer) -> Cascade:
    """The judge's tier, asking ``server`` (Side's band as configured by default)."""
    return Cascade(Judge(JudgeSettings(server.url, model="scripted", retries=0, rate_per_hour=0)),
                   CascadeSettings("uncertain"))


def through_json(prepared: PreparedCheck) -> PreparedCheck:
    return PreparedCheck.from_dict(json.loads(json.dumps(prepared.to_dict())))


def test_a_check_prepared_apart_and_judged_from_json_gets_the_single_process_results(verifier, served):
    server, cache = served
    claims = claims_of(server)
    whole = pipeline(verifier, cache).verify_claims(claims)
    loader = make_source_loader(None, lambda url: fetch_source(url, FetchConfig(allow_hosts=["127.0.0.1"]), cache))
    prepared = Preparer(loader, verifier.shortlist, verifier.shortlist_neighbours).prepare(claims)
    assert len(prepared.sources) == 2  # the report, cited twice, is kept once; the 404 has none
    assert prepared.citations[0].shortlist is not None and prepared.citations[3].shortlist is None
    split = pipeline(verifier, cache).score(claims, through_json(prepared))
    assert [r.to_dict() for r in split] == [r.to_dict() for r in whole]


def test_checks_judged_together_get_the_levels_they_get_alone(verifier, served):
    server, cache = served
    first, second = claims_of(server)[:3], claims_of(server)[2:]
    side = pipeline(verifier, cache)
    alone = [side.score(claims, side.prepare(claims)) for claims in (first, second)]
    together = side.score_many([(claims, through_json(side.prepare(claims))) for claims in (first, second)])
    for results, reference in zip(together, alone, strict=True):
        assert [r.level for r in results] == [r.level for r in reference]
        assert [r.flagged for r in results] == [r.flagged for r in reference]
        for result, expected in zip(results, reference, strict=True):
            if expected.verdict is not None:  # batched with other checks: float sums in another order only
                assert result.verdict.score == pytest.approx(expected.verdict.score, abs=1e-3)


def test_a_prepared_check_for_other_claims_or_malformed_is_refused(verifier, served):
    server, cache = served
    claims = claims_of(server)
    prepared = pipeline(verifier, cache).prepare(claims)
    with pytest.raises(PreparedCheckError, match="5 prepared citations for 2 claims"):
        prepared.results(claims[:2])
    with pytest.raises(PreparedCheckError, match="malformed"):
        PreparedCheck.from_dict({"citations": [{"status": "no such status"}]})
    with pytest.raises(PreparedCheckError, match="names a source"):
        PreparedCheck.from_dict({"citations": [{"status": "fetched", "source": 3}], "sources": []})


def test_a_foreign_source_reaches_the_judge_from_json_as_in_one_process(verifier, served):
    server, cache = served
    claims = [claim("Alsea was founded in 1990 in Mexico City.", server.url("/es"), "e1"),
              claim("Alsea operates Starbucks coffee shops in Mexico.", server.url("/report"), "r1")]
    answer = chat_answer(json.dumps({"level": "supported", "quotes": ["fue fundada en 1990 en la Ciudad de"],
                                     "unsupported": "", "confidence": 0.9}))
    with ScriptedServer(answer) as one, ScriptedServer(answer) as apart:
        whole = pipeline(verifier, cache, cascade_to(one)).verify_claims(claims)
        prepared = through_json(pipeline(verifier, cache).prepare(claims))
        split = pipeline(verifier, cache, cascade_to(apart)).score(claims, prepared)
    assert prepared.citations[0].language == "es" and prepared.citations[0].source == -1
    asked = [request["messages"] for request in apart.requests]
    assert asked == [request["messages"] for request in one.requests]
    assert any("Source language: es" in m["content"] and "fue fundada en 1990" in m["content"]
               for messages in asked for m in messages)
    assert split[0].decided_by == whole[0].decided_by != "Side"
    assert [timeless(r) for r in split] == [timeless(r) for r in whole]


def timeless(result) -> dict:
    """A Result's record without the judge's latency (the one field two runs never share)."""
    record = result.to_dict()
    if record["judge"]:
        record["judge"] = {k: v for k, v in record["judge"].items() if k != "latency_s"}
    return record


def test_a_prepared_record_written_before_foreign_sources_still_loads():
    record = {"citations": [{"status": "cannot_check", "error": "in Spanish", "copy": None, "url": "",
                             "fallback": "", "source": -1, "shortlist": None}], "sources": []}
    cited = PreparedCheck.from_dict(record).citations[0]
    assert (cited.foreign, cited.language) == (-1, "")
    assert PreparedCheck.from_dict(json.loads(json.dumps(PreparedCheck((cited,)).to_dict()))).citations == (cited,)
    with pytest.raises(PreparedCheckError, match="names a source"):
        PreparedCheck.from_dict({"citations": [{"status": "cannot_check", "foreign": 0}], "sources": []})
