"""Ref names: what to paste to cite a reference an article already has.

When Side finds that another reference of the same article supports a weak claim, the fix is a
reuse, ``<ref name="X" />``, not a new citation. A reference that has no name yet must get one
first; Side never edits, so it proposes a name (the first author's surname or the website, and
the year: ``Smith-2001``, ``bbc.co.uk-2020``), unique in the article, and gives the original ref
with that name added, ready to paste over it.

MediaWiki's rules for a name: not only digits, no ``"`` inside double quotes, no ``<`` ``>``
and no line break; names are case-sensitive. Proposed names keep letters, digits, ``.``, ``-``
and ``_`` only, so they never need escaping.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from side.extract.claims import Citation

__all__ = ["MAX_NAME_CHARS", "can_name", "propose_ref_name", "ref_tag", "reuse_tag", "sanitize_ref_name"]

#: Longest proposed name (before a uniqueness suffix): long names make wikitext hard to read.
MAX_NAME_CHARS = 40

_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")
_UNSAFE = re.compile(r"[^\w.\-]+", re.UNICODE)


def sanitize_ref_name(text: str) -> str:
    """``text`` as a safe ref name: runs of other characters become one ``-``; "" if nothing is left."""
    name = _UNSAFE.sub("-", text.strip()).strip("-._")
    name = re.sub(r"-{2,}", "-", name)[:MAX_NAME_CHARS].rstrip("-._")
    if name.isdigit():  # MediaWiki refuses a purely numeric name
        name = f"ref-{name}"
    return name


def _surname(author: str) -> str:
    """"Smith, John" and "John Smith" give "Smith"; a list of authors gives the first one's."""
    first = re.split(r";| and |&", author)[0].strip()
    if "," in first:
        return first.split(",")[0].strip()
    words = first.split()
    return words[-1] if words else ""


def _base(citation: Citation) -> str:
    """Who or what the source is, as short as it can be said: author, website, host, title."""
    if citation.author and _surname(citation.author):
        return _surname(citation.author)
    if citation.website:
        return citation.website
    host = urlsplit(citation.url or "").hostname or ""
    if host:
        return host.removeprefix("www.")
    return " ".join((citation.title or "").split()[:3]) or "source"


def propose_ref_name(citation: Citation, taken: Iterable[str]) -> str:
    """A name for ``citation``'s ref from its author or website and year, unused in the article.

    ``taken``: every ref name of the article (and names proposed already); a clash gets ``-2``,
    ``-3``... appended.
    """
    used = set(taken)
    year = _YEAR.search(citation.date or "")
    base = sanitize_ref_name(_base(citation)) or "source"
    name = f"{base}-{year.group(1)}" if year else base
    candidate, n = name, 2
    while candidate in used:
        candidate, n = f"{name}-{n}", n + 1
    return candidate


def _quoted(name: str) -> str:
    return f"'{name}'" if '"' in name else f'"{name}"'


def reuse_tag(name: str) -> str:
    """The reuse of a named ref: ``<ref name="X" />``."""
    return f"<ref name={_quoted(name)} />"


def can_name(citation: Citation) -> bool:
    """Whether Side can give the text of ``citation``'s ref with a name added: it was written
    as a ``<ref>`` with content (not a short citation, not a dangling name)."""
    return citation.kind != "short" and bool(citation.raw.strip())


def ref_tag(citation: Citation, name: str) -> str:
    """The original ref of ``citation`` with ``name`` given: ``<ref name="X">…</ref>``."""
    return f"<ref name={_quoted(name)}>{citation.raw}</ref>"
