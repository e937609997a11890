"""What a wiki cites: every source URL of a MediaWiki XML dump, read as a stream.

A wiki's dump (``Special:Export`` or ``pages-articles.xml[.bz2]``) is far larger than memory,
so it is parsed with lxml's ``iterparse``: one ``<page>`` at a time, each cleared once read.
Any export schema version is accepted (the namespace is ignored); ``.bz2`` files are
decompressed on the fly. Of each page the last revision in the file is read, i.e. the current
text of a ``pages-articles`` dump; only articles (namespace 0, or pages of old dumps that do
not say) are read, since talk and project pages cite nothing for the encyclopedia.

Citations are found by the same extractor as ``side verify``
(:func:`side.extract.wikitext.extract_citations`): cite templates, bare and bracketed URLs in
refs, ``archive-url`` and ``{{webarchive}}``, ``{{dead link}}``. Each source is read where
``side verify`` would first read it: the archived copy when editors marked the original dead or
unfit, else the original. URLs are deduplicated by :func:`canonical_url`.
"""

from __future__ import annotations

import bz2
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

from side.errors import InputError

__all__ = ["ARTICLE_NAMESPACE", "DumpPage", "CitedUrl", "canonical_url", "open_dump", "iter_pages",
           "cited_urls", "iter_cited_urls"]

log = logging.getLogger(__name__)

#: The main (article) namespace.
ARTICLE_NAMESPACE = 0

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class DumpPage:
    """One page of a dump: its title, namespace and the text of its last revision."""

    title: str
    namespace: int
    text: str


@dataclass(frozen=True)
class CitedUrl:
    """A source an article cites: the URL to read, and where it was cited."""

    #: Key for deduplication (:func:`canonical_url` of ``url``).
    key: str
    #: The URL as cited (the document's URL in the index).
    url: str
    #: Where the source is read: ``url``, or its archived copy when editors marked ``url`` dead.
    fetch_url: str
    #: The first article citing it, and the citation's own title of the work ("" when none).
    article: str
    title: str = ""


def canonical_url(url: str) -> str | None:
    """``url`` with scheme and host in lower case, without default port or fragment; None
    when it is not an http(s) URL with a host. Path and query are kept as written (they are
    case-sensitive on most servers)."""
    url = url.strip()
    if url.startswith("//"):
        url = "https:" + url
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


def open_dump(path: str | Path) -> IO[bytes]:
    """The dump's bytes, decompressed when the name ends in ``.bz2``."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"dump not found: {path}")
    return bz2.open(path, "rb") if path.suffix == ".bz2" else path.open("rb")


def _local(tag: Any) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _page(element: Any) -> DumpPage:
    title, namespace, text = "", ARTICLE_NAMESPACE, ""
    for child in element:
        name = _local(child.tag)
        if name == "title":
            title = child.text or ""
        elif name == "ns" and (child.text or "").strip().lstrip("-").isdigit():
            namespace = int(child.text.strip())
        elif name == "revision":
            for part in child:
                if _local(part.tag) == "text":
                    text = part.text or ""
    return DumpPage(title, namespace, text)


def iter_pages(path: str | Path) -> Iterator[DumpPage]:
    """Every ``<page>`` of the dump in file order, holding one page in memory at a time.

    Raises :class:`InputError` (one line) when the file is not well-formed XML or is no
    MediaWiki export.
    """
    from lxml import etree

    with open_dump(path) as stream:
        events = etree.iterparse(stream, events=("start", "end"), resolve_entities=False, no_network=True,
                                 load_dtd=False)
        try:
            root_seen = False
            for event, element in events:
                if not root_seen:
                    if _local(element.tag) != "mediawiki":
                        raise InputError(f"{path}: not a MediaWiki XML dump (root element "
                                         f"<{_local(element.tag)}>)")
                    root_seen = True
                if event != "end" or _local(element.tag) != "page":
                    continue
                yield _page(element)
                element.clear(keep_tail=True)
                parent = element.getparent()
                while parent is not None and element.getprevious() is not None:
                    del parent[0]
        except etree.XMLSyntaxError as exc:
            raise InputError(f"{path}: malformed XML: {exc}") from exc
        except (OSError, EOFError) as exc:  # a truncated or corrupt .bz2
            raise InputError(f"{path}: unreadable dump: {exc}") from exc


def cited_urls(page: DumpPage) -> list[CitedUrl]:
    """The distinct sources ``page`` cites, in order of first use."""
    from side.extract.wikitext import extract_citations

    found: dict[str, CitedUrl] = {}
    for citation in extract_citations(page.text):
        if not citation.url:
            continue
        key = canonical_url(citation.url)
        if key is None or key in found:
            continue
        fetch_url = citation.url.strip()
        if citation.archive_url and (citation.archive_first or not citation.live_usable):
            fetch_url = citation.archive_url.strip()
        found[key] = CitedUrl(key, citation.url.strip(), fetch_url, page.title, (citation.title or "").strip())
    return list(found.values())


def iter_cited_urls(path: str | Path) -> Iterator[CitedUrl]:
    """Every source the dump's articles cite, each once (the first citation of it wins)."""
    seen: set[str] = set()
    for page in iter_pages(path):
        if page.namespace != ARTICLE_NAMESPACE or not page.text:
            continue
        for cited in cited_urls(page):
            if cited.key not in seen:
                seen.add(cited.key)
                yield cited
