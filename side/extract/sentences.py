"""Plain text of a walk through an article, and the claim sentence and context at each ref.

A claim is the last sentence of the paragraph read so far, and its context the last words
before the ref. Computing them from the whole paragraph at every ref costs the paragraph's
length per ref: a 272 KB paragraph with 2,621 refs took 15 s. :class:`Flow` gives the same
answers in time linear in the text:

* :func:`clean_text` is a chain of regex substitutions, and between two characters where no
  substitution can match across (:data:`_SAFE_PAIR`: one of them is plain text, say a letter
  or a digit), the cleaned text of a concatenation is the concatenation of the cleaned parts.
  So a paragraph is cleaned piece by piece, each piece ending at such a point, once.
* Sentence boundaries are found in each cleaned piece as it comes (:class:`_Paragraph`), so a
  ref only scans the text since the last decided point: the boundaries found are exactly those
  :func:`last_sentence` finds in the whole paragraph (the abbreviation check keeps what it needs
  of a word that runs back past that point, :class:`_Word`).
* A claim longer than :data:`MAX_CLAIM_CHARS` (a "sentence" with no full stop, as in a list
  of a thousand refs) keeps its last :data:`MAX_CLAIM_CHARS` characters, from a word start:
  otherwise the claims of one paragraph alone could add up to the square of its length.
* The left context cleans at most the parts worth ``words * 20`` characters, as before, and of
  one long part only its end.

Only text with no safe point at all for :data:`_OPEN_LIMIT` characters (a run of spaces,
quotes, brackets and punctuation with no letter or digit) is cut anyway; only there can a claim
differ from cleaning the whole paragraph (tests/test_parse_linear.py checks the rest against
:func:`clean_text` and :func:`last_sentence` on generated text).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

__all__ = ["MAX_CLAIM_CHARS", "Flow", "cap_claim", "clean_text", "last_sentence", "without_tag_remnants"]

_WS = re.compile(r"\s+")
_BOLD_ITALIC = re.compile(r"'{2,}")
_MAGIC_WORD = re.compile(r"__[A-Z]{3,}__")
#: Space before punctuation (a look-ahead, so that the replacement needs no group).
_SPACE_BEFORE_PUNCT = re.compile(r"\s+(?=[,.;:!?)])")
_EMPTY_PARENS = re.compile(r"\(\s*[,;]?\s*\)")
#: A sentence end: terminal punctuation, closing quotes, space, then no lower-case ASCII letter.
#: Matched only from the start of a run of punctuation, and possessively: the same matches as
#: without, but a long run of punctuation is read once, not once per character of it.
_BOUNDARY = re.compile(r"(?<![.!?…])[.!?…]++[\"'”’)\]]*+\s++(?=[\"'“‘(\[]*[^\W_a-z])")
# fmt: off
_ABBREVIATIONS = frozenset({
    "mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "no", "nos", "vol", "vols", "pp", "p",
    "ed", "eds", "c", "ca", "cf", "vs", "v", "fig", "gen", "gov", "lt", "col", "sgt", "capt",
    "rev", "hon", "inc", "ltd", "co", "corp", "mt", "ft", "jan", "feb", "mar", "apr", "jun",
    "jul", "aug", "sep", "sept", "oct", "nov", "dec", "approx", "est", "op", "al", "bros",
    "dept", "univ",
})
# fmt: on

#: Longest claim text kept (the real ones in the fixture articles stay under 1,700).
MAX_CLAIM_CHARS = 5000
#: A piece of raw text with no safe cut longer than this is cut anyway (see the module doc).
_OPEN_LIMIT = 4 * MAX_CLAIM_CHARS
#: Characters no cleaning substitution touches: anything but white space, quotes, underscores,
#: ASCII capitals and ``(),;.:!?``. Capitals only matter next to ``_``, ``'`` or capitals.
_INERT = r"[^\s'_A-Z(),;.:!?]"
_NOT_WORD_MARK = r"[^'_A-Z]"
#: Two characters no substitution of :func:`clean_text` can match across. ``.!?:`` on the left
#: also qualify: no substitution removes them, and each can only end a match.
_SAFE_PAIR = re.compile(f"{_INERT}.|.{_INERT}|[A-Z]{_NOT_WORD_MARK}|{_NOT_WORD_MARK}[A-Z]|[.!?:].", re.DOTALL)
#: The same pairs, as they read in reversed text.
_SAFE_PAIR_REVERSED = re.compile(
    f"{_INERT}.|.{_INERT}|[A-Z]{_NOT_WORD_MARK}|{_NOT_WORD_MARK}[A-Z]|.[.!?:]", re.DOTALL)
#: What may still become a sentence boundary at the end of the text, once more text follows:
#: punctuation, closing quotes, space, opening quotes (matched in reversed text).
_PENDING_REVERSED = re.compile(r"[\"'“‘(\[]*\s*[\"'”’)\]]*([.!?…]+)")
#: A run of sentence-ending punctuation going on, and what must follow it for a boundary.
_PUNCT_RUN = re.compile(r"[.!?…]*+")
_AFTER_RUN = re.compile(r"[\"'”’)\]]*+\s++(?=[\"'“‘(\[]*[^\W_a-z])")
#: All a pending run may have been followed by so far, with the run going on first.
_STILL_PENDING = re.compile(r"([.!?…]*+)[\"'”’)\]]*+\s*+[\"'“‘(\[]*+")
#: What :func:`_is_abbreviation` strips from the start of a word.
_WORD_LEAD = "([\"'“‘"


# fmt: off
#: Tag names MediaWiki reads as markup, not text: the HTML it allows and the extension tags.
_MARKUP_TAGS = (
    "ref", "references", "nowiki", "poem", "gallery", "includeonly", "noinclude", "onlyinclude", "indicator",
    "templatestyles", "section", "math", "chem", "ce", "score", "syntaxhighlight", "source", "timeline",
    "graph", "mapframe", "maplink", "imagemap", "inputbox", "categorytree", "hiero", "templatedata",
    "abbr", "b", "bdi", "bdo", "big", "blockquote", "br", "caption", "center", "cite", "code", "data",
    "dd", "del", "dfn", "div", "dl", "dt", "em", "font", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i",
    "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "rb", "rp", "rt", "rtc", "ruby", "s", "samp",
    "small", "span", "strike", "strong", "sub", "sup", "table", "td", "th", "time", "tr", "tt", "u", "ul",
    "var", "wbr",
)
# fmt: on
#: A tag of those that reached the text unparsed: a stray ``</ref>``, an opener whose closer is
#: missing (``<ref name="a">`` with no ``</ref>``), a ``<br />`` the parser's budget left as text.
#: MediaWiki reads it as markup (or shows a stray one as an error), never as words of the claim;
#: left in, ``</ref>`` joins two sentences and is named as the unsupported word "ref". Each
#: match ends at the first ``<`` or ``>`` after its name, so the search stays linear.
_TAG_REMNANT = re.compile(rf"</?(?:{'|'.join(_MARKUP_TAGS)})(?![\w:-])[^<>]*>", re.IGNORECASE)

def without_tag_remnants(text: str) -> str:
    """``text`` with each tag the parser left as text (:data:`_TAG_REMNANT`) read as a space.

    Applied to raw text nodes before they join a claim, not in :func:`clean_text`: a tag is
    never split across text nodes, but it can be across the pieces :class:`Flow` cleans."""
    return _TAG_REMNANT.sub(" ", text)


def _clean_unstripped(text: str) -> str:
    text = _BOLD_ITALIC.sub("", text)
    text = _MAGIC_WORD.sub("", text)
    text = _WS.sub(" ", text)
    text = _EMPTY_PARENS.sub("", text)
    return _SPACE_BEFORE_PUNCT.sub("", text)


def clean_text(text: str) -> str:
    """Collapse whitespace and drop markup leftovers so claims compare equal across reflows."""
    return _clean_unstripped(text).strip()


def last_sentence(text: str) -> str:
    """The sentence (or fragment) at the end of ``text``: what the following ref supports."""
    return text[_last_boundary(text, 0) or 0 :].strip()


def _last_boundary(text: str, pos: int) -> int | None:
    """End of the last sentence boundary at or after ``pos`` (not at the very end), if any."""
    start = None
    for match in _BOUNDARY.finditer(text, pos):
        if match.end() >= len(text):
            break
        if match.group().startswith(".") and _is_abbreviation(text, match.start()):
            continue
        start = match.end()
    return start


def _is_abbreviation(text: str, dot: int) -> bool:
    word_start = text.rfind(" ", 0, dot) + 1
    word = text[word_start:dot].lstrip(_WORD_LEAD)
    return len(word) == 1 or "." in word or word.lower() in _ABBREVIATIONS


def cap_claim(text: str) -> str:
    """At most :data:`MAX_CLAIM_CHARS` characters: the end of the sentence, from a word start."""
    if len(text) <= MAX_CLAIM_CHARS:
        return text
    tail = text[-MAX_CLAIM_CHARS:]
    return tail.split(" ", 1)[1] if " " in tail else tail


def _last_safe_cut(raw: str) -> int:
    """The largest ``q`` such that raw[:q] and raw[q:] clean independently (0 if none)."""
    if raw and re.match(_INERT, raw[-1]):
        return len(raw)  # an inert last character is safe whatever comes next
    size = 64
    while True:
        window = raw[-size:]
        found = _SAFE_PAIR_REVERSED.search(window[::-1])
        if found is not None:
            return len(raw) - found.start() - 1
        if size >= len(raw):
            return 0
        size *= 2


def _first_safe_cut(text: str) -> int:
    found = _SAFE_PAIR.search(text)
    return 0 if found is None else found.start() + 1


def _suffix(chunks: list[str], ends: list[int], tail: str, size: int) -> tuple[str, bool]:
    """The last ``size`` characters of ``"".join(chunks) + tail``, and whether that is all of it.

    ``ends`` holds the running total of the chunks' lengths, so only the chunks needed are joined.
    """
    total = (ends[-1] if ends else 0) + len(tail)
    if total <= size:
        return "".join(chunks) + tail, True
    start = total - size  # absolute offset of the window
    first = bisect.bisect_right(ends, start)
    if first == len(chunks):
        return tail[start - (ends[-1] if ends else 0) :], False
    skip = start - (ends[first - 1] if first else 0)
    return chunks[first][skip:] + "".join(chunks[first + 1 :]) + tail, False


@dataclass
class _Word:
    """The word running up to some point, as much of it as :func:`_is_abbreviation` reads."""

    #: Nothing but ``_WORD_LEAD`` characters so far (or nothing at all).
    lead_only: bool = True
    #: Its first characters after those, and its length after them.
    head: str = ""
    length: int = 0
    has_dot: bool = False

    def extend(self, text: str) -> _Word:
        """This word followed by ``text`` (a space in it starts a new word)."""
        space = text.rfind(" ")
        word = _Word() if space >= 0 else _Word(self.lead_only, self.head, self.length, self.has_dot)
        text = text[space + 1 :]
        if word.lead_only:
            text = text.lstrip(_WORD_LEAD)
            word.lead_only = not text
        word.head = (word.head + text[:8])[:8]
        word.length += len(text)
        word.has_dot = word.has_dot or "." in text
        return word

    def is_abbreviation(self, text: str, dot: int) -> bool:
        """:func:`_is_abbreviation` of the full stop at ``dot`` in ``text``, which follows this word."""
        if self.lead_only or text.rfind(" ", 0, dot) >= 0:
            return _is_abbreviation(text, dot)
        rest = text[:dot]
        length = self.length + len(rest)
        return (length == 1 or self.has_dot or "." in rest
                or (length <= 6 and (self.head + rest).lower() in _ABBREVIATIONS))


@dataclass
class _Paragraph:
    """The current paragraph, cleaned piece by piece, and its sentence boundaries found once.

    ``chunks`` are the cleaned pieces, each cut at a safe point of the raw text (so that their
    concatenation is the cleaned paragraph so far) and ``rest`` is the raw text after the last
    cut. Sentence boundaries in the chunks are found as the chunks come: ``boundary`` is the last
    one before ``sync``, up to which everything is decided, and ``word`` the word running up to
    ``sync``. A boundary may still be pending at ``sync``: a run of punctuation that started at
    ``run_start`` (after ``run_word``) and waits for a space and a capital. Each ref then only
    scans from ``sync`` on: a few words, normally.
    """

    chunks: list[str] = field(default_factory=list)
    #: Running total of the chunks' lengths.
    ends: list[int] = field(default_factory=list)
    rest: list[str] = field(default_factory=list)
    sync: int = 0
    word: _Word = field(default_factory=_Word)
    run_start: int | None = None
    run_word: _Word = field(default_factory=_Word)
    boundary: int | None = None
    sentence: str | None = None
    #: Characters cleaned or scanned so far: linear in the input (tests assert it).
    work: int = 0

    def add(self, text: str) -> None:
        self.rest.append(text)
        self.sentence = None

    def last_sentence(self) -> str:
        """``cap_claim(last_sentence(clean_text(paragraph)))``, in time linear overall."""
        if self.sentence is None:
            self.sentence = self._claim(self._close_rest())
        return self.sentence

    def _close_rest(self) -> str:
        """Clean the raw rest up to its last safe cut into a chunk; the rest of it, cleaned."""
        raw = "".join(self.rest)
        cut = _last_safe_cut(raw)
        if cut == 0 and len(raw) > _OPEN_LIMIT:
            cut = len(raw) - _OPEN_LIMIT // 2
        self.work += len(raw)
        if cut:
            cleaned = _clean_unstripped(raw[:cut])
            if cleaned:
                self.chunks.append(cleaned)
                self.ends.append(self.closed + len(cleaned))
                self._advance()
            raw = raw[cut:]
        self.rest = [raw] if raw else []
        return _clean_unstripped(raw)

    @property
    def closed(self) -> int:
        return self.ends[-1] if self.ends else 0

    def _slice(self, start: int, tail: str = "") -> str:
        """The cleaned paragraph (the chunks, then ``tail``) from offset ``start`` on."""
        first = bisect.bisect_right(self.ends, start)
        if first == len(self.chunks):
            return tail[start - self.closed :]
        skip = start - (self.ends[first - 1] if first else 0)
        return self.chunks[first][skip:] + "".join(self.chunks[first + 1 :]) + tail

    def _scan(self, text: str, whole: bool) -> int | None:
        """End (offset in the paragraph) of the last boundary in ``text``, the paragraph from
        ``sync`` on: to its end when ``whole``, else up to where it is cleaned so far."""
        last, pos = None, 0
        if self.run_start is not None:  # the pending run of punctuation, and what follows it
            run = _PUNCT_RUN.match(text)  # always matches: the run may go on for no characters
            pos = run.end() if run else 0
            after = _AFTER_RUN.match(text, pos)
            if after is not None:
                pos = after.end()
                dot = self.text_at(self.run_start) == "."
                if not (whole and pos >= len(text)) and not (dot and self.run_word.is_abbreviation("", 0)):
                    last = self.sync + pos
        for match in _BOUNDARY.finditer(text, pos):
            if whole and match.end() >= len(text):
                break
            if match.group().startswith(".") and self.word.is_abbreviation(text, match.start()):
                continue
            last = self.sync + match.end()
        return last

    def text_at(self, offset: int) -> str:
        first = bisect.bisect_right(self.ends, offset)
        return self.chunks[first][offset - (self.ends[first - 1] if first else 0)]

    def _advance(self) -> None:
        """Record the boundaries of the chunks since ``sync`` and move ``sync`` to their end, or
        to the end of a run of punctuation there that may still turn out to end a sentence."""
        region = self._slice(self.sync)
        self.work += len(region)
        found = self._scan(region, whole=False)
        if found is not None:
            self.boundary = found
        going_on = _STILL_PENDING.fullmatch(region) if self.run_start is not None else None
        if going_on is not None:  # the run may go on, and what follows it is still undecided
            self.word = self.word.extend(going_on.group(1))
            self.sync += going_on.end(1)
            return
        pending = _PENDING_REVERSED.match(region[::-1])
        if pending is None:
            self.word, self.run_start = self.word.extend(region), None
            self.sync += len(region)
            return
        run_end, run_start = len(region) - pending.start(1), len(region) - pending.end(1)
        self.run_word, self.run_start = self.word.extend(region[:run_start]), self.sync + run_start
        self.word = self.word.extend(region[:run_end])
        self.sync += run_end

    def _claim(self, tail: str) -> str:
        text = self._slice(self.sync, tail).rstrip()
        self.work += len(text)
        found = self._scan(text, whole=True)
        start = found if found is not None else (self.boundary or 0)
        end = self.sync + len(text)  # the end of the cleaned paragraph (when it ends after sync)
        # Only the end of a long claim is kept: read no more of it than that.
        first = max(start, end - MAX_CLAIM_CHARS - 64)
        piece = self._slice(first, tail)[: max(0, end - first)].rstrip()
        return cap_claim(piece.strip() if first == start else piece)


@dataclass
class Flow:
    """Plain text of one stream (a section of prose, or one template parameter), as read so far.

    ``para_start`` marks where the current paragraph begins, so a claim's sentence never
    reaches into the previous paragraph while its left context may.
    """

    parts: list[str] = field(default_factory=list)
    para_start: int = 0
    #: In a file caption, "|" separates options from the caption: text before it is dropped.
    pipe_resets: bool = False
    #: Inside a list item: the next newline ends the paragraph.
    line_block: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    paragraph_text: _Paragraph = field(default_factory=_Paragraph)
    _context: tuple[int, int, str] | None = None
    #: Characters of earlier paragraphs' work, kept when a paragraph is replaced.
    _done_work: int = 0

    @property
    def work(self) -> int:
        """Characters cleaned or scanned for claims and contexts so far (linear in the input)."""
        return self._done_work + self.paragraph_text.work

    def add(self, text: str) -> None:
        if text:
            self.parts.append(text)
            self.paragraph_text.add(text)

    def paragraph_break(self) -> None:
        self.parts.append("\n")
        self.para_start = len(self.parts)
        self.line_block = False
        self._new_paragraph()

    def reset(self) -> None:
        self.parts.clear()
        self.para_start = 0
        self._context = None
        self._new_paragraph()

    def _new_paragraph(self) -> None:
        self._done_work += self.paragraph_text.work
        self.paragraph_text = _Paragraph()

    def text(self) -> str:
        """All the plain text read so far (headings use it)."""
        return clean_text("".join(self.parts))

    def sentence(self) -> str:
        """The claim at this point: the paragraph's last sentence (capped)."""
        return self.paragraph_text.last_sentence()

    def left_context(self, words: int) -> str:
        """The last ``words`` words, joining only as many parts as needed (linear overall).

        As many trailing parts are read as make ``words * 20`` characters, then cleaned; when
        one long part makes that much more, only its end is cleaned, cut at a safe point, with
        enough words to answer.
        """
        if words <= 0:
            return ""
        if self._context is not None and self._context[:2] == (len(self.parts), words):
            return self._context[2]
        picked: list[str] = []
        budget = words * 20
        total = 0
        for part in reversed(self.parts):
            picked.append(part)
            total += len(part)
            budget -= len(part)
            if budget <= 0:
                break
        picked.reverse()
        context = self._context_of(picked, total, words)
        self._context = (len(self.parts), words, context)
        return context

    def _context_of(self, picked: list[str], total: int, words: int) -> str:
        size = words * 40 + 256
        while size < total:
            window, _ = _suffix(picked, [*accumulate(map(len, picked))], "", size)
            self._done_work += len(window)
            cut = _first_safe_cut(window)
            if cut:
                cleaned = _clean_unstripped(window[cut:]).strip()
                if cleaned.count(" ") >= words:
                    return " ".join(cleaned.split(" ")[-words:])
            size *= 2
        self._done_work += total
        tail = clean_text("".join(picked)).split(" ")
        return " ".join(tail[-words:]) if tail != [""] else ""
