"""One hostile or slow source must not fail or stall a check, and its error carries data.

Every hostile behaviour is produced for real on 127.0.0.1: a server that dribbles its status
line and headers one byte at a time, one that never answers (not even a TLS handshake), a
redirect chain of slow hops, a PDF compression bomb and a token bomb built here with zlib, and
an HTML page of 100,000 paragraphs. Bounds are asserted with generous slack against what the
hostile source would cost unbounded (tens of seconds); timings themselves are printed by
benchmarks/hostile_source.py and benchmarks/large_html.py.
"""

from __future__ import annotations

import threading
import time

import pytest

from side.cli import main
from side.config import FetchConfig
from side.errors import SourceBlockedError, SourceFetchError, UnreadableContentError, UnsupportedContentError
from side.sources.batch import FetchBudget, fair_share, fetch_all
from side.sources.fetch import (
    MAX_HTML_ELEMENTS,
    MAX_SENTENCES,
    MAX_TEXT_CHARS,
    _limit_tree,
    fetch_source,
    source_from_html,
    source_from_pdf,
    source_from_text,
)
from side.text import split_sentences

from hostile import decompression_bomb, pdf, text_page, token_bomb
from httpserver import LocalServer, Response, SilentServer, redirect

PAGE = b"""<html><head><title>Harbour report</title></head><body><article><h1>Harbour report</h1>
<p>The harbour was rebuilt in 1902 after a storm destroyed the old pier.</p>
<p>It now shelters the town's fishing fleet and a lifeboat station.</p></article></body></html>"""

#: Slack for thread start-up and a loaded 2-core machine; the unbounded cost is far above it.
SLACK_S = 2.0


@pytest.fixture
def server():
    with LocalServer() as srv:
        yield srv


@pytest.fixture
def config() -> FetchConfig:
    return FetchConfig(timeout_s=1.0, allow_hosts=["127.0.0.1"])


def failure(url: str, config: FetchConfig) -> tuple[SourceFetchError, float]:
    started = time.monotonic()
    with pytest.raises(SourceFetchError) as caught:
        fetch_source(url, config)
    return caught.value, time.monotonic() - started


# --- one deadline from connect to last byte ------------------------------------------------------


def test_dribbled_status_line_and_headers_fail_within_the_deadline(server, config):
    """One byte every 0.1 s never trips a per-read timeout; the whole head would take ~10 s."""
    url = server.add("/drip", Response(PAGE, header_drip_s=0.1))
    error, took = failure(url, config)
    assert "timed out after 1 s" in str(error)
    assert error.transient and error.status is None
    assert took < config.timeout_s + SLACK_S


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_server_that_never_answers_fails_within_the_deadline(config, scheme):
    with SilentServer() as silent:
        error, took = failure(silent.url("/x", scheme), config)
        assert silent.connections == 1
    assert "timed out" in str(error) and error.transient
    assert took < config.timeout_s + SLACK_S


def test_redirect_hops_share_one_deadline(server, config):
    """Five hops of 0.4 s each: every hop is within the timeout, the chain is not."""
    for i in range(5):
        server.add(f"/hop{i}", Response(status=302, content_type=None, headers={"Location": f"/hop{i + 1}"},
                                        delay_s=0.4))
    server.add("/hop5", Response(PAGE))
    error, took = failure(server.url("/hop0"), config)
    assert "timed out" in str(error) and error.transient
    assert server.hits["/hop5"] == 0 and server.hits["/hop2"] >= 1
    assert took < config.timeout_s + SLACK_S


def test_a_callers_deadline_ends_the_fetch_sooner(server):
    url = server.add("/slow", Response(PAGE, delay_s=3))
    config = FetchConfig(timeout_s=30, allow_hosts=["127.0.0.1"])
    started = time.monotonic()
    with pytest.raises(SourceFetchError, match="timed out") as caught:
        fetch_source(url, config, deadline=time.monotonic() + 0.5)
    assert caught.value.transient and time.monotonic() - started < 0.5 + SLACK_S


# --- errors carry data ---------------------------------------------------------------------------


