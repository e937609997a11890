"""The patrol dashboard rendered by the app (Flask test client, real SQLite store and Redis).

The real-browser flow (a real worker flags a citation, a patroller dismisses it in Chromium)
is in tests/test_dashboard_browser.py; here each page's content and each form's effect on
the store are checked quickly.
"""

from __future__ import annotations

import lxml.html
import pytest

from gadget.server.dashboard.charts import nice_max
from gadget.server.links import WikiLinks, parse_wiki_urls
from side.verify.levels import VerdictLevel

from webapp import WIKI_URL, claims_body, finish, log_in, outcome

HTML = {"Accept": "text/html"}


def page(response) -> lxml.html.HtmlElement:
    assert response.content_type.startswith("text/html"), response.get_data(as_text=True)[:300]
    return lxml.html.fromstring(response.get_data(as_text=True))


def texts(doc, xpath: str) -> list[str]:
    return [" ".join(e.text_content().split()) for e in doc.xpath(xpath)]


def make_check(client, store, outcomes_of, wiki="enwiki", title="Alsea (company)", revision=124, n=2):
    """Submit through the API, then store the worker's outcome (``outcomes_of(claims)``)."""
    body = claims_body(wiki=wiki, title=title, revision=revision, n=n, parent_revision=120)
    check = client.post("/api/v1/checks", json=body).get_json()["check"]
    finish(store, check["id"], outcomes_of(store.check(check["id"]).claims))
    return store.results(check["id"])


@pytest.fixture
def flagged(client, store):
    """Three flagged citations (scores 0.05, 0.30, 0.20) on two wikis, and one supported."""
    first = make_check(client, store, lambda c: [
        outcome(c[0], 0.30, True, label="NOT ENOUGH INFO", level=VerdictLevel.PARTIALLY_SUPPORTED,
                suggestion=("https://better.example/report", "Alsea annual report 2023",
                            "Alsea operates 1 Starbucks store in Mexico."),
                evidence=("Alsea is a restaurant operator.", "It runs cafés in Mexico and Spain.")),
        outcome(c[1], 0.85, False, label="SUPPORTS")])
    second = make_check(client, store, lambda c: [outcome(c[0], 0.05, True), outcome(c[1], 0.20, True)],
                        wiki="testwiki_local", title="Local page", revision=7)
    return {"nei": first[0], "supported": first[1], "worst": second[0], "refuted": second[1]}


# -- queue ------------------------------------------------------------------------------------

def test_queue_lists_flagged_citations_most_likely_failed_first(client, flagged):
    doc = page(client.get("/dashboard/"))
    ids = [int(row.get("data-result-id")) for row in doc.xpath("//tr[@class='flagged-row']")]
    assert ids == [flagged["worst"].id, flagged["refuted"].id, flagged["nei"].id]
    assert flagged["supported"].id not in ids
    assert texts(doc, "//p[@class='counts']/span")[0] == "3 open"
    assert client.get("/").headers["Location"].endswith("/dashboard/")


@pytest.mark.parametrize("query, expected", [
    ("wiki=enwiki", ["nei"]),
    ("wiki=testwiki_local", ["worst", "refuted"]),
    ("level=not_supported", ["worst", "refuted"]),
    ("level=partially_supported", ["nei"]),
    ("min_score=0.1&max_score=0.25", ["refuted"]),
    ("max_score=0.1", ["worst"]),
    ("since=2000-01-01&until=2999-01-01", ["worst", "refuted", "nei"]),
    ("until=2000-01-01", []),
    ("status=dismissed", []),
])
def test_queue_filters(client, flagged, query, expected):
    doc = page(client.get(f"/dashboard/?{query}"))
    ids = [int(row.get("data-result-id")) for row in doc.xpath("//tr[@class='flagged-row']")]
    assert ids == [flagged[name].id for name in expected]


@pytest.mark.parametrize("query", ["min_score=abc", "max_score=2", "since=yesterday", "status=gone",
                                   "level=MAYBE", "level=NOT+ENOUGH+INFO", "wiki=EN%20WIKI", "page=0", "page=-1"])
