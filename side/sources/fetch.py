"""Cited sources: fetch a URL safely and turn it into clean text split into sentences.

The verifier only ever sees what this module extracts, so two things matter: that fetching
an arbitrary URL from a wiki edit cannot hurt us (SSRF guard on every hop, size caps, one
deadline from the first connection to the last byte, a closed list of content types, bounded
parsers), and that the extracted text is the article and not the navigation around it
(trafilatura for HTML, chosen on the article-extraction benchmark; see
:mod:`side.evaluation.extraction`).

Every failure is a :class:`~side.errors.SourceFetchError` that carries its data (``status``,
``transient``), including whatever a parser raises on hostile content: one bad source is one
citation's "source unavailable", never a crashed check.

Fetched sources are cached on disk as JSON, keyed by the sha256 of the URL, so re-checking
an article does not hit the same sites again.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from side.config import FetchConfig, warn_without_contact
from side.errors import CannotCheckError, SourceFetchError, UnreadableContentError, UnsupportedContentError
from side.sources import comparison, copies, discard, xmlchars
from side.sources.deadline import Deadline
from side.sources.netguard import AllowList, check_url, guarded_session
from side.sources.source import PageSignals, Source
from side.sources.states import (
    Assessment,
    assess_error,
    assess_source,
    markup_signals,
    page_signals,
    signals_markup,
)
from side.text import normalize_space, split_sentences

__all__ = [
    "HTML_TYPES", "TEXT_TYPES", "PDF_TYPES", "SUPPORTED_TYPES", "REDIRECT_STATUSES", "TRANSIENT_HTTP",
    "MAX_PDF_PAGES", "PDF_TIME_BUDGET_S", "PDF_LIMITS", "MAX_HTML_ELEMENTS", "MAX_HTML_TEXT_CHARS",
    "MAX_TEXT_CHARS", "MAX_SENTENCES", "HTML_EXTRACTION_MODE", "EXTENSIVE_DATE_SEARCH", "Source", "extract_html",
    "read_html", "source_from_html", "source_from_text", "source_from_pdf", "source_from_bytes", "cache_path",
    "load_cached", "store_cached", "Download", "download", "fetch_source", "assess_html",
]

log = logging.getLogger(__name__)

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({"text/plain"})
PDF_TYPES = frozenset({"application/pdf"})
SUPPORTED_TYPES = HTML_TYPES | TEXT_TYPES | PDF_TYPES

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})

#: HTTP statuses worth asking again for later (the server may answer then): ``transient``.
TRANSIENT_HTTP = frozenset({408, 425, 429, 500, 502, 503, 504})

#: PDFs beyond this many pages are cut: the claim's evidence is rarely on page 200, and
#: extracting every page of a book would cost seconds per citation.
MAX_PDF_PAGES = 50

#: Stop reading further PDF pages after this many seconds of extraction (the pages read so far
#: are kept): pypdf's limits bound one page, this bounds a document of 50 costly pages.
PDF_TIME_BUDGET_S = 5.0

#: pypdf limits, tighter than its defaults (75 MB per stream, 2 million tokens per content
#: stream): a crafted page just under the default token limit costs about 4.5 s of CPU (and
#: 50 of them minutes); under 200,000 tokens it costs about 1 s. A text page needs a few
#: thousand tokens.
PDF_LIMITS: dict[str, int] = {
    "zlib_maximum_output_length": 25_000_000,
    "lzw_maximum_output_length": 25_000_000,
    "run_length_maximum_output_length": 25_000_000,
    "array_based_stream_maximum_output_length": 25_000_000,
    "maximum_declared_stream_length": 25_000_000,
    "stream_decoding_work_maximum_length": 50_000_000,
    "stream_parsing_work_maximum_count": 200_000,
}

#: Elements of an HTML page handed to trafilatura; a larger page is cut after this many, in
#: document order. trafilatura costs ~65 us per element (9 MB of paragraphs: 15 s of CPU);
#: the 181 real pages of the extraction benchmark have at most 1,709 elements (median 785).
MAX_HTML_ELEMENTS = 25_000
#: Characters of page text (scripts and styles not counted) handed to trafilatura, for pages
#: of few elements but huge texts (one 9 MB paragraph cost 2 s); 2.5x what is kept of a source.
MAX_HTML_TEXT_CHARS = 1_000_000

#: Most extracted text kept per source, cut at a line or word boundary, and most sentences
#: split from it. The verifier reads at most 400,000 characters and 4,000 sentences of a
#: source anyway (side.verify.verifier), and splitting 9 MB of text into sentences cost ~20 s.
MAX_TEXT_CHARS = 400_000
MAX_SENTENCES = 4_000

#: trafilatura mode: "recall", "precision" or "balanced". Chosen on the article-extraction
#: benchmark (``side eval extraction``, 181 pages): precision mode had the best F1 there
#: (token F1 macro 0.965 vs 0.959 for recall and balanced; recall 0.975 vs 0.983), i.e. it
#: drops much more boilerplate than article text.
HTML_EXTRACTION_MODE = "precision"

#: Whether a page's date is also searched for in its text (htmldate's extensive search, which
#: runs dateparser over the page), not only in its markup (meta tags, JSON-LD, time elements,
#: the URL). Off: the text search cost 60% of trafilatura's time on WiCE dev pages, found a
#: date in the text of simple pages where there was none to find, and on the extraction
#: benchmark's real pages gave the same date as the markup search on 59 of 60. The date feeds
#: only the evidence corpus's metadata, never a verdict; text and title are the same either way.
EXTENSIVE_DATE_SEARCH = False

_CHUNK = 64 * 1024


# --- building a Source from content ---------------------------------------------------------


def _cap_text(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """``text`` cut to at most ``limit`` characters, at a line break or else a space."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit + 1)
    if cut < limit // 2:
        cut = text.rfind(" ", 0, limit + 1)
    return text[: cut if cut > 0 else limit]


