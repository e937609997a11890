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
from enum import StrEnum
from typing import Any

__all__ = ["SEP", "CIT", "UrlStatus", "ARCHIVE_FIRST", "LIVE_UNFIT", "Citation", "Claim"]

SEP = " [SEP] "
CIT = " [CIT]"


class UrlStatus(StrEnum):
    """A citation template's ``url-status``: what editors say about the original URL.

    ``live``: it still works (an archive copy is a precaution). ``dead``: it no longer works.
    ``usurped``/``unfit``: the domain now serves something else (spam, a squatter) or something
    editors will not link. ``deviated``: it works but no longer says what it said when cited.
    """

    LIVE = "live"
    DEAD = "dead"
    USURPED = "usurped"
    UNFIT = "unfit"
    DEVIATED = "deviated"


#: Statuses under which the archived copy is read before the original URL.
ARCHIVE_FIRST = frozenset({UrlStatus.DEAD, UrlStatus.USURPED, UrlStatus.UNFIT, UrlStatus.DEVIATED})
#: Statuses under which the original URL is never read: what it serves now is not the source.
LIVE_UNFIT = frozenset({UrlStatus.USURPED, UrlStatus.UNFIT, UrlStatus.DEVIATED})


@dataclass(frozen=True)
class Citation:
    """One reference as written in the wikitext.

    The archive fields say where an archived copy of the source is (``archive_url``, from the
    template's ``archive-url`` or a ``{{webarchive}}`` beside it) and whether editors found the
    original dead (``url_status``, a ``{{dead link}}`` tag): the source is then read from the
    archive (see :class:`side.pipeline.CheckSources`).
    """

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
    #: The first author as written (``last``/``author``...), for naming the ref (see
    #: :mod:`side.extract.refnames`); None when the template names none.
    author: str | None = None
    archive_url: str | None = None
    #: When the archived copy was made, as written (``archive-date``, ``{{webarchive|date=}}``).
    archive_date: str | None = None
    #: When the editor read the source, as written (``access-date``).
    access_date: str | None = None
    #: The template's ``url-status`` (or the older ``dead-url=yes|no``); None when not given.
    url_status: UrlStatus | None = None
    #: A ``{{dead link}}`` tag inside the ref or right after it.
    dead_link: bool = False
    #: For a short citation (``{{sfn}}``...): the anchor id of the full citation it points to
    #: (``CITEREFSmith2001``); None for other kinds, or a short one that names no work.
    anchor: str | None = None
    #: Whether a short citation was linked to its full citation: its url, title, dates are
    #: then that citation's (see :mod:`side.extract.shortcites`). False when none had its anchor.
    resolved: bool = False

    @property
    def has_url(self) -> bool:
        return bool(self.url)

    @property
    def archive_first(self) -> bool:
        """Whether editors marked the original URL dead (or worse): read the archive first."""
        return self.dead_link or self.url_status in ARCHIVE_FIRST

    @property
    def live_usable(self) -> bool:
        """False when the original URL now serves something that is not the source."""
        return self.url_status not in LIVE_UNFIT

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Citation:
        values = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        status = values.get("url_status")
        values["url_status"] = UrlStatus(str(status)) if status in UrlStatus._value2member_map_ else None
        values["dead_link"] = bool(values.get("dead_link"))
        values["resolved"] = bool(values.get("resolved"))
        return cls(**values)


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
    #: The article is in the wiki's "Living people" category (WP:BLP): any gap in it is high
    #: severity (:mod:`side.verify.severity`).
    living_person: bool = False

    @property
    def no_fetch(self) -> str:
        """Why the cited URL may not be fetched for this claim ("" when it may): a service's
        fetch budget was spent, so the source is read only from the corpus or the cache."""
        return str(self.extra.get("no_fetch") or "")

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
        data = {
            "article_title": self.article_title,
            "section": list(self.section),
            "text": self.text,
            "left_context": self.left_context,
            "citation": self.citation.to_dict(),
            "use_index": self.use_index,
            "key": self.key,
        }
        if "tag" in self.extra:  # the maintenance tag an editor put on it (side.extract.tagged)
            data["tag"] = dict(self.extra["tag"])
        if self.no_fetch:
            data["no_fetch"] = self.no_fetch
        if self.living_person:
            data["living_person"] = True
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Claim:
        return cls(
            article_title=data.get("article_title", ""),
            section=tuple(data.get("section", ())),
            text=data.get("text", ""),
            left_context=data.get("left_context", data.get("text", "")),
            citation=Citation.from_dict(data.get("citation", {"id": "", "kind": "text"})),
            use_index=int(data.get("use_index", 0)),
            extra=_extra_of(data),
            living_person=bool(data.get("living_person")),
        )


def _extra_of(data: dict[str, Any]) -> dict[str, Any]:
    """The parts of ``extra`` a stored claim keeps: its maintenance tag, why it may not be fetched."""
    extra: dict[str, Any] = {}
    if isinstance(data.get("tag"), dict):
        extra["tag"] = dict(data["tag"])
    if isinstance(data.get("no_fetch"), str) and data["no_fetch"]:
        extra["no_fetch"] = data["no_fetch"]
    return extra
