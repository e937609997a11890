"""Does Side tell a readable page from a paywall, a wall, a shell or a foreign page?

:func:`side.sources.states.assess_source` decides whether a fetched page is the cited source
or something standing in for it. This module scores it on real pages from the shared data
(``fixtures/web_html``: the 181 pages of the article-extraction benchmark and trafilatura's
110 test pages), labelled by hand in ``data/source_states.json`` (file -> state, with a note
why). The pages are read where they lie; the repository holds only the labels.

Reported: precision and recall per state, and the confusion of *readable* vs *cannot check*,
where precision is what matters (a readable page called unreadable hides a real failed
citation). States without a real example in the data are named, so a reader knows which rules
only the unit tests (``tests/test_source_states.py``) exercise.

:func:`evaluate_wice_cannot_check` answers another question on real citations: of WiCE dev's
claims (Wikipedia sentences with the text of the page each cites), how many would end as
*cannot check*, and why: each page is assessed as a fetched page is, then pre-checked as the
verifier does before scoring (an empty source, one not in English).
"""

from __future__ import annotations

import gzip
import json
import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from side.data import WICE_LABELS, WICE_META_PREFIX, WiceClaim, load_wice
from side.errors import DataNotFoundError, InputError, SourceFetchError
from side.sources.states import REASONS, Assessment, SourceState

if TYPE_CHECKING:
    from side.sources.fetch import Source

__all__ = [
    "WEB_HTML_SUBDIR", "LABELS_FILE", "Label", "PageOutcome", "StateScore", "Confusion", "SourcesReport",
    "load_labels", "evaluate_sources", "WICE_DEV", "CHECKABLE", "VERIFIER", "WICE_LABELS", "verifier_cannot_check",
    "CitationOutcome", "CannotCheckReport", "evaluate_wice_cannot_check",
]

log = logging.getLogger(__name__)

#: Where the labelled pages lie under the shared data directory.
WEB_HTML_SUBDIR = Path("fixtures") / "web_html"
#: The hand-made labels shipped with Side.
LABELS_FILE = Path(__file__).parent / "data" / "source_states.json"
_GROUND_TRUTH = Path("article_extraction_benchmark") / "ground-truth.json"


@dataclass(frozen=True)
class Label:
    """One labelled page: its path under :data:`WEB_HTML_SUBDIR`, true state, and why."""

    path: str
    state: SourceState
    note: str


@dataclass(frozen=True)
class PageOutcome:
    path: str
    label: SourceState
    predicted: SourceState
    evidence: str
    seconds: float

    @property
    def correct(self) -> bool:
        return self.label is self.predicted

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "label": self.label.value, "predicted": self.predicted.value,
                "evidence": self.evidence, "seconds": round(self.seconds, 4)}


@dataclass(frozen=True)
class StateScore:
    """Precision and recall of one state (None where nothing was predicted or labelled)."""

    state: SourceState
    support: int
    predicted: int
    correct: int

    @property
    def precision(self) -> float | None:
        return self.correct / self.predicted if self.predicted else None

    @property
    def recall(self) -> float | None:
        return self.correct / self.support if self.support else None

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state.value, "support": self.support, "predicted": self.predicted,
                "correct": self.correct, "precision": self.precision, "recall": self.recall}


@dataclass(frozen=True)
class Confusion:
    """Readable vs cannot-check, with *cannot check* as the positive class."""

    readable_as_readable: int
    readable_as_unreadable: int
    unreadable_as_readable: int
    unreadable_as_unreadable: int

    @property
    def precision(self) -> float | None:
        called = self.unreadable_as_unreadable + self.readable_as_unreadable
        return self.unreadable_as_unreadable / called if called else None

    @property
    def recall(self) -> float | None:
        actual = self.unreadable_as_unreadable + self.unreadable_as_readable
        return self.unreadable_as_unreadable / actual if actual else None

    def to_dict(self) -> dict[str, Any]:
        return {"readable_as_readable": self.readable_as_readable,
                "readable_as_cannot_check": self.readable_as_unreadable,
                "cannot_check_as_readable": self.unreadable_as_readable,
                "cannot_check_as_cannot_check": self.unreadable_as_unreadable,
                "cannot_check_precision": self.precision, "cannot_check_recall": self.recall}


