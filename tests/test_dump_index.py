"""`side index build --dump`: every source a wiki's dump cites, fetched politely and indexed.

The dump is written here with refs pointing at a real HTTP server on 127.0.0.1
(tests/httpserver.py), which logs every request: robots.txt must be read before anything else
and honoured, each page requested once, a kill-and-rerun must not ask again for what is done,
and only pages Side can check a claim against end in the evidence index.
"""

from __future__ import annotations

import bz2
import json
import time
from pathlib import Path

import pytest

from side.cli import main
from side.config import FetchConfig, load_config
from side.extract.dump import canonical_url, cited_urls, iter_cited_urls, iter_pages
from side.retrieval.corpus import Corpus
from side.retrieval.dump import crawl_state_path, dump_documents
from side.sources.crawl import CrawlState, CrawlStatus, HostPacer, RobotsCache, visit
from side.sources.fetch import assess_html

from conftest import need_data
from httpserver import LocalServer, Response

INTERVAL_S = 0.05


def article(title: str, *paragraphs: str) -> bytes:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (f"<html><head><title>{title}</title></head><body><article><h1>{title}</h1>{body}"
            "</article></body></html>").encode()


PEAR = article(
    "Pear orchards of the valley",
    "Pear trees in the valley are pruned every winter so that light reaches the fruiting spurs.",
    "The growers' cooperative reported that the Conference variety made up most of the harvest last year.",
    "Cold storage lets the picked pears ripen slowly for several months before they are sold.",
)
QUINCE = article(
    "Quince jelly",
    "Quince fruit is too hard and sour to eat raw, so it is cooked into a fragrant pink jelly.",
    "The jelly sets without added pectin because the fruit itself contains a great deal of it.",
    "Cooks in Portugal call the thick quince paste marmelada, the origin of the word marmalade.",
)
ARCHIVED = article(
    "Perry in the west country",
    "Perry is a fermented drink made from the juice of perry pears, much as cider is made from apples.",
    "Old perry pear trees can live for three hundred years and grow taller than the farmhouses nearby.",
    "The archived page describes how the juice is left to ferment in oak barrels over the winter.",
)
SECRET = article("Private notes", "These notes are not for robots, and a polite crawler never reads them at all.")
PAYWALL = (b"<html><head><title>Harbour news</title></head><body><article><h1>Harbour news</h1>"
           b"<p>The council met on Tuesday.</p><p>Subscribe to continue reading.</p></article></body></html>")
ROBOTS = b"User-agent: *\nDisallow: /private/\n"

WIKITEXT = """Pears are pruned in winter.<ref>{{{{cite web |url={base}/pear |title=Pear orchards}}}}</ref>
Quince is made into jelly.<ref>{base}/quince</ref> Again.<ref>{{{{cite web|url={upper}/pear#spurs}}}}</ref>
Perry is fermented pear juice.<ref>{{{{cite web |url={base}/perry |title=Perry |url-status=dead
 |archive-url={base}/archive/perry |archive-date=2020-01-01}}}}</ref>
Secret.<ref>[{base}/private/notes Notes]</ref> Gone.<ref>{{{{cite web |url={base}/gone |title=Gone}}}}</ref>
Paywalled.<ref>{{{{cite news |url={base}/news |title=News}}}}</ref>
"""

TALK = "A talk page citing <ref>{base}/talk-only</ref>."


def dump_xml(pages: list[tuple[str, int, str]]) -> str:
    """A MediaWiki export (schema 0.10) of (title, namespace, wikitext) pages, each with an old
    revision before the current one."""
    from xml.sax.saxutils import escape

    rows = []
    for number, (title, namespace, text) in enumerate(pages, 1):
        rows.append(f"""  <page>
    <title>{escape(title)}</title>
    <ns>{namespace}</ns>
    <id>{number}</id>
    <revision><id>{number}0</id><text xml:space="preserve">An old revision.</text></revision>
    <revision><id>{number}1</id><text xml:space="preserve">{escape(text)}</text></revision>
  </page>""")
    return ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10" xml:lang="en">\n'
            "  <siteinfo><sitename>Testwiki</sitename></siteinfo>\n" + "\n".join(rows) + "\n</mediawiki>\n")


