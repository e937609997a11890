"""Parse wikitext with mwparserfromhell in time linear in its length, whatever the input.

mwparserfromhell is a backtracking parser: an opener (``<ref>``, ``{{``, ``[[``, ``<!--``,
``{|``, ``[http…``) is tried as a construct up to its closer, and when none comes the attempt
fails at the end of the page and the opener is read again as text. One such opener costs a scan
of the rest of the page (more when they nest), so a page with many costs the square of its
length: 256 KB of unclosed ``<ref>`` took 56 s (upstream: earwig/mwparserfromhell#364, open).
Three things keep the cost linear here:

* **Doomed openers are read as text at once.** Before parsing, the page is indexed (a few regex
  passes) so that, for each opener the tokenizer meets, it can tell in O(log n) whether the
  closer it needs exists at all further on (``-->`` for a comment, ``}}`` for a template,
  ``</ref`` or ``/>`` for a ``<ref>``...). An opener without one cannot succeed, so it is emitted
  as the text it would have become after the failed attempt: the same tree, without the scan.
  This uses mwparserfromhell's pure-Python tokenizer, subclassed where it tries a construct
  (:class:`_Tokenizer`); about five times slower than its C tokenizer, still ~0.3 s for United
  Kingdom (328 KB). The one thing skipping an attempt cannot reproduce is what a failed attempt
  leaves in the tokenizer's route cache: inside a heading or around bold/italic quotes that can
  change whether later quotes read as italics. The 72 fixture articles parse to exactly the tree
  of the C tokenizer (tests/test_parse_linear.py).
* **A work budget bounds each reading.** The tokenizer counts its reads. Past
  :data:`WORK_PER_SEGMENT` per text segment (the fixture articles need 1.9-4.1), or past
  :data:`COPIES_PER_SEGMENT` tokens copied between nested constructs, the page's
  malformed constructs are of a kind the index cannot rule out (``{{a|<ref>x}}</ref>`` repeated:
  every closer exists, in the wrong place), and it is read again the way MediaWiki's
  preprocessor reads it (:attr:`ParseLevel.LENIENT`): openers a one-stack matcher leaves unmatched
  are text (a closer ends the nearest open construct of its kind; a ``<ref>`` body is a scope of
  its own, as MediaWiki strips extension tags first), and so are bold and italic quotes and tags
  whose attribute quote never closes. On the shapes that need it this gives the exact reading's
  claims (tests/test_parse_linear.py). Past :data:`FALLBACK_WORK_PER_SEGMENT` there, only
  comments and ``<ref>`` tags paired as MediaWiki pairs them are markup
  (:attr:`ParseLevel.REFS_ONLY`), and past that again the page is one text node
  (:attr:`ParseLevel.TEXT`, logged as an error; no shape found by fuzzing gets there).
* **The exact reading is skipped when it would only burn its budget**: when the matcher finds
  more than :data:`MAX_FAR_FAILURES` unmatched openers the index does not doom.

Levels below the exact one are logged as warnings and reported in :class:`ParseReport`.
"""

from __future__ import annotations

import bisect
import logging
import re
from dataclasses import dataclass
from enum import StrEnum
from itertools import accumulate
from typing import Any

from mwparserfromhell.definitions import is_parsable, is_single, is_single_only
from mwparserfromhell.nodes import Text
from mwparserfromhell.parser.builder import Builder
from mwparserfromhell.parser.tokenizer import END, START, Tokenizer
from mwparserfromhell.smart_list import SmartList
from mwparserfromhell.wikicode import Wikicode

__all__ = [
    "COPIES_PER_SEGMENT", "FALLBACK_WORK_PER_SEGMENT", "MAX_FAR_FAILURES", "MAX_HEADING_RUNS", "WORK_FLOOR",
    "WORK_PER_SEGMENT", "ParseLevel", "ParseReport", "parse_wikitext",
]

logger = logging.getLogger(__name__)

