"""Split a claim into sub-claims, each a standalone sentence, without a parser.

WiCE's annotators judged a claim partially supported when its page backs some of what it says
and not the rest; their Claim-Split paper verifies each sub-claim and reads the level off the
parts. A support score for the whole sentence cannot see that one clause of three is missing,
so :func:`split_claim` cuts a Wikipedia sentence where English joins statements:

* semicolons: ``A; B`` -> ``A.`` / ``B.``;
* coordinated clauses: ``A, and B`` / ``, but`` / ``, while`` / ``, whereas`` (the right side
  must have a verb, so a list ``X, Y, and Z`` stays whole), and a coordinated verb phrase
  ``He joined X and left Y`` -> ``He joined X.`` / ``He left Y.`` (the subject is carried);
* non-restrictive relative clauses ``X, who/which ...`` -> the sentence without them, and
  ``X ...`` (the antecedent is the name just before the comma, else the subject);
* appositives after a name ``X, a/an/the ..., did Y`` -> ``X did Y.`` / ``X is a ....``.

Rules, not a model: no download, microseconds per claim, and the same split everywhere. At most
:data:`MAX_SUB_CLAIMS` parts (each costs one more cross-encoder pass over the shortlist); a
part of fewer than :data:`MIN_WORDS` words is folded back. A claim with nothing to split is
returned as the one-item list ``[claim]``.
"""

from __future__ import annotations

import re

__all__ = ["MAX_SUB_CLAIMS", "MIN_WORDS", "split_claim", "subject_of"]

#: Sub-claims verified per claim at most (each is one more cross-encoder pass over k+1 pairs).
MAX_SUB_CLAIMS = 4
#: A part with fewer words is not a statement of its own ("and more"): it is not split off.
MIN_WORDS = 3

_WORD = re.compile(r"[\w'’-]+")
#: Words that are (nearly) always verbs in Wikipedia prose: auxiliaries and common irregular pasts.
_VERBS = frozenset("""
is are was were be been being am has have had having will would shall should can could may might must
do does did became become becomes won wins made makes took takes began begins left went goes gave gives
wrote writes grew grows held holds led leads lost loses met meets ran runs saw sees said says sold sells
spent spends told tells built builds came comes found finds got gets kept keeps paid pays put sang sings
stood stands taught teaches thought fell falls set moved remains remained served serves lives lived died dies
plays played includes included include contains contained contain features featured appears appeared appear
consists consisted consist remain serve
""".split())
_PRONOUNS = frozenset({"he", "she", "it", "they", "his", "her", "its", "their"})
_SUBJECT_PRONOUNS = {"he", "she", "it", "they"}
#: Words after which an "-ed" word is a participle modifying a noun, not a finite verb.
_NOT_FINITE_BEFORE = frozenset({"the", "a", "an", "was", "were", "is", "are", "been", "be", "being", "has", "have",
                                "had", "newly", "so", "self", "well"})
_CLAUSE_JOINS = re.compile(r"(,\s+(?:and|but|while|whereas|although|though)\s+)", re.I)
_RELATIVE = re.compile(r",\s+(who|which)\s+", re.I)
_APPOSITIVE = re.compile(r",\s+((?:a|an|the|one of the)\s+[^,;]{3,80}?),\s+", re.I)
_NAME_WORD = r"(?:[\"“]?[A-Z][\w'’.&-]*[\"”]?|of|the|de|van|von|\d+)"
#: A name run at the end of a text: "Charles \"Chilla\" Porter", "House of Commons".
_NAME_RUN = re.compile(rf"((?:[A-Z][\w'’.&-]*|of|the|and|de|van|von|\d+)(?:\s+{_NAME_WORD})*)\s*$")


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _is_verb(word: str, previous: str | None) -> bool:
    """A finite verb, as far as a word list and a suffix can tell."""
    low = word.lower()
    if low in _VERBS:
        return True
    if word[:1].isupper() or len(low) < 5 or not low.endswith("ed"):
        return False
    return previous is None or previous.lower() not in _NOT_FINITE_BEFORE


def _has_verb(text: str) -> bool:
    words = _words(text)
    return any(_is_verb(w, words[i - 1] if i else None) for i, w in enumerate(words))


def _first_verb(words: list[str]) -> int | None:
    for i, w in enumerate(words):
        if _is_verb(w, words[i - 1] if i else None):
            return i
    return None


def subject_of(sentence: str) -> str | None:
    """The words before the first verb of ``sentence`` (after a leading "In 2013," phrase), or None.

    Used to make a coordinated verb phrase standalone ("... and left in 2005" -> "He left in
    2005"); None when no short subject is found, and the part is then kept as it is.
    """
    head = sentence.strip()
    lead = re.match(r"^[^,]{1,60},\s+", head)
    if lead and not _has_verb(lead.group(0)):
        head = head[lead.end():]
    words = head.split()
    verb = _first_verb([w.strip(",.;:\"'()") for w in words])
    if not verb or verb > 8:
        return None
    subject = " ".join(words[:verb]).rstrip(",")
    if not subject or subject.lower() in _PRONOUNS and subject.lower() not in _SUBJECT_PRONOUNS:
        return None
    return subject


def _sentence(text: str) -> str:
    """A part as a sentence: trimmed, capitalised, ending with a full stop."""
    text = text.strip().strip(",;: ")
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?\"”'" else text + "."