def test_bad_filters_are_a_400_page(client, query):
    response = client.get(f"/dashboard/?{query}", headers=HTML)
    assert response.status_code == 400
    assert page(response).xpath("//p[@class='error-message']/@data-code") == ["bad_request"]


def test_queue_pages(client, store):
    make_check(client, store, lambda c: [outcome(x, 0.01 * i, True) for i, x in enumerate(c)], n=30)
    doc = page(client.get("/dashboard/"))
    assert len(doc.xpath("//tr[@class='flagged-row']")) == 25
    next_link = doc.xpath("//a[@rel='next']/@href")[0]
    rest = page(client.get(next_link))
    assert len(rest.xpath("//tr[@class='flagged-row']")) == 5 and not rest.xpath("//a[@rel='next']")


# -- detail -----------------------------------------------------------------------------------

def test_detail_shows_claim_in_context_passage_and_suggestion(client, flagged):
    result = flagged["nei"]
    log_in(client, "Patroller")
    doc = page(client.get(f"/dashboard/results/{result.id}"))
    assert texts(doc, "//blockquote[@class='context']/mark") == [result.claim_text]
    assert "Alsea is a restaurant operator." in texts(doc, "//blockquote[@class='context']")[0]
    assert texts(doc, "//p[@class='section-path']") == ["§ History"]
    assert texts(doc, "//blockquote[@class='passage']/mark") == ["Alsea is a restaurant operator."]
    assert texts(doc, "//article[@class='card suggestion']//blockquote[@class='evidence']/mark") == [
        "Alsea operates 1 Starbucks store in Mexico."]
    cite = doc.xpath("//textarea[@class='cite-text']")[0].text
    assert cite.startswith("{{cite web |url=https://better.example/report |title=Alsea annual report 2023")
    assert doc.xpath("//button[@class='copy']/@data-copy") == [doc.xpath("//textarea[@class='cite-text']/@id")[0]]
    assert doc.xpath("//a[@class='diff-link']/@href") == [
        "https://en.wikipedia.org/w/index.php?diff=124&oldid=120"]
    assert doc.xpath("//a[@class='article-link']/@href") == [
        "https://en.wikipedia.org/w/index.php?title=Alsea_%28company%29&oldid=124"]
    assert sorted(doc.xpath("//form[@class='dismiss-form']//input[@name='reason']/@value")) == [
        "not-relevant", "other", "source-is-fine", "suggestion-wrong"]
    assert texts(doc, "//p[contains(@class, 'reviewing-as')]") == ["Reviewing as Patroller."]
    assert not doc.xpath("//form//input[@name='user']")


def test_detail_links_to_a_configured_wiki(client, flagged):
    doc = page(client.get(f"/dashboard/results/{flagged['worst'].id}"))
    assert doc.xpath("//a[@class='diff-link']/@href") == [f"{WIKI_URL}/index.php?diff=7&oldid=120"]


def test_unknown_result_is_a_404_page(client):
    response = client.get("/dashboard/results/999999", headers=HTML)
    assert response.status_code == 404
    assert page(response).xpath("//p[@class='error-message']/@data-code") == ["not_found"]


# -- feedback forms ---------------------------------------------------------------------------

def test_dismissing_with_a_reason_updates_the_store(client, store, flagged):
    result = flagged["nei"]
    token = log_in(client, "Patroller")
    response = client.post(f"/dashboard/results/{result.id}/feedback",
                           data={"action": "dismiss", "reason": "source-is-fine", "comment": "Page 4 says so.",
                                 "csrf_token": token})
    assert response.status_code == 303
    assert store.result(result.id).review_status == "dismissed"
    [record] = store.feedback_for(result.id)
    assert (record.action, record.reason, record.comment, record.reviewer) == (
        "dismiss", "source-is-fine", "Page 4 says so.", "Patroller")
    doc = page(client.get(response.headers["Location"]))
    assert texts(doc, "//p[@class='notice']") == ["Saved: dismissed."]
    assert "The cited source is fine" in texts(doc, "//section[@class='card history']")[0]
    queue = page(client.get("/dashboard/"))
    assert result.id not in [int(r.get("data-result-id")) for r in queue.xpath("//tr[@class='flagged-row']")]


