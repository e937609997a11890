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
"""

from __future__ import annotations

import gzip
import json
import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from side.errors import DataNotFoundError, InputError
from side.sources.states import SourceState

__all__ = [
    "WEB_HTML_SUBDIR", "LABELS_FILE", "Label", "PageOutcome", "StateScore", "Confusion", "SourcesReport",
    "load_labels", "evaluate_sources",
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
    from side.sources.states import assess_html

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
