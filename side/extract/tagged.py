"""Claims editors have already tagged: {{failed verification}}, {{citation needed}} and kin.

Wikipedia's maintenance backlogs hold hundreds of thousands of statements an editor marked as
unverified. Each tag sits right after the claim it is about (``Text.<ref>..</ref>{{failed
verification|date=May 2024|reason=...}}``, ``Text.{{citation needed|date=...}}``), except
``{{citation needed span|text|date=...}}``, which wraps the claim. This module finds them with
the same walk and the same sentence reader as :mod:`side.extract.wikitext`, so a tagged claim's
text, section and context are exactly what Side reads for any other claim.

A tag written in an unexpected form is not guessed at: it is skipped and the reason counted
(:attr:`TaggedPage.skipped`), so the operator sees how much of a backlog Side could not read.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mwparserfromhell.nodes import Heading, Template
from mwparserfromhell.wikicode import Wikicode

from side.extract.claims import Citation, Claim
from side.extract.sentences import Flow, clean_text, without_tag_remnants
from side.extract.wikitext import _dangling, _template_name, _Use, _walk_page, _Walker, citation_id

__all__ = [
    "BETTER_SOURCE_NEEDED", "CITATION_NEEDED", "CITATION_NEEDED_SPAN", "DEFAULT_ALIASES", "FAILED_VERIFICATION",
    "SkipReason", "TaggedClaim", "TaggedPage", "find_tagged", "normalise_template",
]

FAILED_VERIFICATION = "failed verification"
BETTER_SOURCE_NEEDED = "better source needed"
CITATION_NEEDED = "citation needed"
CITATION_NEEDED_SPAN = "citation needed span"

#: English Wikipedia's redirects to the four tags (lower case), by the tag they stand for.
DEFAULT_ALIASES: dict[str, str] = {
    **dict.fromkeys(("failed verification", "fv", "failed-verification", "verification failed", "not in source",
                     "not in citation", "not in ref", "failedverification"), FAILED_VERIFICATION),
    **dict.fromkeys(("better source needed", "bsn", "better source", "better-source", "bettersource",
                     "better source needed?"), BETTER_SOURCE_NEEDED),
    **dict.fromkeys(("citation needed", "cn", "fact", "citation-needed", "cite needed", "citeneeded",
                     "needs citation", "source needed", "ref needed", "refneeded", "cb"), CITATION_NEEDED),
    **dict.fromkeys(("citation needed span", "cns", "cn span", "fact span", "cn-span", "citation needed (span)"),
                    CITATION_NEEDED_SPAN),
}


class SkipReason:
    """Why a tag was not turned into a claim (the keys of :attr:`TaggedPage.skipped`)."""

    NO_TEXT = "no sentence before the tag"
    SPAN_WITHOUT_TEXT = "span tag without text"
    NESTED = "tag nested in another template"
    UNCLOSED = "unclosed tag"


def normalise_template(name: str) -> str:
    """A template name as the wiki compares them: no namespace, spaces for underscores, lower case."""
    name = " ".join(name.replace("_", " ").split()).lower()
    return name[9:].strip() if name.startswith("template:") else name


@dataclass(frozen=True)
class TaggedClaim:
    """One statement an editor tagged, as Side reads it."""

    #: The tag it carries, by its canonical name (e.g. ``failed verification``).
    template: str
    #: The sentence before the tag, or the text a ``{{citation needed span}}`` wraps.
    text: str
    #: Up to N words of plain text before the tag (the retriever's and verifier's context).
    left_context: str
    #: Section headings from the top down ("" for the lead), as :class:`Claim` has them.
    section: tuple[str, ...]
    #: MediaWiki's number of the section holding the tag: 0 for the lead, then each heading in
    #: page order (what ``action=edit&section=N`` takes).
    section_index: int
    #: The tag's ``date=`` and ``reason=`` as written ("" when absent).
    date: str = ""
    reason: str = ""
    #: The tag's name as written (an alias such as ``fv`` or ``cn``).
    written: str = ""
    #: The citation right before the tag (the one a {{failed verification}} disputes); None when
    #: the claim is uncited.
    citation: Citation | None = None

    @property
    def cited(self) -> bool:
        return self.citation is not None

    def tag(self) -> dict[str, Any]:
        """What the tag says, kept with the claim in the results store."""
        return {"template": self.template, "date": self.date, "reason": self.reason, "written": self.written,
                "section_index": self.section_index}

    def claim(self, title: str, **tag_extra: Any) -> Claim:
        """The Claim Side checks: the preceding citation, or an uncited one (no URL, so the
        pipeline says it cannot be checked and suggests sources from the corpus)."""
        citation = self.citation or Citation(id=citation_id(f"uncited\x1f{self.template}\x1f{self.text}"),
                                             kind="text", raw="")
        return Claim(title, self.section, self.text, self.left_context, citation,
                     extra={"tag": {**self.tag(), **tag_extra}})


@dataclass(frozen=True)
class TaggedPage:
    """The tagged claims of one page, and the tags that could not be read, by reason."""

    claims: tuple[TaggedClaim, ...]
    skipped: Counter[str] = field(default_factory=Counter)


@dataclass
class _Tag:
    template: str
    written: str
    date: str
    reason: str
    text: str
    left_context: str
    section: tuple[str, ...]
    section_index: int
    before: _Use | None


class _TagWalker(_Walker):
    """The claims walk, also noting maintenance tags and the section number they are in."""

    def __init__(self, context_words: int, aliases: Mapping[str, str]) -> None:
        super().__init__(context_words)
        self.aliases = aliases
        self.tags: list[_Tag] = []
        self.skipped: Counter[str] = Counter()
        self.section_index = 0
        #: The last citation use, with its flow and how many parts that flow had right after it.
        self.adjacent: tuple[Flow, int, _Use] | None = None
        self._unclosed = re.compile(r"\{\{\s*(?:template\s*:\s*)?(" + "|".join(
            re.escape(a).replace(r"\ ", r"[ _]+") for a in sorted(aliases, key=len, reverse=True)) + r")\s*(?:\||$)",
            re.IGNORECASE | re.MULTILINE) if aliases else None

    def record(self, marker: str, flow: Flow, citation: Citation | None, name: str | None) -> None:
        super().record(marker, flow, citation, name)
        if citation is not None or name:
            self.adjacent = (flow, len(flow.parts), self.uses[-1])

    def heading(self, node: Heading, flow: Flow) -> None:
        if flow is self.main:
            self.section_index += 1
            self.adjacent = None  # the heading starts the section's text afresh
        super().heading(node, flow)

    def text(self, value: str, flow: Flow) -> None:
        if self._unclosed is not None and "{{" in value and (unclosed := len(self._unclosed.findall(value))):
            self.skipped[SkipReason.UNCLOSED] += unclosed  # only when there is one: no reason counted 0 times
        super().text(value, flow)

    def template(self, node: Template, flow: Flow) -> None:
        written = _template_name(node)
        canonical = self.aliases.get(normalise_template(written))
        if canonical is None:
            super().template(node, flow)
            return
        if flow is not self.main:
            self.skipped[SkipReason.NESTED] += 1
            return
        params = {str(p.name).strip().lower(): p.value for p in node.params}
        if canonical == CITATION_NEEDED_SPAN:
            span = params.get("1", params.get("text"))
            text = clean_text(without_tag_remnants(span.strip_code())) if span is not None else ""
            if span is None or not text:
                self.skipped[SkipReason.SPAN_WITHOUT_TEXT] += 1
                return
            self.walk(span, flow)
        else:
            text = flow.sentence()
            if not text:
                self.skipped[SkipReason.NO_TEXT] += 1
                return
        self.tags.append(_Tag(canonical, written, _value(params, "date"), _value(params, "reason"), text,
                              flow.left_context(self.context_words), self.section, self.section_index,
                              self._before(flow) if canonical != CITATION_NEEDED_SPAN else None))

    def _before(self, flow: Flow) -> _Use | None:
        """The citation use right before the tag in the same text, with only space between."""
        if self.adjacent is None or self.adjacent[0] is not flow:
            return None
        _, parts, use = self.adjacent
        return use if not "".join(flow.parts[parts:]).strip() else None

    def citation_of(self, use: _Use) -> Citation:
        if use.citation is not None:
            return use.citation
        return self.definitions.get(use.name or "") or _dangling(use.name)


def _value(params: dict[str, Wikicode], name: str) -> str:
    value = params.get(name)
    return clean_text(without_tag_remnants(value.strip_code())) if value is not None else ""


def find_tagged(wikitext: str, title: str = "", aliases: Mapping[str, str] | None = None,
                context_words: int = 100) -> TaggedPage:
    """Every tagged claim of a page in document order, and the tags skipped, by reason.

    ``aliases`` maps lower-case template names (redirects included) to the tag they stand for;
    only tags whose canonical name is a value there are read (default: :data:`DEFAULT_ALIASES`).
    """
    walker = _walk_page(wikitext, context_words, walker=_TagWalker(context_words, DEFAULT_ALIASES
                                                                   if aliases is None else aliases))
    assert isinstance(walker, _TagWalker)
    claims = tuple(TaggedClaim(t.template, t.text, t.left_context, t.section, t.section_index, t.date, t.reason,
                               t.written, walker.citation_of(t.before) if t.before is not None else None)
                   for t in walker.tags)
    return TaggedPage(claims, walker.skipped)