def test_accepting_a_suggestion_records_it(client, store, flagged):
    result = flagged["nei"]
    token = log_in(client)
    response = client.post(f"/dashboard/results/{result.id}/feedback",
                           data={"action": "accept", "suggestion_url": "https://better.example/report",
                                 "csrf_token": token})
    assert response.status_code == 303
    assert store.feedback_for(result.id)[0].suggestion_url == "https://better.example/report"
    assert store.result(result.id).review_status == "accepted"


@pytest.mark.parametrize("data", [{"action": "dismiss"}, {"action": "dismiss", "reason": "meh"},
                                  {"action": "nuke"}, {"action": "accept", "suggestion_url": "javascript:x"}])
def test_bad_feedback_forms_are_400_and_store_nothing(client, store, flagged, data):
    result = flagged["nei"]
    token = log_in(client)
    response = client.post(f"/dashboard/results/{result.id}/feedback", data={**data, "csrf_token": token},
                           headers=HTML)
    assert response.status_code == 400
    assert store.feedback_for(result.id) == [] and store.result(result.id).review_status == "open"


def test_forms_posted_from_another_site_are_refused(client, store, flagged):
    result = flagged["nei"]
    token = log_in(client)
    response = client.post(f"/dashboard/results/{result.id}/feedback", headers={"Origin": "https://evil.example"},
                           data={"action": "dismiss", "reason": "other", "csrf_token": token})
    assert response.status_code == 403
    assert store.feedback_for(result.id) == []
    own = client.post(f"/dashboard/results/{result.id}/feedback", headers={"Origin": "http://localhost"},
                      data={"action": "dismiss", "reason": "other", "csrf_token": token})
    assert own.status_code == 303


# -- check and stats --------------------------------------------------------------------------

def test_check_page_refreshes_while_queued(client):
    check = client.post("/api/v1/checks", json=claims_body()).get_json()["check"]
    doc = page(client.get(f"/dashboard/checks/{check['id']}"))
    assert doc.xpath("//meta[@http-equiv='refresh']/@content") == ["5"]
    assert texts(doc, "//span[contains(@class, 'status-queued')]") == ["queued"]
    assert client.get("/dashboard/checks/chk_nope", headers=HTML).status_code == 404


LEVEL_BADGES = "//span[contains(concat(' ', @class, ' '), ' level ')]"


def test_check_page_lists_results_with_levels(client, flagged):
    doc = page(client.get(f"/dashboard/checks/{flagged['nei'].check_id}"))
    assert texts(doc, LEVEL_BADGES) == ["partially supported", "supported"]
    assert not doc.xpath("//meta[@http-equiv='refresh']")


def test_a_source_that_could_not_be_checked_shows_as_such_with_its_reason(client, store):
    from side.pipeline import Result, SourceStatus

    reasons = ["login wall: the page asks to sign in", "HTTP 503 fetching https://example.org/report-1"]
    stored = make_check(client, store, lambda c: [Result(c[0], SourceStatus.CANNOT_CHECK, source_error=reasons[0]),
                                                  Result(c[1], SourceStatus.UNAVAILABLE, source_error=reasons[1])])
    doc = page(client.get(f"/dashboard/checks/{stored[0].check_id}"))
    badges = doc.xpath(LEVEL_BADGES)
    assert [b.text_content() for b in badges] == ["could not be checked"] * 2
    assert [b.get("class") for b in badges] == ["badge level level-cannot-check"] * 2
    assert [b.get("title") for b in badges] == reasons
    assert texts(doc, "//td/span[@class='level-reason']") == reasons  # the reason in words, not only on hover
    detail = page(client.get(f"/dashboard/results/{stored[0].id}"))
    assert texts(detail, "//dd[@class='verdict']") == [f"could not be checked {reasons[0]}"]
    assert not detail.xpath("//dd[contains(@class, 'source-note')]")  # said once, with the level