#: Tokenizer reads allowed per text segment (the unit mwparserfromhell's tokenizer steps over:
#: a run of plain text or one markup character) for the exact reading. The fixture articles
#: need 1.9-4.1 (United Kingdom: 2.1), and each far failure allowed (:data:`MAX_FAR_FAILURES`) can
#: add about 1.5.
WORK_PER_SEGMENT = 10
#: ... and for each of the two fallback readings, which have fewer constructs to try.
FALLBACK_WORK_PER_SEGMENT = 8
#: Tokens copied from a closing construct into the one around it, per segment, at any level
#: (the fixture articles need 0.5-8.6: tables in tables).
COPIES_PER_SEGMENT = 32
#: ... plus this much for any page, so that tiny snippets are never refused.
WORK_FLOOR = 20_000
#: More unmatched openers than this (beyond the exactly doomed ones) and the exact reading is
#: skipped: each could cost a scan of the rest of the page.
MAX_FAR_FAILURES = 4
#: ``=`` runs on a heading line beyond which, below the exact level, the line is text.
MAX_HEADING_RUNS = 100

#: mwparserfromhell's tokenizer splits its input at these characters (Tokenizer.regex).
_SEGMENTS = Tokenizer.regex
#: A tag name as the tokenizer reads it: up to a markup character, white space or a quote.
_TAG_NAME = re.compile(r"[^{}\[\]<>|=&'#*;:/\\\"\-!\s]+")
#: The name of a closing tag ``</name``, as liberally as it could ever close a tag.
_CLOSE_TAG = re.compile(r"</([^{}\[\]<>|=&'#*;:/\\\"\-!\s]*)")
#: An open tag's attributes whose end is the first ``>`` (nothing in them can hide one).
_QUOTED_ATTRS = re.compile(r"(?:[^\"'{}\[\]<>]|\"[^\"{}\[\]<>]*\"|'[^'{}\[\]<>]*')*")
#: Attributes whose quotes all close.
_BALANCED_QUOTES = re.compile(r"(?:[^\"']|\"[^\"]*\"|'[^']*')*")
_EQUALS_RUNS = re.compile(r"=+")
_REF_OPEN = re.compile(r"<ref(?:\s[^<>]*)?>", re.IGNORECASE)
_REF_CLOSE = re.compile(r"</ref\s*>", re.IGNORECASE)


class ParseLevel(StrEnum):
    """How a page was read: exactly as mwparserfromhell would, or a bounded fallback."""

    EXACT = "exact"
    #: Openers a stack matcher leaves unmatched are text (MediaWiki's preprocessor's reading).
    LENIENT = "lenient"
    #: Only comments and ``<ref>`` tags are markup.
    REFS_ONLY = "refs_only"
    #: Nothing could be parsed within the budget: the page is one text node.
    TEXT = "text"


@dataclass(frozen=True)
class ParseReport:
    """What parsing one page cost: the level used, tokenizer reads, and text segments."""

    level: ParseLevel
    work: int
    segments: int


class _OverBudget(Exception):
    """The tokenizer read more than its budget allows (never caught by mwparserfromhell)."""


class _Positions:
    """Sorted positions of one substring in the page, for "the first one after i" queries."""

    def __init__(self, positions: list[int]) -> None:
        self.at = positions

    @classmethod
    def of(cls, text: str, needle: str) -> _Positions:
        return cls([m.start() for m in re.finditer(re.escape(needle), text)])

    def after(self, index: int) -> int | None:
        """The first position >= ``index``, or None."""
        found = bisect.bisect_left(self.at, index)
        return self.at[found] if found < len(self.at) else None


#: One-stack matcher events: comments, brace runs, link brackets, table lines and tags.
_EVENTS = re.compile(
    r"<!--|\{\{+|\}\}+|\[\[|\]\]|^[ \t]*(?:\{\||\|\})"
    r"|<(/?)([^{}\[\]<>|=&'#*;:/\\\"\-!\s]+)([^<>]*)>",
    re.MULTILINE,
)


#: Tags whose body is a scope of its own (MediaWiki strips extension tags before it matches
#: braces): a closer inside cannot close what was opened outside.
_SCOPE_TAGS = frozenset({"tag:ref", "tag:references", "tag:poem", "tag:indicator"})


