"""Fit the verifier's combiner and choose its flag thresholds.

The combiner is a logistic regression over the verifier's signals, fitted on data that is not
evaluated: WiCE *train* sub-claims against their cited page (label 1: the page supports at
least part of the claim) and against the same page with the gold evidence sentences and their
neighbours removed, or another claim's page (label 0: the page does not support the claim,
as in WiCE's not_supported), plus SciFact train claims against their cited abstracts.

Thresholds are then chosen on dev data, as the issue asks: ``flag_threshold`` is the score
under which half of WiCE dev's not_supported claims fall (``side verify`` flags below it), and
``report_threshold`` is Side's high-precision operating point (15% recall), for talk pages.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from side.data import load_scifact_claims, load_scifact_corpus, load_wice
from side.evaluation.verify import wice_query, wice_sentences
from side.training.trainset import SCIFACT_CORPUS, SCIFACT_TRAIN, WICE_TRAIN
from side.verify.verifier import FEATURES, Combiner, Query, Verdict, Verifier

__all__ = ["verdicts", "signal_matrix", "fit_combiner", "choose_thresholds"]

log = logging.getLogger(__name__)


def _wice_items(data_dir: Path, rng: random.Random) -> tuple[list, list[int]]:
    claims = load_wice(data_dir / WICE_TRAIN)
    items, labels = [], []
    for n, claim in enumerate(claims):
        query = wice_query(claim)
        sentences = list(claim.evidence)
        gold = claim.gold_sentences
        near = {j for i in gold for j in (i - 1, i, i + 1)}
        items.append((query, sentences))
        labels.append(1)
        stripped = [s for i, s in enumerate(sentences) if i not in near]
        if gold and stripped:
            items.append((query, stripped))
            labels.append(0)
        if n % 3 == 0:
            other = claims[rng.randrange(len(claims))]
            if other.evidence != claim.evidence:
                items.append((query, list(other.evidence)))
                labels.append(0)
    return items, labels


def _scifact_items(data_dir: Path) -> tuple[list, list[int]]:
    corpus = load_scifact_corpus(data_dir / SCIFACT_CORPUS)
    items, labels = [], []
    for claim in load_scifact_claims(data_dir / SCIFACT_TRAIN):
        for doc_id in claim.cited_doc_ids:
            if doc_id not in corpus:
                continue
            sets = claim.evidence.get(doc_id, [])
            items.append((Query(claim.claim), list(corpus[doc_id].sentences)))
            labels.append(int(bool(sets) and sets[0]["label"] == "SUPPORT"))
    return items, labels


def verdicts(verifier: Verifier, items: list, desc: str, batch: int = 16) -> Iterator[Verdict]:
    """Verdicts in input order, in batches under a progress bar (these passes take minutes on a CPU)."""
    from tqdm import tqdm

    for start in tqdm(range(0, len(items), batch), desc=desc, unit="batch"):
        yield from verifier.verify_many(items[start : start + batch])


def signal_matrix(verifier: Verifier, items: list) -> np.ndarray:
    rows = [[v.signals.get(f, 0.0) for f in FEATURES] for v in verdicts(verifier, items, "verifier signals")]
    return np.array(rows, dtype=np.float64)


def fit_combiner(verifier: Verifier, data_dir: str | Path, seed: int = 13) -> Combiner:
    """Fit the logistic combiner on WiCE train and SciFact train signals."""
    from sklearn.linear_model import LogisticRegression

    data_dir = Path(data_dir)
    rng = random.Random(seed)
    wice_items, wice_labels = _wice_items(data_dir, rng)
    sci_items, sci_labels = _scifact_items(data_dir)
    x = signal_matrix(verifier, wice_items + sci_items)
    y = np.array(wice_labels + sci_labels)
    mean, scale = x.mean(0), x.std(0) + 1e-6
    model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=1000, random_state=seed)
    model.fit((x - mean) / scale, y)
    info: dict[str, Any] = {"fitted_on": {"wice_train": len(wice_items), "scifact_train": len(sci_items)},
                            "train_accuracy": float(model.score((x - mean) / scale, y))}
    log.info("combiner: %s", dict(zip(FEATURES, np.round(model.coef_[0], 3), strict=False)))
    return Combiner(mean.tolist(), scale.tolist(), model.coef_[0].tolist(), float(model.intercept_[0]), info=info)


def choose_thresholds(verifier: Verifier, wice_dev: str | Path) -> dict[str, float]:
    """Scores under which 50% (flag) and 15% (report) of not_supported dev claims fall."""
    claims = load_wice(wice_dev)
    items = [(wice_query(c), wice_sentences(c)) for c in claims]
    scores = np.array([v.score for v in verdicts(verifier, items, "dev thresholds")])
    bad = np.sort(scores[np.array([c.label == "not_supported" for c in claims])])
    pick = lambda share: float(bad[max(0, int(np.ceil(share * len(bad))) - 1)])
    return {"flag_threshold": pick(0.5), "report_threshold": pick(0.15)}
