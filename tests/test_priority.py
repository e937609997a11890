"""The patrol queue's priority (side.priority): signals, the perennial sources list, page history.

The list is read from a TSV written here (and the shipped copy is checked for shape and
provenance); ages and survival come from a real local MediaWiki's history, edited through its
API; the dashboard's order comes from the real app and store.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import lxml.html
import pytest

from side.config import PriorityConfig, load_config
from side.extract.claims import Citation, Claim
from side.extract.wikiapi import HistoryRevision, PageNotFoundError, api_url_of, fetch_history
from side.pipeline import Result, SourceStatus
from side.priority import (
    PERENNIAL_SOURCES,
    Prioritizer,
    PrioritySignals,
    ReferenceHistory,
    Reliability,
    load_perennial_sources,
    order,
    priority,
    reference_history,
    result_priority,
    url_depth_of,
)
from side.verify.levels import VerdictLevel

from webapp import finish, outcome

LIST = """# SOURCE: a test list
# DATE: 2026-01-02
domain\tstatus\trsp_code\tsource\tlast_discussed
bbc.co.uk\tgenerally_reliable\tgr\tBBC\t2024
dailymail.co.uk\tdeprecated\td\tDaily Mail\t2024
breitbart.com\tblacklisted\tgu b=y\tBreitbart\t2023
forbes.com\tgenerally_reliable\tgr\tForbes\t2024
forbes.com\tgenerally_unreliable\tgu\tForbes.com contributors\t2024
forbes.com/advisor\tgenerally_unreliable\tgu\tForbes Advisor\t2024
oddsite.example\tnot a status\tx\tBroken row\t2020
"""

WEIGHTS = PriorityConfig(generic_url=0.1, reliability=0.2, young_reference=0.1)


@pytest.fixture
def sources(tmp_path):
    path = tmp_path / "rsp.tsv"
    path.write_text(LIST, encoding="utf-8")
    return load_perennial_sources(path)


# -- the perennial sources list ---------------------------------------------------------------

@pytest.mark.parametrize("url, status", [
    ("https://www.bbc.co.uk/news/world-1", Reliability.GENERALLY_RELIABLE),
    ("http://news.bbc.co.uk/2/hi/uk_news/1.stm", Reliability.GENERALLY_RELIABLE),  # a subdomain is its domain's
    ("https://WWW.DailyMail.co.uk/news/article-1.html", Reliability.DEPRECATED),
    ("https://www.breitbart.com/", Reliability.BLACKLISTED),
    ("https://www.forbes.com/advisor/banking/x", Reliability.GENERALLY_UNRELIABLE),  # a listed path wins
    ("https://www.forbes.com/sites/someone/x", Reliability.NO_CONSENSUS),  # rated per part: no single status
    ("https://notbbc.co.uk/x", Reliability.UNLISTED),  # a suffix of a name is not its domain
    ("https://bbc.co.uk.evil.example/x", Reliability.UNLISTED),
    ("https://oddsite.example/", Reliability.UNLISTED),  # its row had no valid status: skipped
])
def test_lookup_by_domain_subdomain_and_path(sources, url, status):
    assert sources.reliability(url) is status


@pytest.mark.parametrize("url", ["", None, "not a url", "http://[::1", "https://", "javascript:alert(1)", 42])
def test_a_malformed_url_is_unlisted_with_no_depth(sources, url):
    assert sources.reliability(url) is Reliability.UNLISTED
    assert url_depth_of(url) is None
    signals = PrioritySignals(0.5, url or "", sources.reliability(url))
    assert priority(signals, WEIGHTS).score == 0.5  # neutral: nothing added, nothing raised


def test_the_shipped_list_names_its_source_and_date_and_every_row_reads():
    head = PERENNIAL_SOURCES.read_text(encoding="utf-8").splitlines()
    assert any(line.startswith("# SOURCE: https://en.wikipedia.org/wiki/Wikipedia:Reliable_sources/Perennial_sources")
               for line in head)
    listed = load_perennial_sources()
    datetime.strptime(listed.source_date, "%Y-%m-%d")
    rows = [line for line in head if line and not line.startswith("#")][1:]
    assert len(listed.entries) == len(rows)  # no row was skipped as malformed
    assert {e.reliability for e in listed.entries} == set(Reliability) - {Reliability.UNLISTED}


# -- the priority -----------------------------------------------------------------------------

def test_each_signal_moves_a_citation_up_as_it_says(sources):
    same = 0.6
    plain = priority(PrioritySignals(same, "https://example.org/2024/report.html"), WEIGHTS)
    generic = priority(PrioritySignals(same, "https://example.org/"), WEIGHTS)
    unreliable = priority(PrioritySignals(same, "https://dailymail.co.uk/a/b",
                                          sources.reliability("https://dailymail.co.uk/a/b")), WEIGHTS)
    young = priority(PrioritySignals(same, "https://example.org/a/b",
                                     history=ReferenceHistory(1, None, 1.0, revisions_survived=0)), WEIGHTS)
    old = priority(PrioritySignals(same, "https://example.org/a/b",
                                   history=ReferenceHistory(1, None, 900.0, revisions_survived=40)), WEIGHTS)
    assert plain.score == same and not plain.raised_by
    assert generic.score > plain.score and [p.signal for p in generic.raised_by] == ["generic_url"]
    assert unreliable.score > plain.score and [p.signal for p in unreliable.raised_by] == ["reliability"]
    assert young.score > old.score > plain.score
    ranked = order([plain, generic, unreliable, young])
    assert ranked[-1] == 0 and set(ranked[:3]) == {1, 2, 3}


def test_worse_reliability_weighs_more(sources):
    scores = [priority(PrioritySignals(0.5, "https://x.example/a", status), WEIGHTS).score
              for status in (Reliability.GENERALLY_RELIABLE, Reliability.NO_CONSENSUS,
                             Reliability.GENERALLY_UNRELIABLE, Reliability.DEPRECATED, Reliability.BLACKLISTED)]
    assert scores == sorted(scores) and len(set(scores)) == len(scores)


def test_zero_weights_give_failure_likelihood_order_and_unscored_go_last():
    off = replace(WEIGHTS, generic_url=0.0, reliability=0.0, young_reference=0.0)
    items = [priority(PrioritySignals(fl, "https://example.org/", Reliability.DEPRECATED), off)
             for fl in (0.2, None, 0.9, 0.5)]
    assert order(items) == [2, 3, 0, 1]
    assert items[1].score is None
    assert priority(PrioritySignals(float("nan"), "https://example.org/"), WEIGHTS).score is None


def test_a_far_likelier_failure_still_leads():
    generic = priority(PrioritySignals(0.5, "https://www.example.org", Reliability.BLACKLISTED), WEIGHTS)
    likely = priority(PrioritySignals(0.95, "https://example.org/a/b/c"), WEIGHTS)
    assert order([generic, likely]) == [1, 0]


def test_priority_round_trips_through_its_dict(sources):
    history = ReferenceHistory(7, datetime(2026, 1, 2, 3, 4, 5), 3.5, 2, 10, False)
    made = priority(PrioritySignals(0.7, "https://example.org/", Reliability.DEPRECATED, history), WEIGHTS)
    assert type(made).from_dict(made.to_dict()) == made


def test_config_reads_priority_weights_from_the_environment():
    config = load_config(environ={"SIDE_PRIORITY_GENERIC_URL": "0.3", "SIDE_PRIORITY_HISTORY_REVISIONS": "0"})
    assert config.priority.generic_url == 0.3 and config.priority.history_revisions == 0


# -- reference age and survival ---------------------------------------------------------------

def _revisions(*texts: str) -> list[HistoryRevision]:
    start = datetime(2026, 1, 1)
    return [HistoryRevision(n + 1, start + timedelta(days=n), text) for n, text in enumerate(texts)]


def test_history_counts_from_the_last_time_the_url_came_back():
    url = "https://example.org/a"
    revisions = _revisions("no ref", f"<ref>{url}</ref>", "removed", f"<ref>{url}</ref> back", f"x {url}", f"y {url}")
    history = reference_history(revisions, url)
    assert (history.first_revision, history.revisions_survived, history.age_days) == (4, 2, 2.0)
    assert not reference_history(revisions, "https://other.example/").known
    assert not reference_history([], url).known and not reference_history(revisions, "").known


def test_history_from_a_real_wiki(mediawiki):
    title = "Priority history page"
    url = "https://news.example.org/2024/story.html"
    mediawiki.edit(title, "Alsea is a company.")
    added = mediawiki.edit(title, f"Alsea is a company.<ref>[{url} Story]</ref>")
    kept = [mediawiki.edit(title, f"Alsea is a company.<ref>[{url} Story]</ref> Edit {n}.") for n in range(3)]

    revisions, complete = fetch_history(mediawiki.api, title, limit=50)
    assert complete and [r.revision for r in revisions][-4:] == [added, *kept]
    history = reference_history(revisions, url, complete=complete)
    assert history.first_revision == added and history.revisions_survived == len(kept)
    assert history.first_seen is not None and history.age_days is not None and history.age_days >= 0

    # a history cut short still bounds what is read, and says the URL may be older
    short, whole = fetch_history(mediawiki.api, title, limit=2)
    assert len(short) == 2 and not whole
    assert not reference_history(short, url, complete=whole).complete
    # up to an older revision: the newer edits are not seen
    until, _ = fetch_history(mediawiki.api, title, until_revision=added)
    assert until[-1].revision == added
    assert reference_history(until, url).revisions_survived == 0

    with pytest.raises(PageNotFoundError):
        fetch_history(mediawiki.api, "No such page for priority")


def test_prioritizer_dates_references_from_the_wiki_and_survives_an_unknown_one(mediawiki, sources):
    title = "Priority prioritizer page"
    old, new = "https://old.example.org/a/b", "https://www.dailymail.co.uk/news/x"
    mediawiki.edit(title, f"One.<ref>{old}</ref>")
    for n in range(3):
        mediawiki.edit(title, f"One.<ref>{old}</ref> Two {n}.")
    revision = mediawiki.edit(title, f"One.<ref>{old}</ref> Two.<ref>{new}</ref>")
    results = [_result(old, 0.4), _result(new, 0.4), _result("", None)]
    prioritizer = Prioritizer(WEIGHTS, api_url=lambda wiki: api_url_of(wiki, {"local": mediawiki.url}),
                              sources=sources)
    ranked = prioritizer("local", title, revision, results)
    assert ranked[0].history.revisions_survived == 4 and ranked[1].history.revisions_survived == 0
    assert ranked[1].reliability is Reliability.DEPRECATED
    assert order(ranked) == [1, 0, 2]
    # a wiki Side cannot reach, or a page it does not have: no history, same signals otherwise
    for wiki, page in (("nowhere", title), ("local", "Missing priority page")):
        blind = prioritizer(wiki, page, None, results)
        assert not any(p.history.known for p in blind)
        assert [p.reliability for p in blind] == [p.reliability for p in ranked]


def _result(url: str, failure: float | None) -> Result:
    claim = Claim(article_title="Alsea", section=(), text="Alsea operates cafés.", left_context="",
                  citation=Citation(id="c", kind="external_link", url=url or None))
    result = Result(claim, SourceStatus.FETCHED if url else SourceStatus.NO_URL)
    if failure is not None:
        result = outcome(claim, round(1.0 - failure, 4), True, level=VerdictLevel.PARTIALLY_SUPPORTED)
    return result


# -- the dashboard's queue --------------------------------------------------------------------

def test_dashboard_queue_is_ordered_by_priority_and_names_its_signals(client, store):
    # stored first, so that the store's old tie-break (newest id first) would list them last
    urls = ["https://www.dailymail.co.uk/news/x", "https://www.example.org/", "https://example.org/2024/plain.html",
            "https://example.org/2024/likely.html"]
    body = {"wiki": "enwiki", "title": "Alsea (company)", "revision": 301, "claims": [
        {"key": f"c{n}", "text": f"Alsea operates {n + 1} cafés.", "url": url} for n, url in enumerate(urls)]}
    check = client.post("/api/v1/checks", json=body).get_json()["check"]
    claims = store.check(check["id"]).claims
    scores = [0.4, 0.4, 0.4, 0.02]  # the last is far likelier to fail than the others
    finish(store, check["id"], [outcome(c, s, True) for c, s in zip(claims, scores, strict=True)])
    stored = store.results(check["id"])
    expected = [stored[3].id, stored[0].id, stored[1].id, stored[2].id]  # likely, deprecated, generic, plain
    assert [r.id for r in store.flagged()] == expected
    assert stored[0].priority is not None and stored[0].priority.reliability is Reliability.DEPRECATED
    assert result_priority(_result(urls[1], 0.6), PriorityConfig()).url_depth == 0

    doc = lxml.html.fromstring(client.get("/dashboard/", headers={"Accept": "text/html"}).get_data(as_text=True))
    rows = doc.xpath("//tr[@class='flagged-row']")
    assert [int(r.get("data-result-id")) for r in rows] == expected
    signals = [r.xpath(".//ul[@class='priority-parts']/li/@data-signal") for r in rows]
    assert signals == [[], ["reliability"], ["generic_url"], []]
    assert "deprecated" in rows[1].xpath("string(.//ul[@class='priority-parts'])")


def test_migration_gives_old_rows_their_failure_likelihood_as_priority(tmp_path):
    import sqlalchemy as sa

    from service.store import Store, make_engine, migrate

    engine = make_engine(f"sqlite:///{tmp_path / 'old.sqlite3'}")
    migrate(engine, "0003")
    now = datetime(2026, 1, 1)
    with engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO checks (id, wiki, title, origin, status, error, payload, citations, flagged, attempts, "
            "created_at) VALUES ('chk_old', 'enwiki', 'Old', 'bot', 'done', '', '[]', 2, 2, 1, :now)"), {"now": now})
        for position, likelihood in ((0, 0.3), (1, 0.8)):
            conn.execute(sa.text(
                "INSERT INTO results (check_id, position, client_key, claim_key, claim_text, citation_url, claim, "
                "source_status, source_error, score, failure_likelihood, flagged, reasons, suggestions, "
                "review_status, created_at, level) VALUES ('chk_old', :p, 'k', 'k', 'x', 'https://example.org/', "
                ":claim, 'fetched', '', :score, :fl, 1, '[]', '[]', 'open', :now, 'not_supported')"),
                {"p": position, "score": 1 - likelihood, "fl": likelihood, "now": now,
                 "claim": '{"article_title": "Old", "section": [], "text": "x", "left_context": "", '
                          '"citation": {"id": "c", "kind": "bare_url", "url": "https://example.org/"}}'})
    migrate(engine)
    store = Store(engine)
    queue = store.flagged()
    assert [r.failure_likelihood for r in queue] == [0.8, 0.3]
    assert all(r.priority is None for r in queue)  # no parts were kept for them: nothing is shown
    with engine.connect() as conn:
        assert sorted(conn.execute(sa.text("SELECT priority FROM results")).scalars()) == [0.3, 0.8]
    engine.dispose()


def test_result_page_shows_what_raised_it(client, store):
    body = {"wiki": "enwiki", "title": "Alsea (company)", "revision": 302,
            "claims": [{"key": "c0", "text": "Alsea operates cafés.", "url": "https://www.dailymail.co.uk/"}]}
    check = client.post("/api/v1/checks", json=body).get_json()["check"]
    finish(store, check["id"], [outcome(c, 0.3, True) for c in store.check(check["id"]).claims])
    result = store.results(check["id"])[0]
    doc = lxml.html.fromstring(client.get(f"/dashboard/results/{result.id}",
                                          headers={"Accept": "text/html"}).get_data(as_text=True))
    assert doc.xpath("//dd[@class='priority-cell']//li/@data-signal") == ["generic_url", "reliability"]


def test_the_worker_reads_histories_from_the_wikis_the_config_names(mediawiki):
    from workers.worker import make_prioritizer

    title = "Priority worker page"
    url = "https://example.org/2025/a.html"
    mediawiki.edit(title, "Intro.")
    revision = mediawiki.edit(title, f"Intro.<ref>{url}</ref>")
    config = load_config(environ={"SIDE_SERVICE_WIKI_URLS": f"local={mediawiki.url}",
                                  "SIDE_PRIORITY_YOUNG_REFERENCE": "0.3"})
    ranked = make_prioritizer(config)("local", title, revision, [_result(url, 0.5)])
    assert ranked[0].history.first_revision == revision and ranked[0].history.revisions_survived == 0
    assert ranked[0].score == 0.8
    off = load_config(environ={"SIDE_SERVICE_WIKI_URLS": f"local={mediawiki.url}",
                               "SIDE_PRIORITY_HISTORY_REVISIONS": "0"})
    assert not make_prioritizer(off)("local", title, revision, [_result(url, 0.5)])[0].history.known