class _Stack:
    """The one-stack matcher's stack: a closer ends the nearest open construct of its kind in the
    current scope, and what was opened inside that is left unmatched. Counts per kind and scope
    keep every step O(1) amortised."""

    def __init__(self, unmatched: set[tuple[str, int]]) -> None:
        self.unmatched = unmatched
        self.entries: list[tuple[str, int]] = []
        #: Per scope (the page, then each open scope tag): open constructs by kind.
        self.counts: list[dict[str, int]] = [{}]
        self.open_scopes: dict[str, int] = {}

    def is_open(self, kind: str) -> bool:
        return bool(self.counts[-1].get(kind))

    def push(self, kind: str, at: int) -> None:
        self.entries.append((kind, at))
        self.counts[-1][kind] = self.counts[-1].get(kind, 0) + 1
        if kind in _SCOPE_TAGS:
            self.counts.append({})
            self.open_scopes[kind] = self.open_scopes.get(kind, 0) + 1

    def close(self, kind: str) -> None:
        if kind in _SCOPE_TAGS:
            if not self.open_scopes.get(kind):
                return  # a stray closer is text
        elif not self.is_open(kind):
            return
        while self.entries:
            top, at = self.entries.pop()
            if top in _SCOPE_TAGS:
                self.counts.pop()
                self.open_scopes[top] -= 1
            self.counts[-1][top] -= 1
            if top == kind:
                return
            self.unmatched.add((top, at))

    def finish(self) -> None:
        self.unmatched.update(self.entries)


