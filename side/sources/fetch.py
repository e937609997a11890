"""Cited sources: fetch a URL safely and turn it into clean text split into sentences.

The verifier only ever sees what this module extracts, so two things matter: that fetching
an arbitrary URL from a wiki edit cannot hurt us (SSRF guard on every hop, size and time
caps, a closed list of content types), and that the extracted text is the article and not
the navigation around it (trafilatura for HTML, chosen on the article-extraction benchmark;
see :mod:`side.evaluation.extraction`).

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
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from side.config import FetchConfig
from side.errors import SourceFetchError, UnsupportedContentError
from side.sources.netguard import AllowList, check_url, guarded_session
from side.text import normalize_space, split_sentences

log = logging.getLogger(__name__)

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({"text/plain"})
PDF_TYPES = frozenset({"application/pdf"})
SUPPORTED_TYPES = HTML_TYPES | TEXT_TYPES | PDF_TYPES

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})

#: PDFs beyond this many pages are cut: the claim's evidence is rarely on page 200, and
#: extracting every page of a book would cost seconds per citation.
MAX_PDF_PAGES = 50

#: The whole download of one hop must finish within this many read timeouts; a server that
#: drips one byte per second would otherwise never trip the per-read timeout.
TOTAL_TIME_FACTOR = 3

#: trafilatura mode: "recall", "precision" or "balanced". Chosen on the article-extraction
#: benchmark (``side eval extraction``, 181 pages): precision mode had the best F1 there
#: (token F1 macro 0.965 vs 0.959 for recall and balanced; recall 0.975 vs 0.983), i.e. it
#: drops much more boilerplate than article text.
HTML_EXTRACTION_MODE = "precision"

_CHUNK = 64 * 1024


@dataclass(frozen=True)
class Source:
    """A cited document as Side uses it: where it came from and its text in sentences."""

    url: str
    final_url: str
    title: str
    date: str
    text: str
    content_type: str
    sentences: tuple[str, ...] = ()
    fetched_at: str = field(default_factory=lambda: _now())

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["sentences"] = list(self.sentences)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Source:
        return cls(
            url=str(data["url"]),
            final_url=str(data.get("final_url") or data["url"]),
            title=str(data.get("title") or ""),
            date=str(data.get("date") or ""),
            text=str(data.get("text") or ""),
            content_type=str(data.get("content_type") or ""),
            sentences=tuple(str(s) for s in data.get("sentences") or ()),
            fetched_at=str(data.get("fetched_at") or ""),
        )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# --- building a Source from content ---------------------------------------------------------


def _make_source(url: str, final_url: str, title: str, date: str, text: str, content_type: str) -> Source:
    text = normalize_space(text or "")
    if not text:
        raise UnsupportedContentError(f"no text could be extracted from {final_url}")
    return Source(
        url=url,
        final_url=final_url,
        title=(title or "").strip(),
        date=(date or "").strip(),
        text=text,
        content_type=content_type,
        sentences=tuple(split_sentences(text)),
    )


def extract_html(
    html: str | bytes, url: str | None = None, mode: str = HTML_EXTRACTION_MODE
) -> tuple[str, str, str]:
    """Main text, title and date of an HTML page with trafilatura (``mode`` as in the constant).

    Exposed separately so the extraction benchmark can compare modes on the same code path.
    """
    import trafilatura

    if mode not in {"recall", "precision", "balanced"}:
        raise ValueError(f"unknown extraction mode {mode!r}")
    doc = trafilatura.bare_extraction(
        html,
        url=url,
        favor_recall=mode == "recall",
        favor_precision=mode == "precision",
        include_comments=False,
        include_tables=True,
        with_metadata=True,
    )
    if doc is None:
        return "", "", ""
    text = getattr(doc, "text", None) or ""
    title = getattr(doc, "title", None) or ""
    date = getattr(doc, "date", None) or ""
    return str(text), str(title), str(date)


def source_from_html(
    html: str | bytes, url: str, final_url: str | None = None, content_type: str = "text/html"
) -> Source:
    """A :class:`Source` from HTML the caller already has (corpus builder, tests, fetcher)."""
    text, title, date = extract_html(html, url=final_url or url)
    return _make_source(url, final_url or url, title, date, text, content_type)


def source_from_text(text: str, url: str, title: str = "", date: str = "") -> Source:
    """A :class:`Source` from plain text, e.g. an abstract from a dataset."""
    return _make_source(url, url, title, date, text, "text/plain")


def source_from_pdf(
    data: bytes, url: str, final_url: str | None = None, max_pages: int = MAX_PDF_PAGES
) -> Source:
    """A :class:`Source` from PDF bytes: text of the first ``max_pages`` pages, title from metadata."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        pages = reader.pages[:max_pages]
        text = "\n".join((page.extract_text() or "") for page in pages)
        meta = reader.metadata
        title = str(meta.title) if meta and meta.title else ""
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise UnsupportedContentError(f"unreadable PDF at {final_url or url}: {exc}") from exc
    return _make_source(url, final_url or url, title, "", text, "application/pdf")


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