def _describe(exc: BaseException) -> str:
    """One line naming a parser's exception, for the citation's "source unavailable" reason."""
    message = " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _no_text(url: str, final_url: str, content_type: str, html: str | bytes | None) -> CannotCheckError:
    """The error for content that gave no text, saying what it was as far as can be seen.

    Something was read, and it is not a document to check a claim against, so the citation is
    *cannot check* with the assessment's reason (:func:`side.sources.states.assess_source` on
    the empty text and, for a page, its markup): an empty page or stub, an empty JavaScript
    shell, binary data served as a page. A :class:`CannotCheckError` is an
    :class:`UnsupportedContentError`, so callers that catch the latter are unchanged.
    """
    empty = Source(url=url, final_url=final_url, title="", date="", text="", content_type=content_type)
    assessment = assess_source(empty, html)
    return CannotCheckError(f"no text could be extracted from {final_url}: {assessment.describe()}")


def _make_source(url: str, final_url: str, title: str, date: str, text: str, content_type: str,
                 html: str | bytes | None = None) -> Source:
    raw = text or ""
    text = _cap_text(normalize_space(raw[: 2 * MAX_TEXT_CHARS]))
    if len(raw) > len(text) + MAX_TEXT_CHARS // 10:
        log.info("kept the first %d of %d characters of %s", len(text), len(raw), final_url)
    if not text:
        raise _no_text(url, final_url, content_type, html)
    return Source(
        url=url,
        final_url=final_url,
        title=(title or "").strip(),
        date=(date or "").strip(),
        text=text,
        content_type=content_type,
        sentences=tuple(split_sentences(text, limit=MAX_SENTENCES)),
    )


def extract_html(
    html: str | bytes, url: str | None = None, mode: str = HTML_EXTRACTION_MODE,
    extensive_dates: bool = EXTENSIVE_DATE_SEARCH,
) -> tuple[str, str, str]:
    """Main text, title and date of an HTML page with trafilatura (``mode`` and
    ``extensive_dates`` as in the constants).

    Exposed separately so the extraction benchmark can compare modes on the same code path.
    A page of more than :data:`MAX_HTML_ELEMENTS` elements is cut first (see there).
    trafilatura's boilerplate rules run as :mod:`side.sources.discard` evaluates them, and its
    comparison with readability is skipped where readability cannot win (:mod:`side.sources.comparison`),
    and the two copies of the tree nothing reads again are not made (:mod:`side.sources.copies`);
    the markup is searched for characters XML cannot hold only where it has one
    (:mod:`side.sources.xmlchars`).
    """
    if mode not in {"recall", "precision", "balanced"}:
        raise ValueError(f"unknown extraction mode {mode!r}")
    # trafilatura's own parser: the same tree it would build itself
    return _extract_tree(xmlchars.load_html(html), html, url, mode, extensive_dates)