@pytest.mark.parametrize(("response", "status", "transient"), [
    (Response(b"busy", status=503, content_type="text/plain"), 503, True),
    (Response(b"slow down", status=429, content_type="text/plain"), 429, True),
    (Response(b"gone", status=404, content_type="text/plain"), 404, False),
    (Response(b"no", status=403, content_type="text/plain"), 403, False),
    (Response(PAGE, delay_s=2), None, True),
    (Response(b"<p>" + b"word " * 5000 + b"</p>"), None, False),  # over max_bytes
    (Response(b"\x89PNG\r\n\x1a\n" + b"\0" * 50, content_type="image/png"), None, False),
])
def test_fetch_errors_carry_status_and_transient(server, response, status, transient):
    config = FetchConfig(timeout_s=1.0, max_bytes=10_000, allow_hosts=["127.0.0.1"])
    error, _ = failure(server.add("/x", response), config)
    assert (error.status, error.transient) == (status, transient)


def test_refused_connection_is_transient_and_a_redirect_loop_is_not(server, config):
    with LocalServer() as gone:
        url = gone.url("/page")
    assert failure(url, config)[0].transient
    server.add("/a", redirect("/b"))
    server.add("/b", redirect("/a"))
    loop, _ = failure(server.url("/a"), config)
    assert "too many redirects" in str(loop) and not loop.transient


def test_blocked_and_unreadable_are_never_transient(server):
    with pytest.raises(SourceBlockedError) as blocked:
        fetch_source(server.add("/p", Response(PAGE)), FetchConfig(timeout_s=1.0))
    assert not blocked.value.transient and blocked.value.status is None
    with pytest.raises(UnreadableContentError) as unreadable:
        source_from_pdf(pdf(decompression_bomb()), "https://example.org/bomb.pdf")
    assert not unreadable.value.transient


# --- PDF bombs -----------------------------------------------------------------------------------


@pytest.mark.parametrize("bomb", [decompression_bomb, token_bomb], ids=["decompression", "tokens"])
def test_pdf_bomb_is_one_unreadable_content_error(bomb):
    data = pdf(bomb())
    assert len(data) < 200_000  # a small download ...
    with pytest.raises(UnreadableContentError) as caught:
        source_from_pdf(data, "https://example.org/bomb.pdf")
    message = str(caught.value)
    assert "LimitReachedError" in message and "\n" not in message
    assert isinstance(caught.value, UnsupportedContentError) and caught.value.code == "unreadable_content"


def test_a_bomb_page_is_skipped_and_the_readable_pages_kept():
    source = source_from_pdf(pdf(text_page("The harbour was rebuilt in 1902."), decompression_bomb()),
                             "https://example.org/mixed.pdf")
    assert "rebuilt in 1902" in source.text


def test_garbage_behind_a_pdf_header_is_unreadable():
    with pytest.raises(UnreadableContentError, match="unreadable PDF"):
        source_from_pdf(b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 9 0 R >> endobj\ntrailer << /Root 1 0 R >>",
                        "https://example.org/junk.pdf")


