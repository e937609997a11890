"""Cheap relevance of a few pages to a claim: which of an article's own sources to verify first.

The verifier (a cross-encoder) is the costly step; before it, the other sources an article
cites are ordered by how well their best sentence matches the claim, so that at most N of them
are verified per weak claim (see :meth:`side.pipeline.Pipeline`). Two orders, measured against
each other by ``side eval retrieval own-sources``: BM25 over all the pages' sentences (the
page's best sentence score), and the bi-encoder's best sentence cosine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from side.retrieval.sparse import SparseIndex

__all__ = ["bm25_max", "cosine_max", "order_by"]


def bm25_max(query: str, pages: Sequence[Sequence[str]]) -> list[float]:
    """Each page's best BM25 sentence score for ``query`` (0.0 where no sentence shares a word);
    IDF is over all the pages' sentences together, so the scores compare across pages."""
    owner = [n for n, page in enumerate(pages) for _ in page]
    sentences = [s for page in pages for s in page]
    best = [0.0] * len(pages)
    if not sentences:
        return best
    ids, scores = SparseIndex.build(sentences).retrieve([query], len(sentences))
    for i, score in zip(ids[0], scores[0], strict=False):
        if i >= 0:
            best[owner[i]] = max(best[owner[i]], float(score))
    return best


def cosine_max(embed: Any, query: str, pages: Sequence[Sequence[str]]) -> list[float]:
    """Each page's best sentence cosine to ``query`` by the bi-encoder ``embed`` (a callable from
    texts to unit vectors, e.g. ``EmbeddingCache.encode``); -1.0 for a page without sentences."""
    sentences = [s for page in pages for s in page]
    if not sentences:
        return [-1.0] * len(pages)
    vectors = np.asarray(embed(sentences))
    claim = np.asarray(embed([query]))[0]
    cos = vectors @ claim
    out, start = [], 0
    for page in pages:
        out.append(float(cos[start : start + len(page)].max()) if page else -1.0)
        start += len(page)
    return out


def order_by(scores: Sequence[float]) -> list[int]:
    """Page positions, best score first (ties keep page order)."""
    return sorted(range(len(scores)), key=lambda n: -scores[n])
