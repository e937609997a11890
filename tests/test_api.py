"""The REST API (gadget/server) on a real SQLite store and a real Redis queue.

What the contract in docs/service.md promises: new work is stored once and queued once (202
and a Location), known work is answered from the store (200 with verdicts), every bad input
gets the right 4xx in the one error shape and leaves the store and the queue untouched.
"""

from __future__ import annotations

import time

import pytest
import redis

from service.queue import get_queue
from service.stream import (
    SCORER_MAX_AGE_S,
    ack_prepared,
    add_prepared,
    beat_scorer,
    ensure_group,
    read_prepared,
    stream_key,
)
from side.prepared import PreparedCheck, PreparedCitation
from side.results import SourceStatus

from webapp import claims_body, finish, log_in, make_config, outcome, running_app

WIKI_ORIGIN = "https://en.wikipedia.org"


@pytest.fixture
def queue(app, web_config):
    return get_queue(redis.Redis.from_url(web_config.service.redis_url), web_config.service)


def assert_error(response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.get_data(as_text=True)
    body = response.get_json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    assert body["error"]["message"]
    if code:
        assert body["error"]["code"] == code
    return body


def assert_nothing_stored(store, queue) -> None:
    assert store.checks() == []
    assert queue.count == 0


# -- submitting work --------------------------------------------------------------------------

def test_new_claims_are_stored_and_queued_once_with_202_and_location(client, store, queue):
    response = client.post("/api/v1/checks", json=claims_body(n=2))
    assert response.status_code == 202
    check = response.get_json()["check"]
    assert check["status"] == "queued" and check["results"] == []
    assert response.headers["Location"] == f"/api/v1/checks/{check['id']}"
    assert check["dashboard_url"] == f"http://side.test/dashboard/checks/{check['id']}"
    record = store.check(check["id"])
    assert (record.origin, record.citations, record.revision) == ("api", 2, 123)
    assert record.client_keys == ["c0", "c1"]
    assert record.claims[0].citation.url == "https://example.org/report-0"
    assert record.claims[0].section == ("History",)
    assert queue.job_ids == [check["id"]]

    again = client.post("/api/v1/checks", json=claims_body(n=2))
    assert again.status_code == 202 and again.get_json()["check"]["id"] == check["id"]
    assert len(store.checks()) == 1 and queue.count == 1


def test_known_done_work_is_answered_200_with_verdicts(client, store, queue):
    first = client.post("/api/v1/checks", json=claims_body(n=3)).get_json()["check"]
    claims = store.check(first["id"]).claims
    finish(store, first["id"], [
        outcome(claims[0], 0.12, True, suggestion=("https://better.example/a", "Better", "Alsea runs 1 store.")),
        outcome(claims[1], 0.92, False, label="SUPPORTS", evidence=("Alsea operates 2 stores.",)),
        outcome(claims[2], 0.55, False, label="SUPPORTS"),
    ])

    response = client.post("/api/v1/checks", json=claims_body(n=3))
    assert response.status_code == 200 and "Location" not in response.headers
    check = response.get_json()["check"]
    assert check["status"] == "done" and check["flagged"] == 1
    results = check["results"]
    assert [r["client_key"] for r in results] == ["c0", "c1", "c2"]
    assert [r["level"] for r in results] == ["not_supported", "supported", "supported"]
    assert results[0]["suggestions"][0]["cite"].startswith("{{cite web |url=https://better.example/a")
    assert results[0]["suggestions"][0]["evidence"]["text"] == "Alsea runs 1 store."
    assert results[1]["evidence"][0]["text"] == "Alsea operates 2 stores."
    assert results[0]["dashboard_url"] == f"http://side.test/dashboard/results/{results[0]['id']}"
    assert queue.count == 1  # the done check was not queued again
    assert client.get(f"/api/v1/checks/{check['id']}").get_json() == response.get_json()


#: The words of the model's own vocabulary and of the API's older one, which people never read.
NOT_LEVELS = {"SUPPORTS", "REFUTES", "NOT ENOUGH INFO", "fails", "unclear"}


def test_each_verdict_level_comes_back_with_its_own_fields(client, store):
    from side.pipeline import Result, SourceStatus
    from side.verify.levels import VerdictLevel
    from side.verify.verifier import not_enough_info

    first = client.post("/api/v1/checks", json=claims_body(n=5)).get_json()["check"]
    claims = store.check(first["id"]).claims
    unreadable = "the source is in a language the model cannot read (th)"
    finish(store, first["id"], [
        outcome(claims[0], 0.93, False, label="SUPPORTS", level=VerdictLevel.SUPPORTED),
        outcome(claims[1], 0.41, True, label="NOT ENOUGH INFO", level=VerdictLevel.PARTIALLY_SUPPORTED,
                unsupported=("Mexico", "since 1997"), evidence=("Alsea operates Starbucks stores.",)),
        outcome(claims[2], 0.03, True, label="REFUTES", level=VerdictLevel.NOT_SUPPORTED, reportable=True),
        outcome(claims[3], 0.22, True, label="NOT ENOUGH INFO", level=VerdictLevel.NOT_SUPPORTED),
        Result(claims[4], SourceStatus.FETCHED, verdict=not_enough_info(unreadable)),
    ])

    results = client.get(f"/api/v1/checks/{first['id']}").get_json()["check"]["results"]
    assert [(r["level"], r["level_reason"], r["unsupported"], r["reportable"], r["flagged"]) for r in results] == [
        ("supported", "", [], False, False),
        ("partially_supported", "", ["Mexico", "since 1997"], False, True),
        ("not_supported", "", [], True, True),
        ("not_supported", "", [], False, True),
        ("cannot_check", unreadable, [], False, False)]
    assert [r["score"] for r in results[:4]] == [0.93, 0.41, 0.03, 0.22]
    assert results[1]["evidence"][0]["text"] == "Alsea operates Starbucks stores."
    for result in results:
        assert "label" not in result and "verdict" not in result
        assert not NOT_LEVELS & {result["level"], *map(str, result.values())}


def test_levels_read_as_people_are_told_them():
    from gadget.server.present import level_text
    from side.verify.levels import VerdictLevel

    assert [level_text(level, "paywall") for level in VerdictLevel] == [
        "supported", "partially supported", "not supported", "could not be checked: paywall"]
    assert level_text(VerdictLevel.CANNOT_CHECK) == "could not be checked"


def test_a_source_that_could_not_be_checked_comes_back_as_cannot_check_with_its_reason(client, store):
    from side.pipeline import Result, SourceStatus

    first = client.post("/api/v1/checks", json=claims_body(n=3)).get_json()["check"]
    claims = store.check(first["id"]).claims
    paywall = 'paywall ("subscribe to continue reading"): only a teaser of a subscribers-only page was served'
    finish(store, first["id"], [
        Result(claims[0], SourceStatus.CANNOT_CHECK, source_error=paywall, reasons=[f"cannot check: {paywall}"]),
        Result(claims[1], SourceStatus.UNAVAILABLE, source_error="HTTP 503 fetching https://example.org/report-1"),
        Result(claims[2], SourceStatus.NO_URL),
    ])

    results = client.get(f"/api/v1/checks/{first['id']}").get_json()["check"]["results"]
    assert [(r["level"], r["source_status"]) for r in results] == [
        ("cannot_check", "cannot_check"), ("cannot_check", "unavailable"), ("cannot_check", "no_url")]
    assert [r["level_reason"] for r in results] == [
        paywall, "HTTP 503 fetching https://example.org/report-1", "the citation has no URL to read"]
    assert results[0]["source_error"] == paywall
    assert [(r["flagged"], r["reportable"], r["score"], r["unsupported"]) for r in results] == [
        (False, False, None, [])] * 3


def test_wikitext_snippet_is_split_into_claims(client, store):
    wikitext = ("Alsea operates Starbucks in Mexico.<ref>{{cite web |url=https://example.org/a |title=A}}</ref> "
                "It was founded in 1990.<ref>[https://example.org/b Founding]</ref>")
    response = client.post("/api/v1/checks", json={"wiki": "enwiki", "title": "Alsea", "wikitext": wikitext})
    assert response.status_code == 202
    record = store.check(response.get_json()["check"]["id"])
    assert [c.text for c in record.claims] == ["Alsea operates Starbucks in Mexico.", "It was founded in 1990."]
    assert [c.citation.url for c in record.claims] == ["https://example.org/a", "https://example.org/b"]
    assert record.client_keys == [c.key for c in record.claims]


def test_wikitext_without_citations_is_422_and_stores_nothing(client, store, queue):
    response = client.post("/api/v1/checks", json={"wiki": "enwiki", "title": "A", "wikitext": "No refs here."})
    assert_error(response, 422, "no_citations")
    assert_nothing_stored(store, queue)


def test_wikitext_with_too_many_citations_is_422(client, store, queue):
    wikitext = " ".join(f"Fact {n}.<ref>[https://example.org/{n} S{n}]</ref>" for n in range(51))
    response = client.post("/api/v1/checks", json={"wiki": "enwiki", "title": "A", "wikitext": wikitext})
    assert_error(response, 422, "too_many_citations")
    assert_nothing_stored(store, queue)


def test_wikitext_over_its_cap_is_413_and_stores_nothing(client, store, queue, web_config):
    limit = web_config.service.max_body_bytes // 2
    body = {"wiki": "enwiki", "title": "A", "wikitext": "x" * (limit + 1)}
    error = assert_error(client.post("/api/v1/checks", json=body), 413, "wikitext_too_large")
    assert str(limit) in error["error"]["message"]
    body["wikitext"] = "x" * limit  # at the cap: parsed (and refused only for holding no citation)
    assert_error(client.post("/api/v1/checks", json=body), 422, "no_citations")
    assert_nothing_stored(store, queue)


@pytest.mark.parametrize(("unit", "code"), [
    ("Claim. <ref>{{cite web |url=https://e.example/x |title=T}} more ", "no_citations"),
    ("{{a|{{b}} text ", "no_citations"),
    ("Text {{a|<ref>x}}</ref> ", "too_many_citations"),
])
def test_a_malformed_snippet_at_the_cap_is_parsed_and_refused(client, store, queue, web_config, unit, code):
    """Shapes that took minutes (each unclosed opener rescanned the rest) are answered at once;
    the time itself is printed by benchmarks/parse.py, not asserted here."""
    limit = web_config.service.max_body_bytes // 2
    wikitext = (unit * (limit // len(unit) + 1))[:limit]
    response = client.post("/api/v1/checks", json={"wiki": "enwiki", "title": "A", "wikitext": wikitext})
    assert_error(response, 422, code)
    assert_nothing_stored(store, queue)


def test_wikitext_too_malformed_for_the_parse_budget_is_422(client, store, queue, monkeypatch):
    from side.extract import parse

    # A budget of nothing: the parser gives up on every reading, as it would on a page whose
    # every reading runs past its budget.
    monkeypatch.setattr(parse, "WORK_FLOOR", 0)
    monkeypatch.setattr(parse, "WORK_PER_SEGMENT", 0)
    monkeypatch.setattr(parse, "FALLBACK_WORK_PER_SEGMENT", 0)
    body = {"wiki": "enwiki", "title": "A", "wikitext": "Claim.<ref>[https://example.org/a A]</ref>"}
    assert_error(client.post("/api/v1/checks", json=body), 422, "wikitext_too_complex")
    assert_nothing_stored(store, queue)


def test_a_failed_check_submitted_again_is_queued_again(client, store, queue):
    check = client.post("/api/v1/checks", json=claims_body()).get_json()["check"]
    queue.empty()  # the worker took the job ...
    store.start(check["id"])
    store.fail(check["id"], "SourceFetchError: timed out")  # ... and it failed for good
    assert client.get(f"/api/v1/checks/{check['id']}").get_json()["check"]["error"].startswith("SourceFetch")
    again = client.post("/api/v1/checks", json=claims_body())
    assert again.status_code == 202 and again.get_json()["check"]["status"] == "queued"
    assert queue.job_ids == [check["id"]]


def test_browser_call_from_an_allowed_wiki_is_the_gadget(client, store):
    response = client.post("/api/v1/checks", json=claims_body(), headers={"Origin": WIKI_ORIGIN})
    assert response.status_code == 202
    assert response.headers["Access-Control-Allow-Origin"] == WIKI_ORIGIN
    assert "Location" in response.headers["Access-Control-Expose-Headers"]
    assert store.check(response.get_json()["check"]["id"]).origin == "gadget"


def test_title_underscores_read_as_spaces(client, store):
    check = client.post("/api/v1/checks", json=claims_body(title="Alsea_(company)")).get_json()["check"]
    assert check["title"] == "Alsea (company)"


# -- reading ----------------------------------------------------------------------------------

@pytest.mark.parametrize("check_id", ["chk_" + "0" * 32, "nope", "chk_../../etc"])
def test_unknown_check_is_404(client, check_id):
    assert_error(client.get(f"/api/v1/checks/{check_id}"), 404, "not_found")


def test_page_answers_the_latest_checked_revision(client, store):
    old = client.post("/api/v1/checks", json=claims_body(title="AC/DC", revision=10)).get_json()["check"]
    new = client.post("/api/v1/checks", json=claims_body(title="AC/DC", revision=11, n=2)).get_json()["check"]
    pending = client.post("/api/v1/checks", json=claims_body(title="AC/DC", revision=12)).get_json()["check"]
    for check in (old, new):
        claims = store.check(check["id"]).claims
        finish(store, check["id"], [outcome(c, 0.2, True) for c in claims])
    response = client.get("/api/v1/pages/enwiki/AC/DC")
    assert response.status_code == 200
    page = response.get_json()["check"]
    assert page["id"] == new["id"] and page["revision"] == 11 and len(page["results"]) == 2
    assert store.check(pending["id"]).status == "queued"
    assert_error(client.get("/api/v1/pages/enwiki/Never_checked"), 404, "not_found")
    assert_error(client.get("/api/v1/pages/EN!/Foo"), 400, "bad_request")


# -- feedback ---------------------------------------------------------------------------------

@pytest.fixture
def flagged_result(client, store) -> int:
    check = client.post("/api/v1/checks", json=claims_body()).get_json()["check"]
    finish(store, check["id"], [outcome(store.check(check["id"]).claims[0], 0.1, True)])
    return store.results(check["id"])[0].id


def test_dismissing_with_a_reason_updates_the_review_status(client, store, flagged_result):
    log_in(client, "Alice")
    response = client.post("/api/v1/feedback", json={"result_id": flagged_result, "action": "dismiss",
                                                     "reason": "source-is-fine"})
    assert response.status_code == 201
    body = response.get_json()
    assert body["result"]["review_status"] == "dismissed" and body["feedback"]["reason"] == "source-is-fine"
    assert body["feedback"]["reviewer"] == "Alice" and "user" not in body["feedback"]
    assert store.result(flagged_result).review_status == "dismissed"
    assert [(f.action, f.reason, f.reviewer) for f in store.feedback_for(flagged_result)] == [
        ("dismiss", "source-is-fine", "Alice")]


def test_feedback_without_a_login_is_401_and_stores_nothing(client, store, flagged_result):
    body = assert_error(client.post("/api/v1/feedback", json={"result_id": flagged_result, "action": "accept"}),
                        401, "login_required")
    assert "/auth/login" in body["error"]["message"]
    assert store.feedback_for(flagged_result) == [] and store.result(flagged_result).review_status == "open"


def test_the_reviewer_name_field_is_gone(client, store, flagged_result):
    """The reviewer is who logged in: a name in the body is an unknown field, never stored."""
    log_in(client, "Alice")
    assert_error(client.post("/api/v1/feedback", json={"result_id": flagged_result, "action": "accept",
                                                       "user": "Mallory"}), 400, "bad_request")
    assert store.feedback_for(flagged_result) == []
    document = client.get("/api/v1/openapi.json").get_json()
    schemas = document["components"]["schemas"]
    assert "user" not in schemas["AcceptFeedback"]["properties"]
    assert "user" not in schemas["DismissFeedback"]["properties"]
    assert "reviewer" in schemas["Feedback"]["required"]
    operation = document["paths"]["/api/v1/feedback"]["post"]
    assert "401" in operation["responses"] and operation["security"] == [{"reviewerLogin": []}]


def test_accepting_a_suggestion(client, store, flagged_result):
    log_in(client)
    response = client.post("/api/v1/feedback", json={"result_id": flagged_result, "action": "accept",
                                                     "suggestion_url": "https://better.example/a"})
    assert response.status_code == 201
    assert store.result(flagged_result).review_status == "accepted"
    assert store.feedback_for(flagged_result)[0].suggestion_url == "https://better.example/a"


@pytest.mark.parametrize("body, status", [
    ({"result_id": None, "action": "dismiss", "reason": "not-relevant"}, 400),
    ({"action": "dismiss"}, 400),
    ({"action": "dismiss", "reason": "because"}, 400),
    ({"action": "delete"}, 400),
    ({"action": "accept", "suggestion_url": "javascript:alert(1)"}, 400),
    ({"action": "accept", "suggestion_url": ""}, 400),
    ({"action": "accept", "extra": 1}, 400),
    ({"action": "accept", "result_id": "7"}, 400),
    ({"action": "accept", "result_id": 0}, 400),
    ({"action": "accept", "result_id": 999_999}, 404),
])
def test_bad_feedback_is_refused_and_stores_nothing(client, store, flagged_result, body, status):
    log_in(client)
    body = {"result_id": flagged_result, **body}
    assert_error(client.post("/api/v1/feedback", json={k: v for k, v in body.items() if v is not None}), status)
    assert store.feedback_for(flagged_result) == []
    assert store.result(flagged_result).review_status == "open"


# -- bad input --------------------------------------------------------------------------------

def long_text(n: int) -> str:
    return "word " * (n // 5 + 1)


BAD_BODIES = {
    "not an object": [1, 2],
    "missing wiki": {k: v for k, v in claims_body().items() if k != "wiki"},
    "bad wiki id": claims_body(wiki="en wiki"),
    "wiki id too long": claims_body(wiki="a" * 65),
    "empty title": claims_body(title=" "),
    "title too long": claims_body(title="T" * 256),
    "title with illegal characters": claims_body(title="Foo|Bar"),
    "revision not an integer": claims_body(revision="123"),
    "revision is a boolean": claims_body(revision=True),
    "negative revision": claims_body(revision=-1),
    "claims and wikitext": {**claims_body(), "wikitext": "x<ref>y</ref>"},
    "neither claims nor wikitext": {"wiki": "enwiki", "title": "A"},
    "empty claims": claims_body(n=0),
    "too many claims": claims_body(n=51),
    "claim not an object": {**claims_body(), "claims": ["text"]},
    "claim without text": {**claims_body(), "claims": [{"key": "a", "url": "https://example.org"}]},
    "blank claim text": {**claims_body(), "claims": [{"text": "   "}]},
    "claim text too long": {**claims_body(), "claims": [{"text": long_text(2001)}]},
    "context too long": {**claims_body(), "claims": [{"text": "A.", "left_context": long_text(5001)}]},
    "ftp url": {**claims_body(), "claims": [{"text": "A.", "url": "ftp://example.org/a"}]},
    "javascript url": {**claims_body(), "claims": [{"text": "A.", "url": "javascript:alert(1)"}]},
    "url without host": {**claims_body(), "claims": [{"text": "A.", "url": "https://"}]},
    "url too long": {**claims_body(), "claims": [{"text": "A.", "url": "https://e.org/" + "a" * 2000}]},
    "empty url": {**claims_body(), "claims": [{"text": "A.", "url": ""}]},  # the OpenAPI pattern forbids it
    "section not a list": {**claims_body(), "claims": [{"text": "A.", "section": {"a": 1}}]},
    "too many sections": {**claims_body(), "claims": [{"text": "A.", "section": ["s"] * 11}]},
    "key too long": {**claims_body(), "claims": [{"text": "A.", "key": "k" * 65}]},
    "key not a string": {**claims_body(), "claims": [{"text": "A.", "key": 5}]},
    "unknown claim field": {**claims_body(), "claims": [{"text": "A.", "score": 1}]},
    "unknown field": {**claims_body(), "origin": "bot"},
    "control character": {**claims_body(), "claims": [{"text": "A\x00B."}]},
    "lone surrogate": {**claims_body(), "claims": [{"text": "A\ud800."}]},
    "wikitext not a string": {"wiki": "enwiki", "title": "A", "wikitext": ["x"]},
    "wikitext empty": {"wiki": "enwiki", "title": "A", "wikitext": ""},
}


@pytest.mark.parametrize("name", BAD_BODIES)
def test_invalid_bodies_are_400_and_store_nothing(client, store, queue, name):
    assert_error(client.post("/api/v1/checks", json=BAD_BODIES[name]), 400)
    assert_nothing_stored(store, queue)


@pytest.mark.parametrize("data", [b"{", b'{"wiki": "enwiki",}', b"\xff\xfe", b"", b"null", b"NaN"])
def test_malformed_json_is_400(client, store, queue, data):
    assert_error(client.post("/api/v1/checks", data=data, content_type="application/json"), 400)
    assert_nothing_stored(store, queue)


def test_a_body_that_is_not_json_is_415(client, store, queue):
    assert_error(client.post("/api/v1/checks", data="wiki=enwiki", content_type="application/x-www-form-urlencoded"),
                 415, "unsupported_media_type")
    log_in(client)
    assert_error(client.post("/api/v1/feedback", data="{}", content_type="text/plain"), 415)
    assert_nothing_stored(store, queue)


def test_a_huge_body_is_413_and_stores_nothing(client, store, queue, web_config):
    body = claims_body()
    body["claims"][0]["left_context"] = "x" * (web_config.service.max_body_bytes + 1)
    assert_error(client.post("/api/v1/checks", json=body), 413, "too_large")
    log_in(client)
    assert_error(client.post("/api/v1/feedback", data=b"{" * (web_config.service.max_body_bytes + 10),
                             content_type="application/json"), 413, "too_large")
    assert_nothing_stored(store, queue)


def test_wrong_method_is_405_with_allow(client):
    response = client.delete("/api/v1/checks")
    assert_error(response, 405, "method_not_allowed")
    assert set(response.headers["Allow"].split(", ")) >= {"POST", "OPTIONS"}
    assert_error(client.put(f"/api/v1/checks/chk_{'0' * 32}"), 405)


def test_unknown_path_is_404_json(client):
    assert_error(client.get("/api/v1/nothing"), 404, "not_found")
    assert_error(client.get("/api/v2/checks"), 404, "not_found")


# -- CORS and origins -------------------------------------------------------------------------

def preflight(client, origin: str):
    return client.options("/api/v1/checks", headers={
        "Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"})


def test_preflight_from_an_allowed_wiki_is_answered(client):
    response = preflight(client, WIKI_ORIGIN)
    assert response.status_code == 200
    assert response.headers["Access-Control-Allow-Origin"] == WIKI_ORIGIN
    assert "POST" in response.headers["Access-Control-Allow-Methods"]
    assert response.headers["Access-Control-Allow-Headers"].lower() == "content-type"
    assert "Origin" in response.headers["Vary"]
    assert "Access-Control-Allow-Credentials" not in response.headers


@pytest.mark.parametrize("origin", ["https://evil.example", "https://en.wikipedia.org.evil.example", "null",
                                    "http://en.wikipedia.org"])
def test_disallowed_origins_get_403_and_store_nothing(client, store, queue, origin):
    body = assert_error(preflight(client, origin), 403, "forbidden_origin")
    assert "Access-Control-Allow-Origin" not in preflight(client, origin).headers
    assert body["error"]["message"]
    response = client.post("/api/v1/checks", json=claims_body(), headers={"Origin": origin})
    assert_error(response, 403, "forbidden_origin")
    assert "Access-Control-Allow-Origin" not in response.headers
    assert_error(client.post("/api/v1/feedback", json={"result_id": 1, "action": "accept"},
                             headers={"Origin": origin}), 403)
    assert_nothing_stored(store, queue)


def test_reads_from_a_disallowed_origin_carry_no_cors_headers(client):
    response = client.get("/api/v1/openapi.json", headers={"Origin": "https://evil.example"})
    assert response.status_code == 200
    assert "Access-Control-Allow-Origin" not in response.headers


# -- rate limits ------------------------------------------------------------------------------

@pytest.fixture
def limited_client(tmp_path, redis_db):
    with running_app(make_config(tmp_path, redis_db.url, rate_limit="3/minute")) as app:
        yield app.test_client()


def post_as(client, address: str, revision: int, **headers):
    return client.post("/api/v1/checks", json=claims_body(revision=revision), headers=headers,
                       environ_base={"REMOTE_ADDR": address})


def test_posts_beyond_the_rate_limit_get_429_and_store_nothing(limited_client):
    store = limited_client.application.extensions["side"].store
    statuses = [post_as(limited_client, "10.0.0.1", n).status_code for n in range(3)]
    assert statuses == [202, 202, 202]
    response = post_as(limited_client, "10.0.0.1", 99)
    assert_error(response, 429, "rate_limited")
    assert int(response.headers["Retry-After"]) > 0
    assert response.headers["X-RateLimit-Limit"] == "3"
    assert len(store.checks()) == 3
    assert post_as(limited_client, "10.0.0.2", 100).status_code == 202  # another client
    assert limited_client.get(f"/api/v1/checks/chk_{'0' * 32}").status_code == 404  # reads are not limited


def test_x_forwarded_for_is_ignored_without_a_proxy(limited_client):
    for n in range(3):
        post_as(limited_client, "10.0.0.1", n, **{"X-Forwarded-For": f"192.0.2.{n}"})
    assert post_as(limited_client, "10.0.0.1", 9, **{"X-Forwarded-For": "192.0.2.77"}).status_code == 429


def test_x_forwarded_for_names_the_client_behind_a_proxy(tmp_path, redis_db):
    with running_app(make_config(tmp_path, redis_db.url, rate_limit="2/minute", proxy_hops=1)) as app:
        client = app.test_client()
        for n in range(2):
            assert post_as(client, "10.9.9.9", n, **{"X-Forwarded-For": "192.0.2.1"}).status_code == 202
        assert post_as(client, "10.9.9.9", 5, **{"X-Forwarded-For": "192.0.2.1"}).status_code == 429
        assert post_as(client, "10.9.9.9", 6, **{"X-Forwarded-For": "192.0.2.2"}).status_code == 202


# -- health, metrics, OpenAPI ----------------------------------------------------------------

def test_healthz_reports_each_component(client, web_config):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.get_json()
    components = body["components"]
    assert components["redis"]["ok"] and components["database"]["ok"]
    assert components["database"]["schema"]
    assert components["model"]["ok"] and components["model"]["missing"] == []
    assert 0 < components["model"]["flag_threshold"] < 1
    assert components["workers"] == {"ok": False, "live": 0, "workers": [], "supervised": []}
    # no scorer has run and no check was prepared: a deployment without scorers lacks nothing
    assert components["scorers"] == {"ok": True, "live": 0, "scorers": [], "stream": {
        "key": stream_key(web_config.service), "entries": 0, "waiting": 0, "pending": 0,
        "oldest_pending_idle_s": None}}
    assert body["status"] == "degraded"  # serving, but no worker would run the checks


def prepare(connection: redis.Redis, key: str, n: int) -> None:
    """What ``n`` readers hand the scorers: prepared checks (of a citation whose page was unreadable)."""
    unread = PreparedCheck((PreparedCitation(SourceStatus.UNAVAILABLE, error="HTTP 404"),))
    for k in range(n):
        add_prepared(connection, key, f"check-{k}", unread)


def scorers(client) -> dict:
    return client.get("/healthz").get_json()["components"]["scorers"]


def test_healthz_reports_the_scorers_and_the_prepared_checks_they_owe(client, web_config, redis_db):
    connection, key = redis_db.client(), stream_key(web_config.service)
    ensure_group(connection, key)
    prepare(connection, key, 3)
    waiting = scorers(client)
    assert not waiting["ok"] and waiting["live"] == 0 and waiting["scorers"] == []  # nobody scores them
    assert (waiting["stream"]["entries"], waiting["stream"]["waiting"], waiting["stream"]["pending"]) == (3, 3, 0)
    assert client.get("/healthz").get_json()["status"] == "degraded"

    beat_scorer(connection, key, "gpu-a-scorer0")
    held = read_prepared(connection, key, "gpu-a-scorer0", count=2)
    beat_scorer(connection, key, "gpu-b-scorer0", now=time.time() - SCORER_MAX_AGE_S - 1)  # it hung
    busy = scorers(client)
    assert busy["ok"] and busy["live"] == 1
    assert [(s["name"], s["pending"]) for s in busy["scorers"]] == [("gpu-a-scorer0", 2), ("gpu-b-scorer0", 0)]
    live, hung = busy["scorers"]
    assert live["heartbeat_age_s"] <= SCORER_MAX_AGE_S < hung["heartbeat_age_s"]
    assert live["last_heartbeat"].endswith("Z")
    assert (busy["stream"]["entries"], busy["stream"]["waiting"], busy["stream"]["pending"]) == (3, 1, 2)
    assert busy["stream"]["oldest_pending_idle_s"] >= 0

    ack_prepared(connection, key, [held[0].entry_id])  # one check stored
    assert (scorers(client)["stream"]["entries"], scorers(client)["stream"]["pending"]) == (2, 1)

    # the live scorer is killed: it stops beating and keeps its entry until another claims it
    beat_scorer(connection, key, "gpu-a-scorer0", now=time.time() - SCORER_MAX_AGE_S - 1)
    dead = scorers(client)
    assert not dead["ok"] and dead["live"] == 0
    assert [(s["name"], s["pending"]) for s in dead["scorers"]] == [("gpu-a-scorer0", 1), ("gpu-b-scorer0", 0)]


def test_a_live_scorer_counts_as_serving_the_model_and_metrics_show_the_stream(client, web_config, redis_db):
    connection, key = redis_db.client(), stream_key(web_config.service)
    ensure_group(connection, key)
    prepare(connection, key, 3)
    model = client.get("/healthz").get_json()["components"]["model"]
    assert model["served_by_scorer"] is False
    text = client.get("/metrics").get_data(as_text=True)
    assert "side_scorers_live 0.0" in text
    assert 'side_prepared_checks{state="waiting"} 3.0' in text and 'side_prepared_checks{state="pending"} 0.0' in text
    assert "side_prepared_oldest_pending_seconds 0.0" in text

    beat_scorer(connection, key, "gpu-a-scorer0")  # it loaded the model before this first beat
    read_prepared(connection, key, "gpu-a-scorer0", count=2)
    assert client.get("/healthz").get_json()["components"]["model"]["served_by_scorer"] is True
    text = client.get("/metrics").get_data(as_text=True)
    assert "side_scorers_live 1.0" in text
    assert 'side_prepared_checks{state="waiting"} 1.0' in text and 'side_prepared_checks{state="pending"} 2.0' in text


#: A real scorer's loop in its own process, beating every 0.5 s, on an empty stream (so it needs
#: neither a store nor the model): argv is the Redis URL, the stream key and the scorer's name.
SCORER_PROCESS = """
import sys
import redis
from workers.jobs import WorkerContext
from workers.scorer import Scorer
Scorer(redis.Redis.from_url(sys.argv[1]), sys.argv[2], sys.argv[3], WorkerContext(None, None), heartbeat_s=0.5).run()
"""


def test_a_killed_scorer_counts_as_dead_within_a_few_of_its_heartbeats(client, web_config, redis_db):
    """Issue 55.8: a scorer killed with SIGKILL (no chance to remove its heartbeat) was counted
    live by /healthz, and by the readers, for 180 s. It beats every 0.5 s here: within three
    beats of its death it is dead, /healthz is degraded and readers stop taking checks."""
    import signal
    import subprocess
    import sys

    from service.stream import live_scorers

    beats, missed = 0.5, 3  # its interval, and the beats it may miss (service.stream.MISSED_BEATS)
    key = stream_key(web_config.service)
    process = subprocess.Popen([sys.executable, "-c", SCORER_PROCESS, redis_db.url, key, "gpu-k-scorer0"])
    try:
        deadline = time.monotonic() + 120  # the import of the scorer's modules takes a while
        while scorers(client)["live"] == 0:
            assert process.poll() is None and time.monotonic() < deadline, "the scorer never beat"
            time.sleep(0.2)
        assert [s["name"] for s in scorers(client)["scorers"]] == ["gpu-k-scorer0"]
        assert live_scorers(redis_db.client(), key) == 1
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        killed = time.monotonic()
        while scorers(client)["live"] == 1:
            assert time.monotonic() - killed < missed * beats + 5, "a killed scorer still counts as live"
            time.sleep(0.1)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    dead = scorers(client)
    [state] = dead["scorers"]
    assert not dead["ok"] and state["max_age_s"] == missed * beats < state["heartbeat_age_s"]
    assert client.get("/healthz").get_json()["status"] == "degraded"
    assert live_scorers(redis_db.client(), key) == 0  # the readers' gate closes as promptly


def test_healthz_lists_a_consumer_that_holds_entries_without_a_heartbeat(client, web_config, redis_db):
    connection, key = redis_db.client(), stream_key(web_config.service)
    ensure_group(connection, key)
    prepare(connection, key, 1)
    read_prepared(connection, key, "gpu-c-scorer0", count=1)  # its heartbeat was dropped long ago
    body = scorers(client)
    assert body["scorers"] == [{"name": "gpu-c-scorer0", "last_heartbeat": None, "heartbeat_age_s": None,
                                "pending": 1, "max_age_s": SCORER_MAX_AGE_S}]
    assert not body["ok"] and body["stream"]["pending"] == 1


def test_healthz_is_503_when_redis_is_down(client, redis_db):
    redis_db.stop()
    try:
        response = client.get("/healthz")
        assert response.status_code == 503
        body = response.get_json()
        assert body["status"] == "down" and not body["components"]["redis"]["ok"]
        assert not body["components"]["scorers"]["ok"] and body["components"]["scorers"]["scorers"] == []
        assert body["components"]["database"]["ok"]
        assert_error(client.post("/api/v1/checks", json=claims_body()), 503, "queue_unavailable")
    finally:
        redis_db.start()


def test_metrics_count_requests_and_read_the_queue(client):
    client.post("/api/v1/checks", json=claims_body())
    client.get("/api/v1/checks/nope")
    text = client.get("/metrics").get_data(as_text=True)
    assert 'side_http_requests_total{endpoint="/api/v1/checks",method="POST",status="202"} 1.0' in text
    assert 'side_http_requests_total{endpoint="/api/v1/checks/<check_id>",method="GET",status="404"} 1.0' in text
    assert 'side_http_request_duration_seconds_count{endpoint="/api/v1/checks",method="POST"} 1.0' in text
    assert 'side_checks{status="queued"} 1.0' in text
    assert "side_queue_depth 1.0" in text
    assert 'side_component_up{component="redis"} 1.0' in text


def test_openapi_document_is_served(client, web_config):
    document = client.get("/api/v1/openapi.json").get_json()
    assert document["openapi"].startswith("3.")
    assert set(document["paths"]) >= {"/api/v1/checks", "/api/v1/checks/{check_id}",
                                      "/api/v1/pages/{wiki}/{title}", "/api/v1/feedback", "/healthz"}
    wikitext = document["components"]["schemas"]["WikitextCheck"]["properties"]["wikitext"]
    assert wikitext["maxLength"] == web_config.service.max_body_bytes // 2
    result = document["components"]["schemas"]["Result"]
    assert result["properties"]["level"]["enum"] == [
        "supported", "partially_supported", "not_supported", "cannot_check"]
    assert (result["properties"]["unsupported"]["type"], result["properties"]["unsupported"]["items"]) == (
        "array", {"type": "string"})
    assert result["properties"]["reportable"]["type"] == "boolean"
    assert result["properties"]["level_reason"]["type"] == "string"
    assert {"level", "level_reason", "unsupported", "reportable"} <= set(result["required"])
    assert not {"label", "verdict"} & set(result["properties"])


# -- configuration and entry points --------------------------------------------------------------

def test_app_reads_toml_and_side_environment(tmp_path, redis_db):
    from side.config import load_config

    toml = tmp_path / "side.toml"
    toml.write_text(f'''[service]
redis_url = "{redis_db.url}"
database_url = "sqlite:///{tmp_path / 'side.sqlite3'}"
cors_origins = ["https://de.wikipedia.org"]
public_url = "https://side.toolforge.org"

[service.wiki_urls]
localwiki = "http://127.0.0.1:8080"
''')
    config = load_config(toml, environ={"SIDE_SERVICE_CORS_ORIGINS": "https://fr.wikipedia.org,https://de.wikipedia.org",
                                        "SIDE_SERVICE_RATE_LIMIT": "5/minute"})
    with running_app(config) as app:
        svc = app.extensions["side"]
        assert svc.cors_origins == {"https://fr.wikipedia.org", "https://de.wikipedia.org"}
        assert svc.links.diff("localwiki", 2, 1) == "http://127.0.0.1:8080/index.php?diff=2&oldid=1"
        client = app.test_client()
        check = client.post("/api/v1/checks", json=claims_body(), headers={"Origin": "https://fr.wikipedia.org"})
        assert check.headers["X-RateLimit-Limit"] == "5"
        assert check.get_json()["check"]["dashboard_url"].startswith("https://side.toolforge.org/dashboard/checks/")
        assert preflight(client, WIKI_ORIGIN).status_code == 403  # en.wikipedia.org is not on this list


def test_side_web_refuses_a_missing_config_file(tmp_path):
    from gadget.server.serve import main

    assert main(["--config", str(tmp_path / "missing.toml")]) == 2
