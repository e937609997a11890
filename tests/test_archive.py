"""Archived copies of dead sources: the citation's archive-url, then the Wayback Machine.

The real Wayback Machine cannot be reached from where these tests run (and test traffic stays
on 127.0.0.1): :class:`wayback.LocalWayback` stands in for it on a local HTTP server, answering
the availability API in its documented format and serving the snapshots (raw ``id_`` form and
replay form). The archive client, the SSRF guard, the fetcher and the pipeline's source loading
are the real ones; cited "live" pages are served by a second local server, or by a port where
nothing listens (connection refused).
"""

from __future__ import annotations

import json
import socket

import pytest

from side.config import FetchConfig, load_config
from side.errors import ConfigError, NoArchivedCopyError, SourceBlockedError, SourceFetchError
from side.extract.claims import Citation, UrlStatus
from side.extract.wikitext import extract_citations, extract_claims
from side.pipeline import (
    CheckSources,
    LoadedSource,
    ReadPlan,
    Result,
    SourceCopy,
    SourceStatus,
)
from side.sources.archive import (
    ArchiveReader,
    availability_url,
    parse_availability,
    raw_snapshot_url,
    wayback_timestamp,
)
from side.sources.batch import FetchBudget
from side.sources.fetch import fetch_source

from httpserver import LocalServer, Response, SilentServer, redirect
from wayback import TIMESTAMP, TOOLBAR, LocalWayback

LIVE_PAGE = b"""<html><head><title>Tower facts</title></head><body><article><h1>Tower facts</h1>
<p>The tower is 330 metres tall and was the tallest structure in the world until 1930.</p>
<p>It was built for the 1889 World's Fair in Paris.</p></article></body></html>"""

ARCHIVED_PAGE = b"""<html><head><title>Harbour report (archived)</title></head><body><article>
<h1>Harbour report</h1><p>The harbour was rebuilt in 1902 after a storm destroyed the old pier.</p>
<p>It now shelters the town's fishing fleet and a lifeboat station.</p></article></body></html>"""

PAYWALL = b"""<html><head><title>Subscribe</title></head><body><article>
<p>Subscribe to read this article. Subscribers get unlimited access to every story.</p>
</article></body></html>"""


# -- citations: archive fields, url-status, {{webarchive}}, {{dead link}} ---------------------


def one_citation(wikitext: str) -> Citation:
    (claim,) = extract_claims(wikitext, "Harbour")
    return claim.citation


def test_cite_template_archive_fields_are_typed() -> None:
    citation = one_citation(
        "It was rebuilt.<ref>{{cite web |url=http://h.example/r |title=R |archive-url="
        "https://web.archive.org/web/20130919044612/http://h.example/r |archive-date=19 September 2013 "
        "|url-status=dead |access-date=2012-05-01}}</ref>")
    assert citation.archive_url == "https://web.archive.org/web/20130919044612/http://h.example/r"
    assert (citation.archive_date, citation.access_date) == ("19 September 2013", "2012-05-01")
    assert citation.url_status is UrlStatus.DEAD and citation.archive_first and citation.live_usable
    assert not citation.dead_link


@pytest.mark.parametrize(("field", "status", "first", "live"), [
    ("url-status=live", UrlStatus.LIVE, False, True),
    ("url-status=usurped", UrlStatus.USURPED, True, False),
    ("url-status=Unfit", UrlStatus.UNFIT, True, False),
    ("url-status=deviated", UrlStatus.DEVIATED, True, False),
    ("dead-url=yes", UrlStatus.DEAD, True, True),
    ("deadurl=no", UrlStatus.LIVE, False, True),
    ("url-status=maybe", None, False, True),
])
def test_url_status_spellings(field, status, first, live) -> None:
    citation = one_citation(f"It was rebuilt.<ref>{{{{cite news |url=http://h.example/r |title=R |{field}}}}}</ref>")
    assert (citation.url_status, citation.archive_first, citation.live_usable) == (status, first, live)


