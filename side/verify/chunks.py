"""Chunks of consecutive sentences: the premises a document-level cross-encoder judges.

A Wikipedia claim often needs two or three sentences of its source together (a name in one, the
date in the next), and a single sentence cut at 128 tokens cannot show that. Following MiniCheck
(Tang et al., 2024) and WiCE's chunk setting, a claim is judged against chunks of consecutive
sentences, each grown around a retrieved sentence up to a word budget, and the document's score
is the best chunk's. Words, not word pieces, set the budget, so readers and training need no
tokenizer to cut chunks; :data:`CHUNK_WORDS` words is about 200 of MiniLM's word pieces, which
with the claim and its context fits the cross-encoder's 256 tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["CHUNK_WORDS", "MAX_CHUNKS", "Span", "chunk_around", "chunk_spans", "chunk_text"]

#: Words of one chunk at most (a single longer sentence is a chunk of its own, cut by the model's limit).
CHUNK_WORDS = 150
#: Chunks judged per (claim, source) at inference: around the best retrieved sentences, best first.
MAX_CHUNKS = 3

#: A chunk: sentence indices [start, end) of the source.
Span = tuple[int, int]


def _words(sentence: str) -> int:
    return len(sentence.split())


def chunk_around(sentences: Sequence[str], core: Sequence[int], words: int = CHUNK_WORDS) -> Span:
    """The span holding the sentences ``core`` (indices, not empty) and as many of their
    neighbours as fit ``words``, taken one at a time after, then before, so the text reads on.

    The core itself is kept whole even when it is longer than the budget (the model cuts it).
    """
    start, end = min(core), max(core) + 1
    used = sum(_words(s) for s in sentences[start:end])
    grow_after = True
    while True:
        after = end < len(sentences) and used + _words(sentences[end]) <= words
        before = start > 0 and used + _words(sentences[start - 1]) <= words
        if not (after or before):
            return start, end
        if after and (grow_after or not before):
            used += _words(sentences[end])
            end += 1
        else:
            start -= 1
            used += _words(sentences[start])
        grow_after = not grow_after


def chunk_spans(sentences: Sequence[str], centres: Sequence[int], words: int = CHUNK_WORDS,
                most: int = MAX_CHUNKS) -> list[Span]:
    """At most ``most`` chunks around ``centres`` (best first); a centre that lies in a chunk
    already taken adds none, so the chunks do not repeat one another."""
    spans: list[Span] = []
    for centre in centres:
        if len(spans) >= most:
            break
        if not 0 <= centre < len(sentences) or any(a <= centre < b for a, b in spans):
            continue
        spans.append(chunk_around(sentences, [centre], words))
    return spans


def chunk_text(sentences: Sequence[str], span: Span) -> str:
    """The chunk's sentences joined as one passage."""
    return " ".join(s.strip() for s in sentences[span[0] : span[1]] if s.strip())