def cache_path(cache_dir: Path, url: str) -> Path:
    return Path(cache_dir) / "sources" / f"{hashlib.sha256(url.encode('utf-8')).hexdigest()}.json"


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
    return source if source.url == url else None


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


def _read_capped(response: Any, max_bytes: int, deadline: float, timeout_s: float, url: str) -> bytes:
    """The decoded body, refusing more than ``max_bytes`` (after decompression, so a gzip bomb
    stops early) and a download that outlasts ``deadline``.

    ``read1`` returns whatever has arrived, so the deadline is checked after every packet even
    when a server drips bytes slower than a full chunk.
    """
    declared = response.headers.get("Content-Length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise SourceFetchError(f"source too large: {url} declares {declared} bytes (limit {max_bytes})")
    buffer = bytearray()
    raw = response.raw
    while True:
        chunk = raw.read1(_CHUNK, decode_content=True)
        if not chunk:
            break
        buffer.extend(chunk)
        if len(buffer) > max_bytes:
            raise SourceFetchError(f"source too large: {url} exceeds {max_bytes} bytes")
        if time.monotonic() > deadline:
            raise SourceFetchError(f"fetching {url} timed out after {timeout_s * TOTAL_TIME_FACTOR:g} s")
    return bytes(buffer)


def _is_timeout(exc: BaseException) -> bool:
    """requests and urllib3 report timeouts under several classes; recognise them all."""
    import requests
    from urllib3.exceptions import ReadTimeoutError

    if isinstance(exc, (requests.Timeout, ReadTimeoutError, TimeoutError)):
        return True
    return any(isinstance(arg, (ReadTimeoutError, TimeoutError)) for arg in exc.args)


def _get(session: Any, url: str, config: FetchConfig) -> Any:
    import requests

    try:
        return session.get(url, timeout=config.timeout_s, stream=True, allow_redirects=False)
    except requests.Timeout as exc:
        raise SourceFetchError(f"fetching {url} timed out after {config.timeout_s:g} s") from exc
    except requests.RequestException as exc:
        raise SourceFetchError(f"could not fetch {url}: {exc}") from exc


def _download(session: Any, url: str, config: FetchConfig, allow: AllowList) -> Source:
    """Follow redirects by hand, checking each hop before connecting, then read one body."""
    import requests
    import urllib3.exceptions

    current = url
    for hop in range(config.max_redirects + 1):
        check_url(current, allow)
        response = _get(session, current, config)
        with response:
            if response.status_code in REDIRECT_STATUSES and response.headers.get("Location"):
                nxt = urljoin(current, response.headers["Location"])
                log.debug("redirect %d: %s -> %s", hop + 1, current, nxt)
                current = nxt
                continue
            if response.status_code >= 400:
                raise SourceFetchError(f"HTTP {response.status_code} fetching {current}")
            media, charset = _media_type(response.headers.get("Content-Type"))
            if media and media not in SUPPORTED_TYPES:
                raise UnsupportedContentError(f"unsupported content type {media!r} at {current}")
            deadline = time.monotonic() + config.timeout_s * TOTAL_TIME_FACTOR
            try:
                data = _read_capped(response, config.max_bytes, deadline, config.timeout_s, current)
            except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
                if _is_timeout(exc):
                    raise SourceFetchError(
                        f"fetching {current} timed out after {config.timeout_s:g} s"
                    ) from exc
                raise SourceFetchError(f"could not read {current}: {exc}") from exc
            media = media or _sniff(data)
            if not media:
                raise UnsupportedContentError(f"unknown content type at {current}")
            return source_from_bytes(data, url, current, media, charset)
    raise SourceFetchError(f"too many redirects (more than {config.max_redirects}) fetching {url}")


def fetch_source(url: str, config: FetchConfig | None = None, cache_dir: Path | None = None) -> Source:
    """Fetch ``url`` and extract its text, or return the cached copy without touching the network.

    Raises :class:`SourceBlockedError` for URLs into private networks (any hop),
    :class:`UnsupportedContentError` for non-text content or pages without text, and
    :class:`SourceFetchError` for timeouts, HTTP errors, oversize bodies and redirect loops.
    """
    config = config or FetchConfig()
    cached = load_cached(cache_dir, url)
    if cached is not None:
        log.debug("cache hit for %s", url)
        return cached
    allow = AllowList.parse(config.allow_hosts)
    with guarded_session(allow, config.user_agent) as session:
        source = _download(session, url, config, allow)
    store_cached(cache_dir, source)
    return source