def read_html(html: str | bytes, url: str | None = None) -> tuple[str, str, str, PageSignals]:
    """:func:`extract_html` and :func:`~side.sources.states.page_signals` of a page, with the
    page decoded and parsed once where its signals read all of it (a page of at most
    :data:`~side.sources.states.MAX_SIGNAL_CHARS` characters): the second parse was a sixth of
    a reader's time on a real page. The signals are read first: the extraction may cut the tree.
    """
    from trafilatura.utils import decode_file

    if not isinstance(html, (bytes, str)):  # as load_html refuses it
        raise TypeError("incompatible input type", type(html))
    decoded = decode_file(html)  # what load_html would do first with the bytes
    tree = xmlchars.load_html(decoded)
    markup = signals_markup(html, decoded)
    signals = markup_signals(markup, tree) if markup is not None else page_signals(html)
    return (*_extract_tree(tree, html, url, HTML_EXTRACTION_MODE, EXTENSIVE_DATE_SEARCH), signals)


def _extract_tree(tree: Any, html: str | bytes, url: str | None, mode: str, extensive_dates: bool,
                  ) -> tuple[str, str, str]:
    """:func:`extract_html` of ``html`` from ``tree``, what trafilatura's ``load_html`` made of it
    (None where it refused it)."""
    import trafilatura
    from trafilatura.settings import set_date_params

    discard.install()
    comparison.install()
    copies.install()
    if tree is None:
        return "", "", ""
    cut = None if _is_small(html, MAX_HTML_ELEMENTS, MAX_HTML_TEXT_CHARS) else \
        _limit_tree(tree, MAX_HTML_ELEMENTS, MAX_HTML_TEXT_CHARS)
    if cut:
        log.info("%s is too large to extract whole; extracting from its start (%s)", url or "page", cut)
    title, date, page_url = _title_and_date(tree, url, set_date_params(extensive_dates))
    with copies.owned(tree):  # nothing reads the tree after this
        doc = trafilatura.bare_extraction(
            tree,
            url=url or page_url,
            favor_recall=mode == "recall",
            favor_precision=mode == "precision",
            include_comments=False,
            include_tables=True,
            with_metadata=False,
        )
    if doc is None:
        return "", "", ""
    text = getattr(doc, "text", None) or ""
    return str(text), str(title or ""), str(date or "")


def _title_and_date(tree: Any, url: str | None, date_params: dict[str, Any],
                    ) -> tuple[str | None, str | None, str | None]:
    """The page's title, date and URL as trafilatura's ``extract_metadata`` finds them, the same
    steps in the same order, without the author, site name, categories, tags and licence it
    also looks for (a sixth of the extraction's time on real pages; Side reads none of them).

    Run on the tree before ``bare_extraction`` (which copies it), as ``extract_metadata`` runs
    on it before the text is extracted, so the text is the same too. The page's JSON-LD is read
    only when its meta tags give no title: it sets a title only where there is none, and no
    date or URL (the rest is author, site name and categories; a twentieth of a real page's
    preparation).
    """
    from trafilatura.metadata import examine_meta, extract_meta_json, extract_title, extract_url, find_date

    metadata = examine_meta(tree)
    if metadata.author and " " not in metadata.author:
        metadata.author = None
    if not metadata.title:
        try:
            metadata = extract_meta_json(tree, metadata)
        except Exception as exc:  # noqa: BLE001 - as trafilatura: its JSON-LD parsing has bugs
            log.debug("error in JSON metadata extraction: %s", exc)
    metadata.title = metadata.title or extract_title(tree)
    metadata.url = metadata.url or extract_url(tree, url)
    metadata.date = find_date(tree, **{**date_params, "url": metadata.url})
    metadata.clean_and_trim()  # as extract_metadata ends
    return metadata.title, metadata.date, metadata.url


