"""The lead's uncited sentences, and the body they should summarise.

Wikipedia's lead summarises the article and often carries no citations of its own: its
statements are meant to be backed by the body (MOS:LEADCITE). PeopleProfiles found 20-22% of
lead claims in biographies are not supported by the article's own body, so Side checks each
uncited lead sentence against the body's sentences (:mod:`side.verify.lead`).

This module reads both with the same walk :mod:`side.extract.wikitext` uses for claims, so
what counts as prose is decided in one place: infobox values, hatnotes, ``{{efn}}`` notes,
file captions and ``<ref>`` bodies are walked in their own streams and never become lead
claims or body sentences. A lead sentence is *cited* when a ``<ref>`` or a short citation
(``{{sfn}}``) sits inside it or right after its final punctuation; only uncited ones are claims.
A fragment without a sentence's final punctuation or with fewer than :data:`MIN_CLAIM_WORDS`
words (a table cell, a list item, a stray caption) is not a claim.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from side.extract.claims import Citation
from side.extract.sentences import Flow, clean_text
from side.extract.wikitext import _walk_page, _Walker
from side.text import count_words, split_sentences

__all__ = [
    "MIN_CLAIM_WORDS", "NON_PROSE_SECTIONS", "ArticleLead", "BodySentence", "LeadClaim", "read_lead",
]

#: Fewer words than this is a fragment (a name, a date, a table cell), not a statement.
MIN_CLAIM_WORDS = 4
#: Sections whose text is lists of links and references, not statements the lead summarises.
NON_PROSE_SECTIONS = frozenset({
    "references", "notes", "footnotes", "citations", "sources", "bibliography", "further reading",
    "external links", "see also", "notes and references", "references and notes", "works cited",
    "einzelnachweise", "weblinks", "literatur", "siehe auch", "anmerkungen",
})

#: Stands in the plain text for a citation use; a private-use character no wikitext shows.
_CITED = "\ue000"
#: Stands in the plain text for a paragraph break (the walk's own "\n" is also a soft line break).
_PARAGRAPH = "\ue001"
#: A citation mark right after a sentence's final punctuation moves before it, so that the
#: sentence splitter sees "text[mark]. Next" and the mark stays with its sentence.
_MARK_AFTER_END = re.compile(f"([.!?…][\"'”’)\\]]*)\\s*({_CITED}+)")
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*$")


@dataclass(frozen=True)
class LeadClaim:
    """One uncited sentence of the lead: what the body is expected to back."""

    text: str
    #: Its place among all the lead's sentences (cited ones counted), from 0.
    position: int

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "position": self.position}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LeadClaim:
        return cls(text=str(data["text"]), position=int(data["position"]))


@dataclass(frozen=True)
class BodySentence:
    """A sentence of the article after the lead, with the headings above it."""

    text: str
    section: tuple[str, ...]

    @property
    def section_path(self) -> str:
        return " / ".join(s for s in self.section if s)

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "section": list(self.section)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BodySentence:
        return cls(text=str(data["text"]), section=tuple(str(s) for s in data.get("section", ())))


@dataclass(frozen=True)
class ArticleLead:
    """An article's uncited lead sentences and its body, as the lead check reads them."""

    title: str
    claims: tuple[LeadClaim, ...]
    body: tuple[BodySentence, ...]
    #: Lead sentences in all, and how many of them carry a citation (not checked).
    sentences: int = 0
    cited: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "claims": [c.to_dict() for c in self.claims],
                "body": [b.to_dict() for b in self.body], "sentences": self.sentences, "cited": self.cited}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ArticleLead:
        return cls(title=str(data.get("title", "")),
                   claims=tuple(LeadClaim.from_dict(c) for c in data.get("claims", ())),
                   body=tuple(BodySentence.from_dict(b) for b in data.get("body", ())),
                   sentences=int(data.get("sentences", 0)), cited=int(data.get("cited", 0)))


@dataclass
class _ProseFlow(Flow):
    """The article's main text stream, keeping where paragraphs break and citations stand."""

    blocks: list[tuple[tuple[str, ...], str]] = field(default_factory=list)

    def paragraph_break(self) -> None:
        self.parts.append(_PARAGRAPH)
        super().paragraph_break()


class _LeadWalker(_Walker):
    """The claims walk, keeping each section's prose with its citation marks."""

    def __init__(self) -> None:
        super().__init__(context_words=0)
        self.main = _ProseFlow()

    def record(self, marker: str, flow: Flow, citation: Citation | None, name: str | None) -> None:
        super().record(marker, flow, citation, name)
        if flow is self.main and (citation is not None or name):
            flow.add(_CITED)

    def heading(self, node: Any, flow: Flow) -> None:
        if flow is self.main:
            self.close_block()
        super().heading(node, flow)

    def close_block(self) -> None:
        """Keep the text read since the last heading, under that heading's section path."""
        assert isinstance(self.main, _ProseFlow)
        self.main.blocks.append((self.section, "".join(self.main.parts)))


def _sentences(raw: str) -> list[tuple[str, bool]]:
    """(sentence, cited) for each sentence of a block of the walk's raw text."""
    out: list[tuple[str, bool]] = []
    for paragraph in raw.split(_PARAGRAPH):
        text = _MARK_AFTER_END.sub(r"\2\1", clean_text(paragraph))
        for sentence in split_sentences(text):
            plain = clean_text(sentence.replace(_CITED, " "))
            if plain:
                out.append((plain, _CITED in sentence))
    return out


def _is_statement(text: str) -> bool:
    return count_words(text) >= MIN_CLAIM_WORDS and bool(_SENTENCE_END.search(text))


def _prose_section(section: tuple[str, ...]) -> bool:
    return not any(heading.strip().lower() in NON_PROSE_SECTIONS for heading in section)


def read_lead(wikitext: str, title: str) -> ArticleLead:
    """The uncited statements of the lead (section 0) and the body's sentences, in page order.

    Never raises on odd wikitext (the walk's contract); a page with no heading is all lead and
    has no body, which the lead check reports as such rather than as unsupported claims.
    """
    walker = _walk_page(wikitext, 0, walker=_LeadWalker())
    assert isinstance(walker, _LeadWalker)
    walker.close_block()
    blocks = walker.main.blocks if isinstance(walker.main, _ProseFlow) else []
    claims: list[LeadClaim] = []
    body: list[BodySentence] = []
    sentences = cited = 0
    for section, raw in blocks:
        if not section:
            for text, is_cited in _sentences(raw):
                if not _is_statement(text):
                    continue
                if is_cited:
                    cited += 1
                else:
                    claims.append(LeadClaim(text, sentences))
                sentences += 1
        elif _prose_section(section):
            body.extend(BodySentence(text, section) for text, _ in _sentences(raw))
    return ArticleLead(title, tuple(claims), tuple(body), sentences, cited)