def test_side_source_on_a_pdf_bomb_is_one_line_and_exit_2(server, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("SIDE_FETCH_ALLOW_HOSTS", "127.0.0.1")
    monkeypatch.setenv("SIDE_VAR_DIR", str(tmp_path))
    url = server.add("/bomb.pdf", Response(pdf(decompression_bomb()), content_type="application/pdf"))
    assert main(["source", url, "--no-cache"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("side: error:") and "LimitReachedError" in err and "\n" not in err


# --- bounded extraction --------------------------------------------------------------------------


def test_a_huge_html_page_is_cut_to_its_start():
    """100,000 paragraphs: the extractor gets the first MAX_HTML_ELEMENTS elements, in order."""
    paragraphs = b"".join(b"<p>Item %d.</p>\n" % i for i in range(100_000))
    html = b"<html><head><title>Huge</title></head><body><article>" + paragraphs + b"</article></body></html>"
    source = source_from_html(html, "https://example.org/huge")
    items = [int(line.removeprefix("Item ").rstrip(".")) for line in source.text.splitlines()]
    assert items == list(range(len(items)))  # the start of the page, nothing skipped
    assert MAX_HTML_ELEMENTS - 10 <= len(items) < MAX_HTML_ELEMENTS
    assert len(source.text) < MAX_TEXT_CHARS  # cut by elements, not by the text cap
    assert len(source.sentences) == MAX_SENTENCES  # all the verifier reads
    assert source.sentences[-1] == f"Item {MAX_SENTENCES - 1}."


def test_a_huge_html_page_of_long_paragraphs_is_cut_by_the_text_cap():
    paragraphs = b"".join(b"<p>Paragraph %d tells how the harbour of the town grew over the years.</p>\n" % i
                          for i in range(6_500))
    source = source_from_html(b"<html><body><article>" + paragraphs + b"</article></body></html>",
                              "https://example.org/long")
    lines = source.text.splitlines()
    assert lines[0].startswith("Paragraph 0 tells") and lines[-1].endswith("over the years.")
    assert MAX_TEXT_CHARS - 100 < len(source.text) <= MAX_TEXT_CHARS


def test_limit_tree_keeps_the_start_of_the_page_in_document_order():
    from lxml import html as lxml_html

    def page():
        return lxml_html.document_fromstring(
            "<html><body><div><p>a</p><p>b<b>c</b></p></div><div><p>d</p></div><p>e</p></body></html>")

    tree = page()
    assert _limit_tree(tree, 100, 100) is None
    assert _limit_tree(tree, 5, 100) == "more than 5 elements"  # html, body, div, p(a), p(b)
    assert [e.tag for e in tree.iter()] == ["html", "body", "div", "p", "p"]
    assert tree.text_content() == "ab"
    tree = page()
    assert _limit_tree(tree, 100, 2) == "more than 2 characters of text"
    assert tree.text_content() == "abc"
    assert MAX_HTML_ELEMENTS >= 10_000  # real pages (at most ~5,000 elements) are never cut


def test_a_giant_paragraph_is_cut_before_extraction():
    text = b"The harbour was rebuilt in 1902. " * 300_000
    html = b"<html><body><article><p>" + text + b"</p></article></body></html>"
    source = source_from_html(html, "https://example.org/giant")
    assert source.sentences[0] == "The harbour was rebuilt in 1902."
    assert len(source.text) <= MAX_TEXT_CHARS and len(source.sentences) == MAX_SENTENCES


def test_text_is_capped_at_a_word_boundary():
    source = source_from_text("The harbour was rebuilt in 1902. " * 30_000, "https://example.org/long")
    assert MAX_TEXT_CHARS - 100 < len(source.text) <= MAX_TEXT_CHARS
    assert source.text.split()[-1] in {"The", "harbour", "was", "rebuilt", "in", "1902."}  # whole words


def test_sentence_splitting_is_thread_safe():
    """Sources are extracted in parallel threads; a splitter that kept state between calls (as
    pysbd did) would mix their sentences."""
    texts = [" ".join(f"Sentence {i} of text {t} is here." for i in range(30)) for t in range(4)]
    expected = [split_sentences(t) for t in texts]
    wrong: list[int] = []

    def split(k: int) -> None:
        for _ in range(20):
            if split_sentences(texts[k]) != expected[k]:
                wrong.append(k)

    threads = [threading.Thread(target=split, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


# --- a check's sources: concurrent, per host, one budget -----------------------------------------


def test_fair_share():
    assert fair_share(60, {"a": 1, "b": 1, "c": 1}, concurrency=8, per_host=2) == 60  # all at once
    assert fair_share(60, {f"h{i}": 1 for i in range(16)}, concurrency=8, per_host=2) == 30  # two waves
    assert fair_share(60, {"same": 20}, concurrency=8, per_host=2) == 6  # ten waves of two
    assert fair_share(60, {"same": 3, "b": 0}, concurrency=8, per_host=2) == 40


def test_sources_are_fetched_concurrently_but_at_most_per_host_at_once(server):
    urls = [server.add(f"/p{i}", Response(PAGE, delay_s=0.5)) for i in range(6)]
    config = FetchConfig(timeout_s=5, allow_hosts=["127.0.0.1"])
    outcomes = fetch_all(urls, lambda url, deadline=None: fetch_source(url, config, deadline=deadline),
                         FetchBudget(seconds=30, concurrency=8, per_host=3))
    assert [o.error for o in outcomes.values()] == [None] * 6
    assert server.max_in_flight == 3


def test_a_hostile_source_costs_at_most_its_share(server):
    with SilentServer() as silent:
        good = [server.add(f"/g{i}", Response(PAGE)) for i in range(3)]
        urls = [silent.url("/never"), *good, server.add("/drip", Response(PAGE, header_drip_s=0.2))]
        config = FetchConfig(timeout_s=60, allow_hosts=["127.0.0.1"])
        started = time.monotonic()
        outcomes = fetch_all(urls, lambda url, deadline=None: fetch_source(url, config, deadline=deadline),
                             FetchBudget(seconds=2, concurrency=8, per_host=8))
        took = time.monotonic() - started
    assert [outcomes[u].error for u in good] == [None] * 3
    assert all("timed out" in str(outcomes[u].error) and outcomes[u].error.transient for u in urls[::4])
    assert took < 2 + SLACK_S


def test_a_fetch_that_ignores_deadlines_is_cut_off_at_the_budget(server):
    """A fetch without a ``deadline`` keyword is still waited for only until the budget ends."""
    slow = server.add("/slow", Response(PAGE, delay_s=8))
    fast = server.add("/fast", Response(PAGE))
    config = FetchConfig(timeout_s=30, allow_hosts=["127.0.0.1"])
    started = time.monotonic()
    outcomes = fetch_all([slow, fast, slow], lambda url: fetch_source(url, config), FetchBudget(seconds=1))
    assert list(outcomes) == [slow, fast]  # each distinct URL once
    assert outcomes[fast].error is None and "Harbour" in outcomes[fast].value.title
    assert "not fetched within the check's time budget" in str(outcomes[slow].error)
    assert outcomes[slow].error.transient and time.monotonic() - started < 1 + SLACK_S


# --- a whole check with the real verifier ---------------------------------------------------------

ARTICLE = """'''Harbour''' is a small port.

== History ==
The harbour was rebuilt in 1902 after a storm destroyed the old pier.<ref>[GOOD_URL Harbour report]</ref>
The harbour now shelters the town's fishing fleet and a lifeboat station.<ref>[FLEET_URL Fleet report]</ref>
The new pier is three hundred metres long.<ref>[BOMB_URL Pier survey]</ref>
The lighthouse was built in 1850 by the harbour board.<ref>[DRIP_URL Lighthouse]</ref>
The harbour master lives in the old customs house.<ref>[NEVER_URL Customs house]</ref>
"""


@pytest.fixture(scope="module")
def verifier():
    from side.verify.verifier import Verifier

    return Verifier.load(device="cpu")


def test_a_check_with_hostile_sources_gets_verdicts_for_the_good_ones(verifier, server):
    """A PDF bomb, a dribbling server and a silent one among good sources: the check ends within
    its budget (plus verification), the good citations are scored, the others say why not."""
    from side.extract.wikitext import extract_claims
    from side.pipeline import Pipeline, make_source_loader
    from workers.jobs import retrying

    budget = FetchBudget(seconds=3, concurrency=8, per_host=8)
    config = FetchConfig(timeout_s=30, allow_hosts=["127.0.0.1"])  # the budget, not the timeout, must end it
    fetch = retrying(lambda url, deadline=None: fetch_source(url, config, deadline=deadline))
    bomb_pdf = Response(pdf(decompression_bomb()), content_type="application/pdf")
    with SilentServer() as silent:
        urls = {"GOOD_URL": server.add("/harbour", Response(PAGE)),
                "FLEET_URL": server.add("/fleet", Response(PAGE)),
                "BOMB_URL": server.add("/pier.pdf", bomb_pdf),
                "DRIP_URL": server.add("/lighthouse", Response(PAGE, header_drip_s=0.5)),
                "NEVER_URL": silent.url("/customs")}
        wikitext = ARTICLE
        for key, url in urls.items():
            wikitext = wikitext.replace(key, url)
        claims = extract_claims(wikitext, "Harbour")
        started = time.monotonic()
        results = Pipeline(verifier, None, make_source_loader(None, fetch, budget)).verify_claims(claims)
        took = time.monotonic() - started
    by_title = {r.claim.citation.title: r for r in results}
    assert len(by_title) == 5
    for title in ("Harbour report", "Fleet report"):
        assert by_title[title].source_status == "fetched" and by_title[title].verdict is not None
    assert by_title["Harbour report"].verdict.score > verifier.flag_threshold  # the claim is in the page
    bomb, drip, never = by_title["Pier survey"], by_title["Lighthouse"], by_title["Customs house"]
    assert bomb.source_status == "unavailable" and bomb.verdict is None
    assert any(r.startswith("source unavailable: unreadable PDF") and "LimitReachedError" in r for r in bomb.reasons)
    for result in (drip, never):
        assert result.source_status == "unavailable" and "timed out" in result.source_error
    assert took < budget.seconds + 15  # unbounded, the silent source alone would take 3 x 30 s