def test_webarchive_and_dead_link_inside_the_ref() -> None:
    citation = one_citation(
        "It was rebuilt.<ref>[http://h.example/r Report] {{Webarchive |url=https://web.archive.org/web/"
        "20100101000000/http://h.example/r |date=1 January 2010}} {{Dead link|date=May 2020}}</ref>")
    assert (citation.kind, citation.url, citation.title) == ("external_link", "http://h.example/r", "Report")
    assert citation.archive_url == "https://web.archive.org/web/20100101000000/http://h.example/r"
    assert citation.archive_date == "1 January 2010"
    assert citation.dead_link and citation.archive_first and citation.url_status is None


def test_cite_archive_url_wins_over_a_webarchive_beside_it() -> None:
    citation = one_citation(
        "It was rebuilt.<ref>{{cite web |url=http://h.example/r |title=R |archive-url=http://a.example/own}} "
        "{{webarchive |url=http://a.example/other}}</ref>")
    assert citation.archive_url == "http://a.example/own"


def test_a_lone_webarchive_is_not_taken_for_the_source() -> None:
    citation = one_citation("It was rebuilt.<ref>{{webarchive |url=https://web.archive.org/web/2010/http://h.example/r}}"
                            "</ref>")
    assert citation.url is None and citation.archive_url == "https://web.archive.org/web/2010/http://h.example/r"


def test_german_internetquelle_offline_and_webarchiv() -> None:
    citation = one_citation(
        "Er wurde umgebaut.<ref>{{Internetquelle |url=http://h.example/r |titel=R |offline=ja}} "
        "{{Webarchiv |url=http://h.example/r |wayback=20150101000000}}</ref>")
    assert citation.url_status is UrlStatus.DEAD
    assert citation.archive_url == "https://web.archive.org/web/20150101000000/http://h.example/r"


def test_dead_link_after_the_ref_marks_every_use_of_that_citation() -> None:
    wikitext = ("It was rebuilt.<ref name=\"h\">[http://h.example/r Report]</ref>{{dead link|date=May 2020}} "
                "It shelters boats.<ref name=\"h\" /> The pier is new.<ref>[http://p.example/ Pier]</ref>\n\n"
                "A list-defined reuse.<ref name=\"l\" />{{Dead link}}\n\n"
                "{{reflist|refs=<ref name=\"l\">[http://l.example/ L]</ref>}}")
    claims = extract_claims(wikitext, "Harbour")
    dead = {c.citation.url: c.citation.dead_link for c in claims}
    assert dead == {"http://h.example/r": True, "http://p.example/": False, "http://l.example/": True}
    assert {c.url: c.dead_link for c in extract_citations(wikitext)} == dead
    # the tag is not part of the ref: the citation's identity is unchanged
    assert claims[0].citation.id == one_citation("X.<ref name=\"h\">[http://h.example/r Report]</ref>").id


def test_citation_archive_fields_round_trip_through_json() -> None:
    citation = one_citation("It was rebuilt.<ref>{{cite web |url=http://h.example/r |title=R |url-status=usurped "
                            "|archive-url=http://a.example/r}} {{dead link}}</ref>")
    again = Citation.from_dict(json.loads(json.dumps(citation.to_dict())))
    assert again == citation and again.url_status is UrlStatus.USURPED
    assert Citation.from_dict({"id": "x", "kind": "text", "url_status": "bogus"}).url_status is None


# -- the client's pieces --------------------------------------------------------------------


@pytest.mark.parametrize(("url", "raw"), [
    ("http://web.archive.org/web/20130919044612/http://example.com/",
     "http://web.archive.org/web/20130919044612id_/http://example.com/"),
    ("https://web.archive.org/web/20130919044612if_/https://example.com/a?b=1",
     "https://web.archive.org/web/20130919044612id_/https://example.com/a?b=1"),
    ("https://web.archive.org/web/2013/http://example.com/", "https://web.archive.org/web/2013id_/http://example.com/"),
    ("https://wayback.archive-it.org/1234/20130919044612/http://example.com/",
     "https://wayback.archive-it.org/1234/20130919044612id_/http://example.com/"),
    ("https://archive.ph/2013.09.19-044612/http://example.com/", "https://archive.ph/2013.09.19-044612/http://example.com/"),
    ("https://archive.ph/AbCdE", "https://archive.ph/AbCdE"),
])
def test_raw_snapshot_url(url, raw) -> None:
    assert raw_snapshot_url(url) == raw


