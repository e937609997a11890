"""trafilatura's comparison with readability, skipped on pages where readability cannot win.

After its own extractor, trafilatura (outside its fast mode) runs readability on the page and
takes readability's text instead of its own only when (``_prefer_readability``, outside recall
mode) its own text is empty, or readability's is more than twice as long, or its own has no
paragraph text or more tables than paragraphs. Readability was a ninth of a real page's
extraction, and on most article pages it cannot win:

- readability's text is made of the text of the tree it is given: it drops scripts and styles,
  moves text into new paragraphs, and writes the word ``VIDEO`` (5 characters) into an
  ``iframe`` it keeps; trafilatura trims the result, which only shortens it;
- its output is written as XML and read back as HTML. That keeps the text as it was, except in
  the elements the HTML parser reads as raw text (libxml2 2.14: ``xmp``, ``noembed``,
  ``noframes``, ``plaintext``; ``iframe``, ``script`` and ``style`` are handled above), where
  ``&amp;`` comes back as five characters and, after ``plaintext``, the markup too. Which
  elements those are is asked of the libxml2 in use, once (:func:`regrown_tags`), and a page
  holding one always goes through readability;
- so on any other page readability's text is at most that tree's text without scripts and
  styles plus 5 per ``iframe``, and where that bound is at most twice trafilatura's own text
  (non-empty, with paragraph text, no more tables than paragraphs), trafilatura keeps its own
  text whatever readability returns.

:func:`install` wraps trafilatura's ``compare_extraction`` and ``try_readability``: on such a
page readability is not run and answers with an empty tree, which trafilatura reads as "keep
your own" (``len_algo == 0``); everything after it (the jusText rescue of a short or unclean
text) runs as before, so every page's text is the same.

In precision mode (Side's), ``compare_extraction`` first prunes the raw tree with the
boilerplate rules, for readability alone (nothing reads that tree afterwards): a tenth of a
real page's preparation. Pruning removes elements and keeps their tails, so it can only lower
the bound (less text outside scripts and styles, fewer iframes, no new raw-text element). Where
the bound of the raw tree as it comes is already within the limit, readability cannot win after
the pruning either, and the pruning is skipped with it (the wrapper of ``external``'s
``prune_unwanted_nodes`` leaves that one tree as it is); elsewhere the bound is taken again
after the pruning, as before. The wrappers go in only where
trafilatura's code is the code this reasoning was made for (trafilatura 2.3.1's, checked by a
digest of its source); with any other version the comparison runs as trafilatura has it.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from side.sources.patches import Once, source_digest, swapped

__all__ = ["install", "installed", "library_comparison", "readability_bound", "regrown_tags"]

log = logging.getLogger(__name__)

#: SHA-256 of the source of the trafilatura 2.3.1 modules the bound above is argued from: the
#: comparison and readability, and the pruning of the raw tree (``prune_unwanted_nodes``,
#: ``delete_element``) that can only lower it.
KNOWN_SOURCES = {
    "trafilatura.external": "5f57921dc1724ab44c61523472801eef03bceb76ad3dc09e207eea7ed31ecfa8",
    "trafilatura.readability_lxml": "d308e782a00344fd8548cfcafd3a4d5d5b2a77846d78651d5c7dde4785d7cba1",
    "trafilatura.htmlprocessing": "321b9f064ef0f27e2a1d6601fe7f150f54a69ad059f016def843d7886e19f100",
    "trafilatura.xml": "5169b63f284e9f10095c717c1d008b1508fcf7a2a55fd876b2c4b2067a799098",
}
#: What readability adds to a video ``iframe`` it keeps.
IFRAME_TEXT = len("VIDEO")

#: Elements whose text readability drops or replaces before its output is written.
HANDLED_TAGS = frozenset({"script", "style", "fencedframe", "iframe"})
#: What :func:`readability_bound` answers for a page it cannot bound.
UNBOUNDED = sys.maxsize

#: Per thread, while ``compare_extraction`` runs: the length readability's text must pass
#: (``limit``) and the raw tree it will not read (``unread``).
_local = threading.local()
_originals: dict[str, Any] = {}
_regrown: frozenset[str] = frozenset()


def regrown_tags() -> frozenset[str]:
    """The HTML elements whose text grows when written as XML and read back as HTML by the
    libxml2 in use (its raw-text elements), less those readability drops or replaces: every
    element name lxml knows, each tried once with ``&amp;`` and ``&lt;`` in its text."""
    from lxml.etree import tostring
    from lxml.html import defs, fromstring
    from trafilatura.utils import fromstring_bytes

    names = set(defs.tags) | set(getattr(defs, "html5_tags", ())) | {"xmp", "noembed", "noframes", "plaintext"}
    grown = set()
    for tag in sorted(names - HANDLED_TAGS):
        tree = fromstring(f"<html><body><div><{tag}>a &amp; b &lt; c</{tag}></div><p>after</p></body></html>")
        again = fromstring_bytes(tostring(tree, method="xml", encoding="unicode"))
        if again is None or len(tostring(again, method="text", encoding="unicode")) > len(
                tostring(tree, method="text", encoding="unicode")):
            grown.add(tag)
    return frozenset(grown)


def readability_bound(tree: Any) -> int:
    """At most how many characters readability's text can have when given ``tree``
    (:data:`UNBOUNDED` when it holds an element of :func:`regrown_tags`)."""
    from lxml.etree import tostring

    if _regrown and next(tree.iter(*_regrown), None) is not None:
        return UNBOUNDED
    text = len(tostring(tree, method="text", encoding="unicode"))
    code = sum(len(element.text or "") for element in tree.iter("script", "style"))
    return text - code + IFRAME_TEXT * sum(1 for _ in tree.iter("iframe"))


def _own_text_holds(body: Any, text: str, options: Any) -> bool:
    """Whether trafilatura keeps ``text`` over any readability text at most twice its length:
    not in recall mode, and ``text`` non-empty, with paragraph text, no more tables than paragraphs."""
    return (bool(text) and getattr(options, "focus", "recall") != "recall" and bool(body.xpath(".//p//text()"))
            and len(body.findall(".//table")) <= len(body.findall(".//p")))


def _compare_extraction(cleaned_tree: Any, raw_tree: Any, body: Any, text: str, options: Any) -> Any:
    """trafilatura's ``compare_extraction``, telling :func:`_try_readability` how long a text
    readability would need to win, and :func:`_prune_unwanted_nodes` which raw tree readability
    will not read (one whose bound is within that length before any pruning)."""
    try:
        limit = 2 * len(text) if _own_text_holds(body, text, options) else None
        _local.limit = limit
        _local.unread = raw_tree if limit is not None and readability_bound(raw_tree) <= limit else None
        return _originals["compare_extraction"](cleaned_tree, raw_tree, body, text, options)
    finally:
        _local.limit = _local.unread = None


def _prune_unwanted_nodes(tree: Any, nodelist: Any, with_backup: bool = False) -> Any:
    """trafilatura's ``prune_unwanted_nodes`` in ``external`` (the raw tree's pruning for
    readability), left out on the raw tree readability will not read."""
    if tree is not None and tree is getattr(_local, "unread", None):
        return tree
    return _originals["prune_unwanted_nodes"](tree, nodelist, with_backup)


def _try_readability(tree: Any) -> Any:
    """trafilatura's ``try_readability``, or an empty tree where readability cannot win."""
    from lxml.html import HtmlElement

    if tree is not None and tree is getattr(_local, "unread", None):
        return HtmlElement()
    limit = getattr(_local, "limit", None)
    if limit is not None and readability_bound(tree) <= limit:
        return HtmlElement()
    return _originals["try_readability"](tree)