def _standalone(part: str, subject: str | None) -> str:
    """``part`` with a subject: a bare verb phrase gets ``subject``, a leading pronoun becomes it."""
    words = part.split()
    if not words or subject is None:
        return part
    first = words[0].lower()
    if first in _SUBJECT_PRONOUNS:
        return " ".join([subject, *words[1:]])
    lead = [w.strip(",") for w in words[:2]]
    if _is_verb(lead[0], None) or (lead[0].lower() in {"also", "then", "later", "still", "subsequently"}
                                   and len(lead) > 1 and _is_verb(lead[1], None)):
        return f"{subject} {part}"
    return part


def _split_clauses(text: str) -> list[str]:
    """``A, and B`` style joins where B has a verb of its own, and ``A; B``."""
    parts: list[str] = []
    for chunk in re.split(r"\s*;\s+", text):
        pieces = _CLAUSE_JOINS.split(chunk)  # text, join, text, join, text...
        current = pieces[0]
        for join, piece in zip(pieces[1::2], pieces[2::2], strict=True):
            if (_has_verb(piece) and len(_words(piece)) >= MIN_WORDS and len(_words(current)) >= MIN_WORDS
                    and not _ends_list(current)):
                parts.append(current)
                current = piece
            else:
                current = f"{current}{join}{piece}"
        parts.append(current)
    return parts


def _ends_list(text: str) -> bool:
    """``mixing affection, fascination`` (+ ``, and distortion``): the join closes a list of nouns."""
    if "," not in text:
        return False
    last = text.rsplit(",", 1)[1]
    return len(_words(last)) <= 4 and not _has_verb(last)


def _split_verb_phrases(text: str) -> list[str]:
    """``He joined X in 2001 and left in 2005`` -> two parts, the second without a subject."""
    match = re.search(r"\s+and\s+(?:(?:also|then|later|subsequently)\s+)?([A-Za-z]+)\b", text)
    if not match:
        return [text]
    left, right = text[: match.start()], text[match.start():].strip()[len("and"):].strip()
    if (not _is_verb(match.group(1), None) or not _has_verb(left) or len(_words(left)) < MIN_WORDS
            or len(_words(right)) < 2):
        return [text]
    return [left, right]


def _antecedent(left: str, subject: str | None) -> str | None:
    """The name a relative clause or appositive speaks of: the capitalised run before the comma."""
    run = _NAME_RUN.search(left)
    if run:
        name = re.sub(r"^(?:(?:of|the|and|de|van|von)\s+)+", "", run.group(1).strip(), flags=re.I)
        if name and name[0].isupper() and not name.isdigit():
            return name
    return subject


def _split_relative(text: str, subject: str | None) -> list[str]:
    """``X, who did Y, did Z`` -> ``X did Z`` and ``X did Y`` (the clause ends at the next comma)."""
    match = _RELATIVE.search(text)
    if not match:
        return [text]
    left = text[: match.start()]
    rest = text[match.end():]
    end = rest.find(", ")
    clause, after = (rest, "") if end < 0 else (rest[:end], rest[end + 2:])
    who = _antecedent(left, subject)
    if who is None or not _has_verb(clause) or len(_words(clause)) < 2:
        return [text]
    # "X, who did Y, did Z": the main clause goes on after the relative one; else it runs to the end.
    goes_on = bool(after) and _is_verb(after.split()[0].strip(",.;:"), None)
    main = f"{left} {after}" if goes_on else left
    if after and not goes_on:
        clause = f"{clause}, {after}"
    return [main, f"{who} {clause}"]


def _split_appositive(text: str) -> list[str]:
    """``Name, a British writer, did Y`` -> ``Name did Y`` and ``Name is a British writer``."""
    match = _APPOSITIVE.search(text)
    if not match or _has_verb(match.group(1)):
        return [text]
    left = text[: match.start()]
    run = _NAME_RUN.search(left)
    if not run or not run.group(1)[:1].isupper():
        return [text]
    name = run.group(1).strip()
    after = text[match.end():]
    if not _has_verb(after):
        return [text]
    return [f"{left} {after}", f"{name} is {match.group(1)}"]


def split_claim(claim: str, most: int = MAX_SUB_CLAIMS) -> list[str]:
    """Standalone sub-claims of ``claim`` (at most ``most``), in claim order; ``[claim]`` if none.

    >>> split_claim("Daroshafaei left BBC Persian in 2013 and returned to Iran.")
    ['Daroshafaei left BBC Persian in 2013.', 'Daroshafaei returned to Iran.']
    """
    text = " ".join(claim.split()).rstrip(" .")
    if not text:
        return [claim]
    subject = subject_of(text)
    parts = _split_clauses(text)
    parts = [p for part in parts for p in _split_appositive(part)]
    parts = [p for part in parts for p in _split_relative(part, subject)]
    parts = [p for part in parts for p in _split_verb_phrases(part)]
    out: list[str] = []
    for part in parts:
        sentence = _sentence(_standalone(part.strip(), subject))
        if len(_words(sentence)) < MIN_WORDS and out:
            out[-1] = _sentence(f"{out[-1].rstrip('.')}, {part.strip()}")
        elif sentence and sentence not in out:
            out.append(sentence)
    if len(out) <= 1:
        return [claim]
    if len(out) > most:  # keep the first ones, and fold the rest into the last kept part
        out = out[: most - 1] + [_sentence(" ".join(o.rstrip(".") + "," for o in out[most - 1:]).rstrip(","))]
    return out