class _Doom:
    """Which openers the tokenizer should read as text at once, at a given :class:`ParseLevel`.

    EXACT: only openers whose closer appears nowhere after them (they fail however long the
    tokenizer tries). LENIENT: also those a one-stack matcher (MediaWiki's way: a closer ends
    the nearest open construct of its kind, closing the ones opened inside it) leaves unmatched.
    REFS_ONLY: everything but comments and ``<ref>`` tags paired as MediaWiki pairs them.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.level = ParseLevel.EXACT
        self.last_comment_end = text.rfind("-->")
        self.last_template_end = text.rfind("}}")
        self.last_bracket = text.rfind("]")
        self.last_table_end = text.rfind("|}")
        self.last_self_close = text.rfind("/>")
        self.closers: dict[str, list[int]] = {}
        for match in _CLOSE_TAG.finditer(text):
            self.closers.setdefault(match.group(1).lower(), []).append(match.start())
        self.unmatched: set[tuple[str, int]] = set()
        self._match()
        self.brackets = _Positions.of(text, "]")
        self.tag_ends = _Positions.of(text, ">")
        self.newlines = _Positions.of(text, "\n")
        self.refs: set[int] | None = None

    # -- the one-stack matcher ------------------------------------------------------------
    def _match(self) -> None:
        """Collect the openers a one-stack reading of the page leaves unmatched (linear)."""
        stack = _Stack(self.unmatched)
        comment_ends = _Positions.of(self.text, "-->")
        position = 0
        while (event := _EVENTS.search(self.text, position)) is not None:
            position, token = event.end(), event.group()
            if token == "<!--":
                end = comment_ends.after(event.end())
                position = event.end() if end is None else end + 3
            elif token.startswith("{{"):
                stack.push("template", event.start())
            elif token.startswith("}}"):
                for _ in range(max(1, len(token) // 2)):
                    stack.close("template")
            elif token == "[[":
                stack.push("link", event.start())
            elif token == "]]":
                stack.close("link")
            elif token.strip(" \t") == "{|":
                stack.push("table", event.start() + token.index("{"))
            elif token.strip(" \t") == "|}":
                if stack.is_open("table"):
                    stack.close("table")
                else:  # "|}}" ending a template's last parameter: read the braces
                    position = event.end() - 1
            else:
                position = self._match_tag(event, stack, position)
        stack.finish()

    def _match_tag(self, event: re.Match[str], stack: _Stack, position: int) -> int:
        closing, name, attrs = event.group(1), event.group(2).lower(), event.group(3)
        if not closing and not _BALANCED_QUOTES.fullmatch(attrs):
            # An open quote makes the tokenizer read on to the end of the page for it.
            self.unmatched.add(("tag:" + name, event.start()))
            return position
        if is_single_only(name) or attrs.endswith("/"):
            return position
        if closing:
            stack.close("tag:" + name)
        elif is_parsable(name):
            stack.push("tag:" + name, event.start())
        else:  # <nowiki>, <pre>, <math>...: the body is not markup
            end = _Positions(self.closers.get(name, [])).after(event.end())
            return position if end is None else end
        return position

    # -- verdicts --------------------------------------------------------------------------
    def far_failures(self) -> int:
        """Unmatched openers the exact rules do not catch: each may cost a scan of the page."""
        exact = {"template": self.template, "link": self.wikilink, "table": self.table}
        count = 0
        for kind, at in self.unmatched:
            if kind.startswith("tag:") and is_single(kind[4:]):
                continue  # an unclosed <li> or <td> closes itself (at the end of the page)
            check = self.tag if kind.startswith("tag:") else exact[kind]
            count += not check(at)
        return count

    def comment(self, at: int) -> bool:
        return self.last_comment_end < at + 4

    def template(self, at: int) -> bool:
        if self.level is ParseLevel.REFS_ONLY:
            return True
        return self.last_template_end < at + 2 or (
            self.level is ParseLevel.LENIENT and ("template", at) in self.unmatched)

    def wikilink(self, at: int) -> bool:
        if self.level is ParseLevel.REFS_ONLY:
            return True
        # ``[[`` is tried as an external link first (closed by ``]``), then as a wikilink.
        return self.last_bracket < at + 2 or (self.level is ParseLevel.LENIENT and ("link", at) in self.unmatched)

    def external_link(self, at: int) -> bool:
        if self.level is ParseLevel.EXACT:
            return self.last_bracket < at + 1
        if self.level is ParseLevel.REFS_ONLY:
            return True
        bracket, newline = self.brackets.after(at + 1), self.newlines.after(at + 1)
        return bracket is None or (newline is not None and newline < bracket)

    def table(self, at: int) -> bool:
        if self.level is ParseLevel.REFS_ONLY:
            return True
        return self.last_table_end < at + 2 or (self.level is ParseLevel.LENIENT and ("table", at) in self.unmatched)

    def tag(self, at: int) -> bool:
        if self.level is ParseLevel.REFS_ONLY:
            return at not in self.ref_tags()
        name = _TAG_NAME.match(self.text, at + 1)
        if name is None:
            return False  # not a tag attempt the index can judge
        if is_single(name.group()):
            return False  # a tag that needs no closer (MediaWiki closes <li> and <td> itself)
        if self.level is ParseLevel.LENIENT and ("tag:" + name.group().lower(), at) in self.unmatched:
            return True
        end = self.tag_ends.after(name.end())
        if end is None:
            return True  # an open tag never ends
        closers = self.closers.get(name.group().lower())
        if closers and closers[-1] > at:
            return False
        # No closer: doomed unless the open tag can close itself (``/>``): certainly when no
        # ``/>`` follows at all, else when its end is the first ``>`` (nothing in between can
        # hide one: quotes, templates, links, nested tags, comments) and that is not ``/>``.
        if self.last_self_close < at:
            return True
        attrs = _QUOTED_ATTRS.match(self.text, name.end(), end)
        return attrs is not None and attrs.end() == end and self.text[end - 1] != "/"

    def heading(self, at: int) -> bool:
        """A heading line with more ``=`` runs than Python's recursion allows the tokenizer to
        try as closures (it tries each in turn, recursively): text, below the exact level."""
        if self.level is ParseLevel.EXACT:
            return False
        end = self.text.find("\n", at)
        return len(_EQUALS_RUNS.findall(self.text, at, len(self.text) if end < 0 else end)) > MAX_HEADING_RUNS

    def ref_tags(self) -> set[int]:
        """``<ref>`` tags as MediaWiki pairs them: the body runs to the next ``</ref>``."""
        if self.refs is None:
            self.refs = set()
            closers = [m.end() for m in _REF_CLOSE.finditer(self.text)]
            done = 0
            for match in _REF_OPEN.finditer(self.text):
                if match.start() < done:
                    continue  # inside the body of the ref before
                if not _BALANCED_QUOTES.fullmatch(match.group(), 4, len(match.group()) - 1):
                    continue  # an open quote: MediaWiki pairs it, the tokenizer would not
                if match.group().endswith("/>"):
                    done = match.end()
                else:
                    after = bisect.bisect_left(closers, match.end() + 6)
                    if after == len(closers):
                        break  # no </ref> left: no more refs
                    done = closers[after]
                self.refs.add(match.start())
        return self.refs


class _Tokenizer(Tokenizer):
    """mwparserfromhell's tokenizer that skips doomed attempts and counts its reads."""

    def __init__(self, doom: _Doom) -> None:
        super().__init__()
        self.doom = doom
        self.budget = self.copy_budget = 0
        self.work = self.copies = 0
        self.offsets: list[int] = []

    def tokenize(self, text: str, context: int = 0, skip_style_tags: bool = False) -> list[Any]:
        """As the base class, also keeping each segment's offset in ``text`` and a budget."""
        self._text = [segment for segment in _SEGMENTS.split(text) if segment]
        self.offsets = [0, *accumulate(len(segment) for segment in self._text)]
        per_segment = WORK_PER_SEGMENT if self.doom.level is ParseLevel.EXACT else FALLBACK_WORK_PER_SEGMENT
        self.budget = WORK_FLOOR + per_segment * len(self._text)
        self.copy_budget = WORK_FLOOR + COPIES_PER_SEGMENT * len(self._text)
        self._head = self._global = self._depth = 0
        self._bad_routes = set()
        self._skip_style_tags = skip_style_tags
        return self._parse(context)

    def _read(self, delta: int = 0, *, strict: bool = False) -> Any:
        self.work += 1
        if self.work > self.budget:
            raise _OverBudget
        index = self._head + delta
        if index < 0:
            return START
        try:
            return self._text[index]
        except IndexError:
            if strict:
                self._fail_route()
            return END

    def _emit_all(self, tokenlist: list[Any]) -> None:
        # A construct nested in many others is copied into each of them as they close: that is
        # work too, cheaper than a read but unbounded by them (deep nesting), so it has its own.
        self.copies += len(tokenlist)
        if self.copies > self.copy_budget:
            raise _OverBudget
        super()._emit_all(tokenlist)

    def _at(self) -> int:
        return self.offsets[self._head]

    # Each override below emits what the base method emits when its attempt fails.
    def _parse_tag(self) -> None:
        if self.doom.tag(self._at()):
            self._emit_text("<")
        else:
            super()._parse_tag()

    def _parse_comment(self) -> None:
        if self.doom.comment(self._at()):
            self._head += 3
            self._emit_text("<!--")
        else:
            super()._parse_comment()

    def _parse_template_or_argument(self) -> None:
        if not self.doom.template(self._at()):
            super()._parse_template_or_argument()
            return
        self._head += 2
        braces = 2
        while self._read() == "{":
            self._head += 1
            braces += 1
        self._push()
        self._emit_text_then_stack("{" * braces)

    def _parse_wikilink(self) -> None:
        if self.doom.wikilink(self._at()):
            self._head += 1
            self._emit_text("[[")
        else:
            super()._parse_wikilink()

    def _parse_external_link(self, brackets: bool) -> None:
        if brackets and self.doom.external_link(self._at()):
            self._emit_text(self._read())
        else:
            super()._parse_external_link(brackets)

    def _parse_table(self) -> None:
        if self.doom.table(self._at()):
            self._emit_text("{")
        else:
            super()._parse_table()

    def _parse_heading(self) -> None:
        if not self.doom.heading(self._at()):
            super()._parse_heading()
            return
        best = 1
        while self._read(best) == "=":
            best += 1
        self._head += best - 1
        self._emit_text("=" * best)


