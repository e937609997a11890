"""What is missing from a weak citation, and how much it matters.

For a partially or not supported verdict (Side's or the judge's), the unsupported words of the
claim are classed as one :class:`MissingKind`: a number or quantity, a date or year, a name
(person, place, organisation, work), a quotation, or wording only (adjectives, adverbs, hedges).
That gives a :class:`Severity`: high for a missing number, date, name or quotation, and for any
gap in an article about a living person (WP:BLP: the wiki's "Living people" category); low for
wording only. Severity orders flags of the same failure likelihood.

The rules are lexical (no tagger model; spaCy is not a dependency) and were chosen on WiCE's
``non_supported_tokens_train.jsonl``, whose marked spans are mostly dates ("On 26 June 2015"),
numbers and ordinals ("15 people", "fifth studio", "second - seeded") and names ("Cartoon
Network 's"), the rest wording ("is popular researchers", "commercial buildings"):

* **quotation**: the words hold a quotation mark, or lie inside a quoted passage of the claim;
* **date**: a month name, a year (1000-2099, also "1990s"), a numeric date (12/05/2010,
  2010-05-12), a weekday, a century or decade word ("19th century");
* **number**: any digit; a number word (one ... twenty, hundred, thousand, million, billion,
  dozen); an ordinal (first, second... tenth); a percent or per cent;
* **name**: a capitalised word that is not the first word of a sentence of the claim (nor "I"),
  or a sentence-initial capitalised word followed by another capitalised word ("New York");
* **wording**: anything else.

The first kind found in that order is the one given: a quotation outranks a date, a date a
bare number, a number a name.

Where a needs-review verdict names no unsupported words (the claim is not supported as a whole,
or the tagger found nothing), the whole claim is what is missing, so the claim itself is
classified: a not-supported claim holding a number, date, name or quotation is high.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum

__all__ = ["MissingKind", "Severity", "HIGH_KINDS", "classify_missing", "holds_fact", "severity",
           "missing_and_severity", "LIVING_PEOPLE"]


class MissingKind(StrEnum):
    """The kind of what a weak citation's source does not back."""

    NUMBER = "number"
    DATE = "date"
    NAME = "name"
    QUOTATION = "quotation"
    WORDING = "wording"


class Severity(StrEnum):
    """How much a gap matters: high (a fact an editor must fix) or low (wording only)."""

    HIGH = "high"
    LOW = "low"


#: The kinds that make a gap high severity even outside biographies of living people.
HIGH_KINDS = frozenset({MissingKind.NUMBER, MissingKind.DATE, MissingKind.NAME, MissingKind.QUOTATION})

#: The category of articles about living people (WP:BLP), as named in wikitext.
LIVING_PEOPLE = "Living people"

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_MONTH_ABBR = ("jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_DATE = re.compile(
    r"\b(?:" + "|".join(_MONTHS + _WEEKDAYS) + r")\b"
    r"|\b(?:" + "|".join(_MONTH_ABBR) + r")\.?(?=\s+\d)"
    r"|\b1\d{3}s?\b|\b20\d{2}s?\b|\b\d{1,2}0s\b"
    r"|\b\d{1,4}[/.-]\d{1,2}[/.-]\d{1,4}\b"
    r"|\b\d{1,2}(?:st|nd|rd|th)\s+century\b|\b(?:century|decade|centuries|decades)\b",
    re.IGNORECASE)
_NUMBER_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
                 "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty",
                 "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred", "hundreds",
                 "thousand", "thousands", "million", "millions", "billion", "billions", "trillion", "dozen",
                 "dozens", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
                 "tenth", "half", "twice", "percent", "double", "triple")
_NUMBER = re.compile(r"\d|%|\bper\s*cent\b|\b(?:" + "|".join(_NUMBER_WORDS) + r")\b", re.IGNORECASE)
_QUOTE_MARKS = "\"“”„«»"
_QUOTED = re.compile(r"[\"“„«]([^\"“”„«»]{2,}?)[\"”»]")
_TOKEN = re.compile(r"\w[\w'’.-]*\w|\w|[^\w\s]")
#: Capitalised words that are no name wherever they stand (a pronoun, a sentence opener after a colon).
_NOT_NAMES = frozenset({"I", "I'm", "I've", "I'd", "OK"})
_SENTENCE_END = ".!?:;\u2022"


