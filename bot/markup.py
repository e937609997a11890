"""Wikitext that no editor or source can turn into markup.

Everything the bot posts quotes text that someone else controls: the claim and the cited URL come
from an article anyone can edit, titles and evidence sentences from web pages, reasons and
suggestions from Side's corpus. Any of it could carry ``{{templates}}``, ``subst:``, ``~~~~``,
``<!-- comments``, ``__NOTOC__``, ``<ref>`` tags, headings on a new line or a ``[[Category:…]]``.
So the report is built from three safe pieces only:

- :func:`nowiki` for any text (escaped, then wrapped in ``<nowiki>``, one line, its middle elided
  past a limit);
- :func:`external_link` for URLs: http(s) only, at most :data:`MAX_URL_CHARS` long, no whitespace or
  control characters, and every character that means something in wikitext percent-encoded;
  anything else is quoted as text, elided;
- :func:`page_link` for wiki pages: a leading colon (a link, never a category or a file), and a
  title with none of the characters MediaWiki forbids in titles.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import urlsplit

__all__ = ["MAX_QUOTE_CHARS", "MAX_URL_CHARS", "elide", "external_link", "nowiki", "page_link", "safe_url"]

#: Longest quote taken from a claim, passage or evidence sentence.
MAX_QUOTE_CHARS = 400
#: Longest link target posted (after percent-encoding); a longer URL is quoted as text, elided.
#: Real cited URLs stay far below it; an editor's 1 MB URL must not make the report too big to save.
MAX_URL_CHARS = 2000
#: Longest URL quoted as text when it cannot be a link.
MAX_QUOTED_URL_CHARS = 300
#: Schemes a posted link may have.
LINK_SCHEMES = frozenset({"http", "https"})
#: Characters that mean something in wikitext (templates, links, tables, quotes, signatures, tags,
#: entities), percent-encoded inside a URL. ``&`` too, so no entity can spell one of the others.
URL_ESCAPES = frozenset("[]{}<>|'\"~\\`^&")
#: Characters MediaWiki refuses in page titles; a title with one is quoted, not linked.
TITLE_FORBIDDEN = frozenset("[]{}<>|#")
#: MediaWiki's longest title (255 bytes; counted in characters here, the stricter reading for ASCII).
MAX_TITLE_CHARS = 255


def _is_control(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch) in {"Cc", "Cf", "Zl", "Zp", "Zs"}


def elide(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters by replacing its middle with "…": the start and the
    end of a URL or a sentence are what tell a reader which one it is."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return "…"[:limit]
    head = limit // 2
    tail = limit - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


def nowiki(text: object, limit: int = MAX_QUOTE_CHARS) -> str:
    """Quote arbitrary text safely inside wikitext, on one line, at most ``limit`` characters
    (the middle elided)."""
    text = str(text)
    if len(text) > 4 * limit:  # cut first, so a megabyte of text is not split into words
        text = text[: 2 * limit] + " " + text[-2 * limit:]
    text = " ".join(text.split())
    text = elide("".join(" " if _is_control(ch) else ch for ch in text), limit)
    return "<nowiki>" + text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") + "</nowiki>"


def safe_url(url: object) -> str | None:
    """The URL as a link target, or None when it must not become a link.

    Only http(s) URLs with a host, no whitespace and no control characters qualify; characters of
    :data:`URL_ESCAPES` are percent-encoded (equivalent for any server), and ``__`` is broken up so
    no behaviour switch such as ``__NOTOC__`` can be spelled inside a link. A target longer than
    :data:`MAX_URL_CHARS` is no link either.
    """
    if not isinstance(url, str) or not url or len(url) > MAX_URL_CHARS or any(_is_control(ch) for ch in url):
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
    return encoded if len(encoded) <= MAX_URL_CHARS else None


def external_link(url: object, label: str = "") -> str:
    """``[url label]`` for a URL that :func:`safe_url` accepts; the URL quoted as text otherwise
    (elided to :data:`MAX_QUOTED_URL_CHARS`, the label to 120)."""
    target = safe_url(url)
    if target is None:
        if not url:
            return nowiki(label or "(no URL)", 120)
        quoted = elide(str(url), MAX_QUOTED_URL_CHARS)
        return nowiki(f"{elide(label, 120)} ({quoted})" if label else quoted, MAX_QUOTED_URL_CHARS + 124)
    return f"[{target} {nowiki(label, 120)}]" if label and not label.isspace() else f"[{target}]"


def page_link(title: str, label: str = "") -> str:
    """``[[:title|label]]``: always a link (never a category or file), or the title quoted as text."""
    if len(title) > MAX_TITLE_CHARS or any(ch in TITLE_FORBIDDEN or (ch != " " and _is_control(ch)) for ch in title):
        return nowiki(title, MAX_TITLE_CHARS)
    clean = " ".join(title.replace("_", " ").split())
    if not clean:
        return nowiki("(no title)")
    target = clean.replace("&", "&amp;").replace("~", "&#126;").replace("'", "&#39;")
    return f"[[:{target}|{nowiki(label, 255)}]]" if label else f"[[:{target}]]"
