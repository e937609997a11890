"""Fetching cited sources against a real HTTP server on 127.0.0.1.

Every failure mode the fetcher guards against (redirect loops, redirects into the private
network, huge or slow bodies, images, HTTP errors) is produced by a real server so the
streaming and redirect code runs for real; nothing but 127.0.0.1 is contacted.
"""

from __future__ import annotations

import gzip
import hashlib
import json

import pytest

from side.config import FetchConfig
from side.errors import CannotCheckError, SourceBlockedError, SourceFetchError, UnsupportedContentError
from side.sources.fetch import Source, cache_path, fetch_source, source_from_html, source_from_text

from conftest import need_data
from hostile import pdf_document
from httpserver import LocalServer, Response, redirect

BENCHMARK = "fixtures/web_html/article_extraction_benchmark"
PAGE_KEY = "042bb7b5fedab6eac7db576522b89b93904c237d344bcbe14a6a5ab7f7335856"

SIMPLE_HTML = b"""<!doctype html><html><head><title>Test page</title></head><body>
<nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<article><h1>Cats sleep a lot</h1>
<p>Domestic cats sleep between twelve and sixteen hours a day, according to veterinarians who
studied more than two hundred animals over three years in several different households.</p>
<p>Kittens and older cats sleep even longer than adult cats do, which is considered normal and
healthy behaviour by most of the specialists interviewed for this article.</p></article>
</body></html>"""


@pytest.fixture
def server():
    with LocalServer() as srv:
        yield srv


@pytest.fixture
def config() -> FetchConfig:
    return FetchConfig(timeout_s=0.5, max_bytes=2_000_000, max_redirects=3, allow_hosts=["127.0.0.1"])


@pytest.fixture
def no_outside_connections(monkeypatch):
    """Record every socket the fetcher opens, so tests can prove none went elsewhere."""
    from urllib3.util import connection

    opened: list[tuple[str, int]] = []
    real = connection.create_connection

    def create_connection(address, *args, **kwargs):
        opened.append(address)
        assert address[0] == "127.0.0.1", f"test tried to connect to {address}"
        return real(address, *args, **kwargs)

    monkeypatch.setattr(connection, "create_connection", create_connection)
    return opened


