"""The demo: a small evidence set shipped with Side, and demo articles whose sources Side reads offline.

The shipped set (``side/demo_data``, :data:`DEMO_SOURCES`) holds SciFact abstracts and an article
made of SciFact claims citing them (:data:`DEMO_ARTICLE`); it needs no shared data, and its
licences allow it to ship (``side/demo_data/ATTRIBUTION.md``). ``side index build --demo``
indexes it, and ``side verify --offline`` on the article reads every cited abstract from the index.

With the shared data, a second kind of demo article is made of real Wikipedia claims. Offline,
the cited pages of a fixture article cannot be fetched, so ``side verify`` on one can only report
its sources unavailable. WiCE dev pairs real Wikipedia claims (article title, section, the text
before the citation) with the text of the page each cites, and ``side index build --demo
--dataset wice`` indexes those pages under ``wice:<claim id>`` URLs (they stay out of the shipped
set: they are web pages of others, not under a licence that lets Side redistribute them). An
article rebuilt from one title's WiCE claims, citing those URLs, shows the decision flow on real
Wikipedia text: sources read from the corpus, verdicts, evidence sentences and suggestions.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from side.data import read_jsonl
from side.errors import InputError
from side.pipeline import cite_web
from side.retrieval.corpus import Document, documents_from_wice, wice_page_id, wice_title

__all__ = ["DEMO_DIR", "DEMO_SOURCES", "DEMO_ARTICLE", "demo_documents", "DEFAULT_TITLE", "CitedClaim", "wice_claims",
           "article_wikitext", "demo_article"]

#: The demo set shipped with the package (``scripts/build_demo_set.py`` writes it from SciFact).
DEMO_DIR = Path(__file__).parent / "demo_data"
#: The demo set's sources: one JSON object a line with url, title and the abstract's sentences.
DEMO_SOURCES = DEMO_DIR / "sources.jsonl"
#: The demo article: SciFact claims, each citing an abstract of :data:`DEMO_SOURCES`.
DEMO_ARTICLE = DEMO_DIR / "Scientific_claims.wikitext"


def demo_documents(path: str | Path = DEMO_SOURCES) -> Iterator[Document]:
    """The shipped demo sources, split into sentences as the dataset splits them."""
    for record in read_jsonl(path):
        sentences = tuple(record["sentences"])
        yield Document(record["url"], record["url"], record["title"], "\n".join(sentences), sentences)


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
