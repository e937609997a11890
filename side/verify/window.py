"""The evidence window: the passages of a source an LLM judge reads, chosen from the whole source.

A judge given the page's head (the first 12,000 characters, as LLM userscripts do) never sees
evidence that sits further down, and pays for navigation, cookie banners and boilerplate. The
window instead holds the sentences Side's own retrieval finds nearest the claim, each with its
neighbours (a pronoun's antecedent, the rest of a list), in page order, with every gap between
them marked by a line ``[…]`` so the judge knows the text is not contiguous. It is filled best
sentence first until a token budget is spent.

Tokens are counted as characters / 4 (:func:`count_tokens`): no tokenizer is loaded for it, and
the judge's own tokenizer is on the server, not here. For English web text and the tokenizers
of current chat models (Qwen, Gemma, Llama) that is close to, and usually above, the real count.

Relevance (:func:`window_scores`) is Side's evidence score (:func:`side.verify.evidence.relevance`:
page-standardized BM25 plus, when a bi-encoder is given, page-standardized cosine) for the claim,
plus a smaller share of the BM25 of the claim's context (title, section and the sentences before
it), which names what the claim's pronouns stand for, plus a share of the better neighbour's
score: a sentence's neighbours come with it when they too bear on the claim, rather than always
(which spends the budget on boilerplate beside the evidence). Chosen on WiCE train, never dev.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from side.verify.evidence import bm25_scores, standardized

if TYPE_CHECKING:
    from side.verify.verifier import Query

__all__ = [
    "DEFAULT_WINDOW_TOKENS", "DEFAULT_NEIGHBOURS", "DEFAULT_NEIGHBOUR_WEIGHT", "DEFAULT_CONTEXT_WEIGHT", "GAP",
    "EvidenceWindow",
    "count_tokens", "window_scores", "build_evidence_window", "render_window",
]

#: Tokens of source text in a window by default (characters / 4).
DEFAULT_WINDOW_TOKENS = 1000
#: Sentences kept either side of each chosen sentence, whatever they say. Chosen on WiCE train
#: (claims rebuilt from non_supported_tokens_train sub-claims, a complete gold set at 1,000
#: tokens): 0 with :data:`DEFAULT_NEIGHBOUR_WEIGHT` 0.990, 1 without it 0.977, 2 0.977.
DEFAULT_NEIGHBOURS = 0
#: Share of the better neighbour's score added to a sentence's: the sentence beside a strong one
#: comes next when it says something of the claim too (train: 0.2 0.990, 0.3 0.990, 0.5 0.990,
#: 0 0.980; 0.3 is best at 500 and 750 tokens).
DEFAULT_NEIGHBOUR_WEIGHT = 0.3
#: Weight of the claim's context (title, section, preceding sentences) beside the claim itself
#: (train at 1,000 tokens: 0 0.984, 0.25 0.990, 0.5 0.990, 0.75 0.987; 0.25 best at 500).
DEFAULT_CONTEXT_WEIGHT = 0.25
#: The line that stands for sentences of the source left out of the window.
GAP = "[…]"


class Encodes(Protocol):
    """Anything that embeds texts into unit vectors, one row each (an Encoder, an EmbeddingCache)."""

    def encode(self, texts: list[str], batch_size: int = ...) -> np.ndarray: ...


@dataclass(frozen=True)
class EvidenceWindow:
    """Passages of one source in page order, gaps marked, within a token budget."""

    #: The passages, one sentence a line, a line :data:`GAP` wherever sentences were left out.
    text: str
    #: Indices of the sentences in :attr:`text`, ascending.
    sentences: tuple[int, ...]
    #: :func:`count_tokens` of :attr:`text`.
    tokens: int
    #: The budget the window was built under.
    budget: int
    #: Sentences of the whole source.
    source_sentences: int = 0

    def covers(self, gold: Sequence[int] | set[int]) -> bool:
        """Whether every sentence of ``gold`` (one complete evidence set) is in the window."""
        return bool(gold) and set(gold) <= set(self.sentences)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["sentences"] = list(self.sentences)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvidenceWindow:
        return cls(text=str(data["text"]), sentences=tuple(int(i) for i in data["sentences"]),
                   tokens=int(data["tokens"]), budget=int(data["budget"]),
                   source_sentences=int(data.get("source_sentences", 0)))


def count_tokens(text: str) -> int:
    """Tokens of ``text`` as characters / 4, rounded up."""
    return math.ceil(len(text) / 4)


def render_window(sentences: Sequence[str], chosen: Iterable[int]) -> str:
    """The chosen sentences (indices into ``sentences``) in page order, one a line, :data:`GAP`
    before, between and after them wherever sentences of the source were left out."""
    lines: list[str] = []
    previous = -1
    for i in sorted(set(chosen)):
        if i > previous + 1:
            lines.append(GAP)
        lines.append(sentences[i])
        previous = i
    if lines and previous < len(sentences) - 1:
        lines.append(GAP)
    return "\n".join(lines)


def _context_text(query: Query) -> str:
    return " ".join(part for part in (query.title, query.section, query.context) if part)


def window_scores(query: Query, sentences: Sequence[str], encoder: Encodes | None = None,
                  context_weight: float = DEFAULT_CONTEXT_WEIGHT, lexical: np.ndarray | None = None,
                  neighbour_weight: float = DEFAULT_NEIGHBOUR_WEIGHT) -> np.ndarray:
    """Relevance of each sentence to the claim, higher first: standardized BM25 of the claim
    (``lexical`` when the caller has it), plus standardized bi-encoder cosine when ``encoder`` is
    given, plus ``context_weight`` times the standardized BM25 of the claim's context; then
    ``neighbour_weight`` times the better of the two adjacent sentences' scores is added."""
    texts = list(sentences)
    if not texts:
        return np.zeros(0)
    scores = standardized(bm25_scores(query.claim, texts) if lexical is None else lexical)
    if encoder is not None:
        vectors = encoder.encode(texts + [query.claim])
        scores = scores + standardized(vectors[:-1] @ vectors[-1])
    context = _context_text(query)
    if context_weight and context:
        scores = scores + context_weight * standardized(bm25_scores(context, texts))
    if neighbour_weight and len(scores) > 1:
        padded = np.r_[scores.min(), scores, scores.min()]
        scores = scores + neighbour_weight * np.maximum(padded[:-2], padded[2:])
    return scores