def test_wayback_timestamp_from_the_dates_editors_write() -> None:
    assert wayback_timestamp("19 September 2013") == "20130919"
    assert wayback_timestamp(None, "", "September 19, 2013") == "20130919"
    assert wayback_timestamp("not a date", "May 2020") == "20200501"
    assert wayback_timestamp("20150101000000") == "20150101000000"
    assert wayback_timestamp("someday", None) is None
    assert availability_url("http://h/wayback/available", "http://e.com/?a=1&b", "20130919") == (
        "http://h/wayback/available?url=http%3A%2F%2Fe.com%2F%3Fa%3D1%26b&timestamp=20130919")


def test_parse_availability_reads_the_documented_answers() -> None:
    documented = (b'{"url": "example.com", "archived_snapshots": {"closest": {"status": "200", "available": true, '
                  b'"url": "http://web.archive.org/web/20130919044612/http://example.com/", '
                  b'"timestamp": "20130919044612"}}}')
    snapshot = parse_availability(documented, "api")
    assert snapshot is not None
    assert (snapshot.url, snapshot.timestamp, snapshot.status) == (
        "http://web.archive.org/web/20130919044612/http://example.com/", "20130919044612", "200")
    assert parse_availability(b'{"archived_snapshots":{}}', "api") is None
    assert parse_availability(b'{"archived_snapshots":{"closest":{"available":false,"url":"x"}}}', "api") is None


@pytest.mark.parametrize(("body", "why"), [
    (b"<html>Service unavailable</html>", "not JSON"),
    (b'{"archived_snapshots": [', "not JSON"),
    (b"[]", "archived_snapshots"),
    (b'{"archived_snapshots": "none"}', "archived_snapshots"),
    (b'{"archived_snapshots": {"closest": "x"}}', "not an object"),
    (b'{"archived_snapshots": {"closest": {"available": true}}}', "not an http(s) URL"),
    (b'{"archived_snapshots": {"closest": {"available": true, "url": "file:///etc/passwd"}}}', "not an http(s) URL"),
    (b'{"archived_snapshots": {"closest": {"url": "http://w/web/1/x", "timestamp": "yesterday"}}}', "timestamp"),
    (b"\xff\xfe", "not JSON"),
])
def test_malformed_answers_are_transient_errors_saying_why(body, why) -> None:
    with pytest.raises(SourceFetchError, match="malformed Wayback availability answer") as caught:
        parse_availability(body, "api")
    assert why in str(caught.value) and caught.value.transient


def test_config_names_the_api_and_env_overrides_it() -> None:
    assert FetchConfig().wayback_api == "https://archive.org/wayback/available" and FetchConfig().archive
    config = load_config(environ={"SIDE_FETCH_WAYBACK_API": "http://127.0.0.1:9/wayback/available",
                                  "SIDE_FETCH_ARCHIVE": "false"})
    assert config.fetch.wayback_api == "http://127.0.0.1:9/wayback/available" and not config.fetch.archive
    with pytest.raises(ConfigError, match="wayback_api"):
        ArchiveReader(FetchConfig(wayback_api="ftp://archive.example/available"))


# -- the client against the local Wayback ---------------------------------------------------


@pytest.fixture()
def sites():
    """A cited site, the local Wayback (API and snapshots) and an internal server nothing may
    reach; only the first two ports are allow-listed."""
    with LocalServer() as live, LocalServer() as archive, LocalServer() as internal:
        internal.add("/secret", Response(b"<html><body><p>Internal admin page with secrets in it.</p></body></html>"))
        wayback = LocalWayback(archive)
        config = FetchConfig(timeout_s=2, allow_hosts=[f"127.0.0.1:{live.port}", f"127.0.0.1:{archive.port}"],
                             wayback_api=wayback.api)
        yield live, wayback, internal, config