@dataclass
class SourcesReport:
    pages: int
    states: list[StateScore]
    confusion: Confusion
    #: States no labelled page has: only the unit tests exercise their rules.
    missing: list[SourceState]
    mean_ms: float
    outcomes: list[PageOutcome] = field(default_factory=list, repr=False)

    @property
    def accuracy(self) -> float:
        return sum(o.correct for o in self.outcomes) / len(self.outcomes) if self.outcomes else 0.0

    @property
    def errors(self) -> list[PageOutcome]:
        return [o for o in self.outcomes if not o.correct]

    def to_dict(self, per_page: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "pages": self.pages, "accuracy": self.accuracy, "mean_ms": round(self.mean_ms, 2),
            "states": [s.to_dict() for s in self.states], "confusion": self.confusion.to_dict(),
            "no_real_example": [s.value for s in self.missing], "errors": [o.to_dict() for o in self.errors],
        }
        if per_page:
            out["per_page"] = [o.to_dict() for o in self.outcomes]
        return out


def load_labels(path: Path = LABELS_FILE) -> list[Label]:
    """The labels file: ``{"pages": {path: {"state": ..., "note": ...}}}``; a bad one is an InputError."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        pages = data["pages"]
        labels = [Label(str(p), SourceState(v["state"]), str(v.get("note") or "")) for p, v in pages.items()]
    except FileNotFoundError as exc:
        raise InputError(f"labels file not found: {path}") from exc
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"bad labels file {path}: {type(exc).__name__}: {exc}") from exc
    if not labels:
        raise InputError(f"labels file {path} labels no page")
    return labels


def _urls(root: Path) -> dict[str, str]:
    """Original URLs of the benchmark pages (trafilatura's test pages have none: a stand-in is made)."""
    path = root / _GROUND_TRUTH
    if not path.is_file():
        return {}
    truth = json.loads(path.read_text(encoding="utf-8"))
    return {f"article_extraction_benchmark/html/{key}.html.gz": str(v.get("url") or "") for key, v in truth.items()}


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def _score(outcomes: list[PageOutcome]) -> tuple[list[StateScore], Confusion]:
    support = Counter(o.label for o in outcomes)
    predicted = Counter(o.predicted for o in outcomes)
    correct = Counter(o.label for o in outcomes if o.correct)
    states = [StateScore(s, support[s], predicted[s], correct[s]) for s in SourceState]
    readable = SourceState.READABLE
    confusion = Confusion(
        sum(o.label is readable and o.predicted is readable for o in outcomes),
        sum(o.label is readable and o.predicted is not readable for o in outcomes),
        sum(o.label is not readable and o.predicted is readable for o in outcomes),
        sum(o.label is not readable and o.predicted is not readable for o in outcomes),
    )
    return states, confusion


def evaluate_sources(data_dir: Path, labels_path: Path = LABELS_FILE, limit: int | None = None) -> SourcesReport:
    """Assess every labelled page under ``data_dir`` (the first ``limit``) as the fetcher would."""
    from side.sources.fetch import assess_html

    root = Path(data_dir) / WEB_HTML_SUBDIR
    if not root.is_dir():
        raise DataNotFoundError(f"web pages not found at {root} (set SIDE_DATA_DIR or --data-dir)")
    labels = load_labels(labels_path)
    urls = _urls(root)
    outcomes: list[PageOutcome] = []
    for label in labels[:limit] if limit else labels:
        path = root / label.path
        if not path.is_file():
            log.warning("labelled page %s is missing; skipped", path)
            continue
        started = time.perf_counter()
        _source, assessment = assess_html(_read(path), urls.get(label.path) or f"https://{path.stem}/")
        outcomes.append(PageOutcome(label.path, label.state, assessment.state, assessment.evidence,
                                    time.perf_counter() - started))
    if not outcomes:
        raise DataNotFoundError(f"none of the labelled pages is under {root}")
    states, confusion = _score(outcomes)
    labelled = {label.state for label in labels}
    missing = [s for s in SourceState if s not in labelled]
    mean_ms = 1000 * sum(o.seconds for o in outcomes) / len(outcomes)
    return SourcesReport(len(outcomes), states, confusion, missing, mean_ms, outcomes)


# --- cannot check on real citations: WiCE dev ------------------------------------------------------

#: WiCE's dev claims under the shared data directory (the cited pages' text, as sentences).
WICE_DEV = Path("wice") / "claim_dev.jsonl"
#: The outcome of a citation that can be checked.
CHECKABLE = "checkable"
#: Prefix of the outcomes the verifier itself decides (after the source's assessment).
VERIFIER = "verifier: "


def verifier_cannot_check(claim: str, sentences: list[str] | tuple[str, ...]) -> str:
    """Why the verifier would not score ``claim`` against ``sentences`` ("" when it would).

    The verifier's own checks before any model runs (:func:`side.verify.verifier.cannot_check_reason`),
    without loading the model, so that a whole data set is counted in seconds.
    """
    from side.verify.verifier import bounded_sentences, cannot_check_reason

    return cannot_check_reason(claim, bounded_sentences(sentences))


@dataclass(frozen=True)
class CitationOutcome:
    """One citation's fate before scoring: checkable, or which reason makes it cannot check."""

    id: str
    #: WiCE's gold label of the claim.
    label: str
    #: :data:`CHECKABLE`, a :class:`SourceState` value, or :data:`VERIFIER` + the verifier's reason.
    outcome: str
    #: What showed it (the assessment's evidence), "" for checkable citations.
    evidence: str = ""

    @property
    def cannot_check(self) -> bool:
        return self.outcome != CHECKABLE

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "label": self.label, "outcome": self.outcome, "evidence": self.evidence}