def _is_small(html: str | bytes, max_elements: int, max_chars: int) -> bool:
    """Whether ``html`` cannot parse into more than ``max_elements`` elements or ``max_chars``
    characters of text, so :func:`_limit_tree` need not walk its tree (a fifteenth of a real
    page's preparation): every element comes from a ``<`` of the markup or is implied by the
    parser (``html``, ``head``, ``body``, and at most a ``p`` after each tag or entity, around
    text that needs one), and decoded text is never longer than its markup."""
    marks = html.count(b"<") + html.count(b"&") if isinstance(html, bytes) else html.count("<") + html.count("&")
    return len(html) <= max_chars and 2 * marks + 8 <= max_elements


_CODE_TAGS = frozenset({"script", "style", "noscript", "template"})


def _limit_tree(tree: Any, max_elements: int, max_chars: int) -> str | None:
    """Cut ``tree`` after its first ``max_elements`` elements in document order, or where its
    text passes ``max_chars``; says why it cut, or None if the page was within both.

    The kept part is the start of the page, where an article's text begins; everything after
    the last kept element (its own children, the following siblings of it and of each
    ancestor) is removed, and an overlong text of that element is shortened.
    """
    last, chars, reason = None, 0, None
    for count, element in enumerate(tree.iter(), start=1):
        if count > max_elements:
            reason = f"more than {max_elements} elements"
            break
        last = element
        if isinstance(element.tag, str) and element.tag not in _CODE_TAGS:
            chars += len(element.text or "") + len(element.tail or "")
        if chars > max_chars:
            reason = f"more than {max_chars} characters of text"
            last.text = (last.text or "")[:max_chars] or None
            last.tail = (last.tail or "")[:max_chars] or None
            break
    if reason is None or last is None:
        return None
    for child in list(last):
        last.remove(child)
    node = last
    while node is not None:
        parent = node.getparent()
        if parent is not None:
            while (sibling := node.getnext()) is not None:
                parent.remove(sibling)
        node = parent
    return reason


def source_from_html(
    html: str | bytes, url: str, final_url: str | None = None, content_type: str = "text/html"
) -> Source:
    """A :class:`Source` from HTML the caller already has (corpus builder, tests, fetcher),
    with the page's :class:`PageSignals` (a second, bounded look at the markup).

    Whatever the extractor raises on hostile markup becomes :class:`UnreadableContentError`.
    """
    where = final_url or url
    try:
        text, title, date, signals = read_html(html, url=where)
    except Exception as exc:  # any failure of a third-party parser on content from the web
        log.debug("extraction failed for %s", where, exc_info=True)
        raise UnreadableContentError(f"could not extract text from {where}: {_describe(exc)}") from exc
    return replace(_make_source(url, where, title, date, text, content_type, html), page=signals)


def source_from_text(text: str, url: str, title: str = "", date: str = "") -> Source:
    """A :class:`Source` from plain text, e.g. an abstract from a dataset."""
    return _make_source(url, url, title, date, text, "text/plain")


def _pdf_title(reader: Any) -> str:
    """The title from the document information, or "" (broken metadata is no reason to fail)."""
    try:
        meta = reader.metadata
        return str(meta.title) if meta and meta.title else ""
    except Exception as exc:  # a parser failure on hostile content
        log.debug("unreadable PDF metadata: %s", _describe(exc))
        return ""


def _pdf_text(reader: Any, max_pages: int, where: str) -> str:
    """Text of the first ``max_pages`` pages within :data:`PDF_TIME_BUDGET_S`.

    A page pypdf refuses (a limit reached, a broken stream) is skipped; if no page gave text,
    the first refusal is the source's error, so the reason reaches the report.
    """
    started = time.monotonic()
    parts: list[str] = []
    failure: Exception | None = None
    for number, page in enumerate(reader.pages[:max_pages], start=1):
        if time.monotonic() - started > PDF_TIME_BUDGET_S:
            log.info("%s: stopped extracting after page %d (%g s budget)", where, number - 1, PDF_TIME_BUDGET_S)
            break
        try:
            parts.append(page.extract_text() or "")
        except Exception as exc:  # a parser failure on hostile content: skip the page
            failure = failure or exc
            log.info("%s: skipping PDF page %d: %s", where, number, _describe(exc))
    text = "\n".join(parts)
    if failure is not None and not text.strip():
        raise UnreadableContentError(f"unreadable PDF at {where}: {_describe(failure)}") from failure
    return text


