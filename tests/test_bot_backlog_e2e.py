"""Backlog mode end to end: tagged pages on a local wiki -> ``side-bot -backlog`` -> a real worker
-> Results in the store -> the dashboard's Backlog view. Side never edits the wiki.

The wiki (a MediaWiki of this module's own, so no other test's pages are in its tracking
categories) has the maintenance tags as English Wikipedia has them, and three pages:

* a claim tagged ``{{failed verification}}`` whose citation is a weather report, and an uncited
  claim tagged ``{{citation needed}}`` in another section: the worker re-checks the first (not,
  or at most partially, supported) and suggests the page of the evidence index that says what
  the claim says; the second is a claim with no URL, and gets a source from the index too;
* a ``{{failed verification}}`` on a citation that does support its claim: Side says so;
* a page whose tags are all in forms Side does not guess at (a tag starting the page, one
  nested in another template, a span tag without text, an unclosed tag): no Check, and each
  reason counted in the run's summary.

``side-bot -backlog`` runs as an operator runs it (a subprocess, BotPassword login), queueing on
the stack's real Redis; the stack's ``side-worker`` (tests/harness/stack.py, the real model on
CPU, a small evidence index built by ``side index build``) stores the Results; the web service
renders ``/dashboard/backlog``. The sources are served on 127.0.0.1 (tests/test_gadget_e2e.py's).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import lxml.html
import pytest
import requests
from test_bot_backlog import CN_CATEGORY, FV_CATEGORY, add_tag_templates, backlog_env, run_backlog
from test_gadget_e2e import BAD_CLAIM, GOOD_CLAIM, HISTORY_TEXT, build_index, serve_sources

from service.store import CheckStatus, Origin
from side.extract.tagged import SkipReason
from side.verify.levels import VerdictLevel

from harness.mediawiki import MediaWiki, require_mediawiki, start_mediawiki
from httpserver import LocalServer

pytestmark = pytest.mark.slow

#: A claim the index's "Alsea history" page states word for word (its second sentence).
UNCITED_CLAIM = HISTORY_TEXT.split(". ")[1]
NEEDS_REVIEW = (VerdictLevel.NOT_SUPPORTED, VerdictLevel.PARTIALLY_SUPPORTED)
#: Tags in forms that are skipped, each once, and the reason each is counted under.
ODD_PAGE = ("{{citation needed|date=May 2024}} starts the page.\n\n{{Infobox company|founded=1997.{{cn}}}}\n\n"
            "== Stores ==\nSome text.{{citation needed span|date=May 2020}} More text.\n\n"
            "The last line.{{fv|date=2020\n")
ODD_REASONS = (SkipReason.NO_TEXT, SkipReason.NESTED, SkipReason.SPAN_WITHOUT_TEXT, SkipReason.UNCLOSED)


@pytest.fixture(scope="module")
def sources() -> Iterator[LocalServer]:
    with LocalServer() as server:
        yield serve_sources(server)


@pytest.fixture(scope="module")
def wiki(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MediaWiki]:
    require_mediawiki()
    instance = start_mediawiki(tmp_path_factory.mktemp("backlog-wiki"))
    try:
        yield instance
    finally:
        instance.stop()


@pytest.fixture(scope="module")
def stack(service_stack, wiki, sources, tmp_path_factory):
    """Redis, one real worker with an index holding the better source, the web service."""
    var_dir = tmp_path_factory.mktemp("backlog-var")
    build_index(var_dir, sources)
    return service_stack(var_dir=var_dir, env={"SIDE_FETCH_ALLOW_HOSTS": "127.0.0.1",
                                               "SIDE_SERVICE_WIKI_URLS": f"{wiki.dbname}={wiki.url}"})


@pytest.fixture(scope="module")
def pages(wiki, sources) -> dict[str, str]:
    add_tag_templates(wiki)
    tag = uuid.uuid4().hex[:6]
    texts = {
        f"Alsea history {tag}": (
            "'''Alsea''' is a Mexican restaurant operator.\n\n== History ==\n"
            f"{BAD_CLAIM}<ref>[{sources.url('/weather')} Weather report]</ref>"
            "{{failed verification|date=May 2024|reason=The source is a weather report}}\n\n"
            f"== Today ==\n{UNCITED_CLAIM}{{{{cn|date=June 2023}}}}\n"),
        f"Alsea business {tag}": (
            f"{GOOD_CLAIM}<ref>{{{{cite web |url={sources.url('/alsea')} |title=Alsea annual report}}}}</ref>"
            "{{Failed verification|date=January 2025}}\n"),
        f"Alsea odd tags {tag}": ODD_PAGE,
    }
    for title, text in texts.items():
        wiki.edit_now(title, text)
    return texts


def title_of(pages: dict[str, str], start: str) -> str:
    return next(t for t in pages if t.startswith(start))


def backlog_rows(stack, **query) -> list[lxml.html.HtmlElement]:
    response = requests.get(f"{stack.web_url}/dashboard/backlog", params=query, headers={"Accept": "text/html"},
                            timeout=30)
    assert response.status_code == 200, response.text[:500]
    return lxml.html.fromstring(response.text).xpath("//tr[@class='backlog-row']")


def test_tagged_pages_are_checked_by_a_worker_and_listed_on_the_backlog_view(wiki, pages, stack, sources,
                                                                              tmp_path):
    before = wiki.last_rc_timestamp()
    env = backlog_env(wiki, stack.redis_url, stack.database_url, tmp_path / "backlog.json", tmp_path / "var")
    summary = run_backlog(wiki, env)  # not -simulate, no dry run: the checks are really queued

    assert re.search(rf"backlog: {len(pages)} pages, 3 tagged claims \(2 cited, 1 uncited\), 2 checks submitted",
                     summary), summary
    assert "1 without a readable tag" in summary, summary
    for reason in ODD_REASONS:
        assert f"1 {reason}" in summary, summary

    store = stack.store()
    checks = {c.title: c for c in store.checks(origin=Origin.BACKLOG, wiki=wiki.dbname)}
    assert set(checks) == {title_of(pages, "Alsea history"), title_of(pages, "Alsea business")}
    done = {title: stack.wait_for(check.id, timeout=300) for title, check in checks.items()}
    assert all(check.status == CheckStatus.DONE for check in done.values()), done

    history = {r.claim.text: r for r in store.results(checks[title_of(pages, "Alsea history")].id)}
    disputed, uncited = history[BAD_CLAIM], history[UNCITED_CLAIM]
    assert disputed.level in NEEDS_REVIEW  # the tag was right: the weather report does not say it
    assert disputed.suggestions[0].url == sources.url("/alsea-history")
    assert uncited.suggestions and uncited.suggestions[0].url == sources.url("/alsea-history")
    [business] = store.results(checks[title_of(pages, "Alsea business")].id)
    assert business.level is VerdictLevel.SUPPORTED  # the tag was wrong: the cited report says it

    rows = backlog_rows(stack, wiki=wiki.dbname)
    by_claim = {" ".join(r.xpath("string(td[3])").split()).split("cited: ")[0]: r for r in rows}
    assert set(by_claim) == {BAD_CLAIM, UNCITED_CLAIM, GOOD_CLAIM}
    assert by_claim[GOOD_CLAIM].xpath("string(td[4])").split() == ["supported"]
    assert "/alsea-history" in by_claim[UNCITED_CLAIM].xpath("string(.//code[@class='cite'])")
    fix = urlsplit(by_claim[UNCITED_CLAIM].xpath(".//a[@class='fix-it']/@href")[0])
    assert f"{fix.scheme}://{fix.netloc}{fix.path}" == wiki.index
    assert parse_qs(fix.query) == {"title": [title_of(pages, "Alsea history").replace(" ", "_")],
                                   "action": ["edit"], "section": ["2"]}  # the "Today" section
    assert [r.xpath("string(td[2]/span)") for r in backlog_rows(stack, category=CN_CATEGORY)] == ["citation needed"]
    assert {r.xpath("string(td[2]/span)") for r in backlog_rows(stack, category=FV_CATEGORY)} == {
        "failed verification"}

    assert wiki.last_rc_timestamp() == before  # Side edited nothing
    again = run_backlog(wiki, env)
    assert re.search(rf"backlog: 0 pages, .* {len(pages)} pages done before", again), again