def _fits(sentences: Sequence[str], chosen: set[int], extra: Sequence[int], budget: int) -> bool:
    return count_tokens(render_window(sentences, [*chosen, *extra])) <= budget


def build_evidence_window(query: Query, sentences: Sequence[str], scores: np.ndarray | None = None,
                          budget: int = DEFAULT_WINDOW_TOKENS, neighbours: int = DEFAULT_NEIGHBOURS,
                          encoder: Encodes | None = None) -> EvidenceWindow:
    """The window of ``sentences`` for ``query`` within ``budget`` tokens (text and gap marks).

    Sentences are taken best first by ``scores`` (default :func:`window_scores`, with the
    bi-encoder ``encoder`` if given), each with up to ``neighbours`` sentences either side; a
    sentence whose neighbours no longer fit comes alone, one that does not fit at all is passed
    over for the next. A source that fits whole is returned whole, without gap marks.
    """
    texts = list(sentences)
    n = len(texts)
    whole = "\n".join(texts)
    if count_tokens(whole) <= budget:
        return EvidenceWindow(whole, tuple(range(n)), count_tokens(whole), budget, n)
    if scores is None:
        scores = window_scores(query, texts, encoder)
    if len(scores) != n:
        raise ValueError(f"{len(scores)} scores for {n} sentences")
    chosen: set[int] = set()
    for i in (int(i) for i in np.argsort(-np.asarray(scores), kind="stable")):
        if i in chosen:
            continue
        around = [j for j in range(i - neighbours, i + neighbours + 1) if 0 <= j < n and j not in chosen]
        for unit in (around, [i]):
            if _fits(texts, chosen, unit, budget):
                chosen.update(unit)
                break
        if count_tokens(render_window(texts, chosen)) >= budget - 2:
            break
    text = render_window(texts, sorted(chosen))
    return EvidenceWindow(text, tuple(sorted(chosen)), count_tokens(text), budget, n)
