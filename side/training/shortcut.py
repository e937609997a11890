"""Shortcut probes: can the label be told without reading the premise against the claim?

A cross-encoder learns whatever separates its labels most cheaply. When every titled pair is a
negative, "a title is present" is such a rule, and the model that learns it is useless on Wikipedia
claims, which always carry a title. Two probes look for such rules in a training set before any
fine-tuning is spent on it:

* **query only**: TF-IDF of what the model reads of the claim (title, section and context, with a
  marker for a present title) and a logistic regression;
* **premise length**: the premise's word and character counts and a logistic regression.

Both predict "supported" against the rest, out of fold, with folds split by document (the
``group`` of an example, or its premise), so a claim's twins never sit on both sides of a split.
An out-of-fold AUROC near 0.5 means the probe finds nothing; :data:`MAX_PROBE_AUROC` is the most a
training set may give before ``side train verifier`` refuses it.
"""

from __future__ import annotations

import logging
import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from side.training.trainset import Example

__all__ = ["MAX_PROBE_AUROC", "FILTER_TARGET", "FOLDS", "ProbeReport", "filter_shortcuts", "probe_examples",
           "query_text"]

log = logging.getLogger(__name__)

#: The most either probe may score (out-of-fold AUROC, supported against the rest) on a training set.
MAX_PROBE_AUROC = 0.60
FOLDS = 5
#: :func:`filter_shortcuts` drops examples until the query-only probe is at or below this (a margin
#: under :data:`MAX_PROBE_AUROC`, so the check's seeded sample passes too).
FILTER_TARGET = 0.57
#: At most this many examples per source enter a probe (a seeded sample): the probe's AUROC is
#: stable well below that, and TF-IDF over 150,000 pairs would cost minutes for nothing.
SAMPLE_PER_SOURCE = 6000


@dataclass(frozen=True)
class ProbeReport:
    """Out-of-fold AUROC of the two probes, over all examples and per source."""

    query_only: float
    premise_length: float
    examples: int
    by_source: dict[str, tuple[float, float, int]] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.query_only <= MAX_PROBE_AUROC and self.premise_length <= MAX_PROBE_AUROC

    def to_dict(self) -> dict:
        """JSON-ready; a source with one label only has no AUROC (None)."""
        return {
            "query_only_auroc": _rounded(self.query_only), "premise_length_auroc": _rounded(self.premise_length),
            "examples": self.examples, "max_auroc": MAX_PROBE_AUROC, "passed": self.passed,
            "by_source": {name: {"query_only_auroc": _rounded(q), "premise_length_auroc": _rounded(p), "examples": n}
                          for name, (q, p, n) in sorted(self.by_source.items())},
        }


def _rounded(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 4)


def query_text(example: Example) -> str:
    """What the cross-encoder reads of the claim, with a token for "a title is present"."""
    return f"{'__titled__ ' + example.title if example.title else '__untitled__'} {example.context}"


def _groups(examples: Sequence[Example]) -> np.ndarray:
    return np.array([ex.group if ex.group >= 0 else zlib.crc32(ex.passage.encode("utf-8")) for ex in examples])


def _length_features(examples: Sequence[Example]) -> np.ndarray:
    return np.array([[math.log1p(len(ex.passage.split())), math.log1p(len(ex.passage))] for ex in examples])


def _out_of_fold(make_x: Callable[[np.ndarray, np.ndarray], tuple[Any, Any]], y: np.ndarray, groups: np.ndarray,
                 seed: int) -> np.ndarray:
    """Out-of-fold P(supported), the features fitted on each fold's training part only."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    scores = np.zeros(len(y))
    folds = min(FOLDS, len(set(groups.tolist())))
    for train, held in GroupKFold(n_splits=folds).split(np.zeros(len(y)), y, groups):
        x_train, x_held = make_x(train, held)
        model = LogisticRegression(max_iter=1000, C=1.0, random_state=seed)
        model.fit(x_train, y[train])
        scores[held] = model.predict_proba(x_held)[:, 1]
    return scores


def _auroc(y: np.ndarray, scores: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, scores)) if 0 < y.sum() < len(y) else float("nan")


def _key(example: Example) -> tuple[str, str, str, str]:
    return example.title, example.context, example.passage, example.label


def _unique(examples: Sequence[Example]) -> list[Example]:
    """Each pair once: the trainer's in-domain copies would otherwise sit on both sides of a fold."""
    seen: set[tuple[str, str, str, str]] = set()
    out = []
    for ex in examples:
        if _key(ex) not in seen:
            seen.add(_key(ex))
            out.append(ex)
    return out


