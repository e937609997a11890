"""Sentences and passages: the units Side scores.

Side splits a cited source into ~100-word passages with overlap so that evidence spanning a
window boundary is still seen whole by the cross-encoder; sentences are the unit of Evidence
(SciFact keeps at most three rationale sentences). Splitting is done per paragraph so that the
sentence splitter's cost stays linear in the size of the page.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

__all__ = [
    "MAX_PARAGRAPH_CHARS", "is_one_sentence", "normalize_space", "split_sentences", "count_words", "Window",
    "window_sentences", "truncate_left",
]

#: Longest paragraph handed to the sentence splitter in one piece; longer ones are cut first.
MAX_PARAGRAPH_CHARS = 5000

_WORD = re.compile(r"\S+")
_SPACES = re.compile(r"[ \t\u00a0]+")
#: What pysbd may split at: terminal punctuation, a closing bracket (list items), double quotes.
_SPLIT_MARKS = re.compile(r"[.!?\u2026\u3002\uff01\uff1f)\"\u201c\u201d]")
#: One final full stop, question or exclamation mark (pysbd splits a run of them).
_FINAL_MARK = re.compile(r"[.!?]?\s*$")


_local = threading.local()

#: Compiled patterns Python's ``re`` keeps while pysbd runs. pysbd builds patterns as it goes (one
#: per abbreviation it meets, among others); with ``re``'s default of 512, shared with every other
#: library, it recompiled about three patterns per paragraph, over half of its time on WiCE dev
#: pages. A larger cache changes nothing but the time.
RE_CACHE_SIZE = 8192


def widen_re_cache(size: int = RE_CACHE_SIZE) -> None:
    """Let ``re`` keep at least ``size`` compiled patterns (CPython's ``re._MAXCACHE``; nothing
    happens on a Python without it)."""
    if getattr(re, "_MAXCACHE", size) < size:
        setattr(re, "_MAXCACHE", size)  # noqa: B010 - a private name: no attribute to type-check


def _segmenter():
    """This thread's pysbd segmenter: ``Segmenter.segment`` keeps the text it works on in an
    attribute, so one instance shared by threads (a check's sources are fetched and split in
    parallel) would mix up their sentences."""
    segmenter = getattr(_local, "segmenter", None)
    if segmenter is None:
        widen_re_cache()
        segmenter = _local.segmenter = _segmenter_class()(language="en", clean=False)
    return segmenter


def _segmenter_class():
    r"""pysbd's Segmenter, finding each sentence back in the paragraph with ``str.find``, and
    looking for each abbreviation's period only where one can be (:func:`_english_class`).

    pysbd locates each sentence it found in the original text to return it with its own
    whitespace, by compiling a regular expression of the escaped sentence followed by ``\s*``:
    one new pattern per sentence, which no cache keeps, a third of pysbd's time. A literal
    search followed by the whitespace after it (``str.isspace``, what ``\s`` matches) finds the
    same spans, so the sentences are the same.
    """
    import pysbd
    from pysbd.utils import TextSpan

    english = _english_class()

    class Segmenter(pysbd.Segmenter):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.language_module = english

        def sentences_with_char_spans(self, sentences):
            text, spans, prior_end = self.original_text, [], 0
            for sentence in sentences:
                if not sentence:
                    spans += super().sentences_with_char_spans([sentence])[:1]
                    continue
                at = text.find(sentence)
                while at >= 0:
                    end = at + len(sentence)
                    while end < len(text) and text[end].isspace():
                        end += 1
                    if end > prior_end:
                        spans.append(TextSpan(text[at:end], at, end))
                        prior_end = end
                        break
                    at = text.find(sentence, end)
            return spans

    return Segmenter


def _english_class():
    r"""pysbd's English, whose abbreviation step first asks whether the abbreviation is followed
    by a period anywhere in the text.

    For each of its ~200 abbreviations found in a line (``"is"``, ``"co"``, ``"me"``: in nearly
    every line), pysbd finds every place it starts a word and runs a substitution over the
    whole line for each, which replaces a period right after that word: over two fifths of
    pysbd's time on real pages, for substitutions that almost never replace anything. Each of them needs a
    whitespace (or the line's start), the abbreviation as the place found it (the same
    characters, matched case-insensitively by pysbd's own unescaped pattern), then ``.``. So
    where ``(?:^|\s)(?:abbreviation)\.`` matches nowhere in the line (case-insensitively, as
    pysbd matches), none of them replaces anything, and skipping them changes nothing. For an
    abbreviation of plain letters the words before the line's periods answer that without a
    search (:func:`_words_before_periods`).
    """
    from pysbd.lang.english import English

    #: Each abbreviation as pysbd strips it, its word (pysbd's unescaped pattern) followed by a
    #: period, and pysbd's own pattern for its word: compiled once, not looked up per line.
    names = [abbr.strip() for abbr in English.Abbreviation.ABBREVIATIONS]
    abbreviations = [(abbr, _is_plain(abbr), re.compile(rf"(?:^|\s)(?:{abbr})\.", re.IGNORECASE),
                      re.compile(rf"(?:^|\s|\r|\n){abbr}", re.IGNORECASE)) for abbr in names]

    class AbbreviationReplacer(English.AbbreviationReplacer):
        def search_for_abbreviations_in_string(self, text):
            lowered = text.lower()
            before_period, odd = _words_before_periods(text)
            for stripped, plain, with_period, word in abbreviations:
                if stripped not in lowered:
                    continue
                if plain and not odd:
                    if stripped not in before_period:
                        continue  # no period after it: pysbd's substitutions below would replace nothing
                elif with_period.search(text) is None:
                    continue
                found = word.findall(text)
                if not found:
                    continue
                next_chars = re.findall(r"(?<={" + str(re.escape(stripped)) + "} ).{1}", text)
                for index, match in enumerate(found):
                    text = self.scan_for_replacements(text, match, index, next_chars)
            return text

    class Language(English):
        pass

    Language.AbbreviationReplacer = AbbreviationReplacer
    return Language


#: A word (no whitespace, no period) at the text's start or after whitespace, then a period.
_WORD_BEFORE_PERIOD = re.compile(r"(?<!\S)([^\s.]+)\.")


def _is_plain(abbreviation: str) -> bool:
    """Lower-case ASCII letters only: a pattern that matches just those letters, in either case."""
    return abbreviation.isascii() and abbreviation.isalpha() and abbreviation.islower()


def _words_before_periods(text: str) -> tuple[frozenset[str], bool]:
    r"""The lower-cased words that ``(?:^|\s)(?:abbreviation)\.`` can find in ``text`` for an
    abbreviation of plain letters (:func:`_is_plain`), and whether any such word is not ASCII.

    That pattern needs the abbreviation's letters right after whitespace (or the text's start)
    and right before a period, so they are one of these words, matched case-insensitively. One
    pass over the text answers ~20 abbreviations per paragraph that would each be a regular
    expression search. A word outside ASCII may match under the pattern's Unicode case rules
    where ``lower`` disagrees (a long s matches ``s`` yet lower-cases to itself), so such a text
    keeps the search.
    """
    words = _WORD_BEFORE_PERIOD.findall(text)
    odd = not all(word.isascii() for word in words)
    return frozenset(word.lower() for word in words), odd


def is_one_sentence(chunk: str) -> bool:
    """Whether pysbd would return ``chunk`` whole, so it need not run: no mark it splits at
    (:data:`_SPLIT_MARKS`) before at most one final ``.``, ``!`` or ``?``.

    Most paragraphs of a web page are one sentence (headings, list items, captions, short
    paragraphs), and pysbd costs ~0.5 ms for each, most of a page's preparation. On 48,933
    paragraphs (WiCE dev evidence, the 181 pages of the extraction benchmark and 110 of
    trafilatura's test pages) 35,414 pass this test, and pysbd returns every one of them whole.
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
    when given (the splitter costs ~0.1 ms per paragraph, so a page of 100,000 one-line
    paragraphs would cost seconds for sentences nobody reads).

    pysbd splits the paragraphs that may hold more than one sentence (:func:`is_one_sentence`);
    ``segment_all`` runs it on every paragraph (the same sentences, slower; for benchmarks).
    """
    sentences: list[str] = []
    for paragraph in normalize_space(text).split("\n"):
        for chunk in _chunks(paragraph):
            whole = not segment_all and is_one_sentence(chunk)
            for sentence in [chunk] if whole else _segmenter().segment(chunk):
                sentence = sentence.strip()
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
