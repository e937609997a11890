"""Read what articles say and what they cite: wikitext, the wiki's API, and WAFER records.

First step of the flow (edit -> citation): :func:`extract_claims` turns an article's wikitext into
:class:`Claim` objects, each with the :class:`Citation` that backs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from side._lazy import lazy_exports

if TYPE_CHECKING:
    from side.extract.claims import Citation, Claim
    from side.extract.wafer import read_wafer
    from side.extract.wikiapi import PageRevision, fetch_page
    from side.extract.wikitext import added_citations, citation_from_body, extract_citations, extract_claims

__all__ = [
    "Citation", "Claim", "PageRevision", "added_citations", "citation_from_body", "extract_citations",
    "extract_claims", "fetch_page", "read_wafer",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "Citation": "side.extract.claims",
    "Claim": "side.extract.claims",
    "added_citations": "side.extract.wikitext",
    "citation_from_body": "side.extract.wikitext",
    "extract_citations": "side.extract.wikitext",
    "extract_claims": "side.extract.wikitext",
    "PageRevision": "side.extract.wikiapi",
    "fetch_page": "side.extract.wikiapi",
    "read_wafer": "side.extract.wafer",
})
