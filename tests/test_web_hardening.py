"""Abuse cases against the web service: each one a request an outside probe sent, and its answer.

The app runs on a real SQLite store and a real Redis (tests/webapp.py); the waitress cases
run the real server on a loopback port. What is checked is what an attacker or a careless
client would see: links that cannot run script, the security headers on every page, the one
JSON error shape for malformed, oversize and out-of-range input, nothing stored by a refused
request, and one rate-limit budget per client across endpoints.
"""

from __future__ import annotations

import json
import socket
import time

import lxml.html
import pytest
import redis
import requests

from gadget.server.dashboard.views import MAX_RESULT_ID
from gadget.server.security import REFERRER_POLICY, content_security_policy, http_url
from gadget.server.serve import BODY_BUFFER_FACTOR, make_server
from service.queue import get_queue
from service.store import CheckRequest
from side.config import load_config
from side.errors import ConfigError
from side.extract.wikitext import extract_claims

from webapp import claims_body, finish, log_in, make_config, outcome, running_app, serving

HTML = {"Accept": "text/html"}
EVIL_URLS = ["javascript:alert(document.domain)", "JaVaScRiPt:alert(1)", "data:text/html,<script>alert(1)</script>",
             "vbscript:msgbox(1)"]


def assert_error(response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.get_data(as_text=True)[:500]
    body = response.get_json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"} and body["error"]["message"]
    if code:
        assert body["error"]["code"] == code
    return body


def queue_of(config):
    return get_queue(redis.Redis.from_url(config.service.redis_url), config.service)


def wikitext_body(url: str) -> dict:
    return {"wiki": "enwiki", "title": "Eiffel Tower", "revision": 7,
            "wikitext": f"The tower is 330 metres tall.<ref>{{{{cite web |url={url} |title=Facts}}}}</ref>\n"}


# -- links: only http(s) becomes an href ------------------------------------------------------

@pytest.mark.parametrize("url", EVIL_URLS)
def test_wikitext_citing_a_script_url_is_refused_and_stores_nothing(client, store, web_config, url):
    body = assert_error(client.post("/api/v1/checks", json=wikitext_body(url)), 400, "bad_request")
    assert "citation 1" in body["error"]["message"] and "http(s)" in body["error"]["message"]
    assert store.checks() == [] and queue_of(web_config).count == 0


def test_protocol_relative_wikitext_urls_are_read_as_https(client, store):
    response = client.post("/api/v1/checks", json=wikitext_body("//museum.example/eiffel"))
    assert response.status_code == 202, response.get_data(as_text=True)
    record = store.check(response.get_json()["check"]["id"])
    assert record.claims[0].citation.url == "https://museum.example/eiffel"


@pytest.fixture
def bot_check_with_script_urls(client, store):
    """Work that did not come through the API (the bot stores extracted claims as they are):
    a cited ``javascript:`` URL and a suggested ``data:`` URL, flagged, as the dashboard gets it."""
    claims = list(extract_claims(wikitext_body(EVIL_URLS[0])["wikitext"], "Eiffel Tower", 50))
    record, _ = store.add_check(CheckRequest(wiki="enwiki", title="Eiffel Tower", revision=7, claims=claims,
                                             origin="bot"))
    finish(store, record.id, [outcome(claims[0], 0.1, True, suggestion=(EVIL_URLS[2], "Evil", "It is 330 m."))])
    return record, store.results(record.id)[0]


def hrefs(response) -> list[str]:
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    return lxml.html.fromstring(response.get_data(as_text=True)).xpath("//a/@href")


def test_stored_script_urls_never_become_links_on_any_page(client, bot_check_with_script_urls):
    record, result = bot_check_with_script_urls
    assert result.citation_url == EVIL_URLS[0]  # what the probe got rendered as a live href
    pages = ["/dashboard/", f"/dashboard/results/{result.id}", f"/dashboard/checks/{record.id}",
             "/dashboard/pages/enwiki/Eiffel_Tower"]
    for path in pages:
        response = client.get(path, headers=HTML)
        links = hrefs(response)
        assert links and all(h.startswith(("/", "http://", "https://")) for h in links), (path, links)
        assert "javascript:" not in " ".join(links).lower() and "data:" not in " ".join(links).lower()
    detail = lxml.html.fromstring(client.get(f"/dashboard/results/{result.id}", headers=HTML).get_data(as_text=True))
    assert detail.xpath("string(//span[contains(@class, 'source-link')])") == EVIL_URLS[0]  # shown, inert
    assert detail.xpath("string(//span[contains(@class, 'suggestion-link')])") == "Evil"


@pytest.mark.parametrize("value, linked", [
    ("https://example.org/a?b=1#c", True), ("HTTP://EXAMPLE.ORG/", True), ("http://[::1]:8080/x", True),
    ("javascript:alert(1)", False), (" https://example.org/", False), ("java\tscript:alert(1)", False),
    ("https://exa mple.org/", False), ("https:///nohost", False), ("//example.org/", False),
    ("data:text/html,x", False), ("https://example.org/\x85", False), ("http://[::1/", False), (None, False),
])
def test_http_url_is_the_one_rule_for_links(value, linked):
    assert http_url(value) == (value if linked else None)


# -- security headers -------------------------------------------------------------------------

def test_every_page_sends_the_security_headers_and_holds_no_inline_code(client, bot_check_with_script_urls):
    record, result = bot_check_with_script_urls
    for path in ["/dashboard/", f"/dashboard/results/{result.id}", f"/dashboard/checks/{record.id}",
                 "/dashboard/pages/enwiki/Eiffel_Tower", "/dashboard/stats", "/dashboard/results/12345",
                 "/dashboard/?until=9999-12-31", "/api/v1/openapi.json", f"/api/v1/checks/{record.id}", "/healthz"]:
        response = client.get(path, headers=HTML if path.startswith("/dashboard") else {})
        policy = response.headers.get("Content-Security-Policy", "")
        for directive in ("script-src 'self'", "style-src 'self'", "object-src 'none'", "base-uri 'none'",
                          "frame-ancestors 'none'"):
            assert directive in policy, (path, policy)
        assert "unsafe-inline" not in policy
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert response.headers["Referrer-Policy"] == "same-origin"
        if response.content_type.startswith("text/html"):
            doc = lxml.html.fromstring(response.get_data(as_text=True))
            assert doc.xpath("//*[@style] | //style | //script[not(@src)]") == [], path
            assert not [a for e in doc.iter() if isinstance(e.tag, str) for a in e.attrib if a.startswith("on")]


def test_frame_ancestors_come_from_the_configuration(tmp_path, redis_db):
    config = make_config(tmp_path, redis_db.url, frame_ancestors=["https://en.wikipedia.org/"])
    with running_app(config) as app:
        policy = app.test_client().get("/dashboard/", headers=HTML).headers["Content-Security-Policy"]
    assert policy.endswith("frame-ancestors https://en.wikipedia.org")
    bad = make_config(tmp_path / "bad", redis_db.url, frame_ancestors=["https://x.example; script-src *"])
    with pytest.raises(ConfigError, match="frame_ancestors"), running_app(bad):
        pass


# -- error shapes -----------------------------------------------------------------------------

@pytest.mark.parametrize("body", ["[" * 50_000 + "]" * 50_000, '{"wiki": ' + "[" * 50_000 + "]" * 50_000 + "}"])
def test_deeply_nested_json_is_a_400_not_a_500(client, store, body):
    response = client.post("/api/v1/checks", data=body, content_type="application/json")
    assert_error(response, 400, "malformed_json")
    log_in(client)
    assert_error(client.post("/api/v1/feedback", data=body, content_type="application/json"), 400, "malformed_json")
    assert store.checks() == []


@pytest.mark.parametrize("result_id", ["99999999999999999999999", str(2**63), str(MAX_RESULT_ID + 1)])
def test_result_ids_beyond_any_row_are_404(client, result_id):
    assert client.get(f"/dashboard/results/{result_id}", headers=HTML).status_code == 404
    assert_error(client.get(f"/dashboard/results/{result_id}"), 404, "not_found")
    assert_error(client.post(f"/dashboard/results/{result_id}/feedback", data={"action": "accept"}), 404)


@pytest.mark.parametrize("query", ["until=9999-12-31", "since=9999-12-31", "since=0001-01-01", "until=0999-12-31"])
def test_dates_outside_the_storable_range_are_400(client, query):
    response = client.get(f"/dashboard/?{query}", headers=HTML)
    assert response.status_code == 400
    assert "1000-01-01" in response.get_data(as_text=True)
    assert client.get("/dashboard/?since=1000-01-01&until=9999-12-30", headers=HTML).status_code == 200


C1 = ["\x80", "\x85", "\x9f"]


@pytest.mark.parametrize("char", C1)
@pytest.mark.parametrize("field", ["text", "left_context", "citation_title", "url", "section", "title", "wikitext"])
def test_c1_control_characters_are_refused(client, store, char, field):
    body = claims_body()
    claim = body["claims"][0]
    if field == "title":
        body["title"] = f"Alsea{char}company"
    elif field == "wikitext":
        body = wikitext_body("https://example.org/a")
        body["wikitext"] = body["wikitext"].replace("330", f"330{char}")
    elif field == "section":
        claim["section"] = [f"His{char}tory"]
    elif field == "url":
        claim["url"] += f"x{char}y"
    else:
        claim[field] = f"{claim[field][:3]}{char}{claim[field][3:]}"
    assert_error(client.post("/api/v1/checks", json=body), 400, "bad_request")
    assert store.checks() == []


@pytest.mark.parametrize("char", C1)
def test_c1_control_characters_are_refused_in_feedback(client, store, char):
    result = make_result(client, store)
    token = log_in(client)
    assert_error(client.post("/api/v1/feedback", json={"result_id": result.id, "action": "accept",
                                                        "comment": f"ok{char}"}), 400)
    form = client.post(f"/dashboard/results/{result.id}/feedback",
                       data={"action": "accept", "comment": f"ok{char}", "csrf_token": token}, headers=HTML)
    assert form.status_code == 400
    assert store.feedback_for(result.id) == []


def test_other_unicode_is_still_accepted(client):
    body = claims_body()
    body["claims"][0]["text"] = "Alsea\u00a0operates café\u2009stores in México \u2014 über 1\u202f000."
    assert client.post("/api/v1/checks", json=body).status_code == 202


# -- a refused request stores nothing ---------------------------------------------------------

@pytest.fixture
def refusing_redis(web_config):
    """Redis that answers but refuses to queue: RQ's set of queues is not a set (WRONGTYPE)."""
    client = redis.Redis.from_url(web_config.service.redis_url)
    client.set("rq:queues", "not a set")
    yield client
    client.delete("rq:queues")


def test_a_check_that_cannot_be_queued_is_not_stored(client, store, web_config, refusing_redis):
    """The probe's 503 left the check stored, and a worker ran it later; now nothing stays."""
    assert_error(client.post("/api/v1/checks", json=claims_body()), 503, "queue_unavailable")
    assert store.checks() == []
    refusing_redis.delete("rq:queues")
    response = client.post("/api/v1/checks", json=claims_body())
    assert response.status_code == 202
    assert queue_of(web_config).job_ids == [response.get_json()["check"]["id"]]


def test_known_results_are_still_answered_while_redis_refuses(client, store, refusing_redis):
    refusing_redis.delete("rq:queues")
    check = client.post("/api/v1/checks", json=claims_body()).get_json()["check"]
    finish(store, check["id"], [outcome(store.check(check["id"]).claims[0], 0.9, False, label="SUPPORTS")])
    refusing_redis.set("rq:queues", "not a set")
    assert client.post("/api/v1/checks", json=claims_body()).status_code == 200


# -- rate limits: one budget per client across endpoints --------------------------------------

def make_result(client, store, revision: int = 500, address: str = "10.9.9.9"):
    check = client.post("/api/v1/checks", json=claims_body(revision=revision),
                        environ_base={"REMOTE_ADDR": address}).get_json()["check"]
    finish(store, check["id"], [outcome(store.check(check["id"]).claims[0], 0.1, True)])
    return store.results(check["id"])[0]


def api_feedback(client, result_id: int, **kwargs):
    return client.post("/api/v1/feedback", json={"result_id": result_id, "action": "accept"}, **kwargs)


def form_feedback(client, result_id: int, token: str, **kwargs):
    return client.post(f"/dashboard/results/{result_id}/feedback", data={"action": "accept", "csrf_token": token},
                       **kwargs)


def test_one_post_budget_is_shared_by_checks_feedback_and_the_dashboard(tmp_path, redis_db):
    """The probe got 60 a minute on each endpoint; now the three draw on one count."""
    with running_app(make_config(tmp_path, redis_db.url, rate_limit="3/minute")) as app:
        client, store = app.test_client(), app.extensions["side"].store
        result = make_result(client, store)
        token = log_in(client)
        me = {"environ_base": {"REMOTE_ADDR": "10.0.0.1"}}
        assert client.post("/api/v1/checks", json=claims_body(revision=1), **me).status_code == 202
        assert api_feedback(client, result.id, **me).status_code == 201
        assert form_feedback(client, result.id, token, **me).status_code == 303
        assert_error(client.post("/api/v1/checks", json=claims_body(revision=2), **me), 429, "rate_limited")
        assert form_feedback(client, result.id, token, headers=HTML, **me).status_code == 429
        assert len(store.checks()) == 2 and len(store.feedback_for(result.id)) == 2
        other = {"environ_base": {"REMOTE_ADDR": "10.0.0.2"}}
        assert client.post("/api/v1/checks", json=claims_body(revision=3), **other).status_code == 202


def test_feedback_has_its_own_stricter_budget(tmp_path, redis_db):
    config = make_config(tmp_path, redis_db.url, rate_limit="100/minute", feedback_rate_limit="2/minute")
    with running_app(config) as app:
        client, store = app.test_client(), app.extensions["side"].store
        result = make_result(client, store)
        token = log_in(client)
        me = {"environ_base": {"REMOTE_ADDR": "10.0.0.1"}}
        assert api_feedback(client, result.id, **me).status_code == 201
        assert form_feedback(client, result.id, token, **me).status_code == 303
        response = api_feedback(client, result.id, **me)
        assert_error(response, 429, "rate_limited")
        assert response.headers["X-RateLimit-Limit"] == "2"
        assert client.post("/api/v1/checks", json=claims_body(revision=1), **me).status_code == 202
        assert len(store.feedback_for(result.id)) == 2


# -- Redis down: the rate limit fails closed ---------------------------------------------------

@pytest.fixture
def redis_down_app(tmp_path):
    """The app on a Redis address nothing listens on (it starts all the same: /healthz says so)."""
    from harness import free_port

    with running_app(make_config(tmp_path, f"redis://127.0.0.1:{free_port()}/0")) as app:
        yield app


def test_while_redis_is_down_posts_get_503_json_with_one_log_line_and_no_traceback(redis_down_app, caplog):
    """Issue 55.6: the limiter swallowed its Redis errors, so no limit held (feedback was stored,
    without end) and each POST logged three chained tracebacks. Now it fails closed."""
    client, store = redis_down_app.test_client(), redis_down_app.extensions["side"].store
    claims = list(extract_claims(wikitext_body("https://museum.example/eiffel")["wikitext"], "Eiffel Tower", 50))
    record, _ = store.add_check(CheckRequest(wiki="enwiki", title="Eiffel Tower", revision=7, claims=claims,
                                             origin="bot"))
    finish(store, record.id, [outcome(claims[0], 0.1, True)])
    result = store.results(record.id)[0]
    token = log_in(client)
    for _ in range(3):  # every POST, not only the first: no unlimited rate
        caplog.clear()
        with caplog.at_level("INFO"):
            response = api_feedback(client, result.id)
        body = assert_error(response, 503, "queue_unavailable")
        assert "Redis" in body["error"]["message"] and response.headers["Retry-After"] == "30"
        problems = [r for r in caplog.records if r.levelno >= 30]
        assert len(problems) == 1, [r.getMessage() for r in problems]
        assert "Redis unavailable on POST /api/v1/feedback" in problems[0].getMessage()
        assert not any(r.exc_info or r.exc_text for r in caplog.records)
    assert_error(client.post("/api/v1/checks", json=claims_body()), 503, "queue_unavailable")
    page = form_feedback(client, result.id, token, headers=HTML)
    assert page.status_code == 503 and page.mimetype == "text/html"
    assert store.feedback_for(result.id) == []  # nothing was taken in without a limit
    # reads need no Redis: they are answered, and /healthz says what is down
    assert client.get(f"/api/v1/checks/{record.id}").status_code == 200
    health = client.get("/healthz")
    assert health.status_code == 503 and health.get_json()["components"]["redis"]["ok"] is False


# -- waitress in front: its own refusals have the JSON shape too ------------------------------

@pytest.fixture
def served(app, web_config):
    with serving(make_server(app, web_config.service, host="127.0.0.1", port=0, threads=2)) as server:
        yield f"http://127.0.0.1:{server.effective_port}"


def assert_security_headers(headers, web_config) -> None:
    """The headers every answer carries, waitress's own refusals included (issue 55.8)."""
    lowered = {name.lower(): value for name, value in headers.items()}
    assert lowered.get("content-security-policy") == content_security_policy(web_config.service.frame_ancestors)
    assert lowered.get("x-content-type-options") == "nosniff"
    assert lowered.get("referrer-policy") == REFERRER_POLICY


def test_bodies_beyond_waitress_buffer_get_the_json_413(served, store, web_config):
    limit = web_config.service.max_body_bytes
    for size in (limit + 1, BODY_BUFFER_FACTOR * limit + 1, 3 * 1024 * 1024):
        response = requests.post(f"{served}/api/v1/checks", data=b"x" * size,
                                 headers={"Content-Type": "application/json"}, timeout=30)
        assert response.status_code == 413, (size, response.text[:200])
        assert response.headers["Content-Type"] == "application/json"
        assert response.json() == {"error": {"code": "too_large",
                                             "message": f"the body is larger than {limit} bytes"}}
        assert_security_headers(response.headers, web_config)
    assert store.checks() == []


def raw_exchange(served: str, request: bytes) -> tuple[bytes, dict[str, str], bytes]:
    """Send ``request`` as it is to the served app; its status line, headers and body."""
    host, port = served.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(request)
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    return status.encode(), headers, body


def test_a_malformed_request_gets_the_json_400(served, web_config):
    status, headers, body = raw_exchange(served, b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 400 "), status
    assert headers["Content-Type"] == "application/json"
    assert set(json.loads(body)["error"]) == {"code", "message"}
    assert_security_headers(headers, web_config)


def test_headers_beyond_waitress_limit_get_the_json_431_with_the_security_headers(served, web_config):
    """Waitress answers 431 itself (headers over 256 KiB): it carried no CSP (issue 55.8). The
    headers stop just past the limit, so that waitress has read all of them when it answers (bytes
    left unread when it closes would reset the connection before the answer is read)."""
    from waitress.adjustments import Adjustments

    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (Adjustments.max_request_header_size + 10)
    status, headers, body = raw_exchange(served, request)
    assert status.split()[1] == b"431", status  # waitress answers it as HTTP/1.0
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body)["error"]["code"] == "headers_too_large"
    assert_security_headers(headers, web_config)


def test_waitress_refusals_carry_the_configured_frame_ancestors(tmp_path, redis_db):
    config = make_config(tmp_path, redis_db.url, frame_ancestors=["https://en.wikipedia.org"])
    with running_app(config) as app:
        with serving(make_server(app, config.service, host="127.0.0.1", port=0, threads=2)) as server:
            _, headers, _ = raw_exchange(f"http://127.0.0.1:{server.effective_port}",
                                         b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n")
    assert headers["Content-Security-Policy"].endswith("frame-ancestors https://en.wikipedia.org")


@pytest.mark.parametrize(("host", "hops", "warned"), [
    ("0.0.0.0", 1, True), ("::", 1, True), ("192.0.2.1", 2, True), ("side.example", 1, True),
    ("127.0.0.1", 1, False), ("::1", 1, False), ("[::1]", 1, False), ("localhost", 1, False), ("0.0.0.0", 0, False),
])
def test_trusting_a_proxy_while_listening_past_it_is_warned_at_start(host, hops, warned, caplog):
    """Issue 55.8: with proxy_hops = 1 a client reaching side-web directly sends its own
    X-Forwarded-For and picks its budget; side-web says so when it listens beyond loopback."""
    from gadget.server.serve import warn_if_reachable_past_the_proxy

    with caplog.at_level("WARNING", logger="gadget.server.serve"):
        assert warn_if_reachable_past_the_proxy(host, hops) is warned
    assert bool(caplog.records) is warned
    if warned:
        assert "only through its reverse proxy" in caplog.records[0].getMessage()


def test_a_request_that_never_sends_its_body_is_closed_after_the_channel_timeout(tmp_path, redis_db):
    """Content-Length promised 1,000 bytes, 8 came: the connection was held until the client gave up."""
    config = make_config(tmp_path, redis_db.url, channel_timeout_s=1)
    with running_app(config) as app:
        with serving(make_server(app, config.service, host="127.0.0.1", port=0, threads=2)) as server:
            with socket.create_connection(("127.0.0.1", server.effective_port), timeout=20) as conn:
                conn.sendall(b"POST /api/v1/checks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                             b"Content-Length: 1000\r\n\r\n{\"wiki\":")
                started = time.monotonic()
                while conn.recv(65536):  # b"" once the server has closed the connection
                    pass
                held = time.monotonic() - started
        assert app.extensions["side"].store.checks() == []
    assert held < 5, f"held {held:.1f} s"


def test_a_channel_timeout_below_one_second_is_refused(tmp_path):
    (tmp_path / "side.toml").write_text("[service]\nchannel_timeout_s = 0\n")
    with pytest.raises(ConfigError, match="channel_timeout_s"):
        load_config(tmp_path / "side.toml", environ={})
