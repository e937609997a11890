"""Read cited sources: fetch a URL safely (SSRF guard) and turn it into clean sentences.

Second step of the flow (citation -> source): :func:`fetch_source` returns a :class:`Source`;
:class:`ArchiveReader` reads a dead source's archived copy (its archive-url, or the Wayback Machine).
:func:`assess_source` says whether it is the cited document or a wall, a teaser, a shell...
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from side._lazy import lazy_exports

if TYPE_CHECKING:
    from side.sources.archive import ArchiveReader
    from side.sources.fetch import Source, fetch_source, source_from_bytes, source_from_html
    from side.sources.netguard import AllowList, check_url
    from side.sources.states import Assessment, SourceState, assess_source

__all__ = [
    "AllowList", "ArchiveReader", "Assessment", "Source", "SourceState", "assess_source", "check_url", "fetch_source",
    "source_from_bytes", "source_from_html",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "ArchiveReader": "side.sources.archive",
    "Source": "side.sources.fetch",
    "fetch_source": "side.sources.fetch",
    "source_from_bytes": "side.sources.fetch",
    "source_from_html": "side.sources.fetch",
    "AllowList": "side.sources.netguard",
    "check_url": "side.sources.netguard",
    "Assessment": "side.sources.states",
    "SourceState": "side.sources.states",
    "assess_source": "side.sources.states",
})