def _sample(examples: Sequence[Example], per_source: int, seed: int) -> list[Example]:
    rng = np.random.default_rng(seed)
    by_source: dict[str, list[Example]] = {}
    for ex in examples:
        by_source.setdefault(ex.source, []).append(ex)
    out: list[Example] = []
    for name in sorted(by_source):
        rows = by_source[name]
        if len(rows) > per_source:
            rows = [rows[i] for i in sorted(rng.choice(len(rows), per_source, replace=False))]
        out += rows
    return out


def probe_examples(examples: Sequence[Example], seed: int = 13,
                   per_source: int = SAMPLE_PER_SOURCE) -> ProbeReport:
    """Both probes over ``examples`` (a seeded sample of at most ``per_source`` per source)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    rows = _sample(_unique(examples), per_source, seed)
    if len(rows) < 2 * FOLDS:
        raise ValueError(f"{len(rows)} examples: too few to probe")
    y = np.array([ex.label == "S" for ex in rows], dtype=int)
    groups = _groups(rows)
    texts = [query_text(ex) for ex in rows]
    lengths = _length_features(rows)

    def tfidf(train: np.ndarray, held: np.ndarray) -> tuple[Any, Any]:
        vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=2, max_features=200_000, sublinear_tf=True)
        return vectorizer.fit_transform([texts[i] for i in train]), vectorizer.transform([texts[i] for i in held])

    query_scores = _out_of_fold(tfidf, y, groups, seed)
    length_scores = _out_of_fold(lambda train, held: (lengths[train], lengths[held]), y, groups, seed)
    by_source: dict[str, tuple[float, float, int]] = {}
    sources = np.array([ex.source for ex in rows])
    for name in sorted(set(sources.tolist())):
        mask = sources == name
        by_source[name] = (_auroc(y[mask], query_scores[mask]), _auroc(y[mask], length_scores[mask]), int(mask.sum()))
    report = ProbeReport(_auroc(y, query_scores), _auroc(y, length_scores), len(rows), by_source)
    log.info("shortcut probes: query-only AUROC %.3f, premise-length AUROC %.3f over %d examples",
             report.query_only, report.premise_length, report.examples)
    return report


def _tfidf_scores(examples: Sequence[Example], seed: int) -> np.ndarray:
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts = [query_text(ex) for ex in examples]
    y = np.array([ex.label == "S" for ex in examples], dtype=int)

    def tfidf(train: np.ndarray, held: np.ndarray) -> tuple[Any, Any]:
        vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=2, max_features=200_000, sublinear_tf=True)
        return vectorizer.fit_transform([texts[i] for i in train]), vectorizer.transform([texts[i] for i in held])

    return _out_of_fold(tfidf, y, _groups(examples), seed)


def filter_shortcuts(examples: Sequence[Example], seed: int = 13, target: float = FILTER_TARGET,
                     step: float = 0.05, max_rounds: int = 8) -> list[Example]:
    """``examples`` without those a query-only probe tells most easily (AFLite, Le Bras et al. 2020).

    Each round scores every example out of fold and drops the ``step`` share of each label whose
    label the probe gives the highest probability, until the probe's AUROC is at most ``target``.
    What is left can only be told by reading the premise: a general NLI hypothesis that gives its
    label away by a negation, or a titled WiCE claim that is never supported, no longer teaches the
    model that rule. The probe reads each pair once; a dropped pair goes with all its copies. Order
    is kept, so the trainer's seeded shuffle stays reproducible.
    """
    kept = _unique(examples)
    for round_ in range(max_rounds):
        y = np.array([ex.label == "S" for ex in kept], dtype=int)
        scores = _tfidf_scores(kept, seed + round_)
        auroc = _auroc(y, scores)
        log.info("shortcut filter round %d: %d examples, query-only AUROC %.3f", round_, len(kept), auroc)
        if not auroc > target:
            break
        confidence = np.where(y == 1, scores, 1 - scores)
        drop: set[int] = set()
        for label in (0, 1):
            idx = np.flatnonzero(y == label)
            n = int(len(idx) * step)
            drop.update(idx[np.argsort(-confidence[idx], kind="stable")[:n]].tolist())
        kept = [ex for i, ex in enumerate(kept) if i not in drop]
    keep = {_key(ex) for ex in kept}
    return [ex for ex in examples if _key(ex) in keep]
