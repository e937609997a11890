"""How many lead claims real articles have, and what share of them their own body does not back.

PeopleProfiles (biographies) reports 20-22% of lead claims not supported by the article's body;
this measures the same share on the real articles the shared data holds (the wikitext fixtures
and the MediaWiki XML exports), with Side's lead check (:mod:`side.verify.lead`). There are no
gold labels for these articles: the figure is Side's own verdicts, counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from side.data import read_text_file
from side.errors import InputError
from side.extract.lead import read_lead
from side.verify.lead import LeadVerdict
from side.verify.levels import VerdictLevel

__all__ = ["ESCAPED", "ArticleOutcome", "LeadReport", "WIKITEXT_DIR", "XML_DIR", "articles", "evaluate_lead",
           "skip_reason"]

WIKITEXT_DIR = Path("fixtures/wikitext")
XML_DIR = Path("fixtures/mediawiki_xml")


@dataclass(frozen=True)
class ArticleOutcome:
    title: str
    lead_sentences: int
    cited: int
    body_sentences: int
    verdicts: tuple[LeadVerdict, ...]

    @property
    def levels(self) -> Counter[VerdictLevel]:
        return Counter(v.level for v in self.verdicts)

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "lead_sentences": self.lead_sentences, "cited": self.cited,
                "body_sentences": self.body_sentences, "levels": {str(k): n for k, n in self.levels.items()}}


@dataclass
class LeadReport:
    """Counts over all articles; shares are of the lead claims that could be checked."""

    articles: list[ArticleOutcome] = field(default_factory=list)
    seconds: float = 0.0
    #: Pages not read, by reason (counted, never silently dropped).
    skipped: Counter[str] = field(default_factory=Counter)

    def count(self, level: VerdictLevel | None = None) -> int:
        return sum(v.level is level or level is None for a in self.articles for v in a.verdicts)

    @property
    def checked(self) -> int:
        return self.count() - self.count(VerdictLevel.CANNOT_CHECK)

    def share(self, *levels: VerdictLevel) -> float:
        return sum(self.count(level) for level in levels) / self.checked if self.checked else 0.0

    def to_dict(self, per_article: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "articles": len(self.articles),
            "articles_with_lead_claims": sum(bool(a.verdicts) for a in self.articles),
            "lead_sentences": sum(a.lead_sentences for a in self.articles),
            "cited_lead_sentences": sum(a.cited for a in self.articles),
            "lead_claims": self.count(), "checked": self.checked,
            "levels": {str(level): self.count(level) for level in VerdictLevel},
            "share_not_supported": round(self.share(VerdictLevel.NOT_SUPPORTED), 4),
            "share_not_fully_supported": round(
                self.share(VerdictLevel.NOT_SUPPORTED, VerdictLevel.PARTIALLY_SUPPORTED), 4),
            "skipped": dict(self.skipped), "seconds": round(self.seconds, 1),
        }
        if per_article:
            data["per_article"] = [a.to_dict() for a in self.articles]
        return data


def articles(data_dir: Path, paths: Iterable[Path] = ()) -> Iterator[tuple[str, str]]:
    """(title, wikitext) of each article: the given files, else the shared data's real articles
    (the wikitext fixtures, then each XML export's pages, the longest text per title)."""
    given = list(paths)
    if given:
        for path in given:  # read as `side lead` reads them: a file that is not UTF-8 is refused
            yield path.stem.replace("_", " ").replace("-", " "), read_text_file(path)
        return
    folder = data_dir / WIKITEXT_DIR
    if not folder.is_dir():
        raise InputError(f"no wikitext fixtures at {folder} (set SIDE_DATA_DIR or --data-dir)")
    for path in sorted(folder.glob("*.txt")):
        yield path.stem.replace("_", " ").replace("-", " "), path.read_text(encoding="utf-8", errors="replace")
    yield from _xml_articles(data_dir / XML_DIR)


def _xml_articles(folder: Path) -> Iterator[tuple[str, str]]:
    from side.extract.dump import iter_pages

    longest: dict[str, str] = {}
    for path in sorted(folder.glob("*.xml")) if folder.is_dir() else []:
        for page in iter_pages(path):
            if page.namespace == 0 and len(page.text) > len(longest.get(page.title, "")):
                longest[page.title] = page.text
    yield from longest.items()


#: Why a page is not read: its markup is XML-escaped (``&lt;ref&gt;``), as in a dump read without
#: unescaping; MediaWiki would show such refs as text, so its lead would look uncited throughout.
ESCAPED = "XML-escaped wikitext"


def skip_reason(wikitext: str) -> str:
    """Why a page's lead would not be measured as an article's, or ""."""
    return ESCAPED if "&lt;ref" in wikitext and "<ref" not in wikitext else ""


def evaluate_lead(check: Callable[[Any], list[LeadVerdict]], pages: Iterable[tuple[str, str]],
                  progress: Callable[[int], object] | None = None) -> LeadReport:
    """Read each article's lead and body, check its uncited lead claims with ``check``."""
    import time

    started = time.monotonic()
    report = LeadReport()
    for title, wikitext in pages:
        reason = skip_reason(wikitext)
        if reason:
            report.skipped[reason] += 1
            continue
        lead = read_lead(wikitext, title)
        verdicts = check(lead) if lead.claims else []
        report.articles.append(ArticleOutcome(title, lead.sentences, lead.cited, len(lead.body), tuple(verdicts)))
        if progress:
            progress(1)
    report.seconds = time.monotonic() - started
    return report
