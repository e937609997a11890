"""Claim and Citation: what an article says, and the reference it gives for it.

A Citation is one reference (a ``<ref>``, its template, URL and metadata); a Claim is one *use*
of a citation in the text: a named ref cited three times gives three Claims sharing one
Citation. The query strings follow Side (Petroni et al. 2022): sparse retrieval uses the
sentence before the citation plus the article title, dense retrieval and the verifier use
``title [SEP] section [SEP] left context [CIT]``.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["SEP", "CIT", "Citation", "Claim"]

SEP = " [SEP] "
CIT = " [CIT]"


@dataclass(frozen=True)
class Citation:
    """One reference as written in the wikitext."""

    #: Stable identity: a hash of the normalised reference content (not its position).
    id: str
    kind: str  # "template" | "bare_url" | "external_link" | "short" | "text"
    raw: str = ""
    name: str | None = None
    template: str | None = None
    url: str | None = None
    title: str | None = None
    website: str | None = None
    date: str | None = None
    archive_url: str | None = None

    @property
    def has_url(self) -> bool:
        return bool(self.url)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Citation:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


@dataclass(frozen=True)
class Claim:
    """The text a citation is supposed to support, with the context Side reads."""

    article_title: str
    #: Section headings from the top of the article down to this claim ("" for the lead).
    section: tuple[str, ...]
    #: The sentence(s) before the ref in the same paragraph, as plain text.
    text: str
    #: Up to N words of plain text before the ref (may cross sentence boundaries).
    left_context: str
    citation: Citation
    #: 0 for the first use of the citation in the article, 1 for the next reuse, ...
    use_index: int = 0
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def section_path(self) -> str:
        return " / ".join(s for s in self.section if s)

    @property
    def dense_query(self) -> str:
        """Side's WAFER-style query: ``title [SEP] section [SEP] left context [CIT]``."""
        return f"{self.article_title}{SEP}{self.section_path}{SEP}{self.left_context}{CIT}"

    @property
    def sparse_query(self) -> str:
        """Side's best BM25 query: the sentence before the citation plus the article title."""
        return f"{self.text} {self.article_title}".strip()

    @property
    def key(self) -> str:
        """Identity of this use, stable under edits elsewhere in the article."""
        digest = hashlib.sha1(f"{self.citation.id}\x1f{self.text}".encode()).hexdigest()
        return digest[:16]

    def to_dict(self) -> dict[str, Any]:
        return {
            "article_title": self.article_title,
            "section": list(self.section),
            "text": self.text,
            "left_context": self.left_context,
            "citation": self.citation.to_dict(),
            "use_index": self.use_index,
            "key": self.key,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Claim:
        return cls(
            article_title=data.get("article_title", ""),
            section=tuple(data.get("section", ())),
            text=data.get("text", ""),
            left_context=data.get("left_context", data.get("text", "")),
            citation=Citation.from_dict(data.get("citation", {"id": "", "kind": "text"})),
            use_index=int(data.get("use_index", 0)),
        )
