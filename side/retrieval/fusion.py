"""Results and fusion: one query's sparse and dense lists merged, passages grouped by document.

``rrf`` is reciprocal-rank fusion (Cormack et al. 2009, k=60). ``union`` keeps the union of both
top-k lists as Side does, ordered by the sum of each list's min-max normalised score (CombSUM; a
passage missing from a list gets 0 for it): normalised scores keep the score gaps that ranks
throw away.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from side.errors import InputError
from side.retrieval.corpus import Passage

__all__ = ["FUSIONS", "RRF_K", "DocumentHit", "Hit", "Ranked", "fuse", "group_by_document", "single"]

#: Reciprocal-rank fusion constant (Cormack et al. 2009).
RRF_K = 60
FUSIONS = ("union", "rrf")

@dataclass(frozen=True)
class Hit:
    """One retrieved passage; ranks are 1-based positions in each list (None: not in it)."""

    passage: Passage
    score: float
    sparse_rank: int | None = None
    dense_rank: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"passage": self.passage.to_dict(), "score": self.score,
                "sparse_rank": self.sparse_rank, "dense_rank": self.dense_rank}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Hit:
        return cls(Passage.from_dict(data["passage"]), float(data["score"]),
                   data.get("sparse_rank"), data.get("dense_rank"))


@dataclass(frozen=True)
class DocumentHit:
    """A retrieved document, scored by its best passage."""

    doc_id: str
    url: str
    title: str
    score: float
    best_passage: Passage
    passages: tuple[Hit, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "url": self.url, "title": self.title, "score": self.score,
                "best_passage": self.best_passage.to_dict(), "passages": [h.to_dict() for h in self.passages]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DocumentHit:
        return cls(data["doc_id"], data.get("url", ""), data.get("title", ""), float(data["score"]),
                   Passage.from_dict(data["best_passage"]),
                   tuple(Hit.from_dict(h) for h in data.get("passages", [])))


#: One ranked list: (passage id, score, sparse rank, dense rank).
Ranked = list[tuple[int, float, int | None, int | None]]


def _ranks(ids: np.ndarray) -> dict[int, int]:
    return {int(p): r for r, p in enumerate(ids, 1) if p >= 0}


def _minmax(ids: np.ndarray, scores: np.ndarray) -> dict[int, float]:
    valid = [(int(p), float(s)) for p, s in zip(ids, scores, strict=False) if p >= 0]
    if not valid:
        return {}
    low, high = min(s for _, s in valid), max(s for _, s in valid)
    span = high - low
    return {p: (s - low) / span if span > 0 else 1.0 for p, s in valid}


def fuse(sparse: tuple[np.ndarray, np.ndarray], dense: tuple[np.ndarray, np.ndarray],
         fusion: str = "union") -> Ranked:
    """Merge one query's sparse and dense (ids, scores) rows into one list, best first."""
    sparse_ranks, dense_ranks = _ranks(sparse[0]), _ranks(dense[0])
    if fusion == "rrf":
        score = {p: 1.0 / (RRF_K + r) for p, r in sparse_ranks.items()}
        for p, r in dense_ranks.items():
            score[p] = score.get(p, 0.0) + 1.0 / (RRF_K + r)
    elif fusion == "union":
        score = _minmax(*sparse)
        for p, s in _minmax(*dense).items():
            score[p] = score.get(p, 0.0) + s
    else:
        raise InputError(f"unknown fusion {fusion!r} ({', '.join(FUSIONS)})")
    order = sorted(score, key=lambda p: (-score[p], p))
    return [(p, score[p], sparse_ranks.get(p), dense_ranks.get(p)) for p in order]


def single(ids: np.ndarray, scores: np.ndarray, dense: bool) -> Ranked:
    return [(int(p), float(s), None if dense else r, r if dense else None)
            for r, (p, s) in enumerate(zip(ids, scores, strict=False), 1) if p >= 0]


def group_by_document(hits: Sequence[Hit], k: int | None = None) -> list[DocumentHit]:
    """Documents in order of their best passage (document score = best passage score)."""
    groups: dict[str, list[Hit]] = {}
    for hit in hits:
        groups.setdefault(hit.passage.doc_id, []).append(hit)
    docs = []
    for doc_id, members in groups.items():
        members.sort(key=lambda h: -h.score)
        best = members[0].passage
        docs.append(DocumentHit(doc_id, best.url, best.title, members[0].score, best, tuple(members)))
    docs.sort(key=lambda d: -d.score)
    return docs[:k] if k is not None else docs
