"""Fit the unsupported-words tagger on WiCE's ``non_supported_tokens`` *train* file.

A logistic regression over the tagger's token features (:mod:`side.verify.unsupported`). Its
call threshold is chosen on the same train file, out of fold: 5-fold cross-validation grouped
by WiCE claim (sub-claims of one claim share a page) gives every token a probability from a
model that never saw its claim, and the threshold with the best token F1 on those is kept.
Dev is only for reporting (``side eval verify unsupported``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from side.evaluation.unsupported import ClaimExample, claim_examples, load_token_claims, retriever, token_scores
from side.verify.unsupported import FEATURES, UnsupportedTagger

__all__ = ["WICE_TOKENS_TRAIN", "FOLDS", "REGULARISATION", "fit_tagger", "fit_examples"]

if TYPE_CHECKING:
    from side.retrieval.encoder import EmbeddingCache

log = logging.getLogger(__name__)

WICE_TOKENS_TRAIN = "wice/non_supported_tokens_train.jsonl"
#: Cross-validation folds for the threshold.
FOLDS = 5
#: Inverse regularisation strength of the logistic regression.
REGULARISATION = 1.0


def _fit(x: np.ndarray, y: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    mean, scale = x.mean(0), x.std(0) + 1e-6
    model = LogisticRegression(C=REGULARISATION, max_iter=2000, random_state=seed)
    model.fit((x - mean) / scale, y)
    return mean, scale, model.coef_[0], float(model.intercept_[0])


def _probabilities(x: np.ndarray, mean: np.ndarray, scale: np.ndarray, coef: np.ndarray,
                   intercept: float) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(((x - mean) / scale) @ coef + intercept, -30.0, 30.0)))


def _best_threshold(y: np.ndarray, probs: np.ndarray, callable_: np.ndarray) -> tuple[float, float]:
    """The probability cut with the best F1 (punctuation is never called unsupported)."""
    best = (0.5, -1.0)
    for cut in np.round(np.arange(0.05, 0.951, 0.01), 2):
        f1 = token_scores(y, (probs >= cut) & callable_)["f1"]
        if f1 > best[1]:
            best = (float(cut), f1)
    return best


def fit_tagger(embeddings: EmbeddingCache, path: str | Path, k: int = 8, seed: int = 0,
               progress: Callable[[int], object] | None = None) -> UnsupportedTagger:
    """The tagger fitted on ``path`` (a ``non_supported_tokens`` train file), threshold chosen out of fold."""
    started = time.perf_counter()
    examples = claim_examples(load_token_claims(path), retriever(embeddings, k), progress)
    tagger = fit_examples(examples, seed)
    tagger.info = {"data": "/".join(Path(path).parts[-2:]), "candidates": k, **tagger.info}
    log.info("unsupported-words tagger: threshold %.2f, out-of-fold token F1 %.3f, fitted in %.0f s",
             tagger.threshold, tagger.info["train_cv"]["f1"], time.perf_counter() - started)
    return tagger


def fit_examples(examples: list[ClaimExample], seed: int = 0) -> UnsupportedTagger:
    """The tagger fitted on claims whose token features are computed."""
    from sklearn.model_selection import GroupKFold

    x = np.concatenate([e.features for e in examples])
    y = np.concatenate([e.gold for e in examples])
    groups = np.concatenate([[e.group] * len(e.tokens) for e in examples])
    callable_ = x[:, FEATURES.index("punctuation")] == 0
    out_of_fold = np.zeros(len(y))
    for train, held in GroupKFold(n_splits=FOLDS).split(x, y, groups):
        out_of_fold[held] = _probabilities(x[held], *_fit(x[train], y[train], seed))
    threshold, _ = _best_threshold(y, out_of_fold, callable_)
    mean, scale, coef, intercept = _fit(x, y, seed)
    cv = token_scores(y, (out_of_fold >= threshold) & callable_)
    info = {
        "claims": len(examples), "tokens": int(len(y)), "unsupported_tokens": int(y.sum()),
        "regularisation": REGULARISATION, "folds": FOLDS, "seed": seed,
        "train_cv": {name: round(value, 4) for name, value in cv.items()},
    }
    return UnsupportedTagger(mean.tolist(), scale.tolist(), coef.tolist(), intercept, threshold, info)
