"""Sentences and passages: the units Side scores.

Side splits a cited source into ~100-word passages with overlap so that evidence spanning a
window boundary is still seen whole by the cross-encoder; sentences are the unit of Evidence
(SciFact keeps at most three rationale sentences). Splitting is done per paragraph so that the
sentence splitter's cost stays linear in the size of the page.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

__all__ = [
    "MAX_PARAGRAPH_CHARS", "is_one_sentence", "normalize_space", "split_sentences", "count_words", "Window",
    "window_sentences", "truncate_left",
]

log = logging.getLogger(__name__)

#: Longest paragraph handed to the sentence splitter in one piece; longer ones are cut first.
MAX_PARAGRAPH_CHARS = 5000

_WORD = re.compile(r"\S+")
_SPACES = re.compile(r"[ \t\u00a0]+")
#: Where the sentence splitter may end a sentence: terminal punctuation (Latin, Arabic, Urdu,
#: CJK, full-width and small forms, double marks such as "‼" and "⁉"), a closing bracket (list
#: items), double quotes. Every character Bling Fire ends a sentence at is here (found by trying
#: each one; ``tests/test_text.py`` tries them again).
_SPLIT_MARKS = re.compile(
    "[.!?\u2026\u3002\uff01\uff1f)\"\u201c\u201d"
    "\u01c3\u061f\u06d4\u2024\u203c\u203d\u2048\u2049\u2404\ufe52\uff0e\uff61]")
#: One final full stop, question or exclamation mark (the splitter may split a run of them).
_FINAL_MARK = re.compile(r"[.!?]?\s*$")

#: What Bling Fire cannot be handed as it is: NUL and lone surrogates.
_UNENCODABLE = re.compile("[\0\ud800-\udfff]")

_local = threading.local()


@functools.cache
def _bling_fire() -> Callable[[str], str] | None:
    """Bling Fire's ``text_to_sentences``, or None where its native library does not load.

    Its wheel carries a library for x86-64 only; on an ARM machine (a Mac with Apple silicon, an
    aarch64 server) it cannot load, and Side splits with pysbd instead: the sentences Side gave
    before Bling Fire, ~20x slower, verdicts within a refit's spread of Bling Fire's
    (``benchmarks/splitters.py --verdicts 349``).
    """
    try:
        import blingfire
    except (ImportError, OSError) as exc:
        log.warning("Bling Fire does not load on this machine (%s); splitting sentences with pysbd, "
                    "about 20x slower", exc)
        return None
    return cast(Callable[[str], str], blingfire.text_to_sentences)


def _split_chunk(chunk: str) -> list[str]:
    """The sentences Bling Fire finds in one paragraph chunk, each as it stands in the chunk.

    Bling Fire (Microsoft's finite-state splitter, C++), chosen over pysbd: ~20x less CPU per
    paragraph, and closer to the sentences of pages cited on Wikipedia. On WiCE train's evidence
    (42,885 sentences of cited pages, joined four at a time) it finds their boundaries at
    precision 0.952 and recall 0.952 against pysbd's 0.927 and 0.945, and splits 0.9% of single
    sentences where pysbd splits 1.8% (``benchmarks/splitters.py``). Where they differ, pysbd
    ended sentences before a closing quote and at German abbreviations; Bling Fire sometimes
    after a title's abbreviation ("It ended. Prof. Xavier agreed." gives "Prof." alone) and
    sometimes not before one ("He left. Dr. Smith came." stays whole), and it does not end a
    sentence before one that starts with a digit ("the year. 2013 saw") or after a short word it
    takes for an abbreviation (German "ab.", "alt.").

    Its sentences are the chunk's own characters, line breaks between them. It reads UTF-8 as a
    C string, so a NUL (which would end it early) and a lone surrogate (which has no UTF-8; JSON
    lets one through) are handed to it as a space and U+FFFD, and the sentences are then cut from
    the chunk itself at the same places. A chunk it cannot split (it answers nothing) stays one
    sentence: no text is dropped.
    """
    split = _bling_fire()
    if split is None:
        return _split_by_pysbd(chunk)
    safe = _UNENCODABLE.sub(lambda m: " " if m.group() == "\0" else "\ufffd", chunk)
    sentences = [line for line in (_trim(line) for line in split(safe).split("\n")) if line]
    if not sentences:
        return _whole(chunk)
    return sentences if safe == chunk else _cut_like(chunk, safe, sentences)


def _split_by_pysbd(chunk: str) -> list[str]:
    """pysbd's sentences of ``chunk``, one segmenter per thread (it keeps the text it works on
    in an attribute, so threads sharing one would mix their sentences)."""
    segmenter = getattr(_local, "pysbd", None)
    if segmenter is None:
        import pysbd

        segmenter = _local.pysbd = pysbd.Segmenter(language="en", clean=False)
    return [sentence for sentence in (_trim(s) for s in segmenter.segment(chunk)) if sentence] or _whole(chunk)


def _whole(chunk: str) -> list[str]:
    """``chunk`` as one sentence, or none if it holds nothing but what :func:`_trim` drops."""
    sentence = _trim(chunk)
    return [sentence] if sentence else []


def _cut_like(chunk: str, safe: str, sentences: list[str]) -> list[str]:
    """``chunk``'s text at the places ``sentences`` stand in ``safe``, which differs from it
    only in single characters replaced one for one."""
    out, at = [], 0
    for sentence in sentences:
        start = safe.find(sentence, at)
        if start < 0:  # not the chunk's own text after all: keep the chunk whole, unaltered
            return _whole(chunk)
        at = start + len(sentence)
        out.append(_trim(chunk[start:at]))
    return out


#: What Bling Fire drops at a sentence's start besides whitespace: control characters and
#: invisible marks (zero-width space and joiners, direction marks, word joiner, byte-order mark,
#: the pictures of space and newline). Found by trying every character at a text's start. NUL,
#: which Side hands it as a space, goes at either end.
_LEADING = re.compile(r"^[\s\x00-\x08\x0e-\x1b\u200b-\u200f\u2060\u2420\u2424\ufeff]+")
_TRAILING = re.compile(r"[\s\x00]+$")


def _trim(sentence: str) -> str:
    """A sentence without the whitespace around it and the marks Bling Fire drops before it, so a
    paragraph kept whole (:func:`is_one_sentence`) reads as the splitter would return it."""
    return _TRAILING.sub("", _LEADING.sub("", sentence))


def is_one_sentence(chunk: str) -> bool:
    """Whether the splitter would return ``chunk`` whole, so it need not run: no mark it splits at
    (:data:`_SPLIT_MARKS`) before at most one final ``.``, ``!`` or ``?``.

    Most paragraphs of a web page are one sentence (headings, list items, captions, short
    paragraphs), and this test costs a quarter of the splitter's call. Of about 48,900 paragraph
    chunks (WiCE dev evidence, the 181 pages of the extraction benchmark and 110 of
    trafilatura's test pages) about 35,400 pass it, and Bling Fire returned every one of them
    whole; ``tests/test_text.py`` checks that on real pages and for every character Bling Fire
    ends a sentence at.
    """
    final = _FINAL_MARK.search(chunk)
    return _SPLIT_MARKS.search(chunk, 0, final.start() if final else len(chunk)) is None


def normalize_space(text: str) -> str:
    """Collapse runs of spaces inside lines; keep line breaks (they separate paragraphs)."""
    lines = (_SPACES.sub(" ", line).strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def _chunks(paragraph: str) -> list[str]:
    if len(paragraph) <= MAX_PARAGRAPH_CHARS:
        return [paragraph]
    words = paragraph.split(" ")
    out, current, size = [], [], 0
    for word in words:
        current.append(word)
        size += len(word) + 1
        if size >= MAX_PARAGRAPH_CHARS:
            out.append(" ".join(current))
            current, size = [], 0
    if current:
        out.append(" ".join(current))
    return out


def split_sentences(text: str, limit: int | None = None, segment_all: bool = False) -> list[str]:
    """Sentences of ``text``, paragraph breaks always ending a sentence; the first ``limit`` only
    when given (a page of 100,000 one-line paragraphs would cost a second for sentences nobody
    reads).

    The splitter (:func:`_split_chunk`) runs on the paragraphs that may hold more than one
    sentence (:func:`is_one_sentence`); ``segment_all`` runs it on every paragraph (the same
    sentences, slower; for tests and benchmarks).
    """
    sentences: list[str] = []
    for paragraph in normalize_space(text).split("\n"):
        for chunk in _chunks(paragraph):
            whole = not segment_all and is_one_sentence(chunk)
            for sentence in [_trim(chunk)] if whole else _split_chunk(chunk):
                if sentence:
                    sentences.append(sentence)
            if limit is not None and len(sentences) >= limit:
                return sentences[:limit]
    return sentences


def count_words(text: str) -> int:
    return len(_WORD.findall(text))


@dataclass(frozen=True)
class Window:
    """A run of consecutive sentences ``[start, end)`` forming one passage."""

    start: int
    end: int
    text: str


def window_sentences(sentences: list[str], words: int = 100, stride: int = 50) -> list[Window]:
    """Group sentences into passages of about ``words`` words, a new one every ``stride`` words.

    Windows follow sentence boundaries, so every sentence lies whole inside at least one passage
    and Evidence can always be traced back to a sentence index.
    """
    if not sentences:
        return []
    lengths = [max(1, count_words(s)) for s in sentences]
    windows: list[Window] = []
    start = 0
    while start < len(sentences):
        end, size = start, 0
        while end < len(sentences) and (size == 0 or size + lengths[end] <= words):
            size += lengths[end]
            end += 1
        windows.append(Window(start, end, " ".join(sentences[start:end])))
        if end >= len(sentences):
            break
        advanced, nxt = 0, start
        while nxt < end - 1 and advanced < stride:
            advanced += lengths[nxt]
            nxt += 1
        start = max(nxt, start + 1)
    return windows


def truncate_left(words: list[str], limit: int) -> list[str]:
    """Keep the last ``limit`` words: the words nearest a citation matter most."""
    return words[-limit:] if limit > 0 else []
