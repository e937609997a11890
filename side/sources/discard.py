"""trafilatura's boilerplate rules, evaluated in Python: the same elements, in less than half the time.

trafilatura removes navigation, sharing bars, cookie banners, hidden blocks, comment sections
and appended articles from a page with XPath expressions: the two of its
``OVERALL_DISCARD_XPATH``, twice per page (on the tree its own extractor reads and on the raw
tree it hands to readability), and ``RAW_TREE_PRUNE_XPATH``, ``REMOVE_COMMENTS_AND_LISTS_XPATH``
and ``REMOVE_COMMENTS_XPATH`` once. They test elements' ``id``, ``class`` and ``style`` with
EXSLT regular expressions (``re:test``), which lxml runs by calling back from libxml2 into
Python's ``re`` for each element and each test: over a third of trafilatura's time on real
article pages.

:func:`install` puts callables in the places of those expressions that return the same elements
in the same order, reading the attributes once per element and running the same patterns with
``re`` directly. What XPath means there, kept here:

- ``re:test(@id|@class, p)`` and ``starts-with(@id|@class, p)`` read the first of the two
  attributes in the element's own attribute order (a node-set's string is its first node's);
- an attribute that is absent reads as the empty string;
- ``.//*`` is every element below the one asked about, not comments or processing instructions;
  ``.//h1`` the same for ``h1`` elements.

The patterns are read from trafilatura's own expressions, and each callable is installed only
when rebuilding its expression from the template below with those patterns gives back
trafilatura's text exactly; an expression of any other trafilatura version stays as it is.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from side.sources.patches import Once

__all__ = ["install", "installed", "library_rules"]

log = logging.getLogger(__name__)

#: trafilatura 2.3's ``OVERALL_DISCARD_XPATH[0]``, its three patterns left as ``{}`` (as in the others).
_TEMPLATE_0 = """
        .//*[self::div or self::item or self::list or self::p or self::section or self::span][
        @data-lp-replacement-content or
        contains(translate(@role, 'N', 'n'), 'nav') or
        contains(@data-component, 'MostPopularStories') or
        re:test(@id|@class, '{}') or
        re:test(@id, '{}') or
        re:test(@class, '{}')]
        """

#: trafilatura 2.3's ``OVERALL_DISCARD_XPATH[1]``.
_TEMPLATE_1 = """
        .//*[@class='comments-title' or
        starts-with(@id|@class, 'reply-') or
        re:test(@id|@style, 'hidden') or
        contains(@style, 'display:none') or contains(@style, 'display: none') or
        re:test(@id, '{}') or
        re:test(@class, '{}') or @aria-hidden='true']
        """

#: trafilatura 2.3's ``RAW_TREE_PRUNE_XPATH[0]``: infinite-scroll containers of appended articles.
_TEMPLATE_SCROLL = """
        .//*[self::div or self::section or self::aside][
        re:test(@id, '{}') or
        re:test(@class, '{}')][
        not(.//h1) or re:test(@id, '{}') or re:test(@class, '{}')]
        """

#: trafilatura 2.3's ``REMOVE_COMMENTS_AND_LISTS_XPATH[0]``: comment sections, comment lists.
_TEMPLATE_COMMENT_LISTS = """
        .//*[self::div or self::list or self::section or self::details or self::ol or self::ul][
        re:test(@id, '{}') or
        re:test(@class, '{}')][
        not(self::ol or self::ul) or re:test(@id, '{}') or re:test(@class, '{}')]
        """

#: trafilatura 2.3's ``REMOVE_COMMENTS_XPATH[0]``: comment sections.
_TEMPLATE_COMMENTS = """
        .//*[self::div or self::list or self::section or self::details][
        re:test(@id, '{}') or
        re:test(@class, '{}')]
        """

#: Distinct attribute lists whose answer a rule keeps (then it starts over) ...
KNOWN_ATTRIBUTES = 50_000
#: ... each of at most this many characters of values (a few MB per rule at most).
MAX_KEPT_CHARS = 200

#: (list name, place) -> trafilatura's own expression there, once installed.
_originals: dict[tuple[str, int], Any] = {}


def _first(attributes: list[tuple[str, str]], one: str, other: str) -> str:
    """The value of whichever of two attributes comes first in ``attributes`` (an element's
    ``items()``, in its own order), or ""."""
    for name, value in attributes:
        if name == one or name == other:
            return value
    return ""


class _Rule:
    """One expression as a callable: ``rule(tree)`` gives the elements ``xpath(tree)`` gives."""

    #: The only tags the expression can select, walked by lxml itself; () for any tag.
    tags: tuple[str, ...] = ()

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
        from lxml.etree import Element

        # .//*: elements below the tree (Element as the tag: not comments or processing instructions)
        elements = tree.iterdescendants(*self.tags) if self.tags else tree.iterdescendants(Element)
        matches = self.matches
        return [element for element in elements if matches(element)]

    def matches(self, element: Any) -> bool:
        raise NotImplementedError


class _ByAttributes(_Rule):
    """An expression on attributes only: each element's attributes read once, and the answer
    for an element without any worked out once."""

    #: The attributes ``selects`` reads; the others do not change its answer.
    reads: frozenset[str] = frozenset()

    def __init__(self, path: str, patterns: list[str]) -> None:
        super().__init__(path, patterns)
        self.bare = self.selects([])
        #: Answers by the attributes read, in the element's order (which of id and class comes
        #: first matters): a page repeats the same few classes on many elements.
        self.known: dict[tuple[tuple[str, str], ...], bool] = {}

    def matches(self, element: Any) -> bool:
        items = element.items()
        if not items:  # most elements of a page: no list to filter
            return self.bare
        reads = self.reads
        key = tuple([item for item in items if item[0] in reads])
        if not key:
            return self.bare
        answer = self.known.get(key)
        if answer is None:
            answer = self.selects(list(key))
            if sum(len(value) for _, value in key) <= MAX_KEPT_CHARS:  # not a page's long inline style
                if len(self.known) >= KNOWN_ATTRIBUTES:  # kept bounded over a reader's many pages
                    self.known.clear()
                self.known[key] = answer
        return answer

    def selects(self, attributes: list[tuple[str, str]]) -> bool:
        raise NotImplementedError


class _Blocks(_ByAttributes):
    """``OVERALL_DISCARD_XPATH[0]``: blocks named like navigation, sharing, banners or cookie notices."""

    tags = ("div", "item", "list", "p", "section", "span")
    reads = frozenset({"data-lp-replacement-content", "role", "data-component", "id", "class"})

    def selects(self, attributes: list[tuple[str, str]]) -> bool:
        get = dict(attributes).get
        return (
            get("data-lp-replacement-content") is not None
            or "nav" in (get("role") or "").replace("N", "n")
            or "MostPopularStories" in (get("data-component") or "")
            or self.test(0, _first(attributes, "id", "class"))
            or self.test(1, get("id"))
            or self.test(2, get("class"))
        )


class _Hidden(_ByAttributes):
    """``OVERALL_DISCARD_XPATH[1]``: hidden elements and comment headings, of any tag."""

    reads = frozenset({"class", "id", "style", "aria-hidden"})

    def selects(self, attributes: list[tuple[str, str]]) -> bool:
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


class _Comments(_Rule):
    """``REMOVE_COMMENTS_XPATH[0]``: comment sections, by id or class."""

    tags = ("div", "list", "section", "details")

    def matches(self, element: Any) -> bool:
        return self.test(0, element.get("id")) or self.test(1, element.get("class"))


class _CommentLists(_Rule):
    """``REMOVE_COMMENTS_AND_LISTS_XPATH[0]``: comment sections, and lists of comments when the
    list's own id or class says so."""

    tags = ("div", "list", "section", "details", "ol", "ul")

    def matches(self, element: Any) -> bool:
        ident, name = element.get("id"), element.get("class")
        return (self.test(0, ident) or self.test(1, name)) and (
            element.tag not in ("ol", "ul") or self.test(2, ident) or self.test(3, name))