def _split(unsupported: Sequence[str] | str) -> list[str]:
    if isinstance(unsupported, str):
        return [p.strip() for p in re.split(r"\s*;\s*|\n", unsupported) if p.strip()]
    return [p.strip() for p in unsupported if p and p.strip()]


def _in_quotes(phrase: str, claim: str) -> bool:
    return any(phrase in m.group(1) for m in _QUOTED.finditer(claim))


def _initial_positions(claim: str) -> set[int]:
    """Character offsets of the tokens of ``claim`` that begin one of its sentences."""
    out, initial = set(), True
    for m in _TOKEN.finditer(claim):
        token = m.group(0)
        if token in _QUOTE_MARKS or token in "([{'‘":
            continue  # an opening mark keeps the next word sentence-initial
        if initial and token[0].isalnum():
            out.add(m.start())
            initial = False
        elif token in _SENTENCE_END:
            initial = True
    return out


def _has_name(phrase: str, claim: str) -> bool:
    """A capitalised word of ``phrase`` that does not just open a sentence of ``claim``."""
    at = claim.find(phrase) if claim else -1
    text, offset = (claim, at) if at >= 0 else (phrase, 0)
    initial = _initial_positions(text)
    tokens = [m for m in _TOKEN.finditer(text) if offset <= m.start() < offset + len(phrase)]
    for i, m in enumerate(tokens):
        word = m.group(0)
        if not word[0].isupper() or word in _NOT_NAMES or not any(c.isalpha() for c in word):
            continue
        if m.start() not in initial:
            return True
        following = tokens[i + 1 : i + 2] if at < 0 else [n for n in _TOKEN.finditer(text)
                                                         if n.start() >= m.end()][:1]
        if following and following[0].group(0)[0].isupper():
            return True  # "New York ..." at the start of a sentence
    return False


def classify_missing(unsupported: Sequence[str] | str, claim: str = "") -> MissingKind:
    """The kind of the unsupported words, read in the claim they come from.

    ``unsupported`` is a Verdict's tuple of phrases or a judge's free-text ``unsupported``
    (phrases separated by ";" or new lines). With no words at all the whole claim is classified
    (the claim is what is missing); with no claim either, it is wording.
    """
    parts = _split(unsupported) or ([claim.strip()] if claim.strip() else [])
    if not parts:
        return MissingKind.WORDING
    if any(any(q in p for q in _QUOTE_MARKS) or (claim and _in_quotes(p, claim)) for p in parts):
        return MissingKind.QUOTATION
    if any(_DATE.search(p) for p in parts):
        return MissingKind.DATE
    if any(_NUMBER.search(p) for p in parts):
        return MissingKind.NUMBER
    if any(_has_name(p, claim) for p in parts):
        return MissingKind.NAME
    return MissingKind.WORDING


def holds_fact(unsupported: Sequence[str] | str, claim: str = "") -> bool:
    """Whether any of the words holds a number, a date or a name (whatever else they hold): the
    gold side of ``side eval verify unsupported``'s severity precision, read on the marked span."""
    parts = _split(unsupported)
    return any(_DATE.search(p) or _NUMBER.search(p) or _has_name(p, claim) for p in parts)


def severity(kind: MissingKind, living_person: bool = False) -> Severity:
    """High for a missing number, date, name or quotation, and for any gap about a living person."""
    return Severity.HIGH if living_person or kind in HIGH_KINDS else Severity.LOW


def missing_and_severity(unsupported: Sequence[str] | str, claim: str,
                         living_person: bool = False) -> tuple[MissingKind, Severity]:
    """:func:`classify_missing` and :func:`severity` in one call."""
    kind = classify_missing(unsupported, claim)
    return kind, severity(kind, living_person)
