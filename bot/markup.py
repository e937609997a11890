"""Wikitext that no editor or source can turn into markup.

Everything the bot posts quotes text that someone else controls: the claim and the cited URL come
from an article anyone can edit, titles and evidence sentences from web pages, reasons and
suggestions from Side's corpus. Any of it could carry ``{{templates}}``, ``subst:``, ``~~~~``,
``<!-- comments``, ``__NOTOC__``, ``<ref>`` tags, headings on a new line or a ``[[Category:…]]``.
So the report is built from three safe pieces only:

- :func:`nowiki` for any text (escaped, then wrapped in ``<nowiki>``, one line);
- :func:`external_link` for URLs: http(s) only, no whitespace or control characters, and every
  character that means something in wikitext percent-encoded; anything else is quoted as text;
- :func:`page_link` for wiki pages: a leading colon (a link, never a category or a file), and a
  title with none of the characters MediaWiki forbids in titles.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import urlsplit

__all__ = ["MAX_QUOTE_CHARS", "external_link", "nowiki", "page_link", "safe_url"]

#: Longest quote taken from a claim, passage or evidence sentence.
MAX_QUOTE_CHARS = 400
#: Schemes a posted link may have.
LINK_SCHEMES = frozenset({"http", "https"})
#: Characters that mean something in wikitext (templates, links, tables, quotes, signatures, tags,
#: entities), percent-encoded inside a URL. ``&`` too, so no entity can spell one of the others.
URL_ESCAPES = frozenset("[]{}<>|'\"~\\`^&")
#: Characters MediaWiki refuses in page titles; a title with one is quoted, not linked.
TITLE_FORBIDDEN = frozenset("[]{}<>|#")


def _is_control(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch) in {"Cc", "Cf", "Zl", "Zp", "Zs"}


def nowiki(text: object, limit: int = MAX_QUOTE_CHARS) -> str:
    """Quote arbitrary text safely inside wikitext, on one line, at most ``limit`` characters."""
    text = " ".join(str(text).split())
    text = "".join(" " if _is_control(ch) else ch for ch in text)
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return "<nowiki>" + text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") + "</nowiki>"


def safe_url(url: object) -> str | None:
    """The URL as a link target, or None when it must not become a link.

    Only http(s) URLs with a host, no whitespace and no control characters qualify; characters of
    :data:`URL_ESCAPES` are percent-encoded (equivalent for any server), and ``__`` is broken up so
    no behaviour switch such as ``__NOTOC__`` can be spelled inside a link.
    """
    if not isinstance(url, str) or not url or any(_is_control(ch) for ch in url):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in LINK_SCHEMES or not parts.hostname:
        return None
    encoded = "".join(f"%{ord(ch):02X}" if ch in URL_ESCAPES else ch for ch in url)
    while "__" in encoded:
        encoded = encoded.replace("__", "_%5F")
    return encoded


def external_link(url: object, label: str = "") -> str:
    """``[url label]`` for a URL that :func:`safe_url` accepts; the URL quoted as text otherwise."""
    target = safe_url(url)
    if target is None:
        return nowiki(f"{label} ({url})" if label else url, 300) if url else nowiki(label or "(no URL)", 300)
    label = " ".join((label or "").split())
    return f"[{target} {nowiki(label, 120)}]" if label else f"[{target}]"


def page_link(title: str, label: str = "") -> str:
    """``[[:title|label]]``: always a link (never a category or file), or the title quoted as text."""
    if any(ch in TITLE_FORBIDDEN or (ch != " " and _is_control(ch)) for ch in title):
        return nowiki(title, 255)
    clean = " ".join(title.replace("_", " ").split())
    if not clean:
        return nowiki("(no title)")
    target = clean.replace("&", "&amp;").replace("~", "&#126;").replace("'", "&#39;")
    return f"[[:{target}|{nowiki(label, 255)}]]" if label else f"[[:{target}]]"