def source_from_pdf(
    data: bytes, url: str, final_url: str | None = None, max_pages: int = MAX_PDF_PAGES
) -> Source:
    """A :class:`Source` from PDF bytes: text of the first ``max_pages`` pages, title from metadata.

    pypdf runs under :data:`PDF_LIMITS`; anything it raises (``LimitReachedError`` on a
    compression bomb, ``PdfReadError``, or a plain ``IndexError`` on a malformed file) becomes
    one :class:`UnreadableContentError` line.
    """
    from pypdf import PdfReader, apply_configuration

    where = final_url or url
    try:
        with apply_configuration(None, **PDF_LIMITS):
            reader = PdfReader(io.BytesIO(data))
            text = _pdf_text(reader, max_pages, where)
            title = _pdf_title(reader)
    except UnreadableContentError:
        raise
    except Exception as exc:  # any failure of a third-party parser on content from the web
        log.debug("PDF parsing failed for %s", where, exc_info=True)
        raise UnreadableContentError(f"unreadable PDF at {where}: {_describe(exc)}") from exc
    return _make_source(url, where, title, "", text, "application/pdf")


def _decode_text(data: bytes, charset: str | None) -> str:
    try:
        return data.decode(charset or "utf-8", errors="replace")
    except LookupError:  # unknown charset name in the header
        return data.decode("utf-8", errors="replace")


def source_from_bytes(
    data: bytes, url: str, final_url: str, content_type: str, charset: str | None = None
) -> Source:
    """Dispatch on the (already validated) media type."""
    if content_type in PDF_TYPES:
        return source_from_pdf(data, url, final_url)
    if content_type in HTML_TYPES:
        html: str | bytes = _decode_text(data, charset) if charset else data
        return source_from_html(html, url, final_url, content_type)
    if content_type in TEXT_TYPES:
        return _make_source(url, final_url, "", "", _decode_text(data, charset), content_type)
    raise UnsupportedContentError(f"unsupported content type {content_type!r} at {final_url}")


# --- cache ------------------------------------------------------------------------------------


def _without_fragment(url: str) -> str:
    return url.split("#", 1)[0]


def cache_path(cache_dir: Path, url: str) -> Path:
    """Where ``url``'s Source is cached: keyed by the URL without its fragment, which is never
    sent to the server, so ``page#a`` and ``page#b`` are one fetch."""
    key = _without_fragment(url)
    return Path(cache_dir) / "sources" / f"{hashlib.sha256(key.encode('utf-8')).hexdigest()}.json"


def load_cached(cache_dir: Path | None, url: str) -> Source | None:
    """The cached Source for ``url``, or None (a corrupt entry counts as a miss)."""
    if cache_dir is None:
        return None
    path = cache_path(cache_dir, url)
    if not path.is_file():
        return None
    try:
        source = Source.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("ignoring unreadable cache entry %s: %s", path, exc)
        return None
    if _without_fragment(source.url) != _without_fragment(url):
        return None
    return source if source.url == url else replace(source, url=url)


def store_cached(cache_dir: Path | None, source: Source) -> None:
    """Write atomically, so a concurrent reader never sees half a file."""
    if cache_dir is None:
        return
    path = cache_path(cache_dir, source.url)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(source.to_dict(), f, ensure_ascii=False)
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("could not cache %s: %s", source.url, exc)
        Path(tmp).unlink(missing_ok=True)


# --- fetching ---------------------------------------------------------------------------------


