"""The API's fetch budgets: what a caller can make Side fetch, on the real app, Redis and HTTP.

Each test posts checks to the real app (a real Redis, an SQLite store), then does what a worker
does with the check's sources: the real loader (:func:`side.pipeline.source_results`) fetches
each cited URL from a local HTTP server through ``fetch_source`` and its cache, or reads it from
the cache only where the API marked it over budget. The server counts what was really fetched.
The verifier is not loaded: these tests are about which pages are fetched, not about verdicts.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from side.config import Config, FetchConfig
from side.pipeline import Result, SourceStatus, make_source_loader, source_results
from side.sources.fetch import fetch_source, load_cached

from hostile import HARBOUR, html_article
from httpserver import LocalServer, Response
from webapp import finish, make_config, running_app

BUDGET = "cannot check (fetch budget): "


@pytest.fixture
def server() -> Iterator[LocalServer]:
    with LocalServer() as local:
        for n in range(10):
            local.add(f"/page{n}", Response(html_article(HARBOUR, title=f"Harbour {n}")))
        yield local


@pytest.fixture
def config(tmp_path, redis_db) -> Config:
    return make_config(tmp_path, redis_db.url, client_fetch_budget=3, host_fetch_budget=5)


@pytest.fixture
def app(config):
    with running_app(config) as app:
        yield app


def post(client, urls: list[str], address: str, title: str = "Harbour"):
    claims = [{"key": f"c{n}", "text": f"{HARBOUR[0]} ({title})", "url": url} for n, url in enumerate(urls)]
    response = client.post("/api/v1/checks", json={"wiki": "enwiki", "title": title, "claims": claims},
                           environ_base={"REMOTE_ADDR": address})
    assert response.status_code == 202, response.get_json()
    return response.get_json()["check"]["id"]


def work(app, config: Config, check_id: str) -> dict[str, Result]:
    """A worker's reading of the check's sources; the results stored; each by URL."""
    store = app.extensions["side"].store
    fetch_config = FetchConfig(allow_hosts=["127.0.0.1"])
    loader = make_source_loader(
        None, lambda url, deadline=None: fetch_source(url, fetch_config, config.cache_dir, deadline),
        cached=lambda url: load_cached(config.cache_dir, url))
    results = source_results(loader, store.check(check_id).claims)
    finish(store, check_id, results)
    return {r.claim.citation.url: r for r in results}


def fetches(app) -> object:
    return app.extensions["side"].fetches


def test_past_the_client_budget_fetches_stop_and_the_answer_says_why(app, config, server):
    client = app.test_client()
    urls = [server.url(f"/page{n}") for n in range(5)]
    check_id = post(client, urls, "192.0.2.1")
    results = work(app, config, check_id)
    assert [server.hits[f"/page{n}"] for n in range(5)] == [1, 1, 1, 0, 0]
    assert [results[u].source_status for u in urls[:3]] == [SourceStatus.FETCHED] * 3
    for url in urls[3:]:
        assert results[url].source_status is SourceStatus.UNAVAILABLE
        assert results[url].level_reason.startswith(BUDGET + "this client's budget of 3 cited pages")
    # the client gets its answer from the API, each citation's reason with it
    answer = client.get(f"/api/v1/checks/{check_id}").get_json()["check"]
    assert answer["status"] == "done"
    told = {r["client_key"]: (r["level"], r["level_reason"]) for r in answer["results"]}
    assert [told[f"c{n}"][0] for n in (3, 4)] == ["cannot_check"] * 2
    assert all(told[f"c{n}"][1].startswith(BUDGET) for n in (3, 4))
    assert not any(told[f"c{n}"][1].startswith(BUDGET) for n in (0, 1, 2))
    # pages Side read already still cost nothing and are checked from the cache; new ones are not fetched
    again = work(app, config, post(client, [urls[0], server.url("/page5")], "192.0.2.1", title="Again"))
    assert again[urls[0]].source_status is SourceStatus.FETCHED and server.hits["/page0"] == 1
    assert again[server.url("/page5")].level_reason.startswith(BUDGET) and server.hits["/page5"] == 0
    assert fetches(app).spent("address:192.0.2.1") == 3
    # another client has a budget of its own
    other = work(app, config, post(client, [server.url("/page5")], "192.0.2.2"))
    assert other[server.url("/page5")].source_status is SourceStatus.FETCHED and server.hits["/page5"] == 1


def test_another_query_string_is_not_another_page(app, config, server):
    client = app.test_client()
    first = server.url("/page6?utm_source=a")
    work(app, config, post(client, [first], "192.0.2.3"))
    assert fetches(app).spent("address:192.0.2.3") == 1
    variants = [server.url("/page6?utm_source=b"), server.url("/page6?utm_source=c#top")]
    results = work(app, config, post(client, variants, "192.0.2.3", title="Variant"))
    assert fetches(app).spent("address:192.0.2.3") == 1  # counted once
    assert server.requests.count("/page6?utm_source=a") == 1 and server.hits["/page6"] == 1  # fetched once
    for url in variants:
        assert "with another query string" in results[url].level_reason
    # the URL itself with a fragment is the same fetch: read from the cache, never charged
    same = work(app, config, post(client, [first + "#history"], "192.0.2.3", title="Fragment"))
    assert same[first + "#history"].source_status is SourceStatus.FETCHED and server.hits["/page6"] == 1
    assert fetches(app).spent("address:192.0.2.3") == 1


def test_the_host_budget_is_shared_by_all_clients(app, config, server):
    client = app.test_client()
    work(app, config, post(client, [server.url(f"/page{n}") for n in range(3)], "192.0.2.4"))
    second = [server.url(f"/page{n}") for n in range(3, 6)]
    results = work(app, config, post(client, second, "192.0.2.5"))
    assert [results[u].source_status for u in second[:2]] == [SourceStatus.FETCHED] * 2
    assert results[second[2]].level_reason == BUDGET + "the budget of 5 pages per hour fetched from 127.0.0.1 is spent"
    assert server.hits["/page5"] == 0
    assert fetches(app).host_spent("127.0.0.1") == 5
    assert fetches(app).spent("address:192.0.2.5") == 2


def test_a_reviewer_has_a_larger_budget_of_their_own(app, config, server):
    from webapp import log_in

    client = app.test_client()
    log_in(client, "Patroller")
    urls = [server.url(f"/page{n}") for n in range(4)]
    results = work(app, config, post(client, urls, "192.0.2.6"))
    assert all(results[u].source_status is SourceStatus.FETCHED for u in urls)
    assert fetches(app).spent("reviewer:Patroller") == 4 and fetches(app).spent("address:192.0.2.6") == 0


def test_a_url_whose_port_is_out_of_range_is_still_a_page():
    """Found by schemathesis: a cited URL with port 99999 passed validation and the budget's page
    key raised, a 500. The page key keeps the port as written; the fetch refuses it later."""
    from service.fetchbudget import page_key

    assert page_key("http://Example.org:99999/a?x=1#f") == "http://example.org:99999/a"
    assert page_key("http://example.org:8080/a") == "http://example.org:8080/a"
