"""The Source record: a cited document as Side uses it, and what its HTML said beyond its text.

Both the fetcher (:mod:`side.sources.fetch`), which makes Sources, and the assessment of what
was read (:mod:`side.sources.states`), which reads them, import these records from here; neither
imports the other back.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = ["PageSignals", "Source"]


@dataclass(frozen=True)
class PageSignals:
    """What the markup says about a page, beyond its extracted text; small enough to cache.

    Computed once by :func:`page_signals` when the page is fetched and kept on the Source, so a
    cached source is assessed exactly as a fresh one.
    """

    #: The ``<title>``.
    title: str = ""
    #: Words of the visible text (scripts, styles, ``<noscript>`` and templates left out).
    visible_words: int = 0
    #: Text of the ``<noscript>`` elements.
    noscript: str = ""
    #: The id of an empty single-page-app mount point (:data:`APP_ROOT_IDS`), or "".
    empty_root: str = ""
    #: Where a ``<meta http-equiv="refresh">`` forwards to within :data:`MAX_REFRESH_DELAY_S`, or "".
    refresh: str = ""
    #: Names of the :data:`MARKERS` found in the markup.
    markers: tuple[str, ...] = ()
    #: Wall and JavaScript phrases found in the visible text.
    phrases: tuple[str, ...] = ()
    #: Unrendered template expressions (``{{ user.name }}``) in the visible text: a client-side
    #: template (AngularJS, Vue, Handlebars) that only JavaScript fills in.
    templates: int = 0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["markers"], out["phrases"] = list(self.markers), list(self.phrases)
        return out

    @classmethod
    def from_dict(cls, data: Any) -> PageSignals | None:
        """The inverse of :meth:`to_dict`; None for anything that is not one (an old cache entry)."""
        if not isinstance(data, dict):
            return None
        try:
            return cls(title=str(data.get("title") or ""), visible_words=int(data.get("visible_words") or 0),
                       noscript=str(data.get("noscript") or ""), empty_root=str(data.get("empty_root") or ""),
                       refresh=str(data.get("refresh") or ""),
                       markers=tuple(str(m) for m in data.get("markers") or ()),
                       phrases=tuple(str(p) for p in data.get("phrases") or ()),
                       templates=int(data.get("templates") or 0))
        except (TypeError, ValueError):
            return None


@dataclass(frozen=True)
class Source:
    """A cited document as Side uses it: where it came from and its text in sentences."""

    url: str
    final_url: str
    title: str
    date: str
    text: str
    content_type: str
    sentences: tuple[str, ...] = ()
    fetched_at: str = field(default_factory=lambda: _now())
    #: What the HTML said beyond its text (title, noscript, markers...), for telling a paywall,
    #: wall or shell from the source (:mod:`side.sources.states`); None for other content.
    page: PageSignals | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["sentences"] = list(self.sentences)
        out["page"] = self.page.to_dict() if self.page is not None else None
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Source:
        return cls(
            url=str(data["url"]),
            final_url=str(data.get("final_url") or data["url"]),
            title=str(data.get("title") or ""),
            date=str(data.get("date") or ""),
            text=str(data.get("text") or ""),
            content_type=str(data.get("content_type") or ""),
            sentences=tuple(str(s) for s in data.get("sentences") or ()),
            fetched_at=str(data.get("fetched_at") or ""),
            page=PageSignals.from_dict(data.get("page")),
        )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