def test_wayback_snapshot_is_read_raw_without_the_toolbar(sites) -> None:
    live, wayback, _internal, config = sites
    url = live.url("/gone")
    wayback.keep(url, ARCHIVED_PAGE)
    source = ArchiveReader(config).read(url, timestamp="20130919")
    assert wayback.asked == [(url, "20130919")]
    assert wayback.raw_hits(url) == 1 and wayback.replay_hits(url) == 0
    assert source.final_url == wayback.server.url(f"/web/{TIMESTAMP}id_/{url}")
    assert any("rebuilt in 1902" in s for s in source.sentences)
    assert "toolbar" not in source.text and live.hits["/gone"] == 0


def test_no_snapshot_is_a_clear_permanent_error(sites) -> None:
    live, wayback, _internal, config = sites
    with pytest.raises(NoArchivedCopyError, match="has no archived copy of") as caught:
        ArchiveReader(config).read(live.url("/never-archived"))
    assert not caught.value.transient and wayback.asked == [(live.url("/never-archived"), None)]


def test_an_archived_error_page_is_no_copy(sites) -> None:
    live, wayback, _internal, config = sites
    answer = {"archived_snapshots": {"closest": {"status": "404", "available": True, "timestamp": TIMESTAMP,
                                                 "url": wayback.server.url(f"/web/{TIMESTAMP}/x")}}}
    wayback.answer = Response(json.dumps(answer).encode(), content_type="application/json")
    with pytest.raises(NoArchivedCopyError, match="HTTP 404 page"):
        ArchiveReader(config).read(live.url("/x"))


@pytest.mark.parametrize(("status", "transient"), [(404, False), (503, True)])
def test_a_snapshot_that_fails_says_so(sites, status, transient) -> None:
    live, wayback, _internal, config = sites
    url = live.url("/gone")
    wayback.keep(url, Response(b"archive trouble", status=status, content_type="text/plain"))
    with pytest.raises(SourceFetchError, match=f"HTTP {status} fetching .*id_/") as caught:
        ArchiveReader(config).read(url)
    assert caught.value.transient is transient and caught.value.status == status


def test_malformed_api_answer_is_transient(sites) -> None:
    live, wayback, _internal, config = sites
    wayback.answer = Response(b"<html><body>Wayback is down for maintenance</body></html>")
    with pytest.raises(SourceFetchError, match="malformed Wayback availability answer.*not JSON") as caught:
        ArchiveReader(config).read(live.url("/gone"))
    assert caught.value.transient


def test_citation_archive_url_first_then_wayback(sites) -> None:
    live, wayback, _internal, config = sites
    url = live.url("/gone")
    own = wayback.server.url(f"/web/20010101000000/{url}")  # the citation's copy: missing from the archive
    wayback.keep(url, ARCHIVED_PAGE)
    source = ArchiveReader(config).read(url, archive_url=own)
    assert wayback.server.hits[f"/web/20010101000000id_/{url}"] == 1 and wayback.asked == [(url, None)]
    assert source.final_url.endswith(f"/web/{TIMESTAMP}id_/{url}")
    # both fail: the error names each attempt
    with pytest.raises(SourceFetchError, match="archive-url: HTTP 404.*; the Wayback Machine: .*no archived copy"):
        ArchiveReader(config).read(live.url("/other"), archive_url=own)


# -- the SSRF guard covers the API, the snapshot and every redirect ---------------------------


def test_guard_refuses_a_citation_archive_url_into_the_network(sites) -> None:
    live, wayback, internal, config = sites
    reader = ArchiveReader(FetchConfig(timeout_s=2, allow_hosts=config.allow_hosts, wayback_api=""))
    with pytest.raises(SourceBlockedError, match="loopback"):
        reader.read(live.url("/gone"), archive_url=internal.url("/secret"))
    with pytest.raises(SourceBlockedError, match="metadata"):
        reader.read(live.url("/gone"), archive_url="http://169.254.169.254/latest/meta-data/")
    assert internal.hits["/secret"] == 0