class _Scroll(_Rule):
    """``RAW_TREE_PRUNE_XPATH[0]``: infinite-scroll containers, unless they hold the page's
    ``h1`` (the article itself) and are not named as appended articles."""

    tags = ("div", "section", "aside")

    def matches(self, element: Any) -> bool:
        ident, name = element.get("id"), element.get("class")
        return (self.test(0, ident) or self.test(1, name)) and (
            element.find(".//h1") is None
            or self.test(2, ident) or self.test(3, name))


#: Where each rule goes: the list of ``trafilatura.xpaths`` and the place in it, the template
#: the expression there must fill exactly, and the rule.
_PLACES: tuple[tuple[str, int, str, type[_Rule]], ...] = (
    ("OVERALL_DISCARD_XPATH", 0, _TEMPLATE_0, _Blocks),
    ("OVERALL_DISCARD_XPATH", 1, _TEMPLATE_1, _Hidden),
    ("RAW_TREE_PRUNE_XPATH", 0, _TEMPLATE_SCROLL, _Scroll),
    ("REMOVE_COMMENTS_AND_LISTS_XPATH", 0, _TEMPLATE_COMMENT_LISTS, _CommentLists),
    ("REMOVE_COMMENTS_XPATH", 0, _TEMPLATE_COMMENTS, _Comments),
)