def make_pdf(text: str, title: str = "A test PDF") -> bytes:
    """A minimal valid one-page PDF showing ``text`` in Helvetica (offsets computed, not faked)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> >>"
        ),
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Title ({title}) >>".encode("latin-1"),
    ]
    return pdf_document(objects, info=6)


# --- successful fetches -------------------------------------------------------------------------


def test_fetches_real_benchmark_page_through_a_redirect(server, config, no_outside_connections):
    root = need_data(BENCHMARK)
    html = gzip.decompress((root / "html" / f"{PAGE_KEY}.html.gz").read_bytes())
    truth = json.loads((root / "ground-truth.json").read_text(encoding="utf-8"))[PAGE_KEY]["articleBody"]
    server.add("/article", Response(body=html))
    url = server.add("/short", redirect("/article", status=301))

    source = fetch_source(url, config)

    assert source.url == url
    assert source.final_url == server.url("/article")
    assert source.content_type == "text/html"
    assert "Stadia" in source.title
    assert source.date.startswith("2019-11")
    assert source.text.startswith("Gaming used to be so simple.")
    assert truth.split("\n")[0].split(".")[0] in source.text
    assert len(source.sentences) >= 3
    assert source.sentences[0] == "Gaming used to be so simple."
    direct = source_from_html(html, url, final_url=server.url("/article"))
    assert (direct.text, direct.title, direct.sentences) == (source.text, source.title, source.sentences)


def test_fetches_real_page_from_trafilatura_fixtures(server, config):
    page = need_data("fixtures/web_html/trafilatura_tests_cache/blog.python.org.html")
    url = server.add("/blog", Response(body=page.read_bytes(), content_type="text/html"))
    source = fetch_source(url, config)
    assert source.title
    assert "Python" in source.text
    assert source.sentences


def test_simple_html_keeps_article_drops_navigation(server, config):
    source = fetch_source(server.add("/cats", Response(body=SIMPLE_HTML)), config)
    assert "twelve and sixteen hours" in source.text
    assert "About" not in source.text


def test_plain_text(server, config):
    body = b"First sentence here. Second one follows.\n\nA new paragraph."
    source = fetch_source(
        server.add("/t.txt", Response(body=body, content_type="text/plain; charset=utf-8")), config
    )
    assert source.content_type == "text/plain"
    assert source.sentences == ("First sentence here.", "Second one follows.", "A new paragraph.")


def test_pdf_text_and_title(server, config):
    pdf = make_pdf("The mitochondria is the powerhouse of the cell.")
    source = fetch_source(
        server.add("/paper.pdf", Response(body=pdf, content_type="application/pdf")), config
    )
    assert source.content_type == "application/pdf"
    assert "powerhouse of the cell" in source.text
    assert source.title == "A test PDF"


def test_pdf_without_content_type_is_sniffed(server, config):
    pdf = make_pdf("Sniffed document text.")
    source = fetch_source(server.add("/x", Response(body=pdf, content_type=None)), config)
    assert source.content_type == "application/pdf"
    assert "Sniffed document text" in source.text


# --- failures -----------------------------------------------------------------------------------


def test_too_many_redirects(server, config):
    for i in range(5):
        server.add(f"/r{i}", redirect(f"/r{i + 1}"))
    server.add("/r5", Response(body=SIMPLE_HTML))
    with pytest.raises(SourceFetchError, match="too many redirects"):
        fetch_source(server.url("/r0"), config)
    assert server.hits["/r4"] == 0  # stopped after max_redirects hops
    config.max_redirects = 5
    assert "sixteen hours" in fetch_source(server.url("/r0"), config).text


def test_redirect_loop(server, config):
    server.add("/a", redirect("/b"))
    server.add("/b", redirect("/a"))
    with pytest.raises(SourceFetchError, match="too many redirects"):
        fetch_source(server.url("/a"), config)


@pytest.mark.parametrize(
    "target",
    [
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:80/",
        "http://2130706434/",
        "http://0177.0.0.2/",
        "file:///etc/passwd",
        "http://metadata.google.internal/",
    ],
)
def test_redirect_into_private_network_is_blocked_before_connecting(server, no_outside_connections, target):
    config = FetchConfig(timeout_s=0.5, allow_hosts=["127.0.0.1"])
    url = server.add("/go", redirect(target))
    with pytest.raises(SourceBlockedError):
        fetch_source(url, config)
    assert no_outside_connections == [("127.0.0.1", server.port)]


def test_loopback_is_blocked_without_allow_list(server, no_outside_connections):
    url = server.add("/page", Response(body=SIMPLE_HTML))
    with pytest.raises(SourceBlockedError):
        fetch_source(url, FetchConfig(timeout_s=0.5))
    assert server.hits["/page"] == 0
    assert no_outside_connections == []


@pytest.mark.parametrize("declare_length", [True, False])
def test_too_large(server, config, declare_length):
    config.max_bytes = 10_000
    body = b"<html><body><p>" + b"word " * 10_000 + b"</p></body></html>"
    url = server.add("/big", Response(body=body, content_length=declare_length))
    with pytest.raises(SourceFetchError, match="too large"):
        fetch_source(url, config)


def test_slow_headers_time_out(server, config):
    url = server.add("/slow", Response(body=SIMPLE_HTML, delay_s=1.5))
    with pytest.raises(SourceFetchError, match=r"timed out after 0.5 s"):
        fetch_source(url, config)


def test_slow_drip_body_times_out(server, config):
    """Each read arrives within the timeout, but the whole body would take far too long."""
    body = SIMPLE_HTML * 20
    url = server.add("/drip", Response(body=body, chunk_size=200, chunk_delay_s=0.2))
    with pytest.raises(SourceFetchError, match="timed out"):
        fetch_source(url, config)


def test_image_is_unsupported(server, config):
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 100
    with pytest.raises(UnsupportedContentError, match="image/png"):
        fetch_source(server.add("/cat.png", Response(body=png, content_type="image/png")), config)


@pytest.mark.parametrize("status", [404, 403, 500, 503])
def test_http_errors(server, config, status):
    url = server.add("/err", Response(status=status, body=b"nope", content_type="text/plain"))
    with pytest.raises(SourceFetchError, match=str(status)):
        fetch_source(url, config)


def test_missing_page_is_404(server, config):
    with pytest.raises(SourceFetchError, match="HTTP 404"):
        fetch_source(server.url("/nothing-here"), config)


def test_page_without_text(server, config):
    url = server.add("/empty", Response(body=b"<html><head><title>x</title></head><body></body></html>"))
    with pytest.raises(CannotCheckError, match="no text could be extracted from .*: too little text") as caught:
        fetch_source(url, config)
    assert isinstance(caught.value, UnsupportedContentError)  # what callers that predate the assessment catch


def test_broken_pdf(server, config):
    url = server.add("/bad.pdf", Response(body=b"%PDF-1.4\ngarbage", content_type="application/pdf"))
    with pytest.raises(UnsupportedContentError):
        fetch_source(url, config)


def test_connection_refused_is_fetch_error(config):
    with LocalServer() as srv:
        url = srv.url("/gone")
    with pytest.raises(SourceFetchError):
        fetch_source(url, config)


# --- cache and value object ---------------------------------------------------------------------


def test_cache_hit_needs_no_server(tmp_path, config):
    with LocalServer() as srv:
        url = srv.add("/cats", Response(body=SIMPLE_HTML))
        first = fetch_source(url, config, cache_dir=tmp_path)
        assert srv.hits["/cats"] == 1
    path = cache_path(tmp_path, url)
    assert path.name == hashlib.sha256(url.encode()).hexdigest() + ".json"
    assert path.is_file()
    second = fetch_source(url, config, cache_dir=tmp_path)  # server is gone
    assert second == first


def test_fragments_are_one_cache_entry(tmp_path, server, config):
    """A fragment never reaches the server: ``page#a`` and ``page#b`` are one fetch, each
    answered under its own URL."""
    url = server.add("/cats", Response(body=SIMPLE_HTML))
    first = fetch_source(url + "#a", config, cache_dir=tmp_path)
    second = fetch_source(url + "#b", config, cache_dir=tmp_path)
    assert server.hits["/cats"] == 1
    assert (first.url, second.url, second.text) == (url + "#a", url + "#b", first.text)
    assert fetch_source(url, config, cache_dir=tmp_path).text == first.text and server.hits["/cats"] == 1


def test_corrupt_cache_entry_is_refetched(tmp_path, server, config):
    url = server.add("/cats", Response(body=SIMPLE_HTML))
    path = cache_path(tmp_path, url)
    path.parent.mkdir(parents=True)
    path.write_text("{not json", encoding="utf-8")
    assert "sixteen hours" in fetch_source(url, config, cache_dir=tmp_path).text
    assert server.hits["/cats"] == 1
    assert json.loads(path.read_text(encoding="utf-8"))["url"] == url


def test_failures_are_not_cached(tmp_path, server, config):
    url = server.add("/err", Response(status=500))
    with pytest.raises(SourceFetchError):
        fetch_source(url, config, cache_dir=tmp_path)
    assert not cache_path(tmp_path, url).exists()


def test_source_round_trip_and_helpers():
    source = source_from_text("One claim. Another claim.", "https://example.org/a", title="T")
    assert source.sentences == ("One claim.", "Another claim.")
    assert source.fetched_at
    again = Source.from_dict(json.loads(json.dumps(source.to_dict())))
    assert again == source
    html_source = source_from_html(SIMPLE_HTML.decode(), "https://example.org/cats")
    assert html_source.title == "Test page" or html_source.title == "Cats sleep a lot"
    with pytest.raises(UnsupportedContentError):
        source_from_text("   ", "https://example.org/empty")