def test_guard_refuses_a_snapshot_the_api_points_into_the_network(sites) -> None:
    live, wayback, internal, config = sites
    answer = {"archived_snapshots": {"closest": {"status": "200", "available": True, "timestamp": TIMESTAMP,
                                                 "url": internal.url("/secret")}}}
    wayback.answer = Response(json.dumps(answer).encode(), content_type="application/json")
    with pytest.raises(SourceBlockedError, match=f"port {internal.port}"):
        ArchiveReader(config).read(live.url("/gone"))
    assert internal.hits["/secret"] == 0 and len(wayback.asked) == 1


def test_guard_refuses_a_snapshot_redirect_into_the_network(sites) -> None:
    live, wayback, internal, config = sites
    url = live.url("/gone")
    wayback.keep(url, redirect(internal.url("/secret")))
    with pytest.raises(SourceBlockedError, match=f"port {internal.port}"):
        ArchiveReader(config).read(url)
    assert wayback.raw_hits(url) == 1 and internal.hits["/secret"] == 0


def test_guard_applies_to_the_api_itself(sites) -> None:
    live, wayback, internal, config = sites
    reader = ArchiveReader(FetchConfig(timeout_s=2, allow_hosts=config.allow_hosts,
                                       wayback_api=internal.url("/wayback/available")))
    with pytest.raises(SourceBlockedError):
        reader.read(live.url("/gone"))
    assert internal.requests == []


# -- the check's source loading: live, then archive (or archive first) -----------------------