def _tokens(template: str, path: str) -> list[str] | None:
    """The patterns of ``path`` if it is ``template`` with them filled in, else None."""
    pieces = template.split("{}")
    pattern = "(.*?)".join(re.escape(piece) for piece in pieces)
    found = re.fullmatch(pattern, path, flags=re.DOTALL)
    # a pattern holds no quote: each stays inside its own quoted place in the expression
    if found is None or any("'" in token for token in found.groups()):
        return None
    return list(found.groups())


def _rule(template: str, rule: type[_Rule], expression: Any) -> _Rule | None:
    """The Python rule for ``expression`` if it is ``template`` filled in, else None."""
    path = getattr(expression, "path", "")
    patterns = _tokens(template, path)
    return None if patterns is None else rule(path, patterns)


def install() -> bool:
    """Put the Python rules in the places of trafilatura's expressions (once; every caller of
    trafilatura in this process gets them). Says whether all of them are in place; an
    expression that is not the known one keeps its place."""
    _once()
    return installed()


def _install() -> None:
    from trafilatura import xpaths

    for name, index, template, kind in _PLACES:
        expressions = getattr(xpaths, name, [])
        expression = expressions[index] if isinstance(expressions, list) and len(expressions) > index else None
        rule = _rule(template, kind, expression)
        if rule is None:
            log.info("trafilatura's %s[%d] is not the known expression; it stays as it is", name, index)
            continue
        _originals[(name, index)] = expression
        expressions[index] = rule  # the list object every trafilatura module imported


_once = Once(_install)


def installed() -> bool:
    """Whether every Python rule is in trafilatura's place."""
    return len(_originals) == len(_PLACES)


@contextmanager
def library_rules() -> Iterator[None]:
    """trafilatura's own expressions for the duration (to time or compare against them);
    the Python rules come back afterwards (installed first, so that an extraction inside the
    block does not install them). Not for concurrent use."""
    from trafilatura import xpaths

    install()
    with _once.lock:
        rules = {}
        for (name, index), expression in _originals.items():
            rules[(name, index)] = getattr(xpaths, name)[index]
            getattr(xpaths, name)[index] = expression
    try:
        yield
    finally:
        with _once.lock:
            for (name, index), rule in rules.items():
                getattr(xpaths, name)[index] = rule