def parse_wikitext(text: str) -> tuple[Wikicode, ParseReport]:
    """The page's parse tree, in time linear in its length, and what it cost."""
    doom = _Doom(text)
    levels = [ParseLevel.EXACT, ParseLevel.LENIENT, ParseLevel.REFS_ONLY]
    if doom.far_failures() > MAX_FAR_FAILURES:
        levels.remove(ParseLevel.EXACT)
    work = segments = 0
    for level in levels:
        doom.level = level
        tokenizer = _Tokenizer(doom)
        try:
            # Below the exact level, bold and italic quotes are text (MediaWiki reads them line
            # by line and never fails): the tokenizer's style routes can scan a whole line each.
            tokens = tokenizer.tokenize(text, skip_style_tags=level is not ParseLevel.EXACT)
        except (_OverBudget, RecursionError) as error:
            # RecursionError: mwparserfromhell's Python tokenizer recurses once per closure it
            # tries on a heading line (its C tokenizer does not), so a line with hundreds of
            # "=" runs goes beyond Python's limit.
            work += tokenizer.work
            logger.warning("wikitext of %d characters read as %s: %s", len(text), level,
                           "over the parse budget" if isinstance(error, _OverBudget) else "too deep")
            continue
        finally:
            segments = len(tokenizer.offsets) - 1
        work += tokenizer.work
        if level is not ParseLevel.EXACT:
            logger.warning("wikitext of %d characters parsed as %s", len(text), level)
        return Builder().build(tokens), ParseReport(level, work, segments)
    logger.error("wikitext of %d characters could not be parsed within budget; read as plain text", len(text))
    return Wikicode(SmartList([Text(text)])), ParseReport(ParseLevel.TEXT, work, segments)
