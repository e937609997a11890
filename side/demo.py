"""A demo article of real Wikipedia claims whose cited pages Side can read offline.

Offline, the cited pages of a fixture article cannot be fetched, so ``side verify`` on one can
only report its sources unavailable. WiCE dev pairs real Wikipedia claims (article title, section,
the text before the citation) with the text of the page each cites, and ``side index build
--demo`` indexes those pages under ``wice:<claim id>`` URLs. An article rebuilt from one title's
WiCE claims, citing those URLs, lets a newcomer see the whole decision flow on real data: sources
read from the corpus, verdicts, evidence sentences and better-source suggestions.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from side.data import read_jsonl
from side.errors import InputError
from side.pipeline import cite_web
from side.retrieval.corpus import documents_from_wice, wice_page_id, wice_title

__all__ = ["DEFAULT_TITLE", "CitedClaim", "wice_claims", "article_wikitext", "demo_article"]

#: A title whose three WiCE dev claims are supported, partially supported and not supported.
DEFAULT_TITLE = "Starbucks"


@dataclass(frozen=True)
class CitedClaim:
    """One WiCE claim with the text before it and the page it cites."""

    section: str
    context: str
    claim: str
    url: str
    page_title: str
    label: str


def wice_claims(path: str | Path) -> dict[str, list[CitedClaim]]:
    """WiCE claims by article title, each citing its page's URL in the demo index.

    Several claims may cite one page; the URL is the one :func:`side.retrieval.corpus.documents_from_wice`
    gives the page when it is indexed, so the two cannot disagree.
    """
    urls = {document.doc_id: document.url for document in documents_from_wice(path)}
    by_title: dict[str, list[CitedClaim]] = defaultdict(list)
    for record in read_jsonl(path):
        evidence = record.get("evidence") or []
        meta = record.get("meta") or {}
        if not evidence or not record.get("claim"):
            continue
        by_title[meta.get("claim_title", "")].append(CitedClaim(
            section=_section(meta.get("claim_section") or ""),
            context=meta.get("claim_context") or "",
            claim=record["claim"].strip(),
            url=urls[wice_page_id(evidence)],
            page_title=wice_title(evidence),
            label=record.get("label", ""),
        ))
    return dict(by_title)


def _section(name: str) -> str:
    """WiCE writes "Locations.:Expansion" for a subsection; the heading is its last part."""
    return name.split(":")[-1].strip(" .")


def article_wikitext(title: str, claims: list[CitedClaim]) -> str:
    """Wikitext with each claim at the end of its context paragraph, cited with ``{{cite web}}``."""
    lines = [f"'''{title}''' (a demo article built from real WiCE claims and their cited pages)."]
    section = None
    order = {name: n for n, name in reversed(list(enumerate(c.section for c in claims)))}
    for claim in sorted(claims, key=lambda c: order[c.section]):
        if claim.section and claim.section != section:
            section = claim.section
            lines += ["", f"== {section} =="]
        paragraphs = [p.strip() for p in claim.context.split("\n") if p.strip()]
        cite = cite_web(claim.url, claim.page_title or "Cited page")
        body = paragraphs[-1] if paragraphs else ""
        lines += ["", *paragraphs[:-1], f"{body} {claim.claim}<ref>{cite}</ref>".strip()]
    return "\n".join(lines) + "\n\n== References ==\n<references />\n"


def demo_article(path: str | Path, title: str = DEFAULT_TITLE) -> str:
    """The demo article of ``title``; a clear error names titles that exist when it does not."""
    claims = wice_claims(path)
    if title not in claims:
        known = sorted(claims, key=lambda t: -len(claims[t]))[:5]
        raise InputError(f"no WiCE claims for the article {title!r} in {path}; titles with the most "
                         f"claims: {', '.join(known)}")
    return article_wikitext(title, claims[title])