@dataclass
class CannotCheckReport:
    """How many citations of a data set end as cannot check, and why."""

    data: str
    outcomes: list[CitationOutcome]
    mean_ms: float

    @property
    def citations(self) -> int:
        return len(self.outcomes)

    @property
    def cannot_check(self) -> int:
        return sum(o.cannot_check for o in self.outcomes)

    def counts(self) -> list[tuple[str, Counter[str]]]:
        """(outcome, count per gold label) with the label-free total under ``"all"``: checkable
        first, then the reasons, most frequent first."""
        by: dict[str, Counter[str]] = {}
        for o in self.outcomes:
            by.setdefault(o.outcome, Counter()).update(["all", o.label])
        return sorted(by.items(), key=lambda kv: (kv[0] != CHECKABLE, -kv[1]["all"], kv[0]))

    @staticmethod
    def reason(outcome: str) -> str:
        """An outcome in a patroller's words."""
        if outcome == CHECKABLE:
            return "the page reads as the cited source and the verifier scores it"
        if outcome.startswith(VERIFIER):
            return outcome.removeprefix(VERIFIER)
        return REASONS[SourceState(outcome)]

    def to_dict(self, per_citation: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "data": self.data, "citations": self.citations, "cannot_check": self.cannot_check,
            "mean_ms": round(self.mean_ms, 2),
            "outcomes": [{"outcome": name, "reason": self.reason(name), "citations": counts["all"],
                          "by_label": {label: counts[label] for label in WICE_LABELS},
                          "examples": [o.id for o in self.outcomes if o.outcome == name][:3]}
                         for name, counts in self.counts()],
        }
        if per_citation:
            out["per_citation"] = [o.to_dict() for o in self.outcomes]
        return out


def _wice_source(claim: WiceClaim) -> tuple[Source, Assessment]:
    """The cited page as Side would hold it: its sentences as text (WiCE's meta lines left out,
    its ``TITLE`` as the title), built as :func:`side.sources.fetch.source_from_text` builds a
    source from text, and assessed. A page with no text is assessed as the fetcher assesses one
    (an empty source: too little text)."""
    from side.sources.fetch import Source, source_from_text
    from side.sources.states import assess_source

    url = f"wice:{claim.id}"
    title = next((s.removeprefix(WICE_META_PREFIX + "TITLE:").strip() for s in claim.evidence
                  if s.startswith(WICE_META_PREFIX + "TITLE:")), "")
    text = "\n".join(s for s in claim.evidence if not s.startswith(WICE_META_PREFIX))
    try:
        source = source_from_text(text, url, title)
    except SourceFetchError:  # no text at all
        source = Source(url=url, final_url=url, title=title, date="", text="", content_type="text/plain")
    return source, assess_source(source)


def _wice_outcome(claim: WiceClaim) -> CitationOutcome:
    source, assessment = _wice_source(claim)
    if not assessment.readable:
        return CitationOutcome(claim.id, claim.label, assessment.state.value, assessment.evidence)
    why = verifier_cannot_check(claim.claim, source.sentences)
    return CitationOutcome(claim.id, claim.label, VERIFIER + why if why else CHECKABLE)


def evaluate_wice_cannot_check(path: Path, limit: int | None = None) -> CannotCheckReport:
    """Each WiCE claim's cited page, assessed as a fetched page is and then pre-checked as the
    verifier does: how many citations would end as cannot check, and why."""
    if not Path(path).is_file():
        raise DataNotFoundError(f"WiCE claims not found at {path} (set SIDE_DATA_DIR or --data-dir)")
    claims = load_wice(path)[:limit] if limit else load_wice(path)
    started = time.perf_counter()
    outcomes = [_wice_outcome(claim) for claim in claims]
    mean_ms = 1000 * (time.perf_counter() - started) / max(1, len(outcomes))
    return CannotCheckReport(str(path), outcomes, mean_ms)
