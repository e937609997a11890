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
from side.sources.archive import ArchiveReader
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
    """A worker's reading of the check's sources (the citation's archive-url read when the page
    fails; no Wayback lookups); the results stored; each by URL."""
    store = app.extensions["side"].store
    fetch_config = FetchConfig(allow_hosts=["127.0.0.1"], wayback_api="")
    fetch = lambda url, deadline=None: fetch_source(url, fetch_config, config.cache_dir, deadline)  # noqa: E731
    loader = make_source_loader(None, fetch, archive=ArchiveReader(fetch_config, fetch=fetch),
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


def test_other_tracking_parameters_are_not_another_page(app, config, server):
    client = app.test_client()
    first = server.url("/page6?utm_source=a")
    work(app, config, post(client, [first], "192.0.2.3"))
    assert fetches(app).spent("address:192.0.2.3") == 1
    variants = [server.url("/page6?utm_source=b"), server.url("/page6?fbclid=x&utm_source=c#top")]
    results = work(app, config, post(client, variants, "192.0.2.3", title="Variant"))
    assert fetches(app).spent("address:192.0.2.3") == 1  # counted once
    assert server.requests.count("/page6?utm_source=a") == 1 and server.hits["/page6"] == 1  # fetched once
    for url in variants:
        assert "under another URL" in results[url].level_reason
        assert "tracking parameters" in results[url].level_reason
    # the URL itself with a fragment is the same fetch: read from the cache, never charged
    same = work(app, config, post(client, [first + "#history"], "192.0.2.3", title="Fragment"))
    assert same[first + "#history"].source_status is SourceStatus.FETCHED and server.hits["/page6"] == 1
    assert fetches(app).spent("address:192.0.2.3") == 1


def test_pages_told_apart_by_their_query_string_are_each_fetched(app, config, server):
    """Issue 55.5: after ``watch?v=video0`` the citations of ``?v=video1``... ended "cannot check
    (fetch budget)" with 1 of 200 pages spent; each video is a page of its own."""
    client = app.test_client()
    server.add("/watch", lambda path: Response(html_article(HARBOUR, title=f"Video {path[-1]}")))
    work(app, config, post(client, [server.url("/watch?v=video0")], "192.0.2.7"))
    urls = [server.url("/watch?v=video1&utm_medium=share"), server.url("/watch?list=x&v=video2")]
    results = work(app, config, post(client, urls, "192.0.2.7", title="Videos"))
    assert [results[u].source_status for u in urls] == [SourceStatus.FETCHED] * 2
    assert server.hits["/watch"] == 3 and fetches(app).spent("address:192.0.2.7") == 3
    # the client's budget (3) still bounds them
    fourth = server.url("/watch?v=video3")
    assert work(app, config, post(client, [fourth], "192.0.2.7", title="More"))[fourth].level_reason.startswith(
        BUDGET + "this client's budget of 3 cited pages")


@pytest.mark.parametrize(("url", "key"), [
    ("https://Video.example/watch?v=a#t=10", "https://video.example/watch?v=a"),
    ("https://video.example/watch?utm_source=x&v=a&UTM_Campaign=y&fbclid=z", "https://video.example/watch?v=a"),
    ("https://video.example/s?b=2&a=1&gclid=q&mc_cid=1&mc_eid=2&igshid=3&ref_src=tw", "https://video.example/s?a=1&b=2"),
    ("https://video.example/s?q=a+b&empty=", "https://video.example/s?empty=&q=a%20b"),
    ("https://video.example/a?utm_source=only", "https://video.example/a"),
])
def test_a_page_key_keeps_the_query_string_but_tracking_parameters(url, key):
    from service.fetchbudget import page_key

    assert page_key(url) == key


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


def archived_citation(n: int, server: LocalServer) -> str:
    return (f"Harbour fact {n}.<ref>{{{{cite web |url={server.url(f'/gone{n}')} |title=Harbour {n} "
            f"|archive-url={server.url(f'/archive{n}')} |archive-date=1 May 2020}}}}</ref>\n")


def test_an_archive_url_is_charged_to_the_client_and_the_host(app, config, server):
    """Issue 55.4: only the cited URL was charged, while the worker also fetched the archive-url
    (any URL): 40 citations caused 80 fetches. Each archive-url is charged like its page; one over
    budget is not fetched, and the cited page is still read."""
    for n in range(3):
        server.add(f"/archive{n}", Response(html_article(HARBOUR, title=f"Harbour {n} (archived)")))
    client = app.test_client()
    wikitext = "".join(archived_citation(n, server) for n in range(2))
    response = client.post("/api/v1/checks", json={"wiki": "enwiki", "title": "Harbour", "wikitext": wikitext},
                           environ_base={"REMOTE_ADDR": "192.0.2.8"})
    assert response.status_code == 202, response.get_json()
    check_id = response.get_json()["check"]["id"]
    # two cited pages and the first archive: the client's budget of 3; the second archive is dropped
    assert fetches(app).spent("address:192.0.2.8") == 3 and fetches(app).host_spent("127.0.0.1") == 3
    stored = {c.citation.url: c for c in app.extensions["side"].store.check(check_id).claims}
    assert stored[server.url("/gone0")].citation.archive_url == server.url("/archive0")
    assert stored[server.url("/gone1")].citation.archive_url is None
    assert not any(c.no_fetch for c in stored.values())
    results = work(app, config, check_id)
    assert (server.hits["/gone0"], server.hits["/archive0"]) == (1, 1)
    assert (server.hits["/gone1"], server.hits["/archive1"]) == (1, 0)
    assert results[server.url("/gone0")].source_status is SourceStatus.FETCHED
    assert results[server.url("/gone1")].source_status is not SourceStatus.FETCHED
    # the host's budget (5) counts archives too: another client gets 2 more fetches from it
    other = client.post("/api/v1/checks", json={"wiki": "enwiki", "title": "Harbour 2",
                                                "wikitext": archived_citation(2, server)},
                        environ_base={"REMOTE_ADDR": "192.0.2.9"})
    assert fetches(app).host_spent("127.0.0.1") == 5 and fetches(app).spent("address:192.0.2.9") == 2
    assert other.status_code == 202
    [claim] = app.extensions["side"].store.check(other.get_json()["check"]["id"]).claims
    assert not claim.no_fetch and claim.citation.archive_url == server.url("/archive2")


def test_an_archive_url_over_budget_is_not_read_when_it_is_the_only_copy(redis_db):
    """A citation that marks its URL unfit (usurped) is read from its archive alone: that archive
    over budget leaves nothing to fetch, so the claim is read from the corpus or cache only."""
    from service.fetchbudget import FetchBudgetPolicy, OutsideFetches
    from side.extract.wikitext import extract_claims

    fetches_ = OutsideFetches(redis_db.client(), FetchBudgetPolicy(client=1, host=10), namespace="unfit")
    text = ("A fact.<ref>{{cite web |url=http://usurped.example/a |title=A |url-status=usurped "
            "|archive-url=https://web.archive.org/web/2010/http://usurped.example/a}}</ref>\n"
            "B fact.<ref>{{cite web |url=http://usurped.example/b |title=B |url-status=usurped "
            "|archive-url=https://web.archive.org/web/2010/http://usurped.example/b}}</ref>\n")
    first, second = fetches_.charge_claims("address:192.0.2.10", list(extract_claims(text, "Usurped", 50)))
    assert not first.no_fetch and first.citation.archive_url
    assert second.no_fetch.startswith("this client's budget of 1 cited pages")
    assert fetches_.host_spent("web.archive.org") == 1 and fetches_.host_spent("usurped.example") == 0


def test_the_window_slides_across_the_hour(redis_db):
    """Issue 55.5: the window was a fixed clock hour, so a client could spend its budget just
    before the hour and again just after it. Now a fetch counts for a full window after it."""
    from service.fetchbudget import FetchBudgetPolicy, OutsideFetches

    now = [3599.0]
    fetches_ = OutsideFetches(redis_db.client(), FetchBudgetPolicy(client=3, host=100, window_s=3600),
                              namespace="sliding", clock=lambda: now[0])
    assert fetches_.charge("address:192.0.2.11", [f"http://a.example/{n}" for n in range(3)]) == {}
    now[0] = 3601.0  # a new clock hour: the three fetches are 2 s old
    denied = fetches_.charge("address:192.0.2.11", ["http://a.example/3"])
    assert denied["http://a.example/3"].startswith("this client's budget of 3 cited pages fetched per hour")
    assert fetches_.spent("address:192.0.2.11") == 3
    now[0] = 3599.0 + 3600  # a full window after them, they no longer count
    assert fetches_.spent("address:192.0.2.11") == 0
    assert fetches_.charge("address:192.0.2.11", ["http://a.example/3", "http://a.example/0"]) == {}
    assert fetches_.spent("address:192.0.2.11") == 2 and fetches_.host_spent("a.example") == 2


def test_a_url_whose_port_is_out_of_range_is_still_a_page():
    """Found by schemathesis: a cited URL with port 99999 passed validation and the budget's page
    key raised, a 500. The page key keeps the port as written; the fetch refuses it later."""
    from service.fetchbudget import page_key

    assert page_key("http://Example.org:99999/a?x=1#f") == "http://example.org:99999/a?x=1"
    assert page_key("http://example.org:8080/a") == "http://example.org:8080/a"
