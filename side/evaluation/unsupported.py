"""Token-level quality of the unsupported-words tagger on WiCE's ``non_supported_tokens`` files.

Each record is a partially supported sub-claim, its tokens, and one bool per token: true where
annotators found the cited page does not back the token. The positive class is "unsupported";
precision, recall and F1 are counted over all tokens of all claims (micro average).

Two baselines are measured in the same run, on the same tokens:

* ``absent_from_page``: a content token is unsupported when its word form (lower-cased, lightly
  stemmed, numbers normalised) is nowhere in the page;
* ``all_content``: every content token (not a function word or punctuation) is unsupported.

The tagger reads what the verifier reads at decision time: the verifier's candidate sentences
(bi-encoder + BM25, best first) and the whole page.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from side.data import WICE_META_PREFIX, read_jsonl
from side.errors import InputError
from side.verify.unsupported import (
    FEATURES,
    ClaimToken,
    PageWords,
    UnsupportedTagger,
    align_tokens,
    retrieve_evidence,
    token_features,
)

__all__ = [
    "TokenClaim", "load_token_claims", "ClaimExample", "Retrieve", "retriever", "claim_examples",
    "token_scores", "absent_from_page", "all_content", "evaluate_unsupported", "score_examples",
]

if TYPE_CHECKING:
    from side.retrieval.encoder import EmbeddingCache


@dataclass(frozen=True)
class TokenClaim:
    """A WiCE sub-claim with its annotated tokens and the sentences of the cited page."""

    id: str
    claim: str
    tokens: tuple[str, ...]
    unsupported: tuple[bool, ...]
    page: tuple[str, ...]


def load_token_claims(path: str | Path, limit: int | None = None) -> list[TokenClaim]:
    """The records of a ``non_supported_tokens`` file; a record whose labels do not match its
    tokens is an :class:`InputError` naming it (never silently cut)."""
    out: list[TokenClaim] = []
    for record in read_jsonl(path):
        if limit is not None and len(out) >= limit:
            break
        try:
            tokens = tuple(str(t) for t in record["claim_tokens"])
            labels = tuple(bool(b) for b in record["non_supported_spans"])
            claim = str(record["claim"])
        except (KeyError, TypeError) as exc:
            raise InputError(f"{path}: record {len(out) + 1} lacks claim/claim_tokens/non_supported_spans") from exc
        if len(tokens) != len(labels):
            raise InputError(f"{path}: record {len(out) + 1} has {len(tokens)} tokens but {len(labels)} labels")
        page = tuple(s.removeprefix(WICE_META_PREFIX) for s in record.get("evidence", []))
        out.append(TokenClaim(str(record.get("meta", {}).get("id", len(out))), claim, tokens, labels, page))
    return out


@dataclass
class ClaimExample:
    """A claim's tokens with their tagger features (rows of :data:`FEATURES`) and gold labels."""

    claim: TokenClaim
    tokens: list[ClaimToken]
    features: np.ndarray

    @property
    def gold(self) -> np.ndarray:
        return np.array(self.claim.unsupported, dtype=bool)

    @property
    def group(self) -> str:
        """The WiCE claim the sub-claim comes from (``train31212-2`` -> ``train31212``): sub-claims
        of one claim share a page, so cross-validation keeps them together."""
        return self.claim.id.rsplit("-", 1)[0]


#: The evidence sentences for a claim and its page, best first (:func:`retrieve_evidence` with an encoder).
Retrieve = Callable[[str, list[str]], list[str]]


def retriever(embeddings: EmbeddingCache, k: int = 8) -> Retrieve:
    """The verifier's candidate selection (bi-encoder + BM25), as the tagger sees it at decision time."""
    return lambda claim, page: retrieve_evidence(claim, page, embeddings, k)


def claim_examples(claims: list[TokenClaim], retrieve: Retrieve,
                   progress: Callable[[int], object] | None = None) -> list[ClaimExample]:
    """Features of every claim token, against the evidence the verifier would pick for the claim."""
    out = []
    for claim in claims:
        page = list(claim.page)
        evidence = retrieve(claim.claim, page)
        tokens = align_tokens(claim.claim, claim.tokens)
        out.append(ClaimExample(claim, tokens, token_features(tokens, evidence, page, PageWords.of(page))))
        if progress:
            progress(1)
    return out


def token_scores(gold: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """Precision, recall and F1 of the positive (unsupported) class."""
    tp, called, wanted = float(np.sum(gold & predicted)), float(predicted.sum()), float(gold.sum())
    precision = tp / called if called else 0.0
    recall = tp / wanted if wanted else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "predicted": int(predicted.sum())}


def _column(example: ClaimExample, name: str) -> np.ndarray:
    return example.features[:, FEATURES.index(name)].astype(bool)


def _content(example: ClaimExample) -> np.ndarray:
    return ~(_column(example, "function_word") | _column(example, "punctuation"))


def absent_from_page(example: ClaimExample) -> np.ndarray:
    """Baseline: a content token whose word form is nowhere in the page."""
    return _content(example) & ~_column(example, "in_page")


def all_content(example: ClaimExample) -> np.ndarray:
    """Baseline: every content token."""
    return _content(example)


def _tagged(tagger: UnsupportedTagger, example: ClaimExample) -> np.ndarray:
    x = example.features
    z = ((x - np.array(tagger.mean)) / np.array(tagger.scale)) @ np.array(tagger.coef) + tagger.intercept
    probs = 1.0 / (1.0 + np.exp(-np.clip(z, -30.0, 30.0)))
    return (probs >= tagger.threshold) & ~_column(example, "punctuation")


def evaluate_unsupported(tagger: UnsupportedTagger, embeddings: EmbeddingCache, path: str | Path,
                         limit: int | None = None, k: int = 8,
                         progress: Callable[[int], object] | None = None) -> dict[str, Any]:
    """Token P/R/F1 of the tagger and both baselines on one ``non_supported_tokens`` file."""
    examples = claim_examples(load_token_claims(path, limit), retriever(embeddings, k), progress)
    if not examples:
        raise InputError(f"{path}: no claims to evaluate")
    return score_examples(tagger, examples)


def score_examples(tagger: UnsupportedTagger, examples: list[ClaimExample]) -> dict[str, Any]:
    """Token P/R/F1 of the tagger and both baselines on claims whose features are computed."""
    gold = np.concatenate([e.gold for e in examples])
    methods = {"tagger": lambda e: _tagged(tagger, e), "baseline_absent_from_page": absent_from_page,
               "baseline_all_content": all_content}
    results: dict[str, Any] = {"claims": len(examples), "tokens": int(gold.size),
                               "unsupported_tokens": int(gold.sum())}
    for name, method in methods.items():
        results[name] = token_scores(gold, np.concatenate([method(e) for e in examples]))
    return results