@pytest.fixture()
def server(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no side.toml of the checkout
    monkeypatch.setenv("SIDE_VAR_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("SIDE_FETCH_ALLOW_HOSTS", "127.0.0.1")
    monkeypatch.setenv("SIDE_FETCH_TIMEOUT_S", "2")
    monkeypatch.setenv("SIDE_CRAWL_HOST_INTERVAL_S", str(INTERVAL_S))
    monkeypatch.setenv("SIDE_CRAWL_CONCURRENCY", "4")
    with LocalServer() as srv:
        for path, body in {"/robots.txt": ROBOTS, "/pear": PEAR, "/quince": QUINCE, "/archive/perry": ARCHIVED,
                           "/private/notes": SECRET, "/news": PAYWALL, "/perry": QUINCE}.items():
            srv.add(path, Response(body, content_type="text/plain" if path.endswith(".txt") else "text/html"))
        yield srv


@pytest.fixture()
def dump(server, tmp_path) -> Path:
    base = server.url("").rstrip("/")
    wikitext = WIKITEXT.format(base=base, upper=base.replace("http://", "HTTP://"))
    path = tmp_path / "testwiki-pages-articles.xml"
    path.write_text(dump_xml([("Pear", 0, wikitext), ("Talk:Pear", 1, TALK.format(base=base))]), encoding="utf-8")
    return path


def fetched_pages(server: LocalServer) -> list[str]:
    return [r for r in server.requests if r != "/robots.txt"]


def test_dump_is_read_as_a_stream_of_current_revisions(dump, server):
    pages = list(iter_pages(dump))
    assert [(p.title, p.namespace) for p in pages] == [("Pear", 0), ("Talk:Pear", 1)]
    assert "An old revision" not in pages[0].text and "<ref>" in pages[0].text
    base = server.url("")
    cited = {c.url: c.fetch_url for c in cited_urls(pages[0])}
    # the same page cited twice (host case, fragment) is one URL; a dead one is read from its archive
    assert cited == {f"{base}/pear": f"{base}/pear", f"{base}/quince": f"{base}/quince",
                     f"{base}/perry": f"{base}/archive/perry", f"{base}/private/notes": f"{base}/private/notes",
                     f"{base}/gone": f"{base}/gone", f"{base}/news": f"{base}/news"}
    # talk pages are not articles
    assert f"{base}/talk-only" not in {c.url for c in iter_cited_urls(dump)}


def test_canonical_url():
    assert canonical_url("HTTPS://Example.ORG:443/A?b=1#top") == "https://example.org/A?b=1"
    assert canonical_url("http://example.org") == "http://example.org/"
    assert canonical_url("//example.org/x") == "https://example.org/x"
    assert canonical_url("http://example.org:8080/x") == "http://example.org:8080/x"
    assert canonical_url("ftp://example.org/x") is None
    assert canonical_url("mailto:someone@example.org") is None
    assert canonical_url("http://[::1/") is None


def test_build_indexes_readable_pages_and_honours_robots(dump, server, tmp_path, capsys):
    out = tmp_path / "index"
    assert main(["index", "build", "--dump", str(dump), "--out", str(out)]) == 0
    assert "3 documents" in capsys.readouterr().out

    # robots.txt first, once; the disallowed page, the dead original and the talk page's source never
    assert server.requests[0] == "/robots.txt" and server.hits["/robots.txt"] == 1
    assert sorted(fetched_pages(server)) == ["/archive/perry", "/gone", "/news", "/pear", "/quince"]
    assert server.hits["/private/notes"] == 0 and server.hits["/perry"] == 0

    base = server.url("")
    corpus = Corpus.load(out)
    documents = {d.url: d for d in corpus.documents}
    assert set(documents) == {f"{base}/pear", f"{base}/quince", f"{base}/perry"}  # not the 404 nor the paywall
    pear = documents[f"{base}/pear"]
    assert pear.title == "Pear orchards of the valley" and pear.fetched_at.startswith("20")
    assert "Subscribe to continue reading" not in "".join(d.text for d in corpus.documents)

    assert main(["search", "quince paste marmalade", "--index", str(out), "--json", "--k", "1",
                 "--mode", "sparse"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["url"] == f"{base}/quince"

    with CrawlState(crawl_state_path(dump, load_config())) as state:
        statuses = state.statuses()
    assert statuses[f"{base}/private/notes"][0] == CrawlStatus.DISALLOWED
    assert statuses[f"{base}/gone"][0] == CrawlStatus.FAILED and "HTTP 404" in statuses[f"{base}/gone"][1]
    assert statuses[f"{base}/news"][0] == CrawlStatus.UNREADABLE
    assert statuses[f"{base}/news"][1].startswith("paywall")


def test_a_rerun_fetches_only_what_the_last_run_left(dump, server):
    config = load_config()
    first = dump_documents(dump, config, limit=2, progress=False)  # as if killed after two fetches
    base = server.url("")
    assert sorted(fetched_pages(server)) == ["/pear", "/quince"]
    assert {d.url for d in first} == {f"{base}/pear", f"{base}/quince"}
    rest = dump_documents(dump, config, progress=False)
    # nothing asked twice but robots.txt (once per run); the rest fetched now
    assert {p for p, n in server.hits.items() if n > 1} == {"/robots.txt"}
    assert sorted(fetched_pages(server)) == ["/archive/perry", "/gone", "/news", "/pear", "/quince"]
    assert {d.doc_id for d in first} <= {d.doc_id for d in rest} and len(rest) == 3
    # a third run has nothing left to fetch
    requests = len(server.requests)
    assert len(dump_documents(dump, config, progress=False)) == 3
    assert len(server.requests) == requests


def test_requests_to_one_host_wait_their_turn(dump, server, monkeypatch):
    interval = 0.3
    monkeypatch.setenv("SIDE_CRAWL_HOST_INTERVAL_S", str(interval))
    list(iter_cited_urls(dump))  # the parsers' first use costs a second: not part of what is timed
    assess_html(PEAR, server.url("/pear"))
    started = time.monotonic()
    dump_documents(dump, load_config(), progress=False)
    elapsed = time.monotonic() - started
    # six requests to one host by four threads: each after the first waited its turn (a sleep
    # never ends early, so this lower bound cannot flake)
    assert len(server.requests) == 6 and elapsed >= (len(server.requests) - 1) * interval


def test_a_transient_failure_is_tried_again(dump, server):
    server.add("/quince", Response(b"busy", status=503, content_type="text/plain"))
    config = load_config()
    assert len(dump_documents(dump, config, progress=False)) == 2
    server.add("/quince", Response(QUINCE, content_type="text/html"))
    assert len(dump_documents(dump, config, progress=False)) == 3
    assert server.hits["/quince"] == 2 and server.hits["/gone"] == 1


def test_unreadable_robots_txt_forbids_the_host_for_this_run(dump, server):
    server.add("/robots.txt", Response(b"down", status=500, content_type="text/plain"))
    assert dump_documents(dump, load_config(), progress=False) == []
    assert server.requests == ["/robots.txt"]


def test_missing_robots_txt_allows_everything(dump, server):
    del server.routes["/robots.txt"]
    dump_documents(dump, load_config(), progress=False)
    assert server.hits["/private/notes"] == 1


WILDCARDS = b"""User-agent: *
Disallow: /*.pdf$
Disallow: /q*ce
Allow: /private/open$
Disallow: /private/

User-agent: sidebot
Disallow: /pear
"""


def test_robots_txt_wildcards_and_end_anchors_as_rfc_9309_reads_them(server):
    """``*`` matches any characters, ``$`` ends the path, the longest match decides, and the group
    of Side's product token (any case) is the one that applies to it."""
    server.add("/robots.txt", Response(WILDCARDS, content_type="text/plain"))
    config = FetchConfig(allow_hosts=["127.0.0.1"], user_agent="SideBot/0.1 (citation verification)")
    robots = RobotsCache(config, HostPacer(0))
    allowed = {path: robots.rules(server.url(path)).allows(config.user_agent, server.url(path))
               for path in ("/report.pdf", "/a/b/report.pdf", "/report.pdf?download=1", "/quince", "/private/notes",
                            "/private/open", "/pear")}
    assert allowed == {"/report.pdf": True, "/a/b/report.pdf": True, "/report.pdf?download=1": True,
                       "/quince": True, "/private/notes": True, "/private/open": True, "/pear": False}
    other = FetchConfig(allow_hosts=["127.0.0.1"], user_agent="OtherBot/1.0")
    others = RobotsCache(other, HostPacer(0))
    allowed = {path: others.rules(server.url(path)).allows(other.user_agent, server.url(path))
               for path in ("/report.pdf", "/a/b/report.pdf", "/report.pdf?download=1", "/quince", "/private/notes",
                            "/private/open", "/pear")}
    assert allowed == {"/report.pdf": False, "/a/b/report.pdf": False, "/report.pdf?download=1": True,
                       "/quince": False, "/private/notes": False, "/private/open": True, "/pear": True}
    server.add("/report.pdf", Response(b"%PDF-1.4", content_type="application/pdf"))
    outcome = visit(server.url("/report.pdf"), other, others, HostPacer(0))
    assert outcome.status == CrawlStatus.DISALLOWED and "/report.pdf" not in server.requests
    assert server.hits["/robots.txt"] == 2  # once per cache


def test_bz2_dump(dump, server, tmp_path):
    packed = tmp_path / "testwiki.xml.bz2"
    packed.write_bytes(bz2.compress(dump.read_bytes()))
    assert [c.url for c in iter_cited_urls(packed)] == [c.url for c in iter_cited_urls(dump)]
    documents = dump_documents(packed, load_config(), progress=False)
    assert {d.title for d in documents} == {"Pear orchards of the valley", "Quince jelly", "Perry in the west country"}


@pytest.mark.parametrize("content", [
    "<mediawiki><page><title>Broken</title><revision><text>x</revision></page></mediawiki>",
    "<feed><entry>not a dump</entry></feed>",
    "",
])
def test_malformed_dump_is_one_line_and_exit_2(server, tmp_path, capsys, content):
    bad = tmp_path / "bad.xml"
    bad.write_text(content, encoding="utf-8")
    assert main(["index", "build", "--dump", str(bad), "--out", str(tmp_path / "index")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("side: error: ") and err.count("\n") == 1
    assert server.requests == []


def test_corrupt_bz2_and_missing_dump_exit_2(server, tmp_path, capsys):
    bad = tmp_path / "bad.xml.bz2"
    bad.write_bytes(b"BZh9 not really")
    assert main(["index", "build", "--dump", str(bad), "--dry-run"]) == 2
    assert main(["index", "build", "--dump", str(tmp_path / "none.xml"), "--dry-run"]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 2 and "not found" in errors[1]
    assert main(["index", "build", "--dry-run"]) == 2
    capsys.readouterr()
    state = tmp_path / "var" / "crawl" / "none.xml.sqlite3"
    assert main(["index", "build", "--dump", str(tmp_path / "none.xml"), "--out", str(tmp_path / "index")]) == 2
    assert "dump not found" in capsys.readouterr().err and not state.exists()  # no state file made for it


def test_dry_run_lists_urls_and_fetches_nothing(dump, server, capsys):
    assert main(["index", "build", "--dump", str(dump), "--dry-run"]) == 0
    listed = capsys.readouterr().out.split()
    base = server.url("")
    assert listed == [f"{base}/{p}" for p in ("pear", "quince", "archive/perry", "private/notes", "gone", "news")]
    assert server.requests == []


def test_pacer_spaces_one_host_and_not_two():
    now = [100.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)

    pacer = HostPacer(2.0, clock=lambda: now[0], sleep=sleep)
    assert [pacer.wait("a.example") for _ in range(3)] == [100.0, 102.0, 104.0]
    assert pacer.wait("b.example") == 100.0
    pacer.slow_down("b.example", 5.0)
    assert pacer.wait("b.example") == 102.0 and pacer.wait("b.example") == 107.0
    assert slept == [2.0, 4.0, 2.0, 7.0]


@pytest.mark.parametrize("name,expected", [("article-pear-0.10.xml", 24), ("article-pear.xml", 0)])
def test_real_fixture_dump_lists_its_cited_urls_offline(name, expected, capsys):
    path = need_data(f"fixtures/mediawiki_xml/{name}")
    assert main(["index", "build", "--dump", str(path), "--dry-run"]) == 0
    listed = capsys.readouterr().out.split()
    assert len(listed) == len(set(listed)) == expected
    assert all(url.startswith(("http://", "https://")) for url in listed)
    if expected:  # the archived copies editors gave for dead links are what is read
        assert "http://web.archive.org/web/20100225202814/http://www.cpma.ca/en_hea_storage.asp" in listed