def test_stats_page_plots_scores_days_and_acceptance(client, store, flagged):
    store.add_feedback(flagged["nei"].id, "accept")
    store.add_feedback(flagged["worst"].id, "dismiss", reason="source-is-fine")
    doc = page(client.get("/dashboard/stats?days=30"))
    assert texts(doc, "//span[@class='tile-num']") == ["2", "4", "3", "0", "50%"]
    charts = doc.xpath("//svg")
    assert [c.get("aria-label") for c in charts] == [
        "Checked citations by verdict", "Distribution of support scores by verdict", "Flagged citations per day",
        "Share of reviewed suggestions accepted", "Why suggestions were dismissed"]
    assert [(r.get("class"), r.xpath("title")[0].text) for r in charts[0].xpath(".//rect")] == [
        ("bar-supported", "supported: 1"), ("bar-partially-supported", "partially supported: 1"),
        ("bar-not-supported", "not supported: 2"), ("bar-cannot-check", "could not be checked: 0")]
    bars = {(r.get("class"), r.xpath("title")[0].text) for r in charts[1].xpath(".//rect[title]")}
    assert bars == {("bar-not-supported", "0.0–0.1: 1 not supported"),
                    ("bar-not-supported", "0.2–0.3: 1 not supported"),
                    ("bar-partially-supported", "0.3–0.4: 1 partially supported"),
                    ("bar-supported", "0.8–0.9: 1 supported")}
    assert charts[1].xpath(".//text[@class='marker-label']")[0].text.startswith("supported from 0.")
    daily = [t.text.split(": ")[1] for t in charts[2].xpath(".//rect/title")]
    assert sorted(daily) == ["1 partially supported", "2 not supported"]  # the one day, by level
    assert charts[3].xpath(".//text[@class='ring-centre']")[0].text == "50%"
    assert charts[4].xpath(".//rect/title")[0].text == "The cited source is fine: 1"
    filtered = page(client.get("/dashboard/stats?wiki=enwiki"))
    assert texts(filtered, "//span[@class='tile-num']")[:3] == ["1", "2", "1"]
    assert client.get("/dashboard/stats?days=0", headers=HTML).status_code == 400


def test_empty_stats_page_renders(client):
    doc = page(client.get("/dashboard/stats"))
    assert texts(doc, "//span[@class='tile-num']") == ["0", "0", "0", "0", "–"]


def test_static_files_are_local(client):
    doc = page(client.get("/dashboard/"))
    urls = doc.xpath("//link/@href") + doc.xpath("//script/@src")
    assert urls and all(u.startswith("/dashboard/static/") for u in urls)
    for url in urls:
        with client.get(url) as response:  # closes the file a static response streams
            assert response.status_code == 200


# -- article page -----------------------------------------------------------------------------

def test_article_page_shows_the_latest_check_flagged_first(client, store):
    make_check(client, store, lambda c: [outcome(c[0], 0.01, True)], revision=100)  # older: not shown
    results = make_check(client, store, lambda c: [outcome(c[0], 0.85, False, label="SUPPORTS"),
                                                   outcome(c[1], 0.20, True), outcome(c[2], 0.05, True),
                                                   outcome(c[3], 0.90, False, label="SUPPORTS")], n=4)
    doc = page(client.get("/dashboard/pages/enwiki/Alsea_(company)"))
    rows = doc.xpath("//tr[contains(@class, 'result-row')]")
    assert [int(r.get("data-result-id")) for r in rows] == [results[i].id for i in (2, 1, 0, 3)]
    assert texts(doc, "//td/span[contains(@class, 'level-')]") == [
        "not supported", "not supported", "supported", "supported"]
    assert texts(doc, "//span[@class='score-num']") == ["0.05", "0.20", "0.85", "0.90"]
    assert doc.xpath("//a[@class='result-link']/@href") == [f"/dashboard/results/{results[i].id}" for i in (2, 1, 0, 3)]
    assert doc.xpath("//a[@class='article-link']/@href") == [
        "https://en.wikipedia.org/w/index.php?title=Alsea_%28company%29&oldid=124"]
    assert doc.xpath("//a[@class='diff-link']/@href") == ["https://en.wikipedia.org/w/index.php?diff=124&oldid=120"]
    assert doc.xpath("//a[@class='check-link']/@href") == [f"/dashboard/checks/{results[0].check_id}"]
    assert texts(doc, "//h1") == ["Alsea (company)"]


