"""trafilatura's boilerplate discard rules, evaluated in Python: the same elements, in a third of the time.

trafilatura removes navigation, sharing bars, cookie banners and hidden blocks from a page with
the two expressions of its ``OVERALL_DISCARD_XPATH``, twice per page: on the tree its own
extractor reads and on the raw tree it hands to readability. Each expression tests every
element's ``id``, ``class`` and ``style`` with EXSLT regular expressions (``re:test``), which
lxml runs by calling back from libxml2 into Python's ``re`` for each element, several times per
element: a third of trafilatura's time on real article pages.

:func:`install` puts two callables in the places of those expressions that return the same
elements in the same order, reading the attributes once per element and running the same
patterns with ``re`` directly. What XPath means there, kept here:

- ``re:test(@id|@class, p)`` and ``starts-with(@id|@class, p)`` read the first of the two
  attributes in the element's own attribute order (a node-set's string is its first node's);
- an attribute that is absent reads as the empty string;
- ``.//*`` is every element below the one asked about, not comments or processing instructions.

The token lists are read from trafilatura's own expressions, and the callables are installed
only when rebuilding the expression from the template below with those tokens gives back
trafilatura's text exactly; any other trafilatura version keeps its own expressions.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["install", "installed", "library_rules"]

log = logging.getLogger(__name__)

#: trafilatura 2.3's first discard expression, its three token lists left as ``{}``.
_TEMPLATE_0 = """
        .//*[self::div or self::item or self::list or self::p or self::section or self::span][
        @data-lp-replacement-content or
        contains(translate(@role, 'N', 'n'), 'nav') or
        contains(@data-component, 'MostPopularStories') or
        re:test(@id|@class, '{}') or
        re:test(@id, '{}') or
        re:test(@class, '{}')]
        """

#: trafilatura 2.3's second discard expression, its two token lists left as ``{}``.
_TEMPLATE_1 = """
        .//*[@class='comments-title' or
        starts-with(@id|@class, 'reply-') or
        re:test(@id|@style, 'hidden') or
        contains(@style, 'display:none') or contains(@style, 'display: none') or
        re:test(@id, '{}') or
        re:test(@class, '{}') or @aria-hidden='true']
        """

_BLOCK_TAGS = frozenset({"div", "item", "list", "p", "section", "span"})

_lock = threading.Lock()
_originals: list[Any] = []


def _first(attributes: list[tuple[str, str]], one: str, other: str) -> str:
    """The value of whichever of two attributes comes first in ``attributes`` (an element's
    ``items()``, in its own order), or ""."""
    for name, value in attributes:
        if name == one or name == other:
            return value
    return ""


class _Rule:
    """One discard expression as a callable: ``rule(tree)`` gives the elements ``xpath(tree)`` gives."""

    def __init__(self, path: str, patterns: list[str]) -> None:
        self.path = path  # the expression it stands for, as an XPath object carries it
        self.patterns = [re.compile(pattern) for pattern in patterns]
        # an absent attribute reads as "": a pattern that matches "" matches without the attribute
        self.on_empty = [bool(pattern.search("")) for pattern in self.patterns]

    def test(self, index: int, value: str | None) -> bool:
        """``re:test`` on an attribute's value, None when the element has no such attribute."""
        if value is None:
            return self.on_empty[index]
        return self.patterns[index].search(value) is not None

    def __call__(self, tree: Any) -> list[Any]:
        # most elements carry no attributes: whether such an element matches is the same for all
        bare = self.matches(None, [])
        found = []
        for element in tree.iterdescendants():
            tag = element.tag
            if not isinstance(tag, str):  # comments and processing instructions: not in .//*
                continue
            attributes = element.items()
            if self.matches(tag, attributes) if attributes else bare and self.matches(tag, []):
                found.append(element)
        return found

    def matches(self, tag: str | None, attributes: list[tuple[str, str]]) -> bool:
        """Whether an element named ``tag`` (None: any name the expression accepts) with
        ``attributes`` is selected."""
        raise NotImplementedError


class _Blocks(_Rule):
    """The first expression: blocks named like navigation, sharing, banners or cookie notices."""

    def matches(self, tag: str | None, attributes: list[tuple[str, str]]) -> bool:
        if tag is not None and tag not in _BLOCK_TAGS:
            return False
        get = dict(attributes).get
        return (
            get("data-lp-replacement-content") is not None
            or "nav" in (get("role") or "").replace("N", "n")
            or "MostPopularStories" in (get("data-component") or "")
            or self.test(0, _first(attributes, "id", "class"))
            or self.test(1, get("id"))
            or self.test(2, get("class"))
        )


class _Hidden(_Rule):
    """The second expression: hidden elements and comment headings, of any tag."""

    def matches(self, tag: str | None, attributes: list[tuple[str, str]]) -> bool:
        get = dict(attributes).get
        style = get("style") or ""
        return (
            get("class") == "comments-title"
            or _first(attributes, "id", "class").startswith("reply-")
            or "hidden" in _first(attributes, "id", "style")
            or "display:none" in style or "display: none" in style
            or self.test(0, get("id"))
            or self.test(1, get("class"))
            or get("aria-hidden") == "true"
        )


def _tokens(template: str, path: str) -> list[str] | None:
    """The token lists of ``path`` if it is ``template`` with them filled in, else None."""
    pieces = template.split("{}")
    pattern = "(.*?)".join(re.escape(piece) for piece in pieces)
    found = re.fullmatch(pattern, path, flags=re.DOTALL)
    if found is None or any("'" in token for token in found.groups()):
        return None
    tokens = list(found.groups())
    return tokens if template.format(*tokens) == path else None


def _rules(expressions: list[Any]) -> list[Callable[[Any], list[Any]]] | None:
    """The two Python rules for trafilatura's two expressions, or None if they are not the known ones."""
    if len(expressions) != 2:
        return None
    first = _tokens(_TEMPLATE_0, getattr(expressions[0], "path", ""))
    second = _tokens(_TEMPLATE_1, getattr(expressions[1], "path", ""))
    if first is None or second is None:
        return None
    # re:test(@id|@class, 'cookie') is the first list: a plain pattern like the others
    return [_Blocks(expressions[0].path, first), _Hidden(expressions[1].path, second)]


def install() -> bool:
    """Put the Python rules in the places of trafilatura's expressions (once; every caller of
    trafilatura in this process gets them). Says whether they are in place."""
    from trafilatura.xpaths import OVERALL_DISCARD_XPATH

    with _lock:
        if _originals:
            return True
        rules = _rules(list(OVERALL_DISCARD_XPATH))
        if rules is None:
            log.info("this trafilatura's discard expressions are not the known ones; they stay as they are")
            return False
        _originals.extend(OVERALL_DISCARD_XPATH)
        OVERALL_DISCARD_XPATH[:] = rules  # type: ignore[assignment]  # the list every trafilatura module imported
        return True


def installed() -> bool:
    """Whether the Python rules are in trafilatura's place."""
    return bool(_originals)


@contextmanager
def library_rules() -> Iterator[None]:
    """trafilatura's own expressions for the duration (to time or compare against them);
    the Python rules, if they were installed, come back afterwards. Not for concurrent use."""
    from trafilatura.xpaths import OVERALL_DISCARD_XPATH

    with _lock:
        saved = list(OVERALL_DISCARD_XPATH)
        if _originals:
            OVERALL_DISCARD_XPATH[:] = _originals
    try:
        yield
    finally:
        with _lock:
            OVERALL_DISCARD_XPATH[:] = saved