def refused_url() -> str:
    """A URL on a loopback port where nothing listens: the connection is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/page"


def loader(config: FetchConfig, readable=None, seconds: float = 20.0, archive: bool = True) -> CheckSources:
    def fetch(url, deadline=None):
        return fetch_source(url, config, None, deadline)

    extra = {} if readable is None else {"readable": readable}
    return CheckSources(None, fetch, FetchBudget(seconds=seconds), ArchiveReader(config, fetch) if archive else None,
                        **extra)


def plan_of(wikitext: str) -> ReadPlan:
    (citation,) = extract_citations(wikitext)
    assert citation.url
    return ReadPlan.for_citations(citation.url, [citation])


def cite(url: str, extra: str = "", after: str = "") -> str:
    return f"The harbour was rebuilt in 1902.<ref>{{{{cite web |url={url} |title=Harbour {extra}}}}}{after}</ref>"


def load_one(sources: CheckSources, plan: ReadPlan) -> LoadedSource:
    loaded = sources.load_plans([plan])
    assert list(loaded) == [plan.url]
    return loaded[plan.url]


def test_live_page_that_works_is_read_and_the_archive_left_alone(sites) -> None:
    live, wayback, _internal, config = sites
    url = live.add("/tower", Response(LIVE_PAGE))
    loaded = load_one(loader(config), plan_of(cite(url, f"|archive-url={wayback.server.url('/web/1/x')}")))
    assert (loaded.status, loaded.copy, loaded.url, loaded.fallback) == (SourceStatus.FETCHED, SourceCopy.LIVE, url, "")
    assert wayback.server.requests == []


def test_dead_live_page_is_read_from_the_citation_archive_url(sites) -> None:
    live, wayback, _internal, config = sites
    url = live.url("/gone")
    own = wayback.keep(url, ARCHIVED_PAGE)
    wayback.snapshots.clear()  # the Wayback API knows nothing: the citation's own copy is what is read
    loaded = load_one(loader(config), plan_of(cite(url, f"|archive-url={own}")))
    assert loaded.status is SourceStatus.FETCHED and loaded.copy is SourceCopy.ARCHIVE
    assert loaded.url == raw_snapshot_url(own) and any("rebuilt in 1902" in s for s in loaded.sentences)
    assert loaded.fallback == f"live copy: HTTP 404 fetching {url}"
    assert live.hits["/gone"] == 1 and wayback.asked == []


def test_refused_connection_is_read_from_the_archive(sites) -> None:
    _live, wayback, _internal, config = sites
    url = refused_url()
    port = url.split(":")[2].split("/")[0]
    config = FetchConfig(timeout_s=2, allow_hosts=[*config.allow_hosts, f"127.0.0.1:{port}"],
                         wayback_api=config.wayback_api)
    wayback.keep(url, ARCHIVED_PAGE)
    loaded = load_one(loader(config), plan_of(cite(url)))
    assert loaded.copy is SourceCopy.ARCHIVE and "could not fetch" in loaded.fallback
    assert wayback.asked == [(url, None)]


def test_without_archive_url_the_wayback_api_is_asked_near_the_access_date(sites) -> None:
    live, wayback, _internal, config = sites
    url = live.url("/gone")
    wayback.keep(url, ARCHIVED_PAGE)
    loaded = load_one(loader(config), plan_of(cite(url, "|access-date=19 September 2013")))
    assert loaded.copy is SourceCopy.ARCHIVE and loaded.url.endswith(f"/web/{TIMESTAMP}id_/{url}")
    assert wayback.asked == [(url, "20130919")] and wayback.replay_hits(url) == 0
    assert TOOLBAR.decode() not in " ".join(loaded.sentences)


@pytest.mark.parametrize(("extra", "after", "why"), [
    ("|url-status=dead", "", "the citation marks its URL dead"),
    ("", " {{dead link|date=May 2020}}", "the citation is tagged {{dead link}}"),
])
def test_dead_marked_citation_reads_the_archive_without_touching_the_live_url(sites, extra, after, why) -> None:
    live, wayback, _internal, config = sites
    url = live.add("/moved", Response(LIVE_PAGE))  # it answers, but editors say it is not the source any more
    wayback.keep(url, ARCHIVED_PAGE)
    loaded = load_one(loader(config), plan_of(cite(url, extra, after)))
    assert loaded.copy is SourceCopy.ARCHIVE and loaded.fallback == why
    assert live.hits["/moved"] == 0 and live.requests == []


def test_dead_marked_citation_falls_back_to_the_live_page(sites) -> None:
    live, wayback, _internal, config = sites
    url = live.add("/back", Response(LIVE_PAGE))
    loaded = load_one(loader(config), plan_of(cite(url, "|url-status=dead")))
    assert loaded.copy is SourceCopy.LIVE and loaded.url == url
    assert loaded.fallback.startswith("the citation marks its URL dead; archived copy: ")
    assert "no archived copy" in loaded.fallback and wayback.asked == [(url, None)]


def test_usurped_url_is_never_read(sites) -> None:
    live, wayback, _internal, config = sites
    url = live.add("/spam", Response(LIVE_PAGE))
    loaded = load_one(loader(config), plan_of(cite(url, "|url-status=usurped")))
    assert loaded.status is SourceStatus.UNAVAILABLE and loaded.copy is None and loaded.sentences == ()
    assert loaded.error == f"the citation marks its URL usurped; the Wayback Machine has no archived copy of {url}"
    assert live.requests == []


def test_no_copy_anywhere_is_unavailable_with_each_reason(sites) -> None:
    live, wayback, _internal, config = sites
    url = live.url("/gone")
    loaded = load_one(loader(config), plan_of(cite(url)))
    assert loaded.status is SourceStatus.UNAVAILABLE and loaded.copy is None and loaded.url == ""
    assert loaded.error == (f"live copy: HTTP 404 fetching {url}; "
                            f"archived copy: the Wayback Machine has no archived copy of {url}")


def test_malformed_wayback_answer_reaches_the_reason(sites) -> None:
    live, wayback, _internal, config = sites
    wayback.answer = Response(b"{not json", content_type="application/json")
    loaded = load_one(loader(config), plan_of(cite(live.url("/gone"))))
    assert loaded.status is SourceStatus.UNAVAILABLE
    assert "archived copy: malformed Wayback availability answer" in loaded.error


def test_readable_decides_whether_the_live_copy_is_used(sites) -> None:
    """The live copy is judged by ``readable``: refused, the archived copy is read. The default is
    the cannot-check assessment (side.sources.states), which knows this teaser for a paywall."""
    live, wayback, _internal, config = sites
    url = live.add("/story", Response(PAYWALL))
    wayback.keep(url, ARCHIVED_PAGE)
    plan = plan_of(cite(url))
    assert load_one(loader(config, lambda source: bool(source.sentences)), plan).copy is SourceCopy.LIVE
    by_default = load_one(loader(config), plan)
    assert by_default.copy is SourceCopy.ARCHIVE and by_default.fallback.startswith("live copy: paywall")

    def no_paywall(source) -> bool:
        return "Subscribe to read" not in source.text

    loaded = load_one(loader(config, no_paywall), plan)
    assert loaded.copy is SourceCopy.ARCHIVE and loaded.fallback == f"live copy: nothing to check in {url}"

    def paywall_detector(source) -> bool:
        if "Subscribe" in source.text:
            raise SourceFetchError(f"{source.final_url} is behind a paywall")
        return True

    loaded = load_one(loader(config, paywall_detector), plan)
    assert loaded.copy is SourceCopy.ARCHIVE and loaded.fallback == f"live copy: {url} is behind a paywall"


def test_a_hanging_live_page_leaves_time_for_the_archive(sites) -> None:
    """The first copy tried gets half of the source's share of the budget: a site that never
    answers cannot use it all (timeout_s alone, 30 s, would outlast the 3 s budget)."""
    _live, wayback, _internal, config = sites
    with SilentServer() as silent:
        url = silent.url("/hangs")
        config = FetchConfig(timeout_s=30, allow_hosts=[*config.allow_hosts, f"127.0.0.1:{silent.port}"],
                             wayback_api=config.wayback_api)
        wayback.keep(url, ARCHIVED_PAGE)
        loaded = load_one(loader(config, seconds=3), plan_of(cite(url)))
    assert silent.connections == 1
    assert loaded.copy is SourceCopy.ARCHIVE and "live copy: fetching" in loaded.fallback
    assert "timed out" in loaded.fallback


def test_with_wayback_lookups_off_only_a_citation_archive_url_is_read(sites) -> None:
    live, wayback, _internal, config = sites
    config = FetchConfig(timeout_s=2, allow_hosts=config.allow_hosts, wayback_api="")
    url = live.url("/gone")
    loaded = load_one(loader(config), plan_of(cite(url)))
    assert loaded.status is SourceStatus.UNAVAILABLE and loaded.error == f"HTTP 404 fetching {url}"
    spam = live.add("/spam", Response(LIVE_PAGE))
    loaded = load_one(loader(config), plan_of(cite(spam, "|url-status=unfit")))
    assert loaded.error == "the citation marks its URL unfit and gives no archived copy"
    own = wayback.keep(url, ARCHIVED_PAGE)
    assert load_one(loader(config), plan_of(cite(url, f"|archive-url={own}"))).copy is SourceCopy.ARCHIVE
    assert wayback.asked == [] and live.hits["/spam"] == 0


def test_without_an_archive_only_the_live_page_is_read(sites) -> None:
    live, wayback, _internal, config = sites
    url = live.url("/gone")
    wayback.keep(url, ARCHIVED_PAGE)
    sources = loader(config, archive=False)
    loaded = load_one(sources, plan_of(cite(url, "|url-status=usurped")))
    assert loaded.status is SourceStatus.UNAVAILABLE and loaded.error == f"HTTP 404 fetching {url}"
    assert sources(url) == (SourceStatus.UNAVAILABLE, [], "", f"HTTP 404 fetching {url}")
    assert wayback.server.requests == []


# -- the Result, --json, the store, the API and the dashboard name the copy read -------------


def test_result_json_names_the_copy_read() -> None:
    (claim,) = extract_claims(cite("http://h.example/r"), "Harbour")
    result = Result(claim, SourceStatus.FETCHED, source_copy=SourceCopy.ARCHIVE,
                    source_url="http://web.archive.org/web/2013id_/http://h.example/r",
                    source_fallback="live copy: HTTP 404 fetching http://h.example/r")
    data = json.loads(json.dumps(result.to_dict()))
    assert (data["source_copy"], data["source_url"]) == ("archive", result.source_url)
    assert Result.from_dict(data) == result
    assert Result.from_dict({**data, "source_copy": None}).source_copy is None


def test_cli_json_names_the_copy_read(sites, tmp_path, monkeypatch, capsys) -> None:
    from side.cli import main

    live, wayback, _internal, config = sites
    good = live.add("/tower", Response(LIVE_PAGE))
    dead = live.url("/harbour")
    wayback.keep(dead, ARCHIVED_PAGE)
    article = tmp_path / "Harbour.wikitext"
    article.write_text(f"The tower is 330 metres tall.<ref>{{{{cite web |url={good} |title=Tower}}}}</ref>\n\n"
                       + cite(dead, "|access-date=2013-09-19"))
    monkeypatch.setenv("SIDE_FETCH_ALLOW_HOSTS", ",".join(config.allow_hosts))
    monkeypatch.setenv("SIDE_FETCH_WAYBACK_API", wayback.api)
    monkeypatch.setenv("SIDE_VAR_DIR", str(tmp_path / "var"))
    assert main(["verify", str(article), "--no-index", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    by_url = {r["claim"]["citation"]["url"]: r for r in report["results"]}
    assert by_url[good]["source_copy"] == "live" and by_url[good]["source_url"] == good
    archived = by_url[dead]
    assert archived["source_status"] == "fetched" and archived["source_copy"] == "archive"
    assert archived["source_url"] == wayback.server.url(f"/web/{TIMESTAMP}id_/{dead}")
    assert archived["source_fallback"] == f"live copy: HTTP 404 fetching {dead}"
    assert archived["verdict"] is not None and wayback.asked == [(dead, "20130919")]


def test_text_report_says_the_archive_was_read(capsys) -> None:
    from side.cli.verify import print_report
    from side.pipeline import ArticleResults

    (claim,) = extract_claims(cite("http://h.example/r"), "Harbour")
    result = Result(claim, SourceStatus.FETCHED, source_copy=SourceCopy.ARCHIVE,
                    source_url="http://web.archive.org/web/2013id_/http://h.example/r",
                    source_fallback="live copy: HTTP 404 fetching http://h.example/r")
    print_report(ArticleResults("Harbour", [result]))
    out = " ".join(capsys.readouterr().out.split())
    assert "read from archived copy" in out and "web.archive.org" in out and "HTTP 404" in out


def test_store_api_and_dashboard_name_the_copy_read(client, store) -> None:
    import lxml.html

    from webapp import claims_body, finish, outcome

    check = client.post("/api/v1/checks", json=claims_body(n=2)).get_json()["check"]
    claims = store.check(check["id"]).claims
    archived, plain = outcome(claims[0], 0.8, False, label="SUPPORTS"), outcome(claims[1], 0.2, True)
    archived.source_copy, archived.source_url = SourceCopy.ARCHIVE, f"http://web.archive.org/web/2013id_/{claims[0].citation.url}"
    archived.source_fallback = f"live copy: HTTP 404 fetching {claims[0].citation.url}"
    finish(store, check["id"], [archived, plain])

    stored = store.results(check["id"])
    assert (stored[0].source_copy, stored[0].source_url, stored[0].source_fallback) == (
        SourceCopy.ARCHIVE, archived.source_url, archived.source_fallback)
    assert (stored[1].source_copy, stored[1].source_url) == (None, "")

    body = client.get(f"/api/v1/checks/{check['id']}").get_json()["check"]
    first, second = body["results"]
    assert (first["source_copy"], first["source_url"]) == ("archive", archived.source_url)
    assert "HTTP 404" in first["source_fallback"] and second["source_copy"] is None
    schema = client.get("/api/v1/openapi.json").get_json()["components"]["schemas"]["Result"]["properties"]
    assert schema["source_copy"]["enum"] == ["live", "archive", None]

    doc = lxml.html.fromstring(client.get(f"/dashboard/results/{stored[0].id}").get_data(as_text=True))
    (read_from,) = doc.xpath("//dd[contains(@class, 'source-copy')]")
    assert "archived copy" in read_from.text_content() and "HTTP 404" in read_from.text_content()
    assert read_from.xpath(".//a[@class='archive-link']/@href") == [archived.source_url]
    other = lxml.html.fromstring(client.get(f"/dashboard/results/{stored[1].id}").get_data(as_text=True))
    assert other.xpath("//dd[contains(@class, 'source-copy')]") == []