def test_article_page_reads_spaces_and_underscores_alike(client, flagged):
    for path in ("Alsea_(company)", "Alsea%20(company)", "Alsea__(company)_"):
        doc = page(client.get(f"/dashboard/pages/enwiki/{path}"))
        assert [int(r.get("data-result-id")) for r in doc.xpath("//tr[contains(@class, 'result-row')]")] == [
            flagged["nei"].id, flagged["supported"].id], path


def test_article_page_of_a_title_with_slashes_is_the_checks_page_url(client, store):
    body = claims_body(wiki="testwiki_local", title="AC/DC discography", revision=9)
    check = client.post("/api/v1/checks", json=body).get_json()["check"]
    assert check["page_url"] == "http://side.test/dashboard/pages/testwiki_local/AC/DC_discography"
    finish(store, check["id"], [outcome(c, 0.1, True) for c in store.check(check["id"]).claims])
    doc = page(client.get(check["page_url"].removeprefix("http://side.test")))
    assert texts(doc, "//h1") == ["AC/DC discography"]
    assert doc.xpath("//a[@class='article-link']/@href") == [
        f"{WIKI_URL}/index.php?title=AC%2FDC_discography&oldid=9"]
    assert len(doc.xpath("//tr[contains(@class, 'result-row')]")) == 1


def test_article_never_checked_is_a_404_empty_state(client):
    client.post("/api/v1/checks", json=claims_body(title="Queued page"))  # queued, not finished
    for title in ("Never_checked", "Queued_page"):
        response = client.get(f"/dashboard/pages/enwiki/{title}", headers=HTML)
        assert response.status_code == 404
        doc = page(response)
        assert texts(doc, "//section[contains(@class, 'not-checked')]")[0].startswith("Not checked yet")
        assert doc.xpath("//a[@class='article-link']/@href") == [
            f"https://en.wikipedia.org/w/index.php?title={title}"]
        assert not doc.xpath("//table")
    assert client.get("/dashboard/pages/EN%20WIKI/Foo", headers=HTML).status_code == 400
    assert client.get("/dashboard/pages/enwiki/Foo%7Cbar", headers=HTML).status_code == 400


def test_check_and_detail_pages_link_to_the_article_page(client, flagged):
    for url in (f"/dashboard/checks/{flagged['nei'].check_id}", f"/dashboard/results/{flagged['nei'].id}"):
        doc = page(client.get(url))
        assert doc.xpath("//a[@class='page-link']/@href") == ["/dashboard/pages/enwiki/Alsea_(company)"], url


# -- links and charts -------------------------------------------------------------------------

@pytest.mark.parametrize("wiki, base", [
    ("enwiki", "https://en.wikipedia.org/w"), ("dewiktionary", "https://de.wiktionary.org/w"),
    ("zh_min_nanwiki", "https://zh-min-nan.wikipedia.org/w"), ("commonswiki", "https://commons.wikimedia.org/w"),
    ("testwiki", "https://test.wikipedia.org/w"), ("wikidatawiki", "https://www.wikidata.org/w"),
    ("mylocal", None),
])
def test_wiki_ids_map_to_script_paths(wiki, base):
    assert WikiLinks().script_path(wiki) == base


def test_wiki_urls_from_toml_or_environment():
    assert parse_wiki_urls({"local": "http://127.0.0.1:8080/"}) == {"local": "http://127.0.0.1:8080"}
    assert parse_wiki_urls("local=http://127.0.0.1:8080, other=http://x/w") == {
        "local": "http://127.0.0.1:8080", "other": "http://x/w"}
    links = WikiLinks("local=http://127.0.0.1:8080")
    assert links.diff("local", 5, None) == "http://127.0.0.1:8080/index.php?diff=5"
    assert links.diff("local", None, None) is None


@pytest.mark.parametrize("value, top", [(0, 1), (1, 1), (3, 5), (7, 10), (11, 20), (250, 500)])
def test_axis_maximum_is_round(value, top):
    assert nice_max(value) == top