def _media_type(header: str | None) -> tuple[str, str | None]:
    """``text/html; charset=UTF-8`` -> ``("text/html", "UTF-8")``."""
    if not header:
        return "", None
    parts = [p.strip() for p in header.split(";")]
    charset = None
    for param in parts[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip("\"'")
    return parts[0].lower(), charset


def _sniff(data: bytes) -> str:
    """Media type of a response that did not declare one."""
    head = data[:1024].lstrip().lower()
    if head.startswith(b"%pdf-"):
        return "application/pdf"
    if head.startswith((b"<!doctype html", b"<html", b"<?xml", b"<head", b"<body", b"<!--")):
        return "text/html"
    return ""


def _read_capped(response: Any, max_bytes: int, clock: Deadline, url: str) -> bytes:
    """The decoded body, refusing more than ``max_bytes`` (after decompression, so a gzip bomb
    stops early) and a download that outlasts the fetch's deadline.

    ``read1`` returns whatever has arrived, so the deadline is checked after every packet even
    when a server drips bytes slower than a full chunk; a read blocked when time runs out is
    ended by the deadline's watchdog, and the truncated body is refused, not returned.
    """
    declared = response.headers.get("Content-Length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise SourceFetchError(f"source too large: {url} declares {declared} bytes (limit {max_bytes})")
    buffer = bytearray()
    raw = response.raw
    while True:
        chunk = raw.read1(_CHUNK, decode_content=True)
        if clock.expired:
            raise clock.timed_out(url)
        if not chunk:
            break
        buffer.extend(chunk)
        if len(buffer) > max_bytes:
            raise SourceFetchError(f"source too large: {url} exceeds {max_bytes} bytes")
    return bytes(buffer)


def _is_timeout(exc: BaseException) -> bool:
    """requests and urllib3 report timeouts under several classes; recognise them all."""
    import requests
    from urllib3.exceptions import ReadTimeoutError

    if isinstance(exc, (requests.Timeout, ReadTimeoutError, TimeoutError)):
        return True
    return any(isinstance(arg, (ReadTimeoutError, TimeoutError)) for arg in exc.args)


def _network_errors() -> tuple[type[BaseException], ...]:
    """What requests, urllib3 and http.client raise on a bad connection or a malformed answer."""
    import http.client

    import requests
    import urllib3.exceptions

    return (requests.RequestException, urllib3.exceptions.HTTPError, http.client.HTTPException, OSError,
            ValueError)


def _connection_failure(exc: BaseException, url: str, clock: Deadline, verb: str) -> SourceFetchError:
    """The error for a failed connect or read: a timeout when time ran out (the watchdog's
    shutdown surfaces as a reset), else transient unless the request itself was invalid."""
    if clock.expired or _is_timeout(exc):
        return clock.timed_out(url)
    return SourceFetchError(f"could not {verb} {url}: {exc}", transient=not isinstance(exc, ValueError))


def _get(session: Any, url: str, clock: Deadline) -> Any:
    """One request with only the time left: connect, TLS, status line and headers."""
    remaining = clock.remaining()
    if remaining <= 0:
        raise clock.timed_out(url)
    try:
        return session.get(url, timeout=remaining, stream=True, allow_redirects=False)
    except _network_errors() as exc:
        raise _connection_failure(exc, url, clock, "fetch") from exc


def _next_hop(current: str, location: str) -> str:
    try:
        return urljoin(current, location)
    except ValueError as exc:  # e.g. an unbalanced IPv6 bracket
        raise SourceFetchError(f"bad redirect from {current}: {exc}") from exc


def _download(session: Any, url: str, config: FetchConfig, allow: AllowList, clock: Deadline,
              types: frozenset[str] | None = SUPPORTED_TYPES) -> tuple[bytes, str, str, str | None]:
    """Follow redirects by hand, checking each hop before connecting, then read one body.

    Returns (body, final URL, declared media type or "", charset). Every hop shares ``clock``.
    A declared media type outside ``types`` is refused before the body is read (None: any).
    """
    warn_without_contact(config.user_agent, url)
    current = url
    for hop in range(config.max_redirects + 1):
        if clock.expired:
            raise clock.timed_out(current)
        check_url(current, allow, timeout=clock.remaining())
        response = _get(session, current, clock)
        with response:
            if clock.expired:  # the watchdog cut the headers short: http.client takes what came as all
                raise clock.timed_out(current)
            status = response.status_code
            if status in REDIRECT_STATUSES and response.headers.get("Location"):
                nxt = _next_hop(current, response.headers["Location"])
                log.debug("redirect %d: %s -> %s", hop + 1, current, nxt)
                current = nxt
                continue
            if status >= 400:
                raise SourceFetchError(f"HTTP {status} fetching {current}", status=status,
                                       transient=status in TRANSIENT_HTTP)
            media, charset = _media_type(response.headers.get("Content-Type"))
            if media and types is not None and media not in types:
                raise UnsupportedContentError(f"unsupported content type {media!r} at {current}")
            try:
                data = _read_capped(response, config.max_bytes, clock, current)
            except _network_errors() as exc:
                raise _connection_failure(exc, current, clock, "read") from exc
            return data, current, media, charset
    raise SourceFetchError(f"too many redirects (more than {config.max_redirects}) fetching {url}")


@dataclass(frozen=True)
class Download:
    """A body fetched under the guard: its bytes, where it came from, what it says it is."""

    data: bytes
    final_url: str
    media_type: str
    charset: str | None = None


def download(url: str, config: FetchConfig, deadline: float | None = None,
             types: frozenset[str] | None = SUPPORTED_TYPES) -> Download:
    """The body at ``url``, fetched exactly as :func:`fetch_source` fetches (SSRF guard on every
    hop, one deadline, size cap) but neither extracted nor cached: for answers that are data,
    such as the Wayback Machine's availability API. ``types``: media types accepted (None: any).
    """
    allow = AllowList.parse(config.allow_hosts)
    with Deadline(config.timeout_s, until=deadline) as clock, \
            guarded_session(allow, config.user_agent, on_connect=clock.watch) as session:
        data, final_url, media, charset = _download(session, url, config, allow, clock, types)
    return Download(data, final_url, media, charset)


def fetch_source(url: str, config: FetchConfig | None = None, cache_dir: Path | None = None,
                 deadline: float | None = None) -> Source:
    """Fetch ``url`` and extract its text, or return the cached copy without touching the network.

    The download (resolution, connect, TLS, status line, headers, body, every redirect) must end
    within ``config.timeout_s``, or sooner at ``deadline`` (a :func:`time.monotonic` instant, the
    caller's budget). Raises :class:`SourceBlockedError` for URLs into private networks (any hop),
    :class:`UnsupportedContentError` for non-text content (its :class:`CannotCheckError` for
    content without text: an empty page, a shell, binary data; the message says which),
    :class:`UnreadableContentError` for content its parser refuses, and
    :class:`SourceFetchError` for timeouts, HTTP errors, oversize bodies and redirect loops.
    """
    config = config or FetchConfig()
    cached = load_cached(cache_dir, url)
    if cached is not None:
        log.debug("cache hit for %s", url)
        return cached
    fetched = download(url, config, deadline)
    data, final_url, charset = fetched.data, fetched.final_url, fetched.charset
    media = fetched.media_type or _sniff(data)
    if not media:
        raise UnsupportedContentError(f"unknown content type at {final_url}")
    source = source_from_bytes(data, url, final_url, media, charset)
    store_cached(cache_dir, source)
    return source


def assess_html(html: str | bytes, url: str) -> tuple[Source | None, Assessment]:
    """The Source Side would read from ``html`` and its assessment, as the fetcher would make them.

    A page the extractor finds no text in is assessed as an empty source (a JavaScript shell or
    a stub, usually); one it cannot parse at all is a ``fetch_error``. For evaluations and tests
    that hold pages rather than URLs.
    """
    try:
        source = source_from_html(html, url)
    except UnreadableContentError as exc:
        return None, assess_error(exc)
    except UnsupportedContentError:  # no text extracted: judge the page by its markup
        empty = Source(url=url, final_url=url, title="", date="", text="", content_type="text/html")
        return empty, assess_source(empty, html)
    except SourceFetchError as exc:
        return None, assess_error(exc)
    return source, assess_source(source)