def install() -> bool:
    """Put the wrappers in trafilatura's places (once per process); says whether they are in."""
    _once()
    return installed()


def _modules() -> tuple[Any, Any]:
    """trafilatura's ``core`` (which calls ``compare_extraction``) and ``external`` (where it and
    ``try_readability`` live), as places to put the wrappers in."""
    import trafilatura.core as core
    import trafilatura.external as external

    return core, external


def _install() -> None:
    import importlib

    global _regrown
    core, external = _modules()
    try:
        digests = {name: source_digest(importlib.import_module(name)) for name in KNOWN_SOURCES}
    except (OSError, TypeError) as exc:  # no source to read: a frozen install
        log.info("trafilatura's source cannot be read (%s); its comparison with readability runs as it is", exc)
        return
    if digests != KNOWN_SOURCES or core.compare_extraction is not external.compare_extraction:
        log.info("trafilatura's comparison with readability is not the known code; it runs as it is")
        return
    _regrown = regrown_tags()
    _originals["compare_extraction"] = external.compare_extraction
    _originals["try_readability"] = external.try_readability
    _originals["prune_unwanted_nodes"] = external.prune_unwanted_nodes
    core.compare_extraction = _compare_extraction
    external.try_readability = _try_readability
    external.prune_unwanted_nodes = _prune_unwanted_nodes


_once = Once(_install)


def installed() -> bool:
    """Whether the wrappers are in trafilatura's places."""
    return bool(_originals)


@contextmanager
def library_comparison() -> Iterator[None]:
    """trafilatura's own comparison for the duration (to time or compare against it); the
    wrappers come back afterwards (installed first, so that an extraction inside the block does
    not install them). Not for concurrent use."""
    install()
    core, external = _modules()
    places = [(core, "compare_extraction", _originals["compare_extraction"]),
              (external, "try_readability", _originals["try_readability"]),
              (external, "prune_unwanted_nodes", _originals["prune_unwanted_nodes"])] if _originals else []
    with swapped(_once, places):
        yield
