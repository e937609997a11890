"""``side eval window``: how often the evidence window holds a complete gold evidence set.

For every claim of a WiCE-schema file that has gold evidence (``supporting_sentences``: a list of
alternative sets, each complete on its own), the window of :func:`side.verify.window.build_evidence_window`
is built at each budget, and the claim counts as covered when one whole set is inside it. Beside it,
in the same run, the head cut LLM userscripts send (the page's first 12,000 characters): a set is
covered when each of its sentences ends within the cut. Tokens are characters / 4 for both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from side.data import load_wice
from side.evaluation.verify import wice_query, wice_sentences
from side.verify.verifier import Query
from side.verify.window import (
    DEFAULT_CONTEXT_WEIGHT,
    DEFAULT_NEIGHBOUR_WEIGHT,
    DEFAULT_NEIGHBOURS,
    Encodes,
    build_evidence_window,
    window_scores,
)

__all__ = ["HEAD_CHARS", "DEFAULT_BUDGETS", "WindowItem", "window_items", "head_cut", "is_covered",
           "evaluate_windows"]

#: Characters of the page's head the peer userscripts send to their LLM.
HEAD_CHARS = 12_000
#: Budgets (tokens of source text) the evaluation prints by default.
DEFAULT_BUDGETS = (500, 750, 1000, 1500)


@dataclass(frozen=True)
class WindowItem:
    """A claim, its source's sentences, and the source's alternative gold evidence sets."""

    query: Query
    sentences: tuple[str, ...]
    gold_sets: tuple[frozenset[int], ...]


def window_items(path: str | Path, limit: int | None = None) -> list[WindowItem]:
    """The claims of a WiCE-schema file that have at least one non-empty gold set."""
    items = []
    for claim in load_wice(path):
        sets = tuple(frozenset(s) for s in claim.supporting_sentences if s)
        if sets:
            items.append(WindowItem(wice_query(claim), tuple(wice_sentences(claim)), sets))
        if limit is not None and len(items) >= limit:
            break
    return items


def head_cut(sentences: Sequence[str], chars: int = HEAD_CHARS) -> tuple[frozenset[int], int]:
    """The sentences that end within the first ``chars`` characters of the page (its sentences
    one a line), and the cut's tokens (characters / 4)."""
    inside, end = set(), 0
    for i, sentence in enumerate(sentences):
        end += len(sentence) + (1 if i else 0)
        if end > chars:
            break
        inside.add(i)
    text_chars = min(chars, sum(len(s) for s in sentences) + max(0, len(sentences) - 1))
    return frozenset(inside), -(-text_chars // 4)


def is_covered(window: frozenset[int] | set[int], gold_sets: Sequence[frozenset[int]]) -> bool:
    """Whether one complete gold set lies inside ``window``."""
    return any(gold and gold <= window for gold in gold_sets)


def _coverage_rows(covered: dict[int, int], tokens: dict[int, list[int]], n: int) -> list[dict[str, Any]]:
    return [{"budget": b, "coverage": covered[b] / n if n else 0.0,
             "tokens_per_claim": float(np.mean(tokens[b])) if n else 0.0} for b in covered]


def evaluate_windows(items: Sequence[WindowItem], budgets: Sequence[int] = DEFAULT_BUDGETS,
                     neighbours: int = DEFAULT_NEIGHBOURS, context_weight: float = DEFAULT_CONTEXT_WEIGHT,
                     encoder: Encodes | None = None, progress: Callable[[int], Any] | None = None,
                     neighbour_weight: float = DEFAULT_NEIGHBOUR_WEIGHT) -> dict[str, Any]:
    """Gold-set coverage and mean tokens of the window at each budget, of a plain window (the
    claim's BM25, one neighbour either side, nothing else) at the same budgets, and of the head cut."""
    designs = {"window": (neighbours, context_weight, neighbour_weight, encoder),
               "plain_bm25_neighbours": (1, 0.0, 0.0, None)}
    covered = {name: {b: 0 for b in budgets} for name in designs}
    tokens: dict[str, dict[int, list[int]]] = {name: {b: [] for b in budgets} for name in designs}
    head_covered, head_tokens = 0, []
    for item in items:
        for name, (width, context, smoothing, dense) in designs.items():
            scores = window_scores(item.query, item.sentences, dense, context, neighbour_weight=smoothing)
            for budget in budgets:
                window = build_evidence_window(item.query, item.sentences, scores, budget, width)
                covered[name][budget] += is_covered(set(window.sentences), item.gold_sets)
                tokens[name][budget].append(window.tokens)
        head, head_count = head_cut(item.sentences)
        head_covered += is_covered(head, item.gold_sets)
        head_tokens.append(head_count)
        if progress:
            progress(1)
    n = len(items)
    return {
        "claims": n, "neighbours": neighbours, "neighbour_weight": neighbour_weight, "context_weight": context_weight,
        "scores": "bm25+cosine" if encoder is not None else "bm25",
        **{name: _coverage_rows(covered[name], tokens[name], n) for name in designs},
        "head_cut": {"chars": HEAD_CHARS, "coverage": head_covered / n if n else 0.0,
                     "tokens_per_claim": float(np.mean(head_tokens)) if n else 0.0},
    }
