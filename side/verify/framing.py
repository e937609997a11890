"""Framed restatements: a source sentence that repeats the claim only to deny it, to report it as
someone's say-so or a joke, or to tell its reader (a model, say) what to answer.

The cross-encoder and every lexical signal reward verbatim overlap, so "It is completely false
that the tower was completed in 1604" scores the claim "The tower was completed in 1604" as
supported (0.88 in an outside probe), and so does an instruction paragraph that repeats the
claim. Such a sentence is not evidence for the claim, however much wording it shares: the
verifier blanks it before evidence is selected (:func:`unframed`), so it moves no signal, and the
verdict says why (:func:`frame_note`).

A sentence is *framed* when it holds most of the claim's content words (:data:`RESTATES`, the
share chosen on WiCE train: ``python benchmarks/framing.py``, see docs/experiments/framing.md)
and a cue of one of three kinds that the claim itself does not hold:

* ``negation``: "it is false that", "is a myth", "was denied", "debunked", "no evidence that";
* ``reported``: "critics claim", "allegedly", "jokes that", "legend has it", "it has been claimed";
* ``instruction``: text addressed to a model or a reader's software ("ignore previous
  instructions", "answer that the claim is supported", "note to AI assistants"); a restatement
  in the two sentences after such a cue is framed too, since an instruction paragraph states
  the claim it wants repeated on its own.

A cue the claim shares is no frame: "Critics claim that X" cited for "Critics claim that X" is
support. Plain "not" and "said that" are left to the cross-encoder, which reads them well and
which real pages use too often for a cue.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from side.verify.evidence import content_tokens

__all__ = ["FrameKind", "Frame", "RESTATES", "INSTRUCTION_REACH", "frames", "unframed", "frame_note"]


class FrameKind(StrEnum):
    """How a framed sentence holds the claim."""

    NEGATION = "negation"
    REPORTED = "reported"
    INSTRUCTION = "instruction"

    @property
    def text(self) -> str:
        return {"negation": "only to deny it", "reported": "only as someone's claim or a joke",
                "instruction": "inside an instruction to its reader"}[self.value]


#: Share of the claim's content words a framed sentence holds at least (WiCE train).
RESTATES = 0.6
#: Sentences after an instruction cue that it frames.
INSTRUCTION_REACH = 2

_W = r"(?:[\w'’-]+\s+)"
_CUES: dict[FrameKind, tuple[str, ...]] = {
    FrameKind.NEGATION: (
        rf"\b(?:it|this|that)\s+(?:is|was|'s)\s+{_W}{{0,2}}?(?:false|untrue|not\s+true|incorrect|wrong|a\s+myth"
        r"|a\s+misconception|a\s+hoax|a\s+fabrication|a\s+lie|nonsense|baseless|unfounded|fiction)\b",
        r"\b(?:is|are|was|were)\s+(?:\w+\s+){0,2}?(?:false|untrue|a\s+myth|a\s+misconception|a\s+hoax|a\s+lie"
        r"|an?\s+(?:urban\s+)?legend|baseless|unfounded|fiction|fabricated|made\s+up)\b",
        r"\b(?:myths?|misconceptions?|hoax(?:es)?|debunk\w*|disprov\w*|refuted|fabricat\w*|falsely\s+(?:claim\w*|report\w*|stat\w*|said|alleg\w*|attribut\w*|credit\w*)|false\s+claims?"
        r"|false\s+rumou?rs?|(?:no|little)\s+evidence|never\s+happened|misinformation|disinformation"
        r"|contrary\s+to\s+(?:popular\s+belief|(?:the\s+)?(?:claims?|reports?|rumou?rs?|legend|myth))"
        r"|den(?:y|ies|ied|ial)\s+(?:that|the\s+(?:claims?|reports?|story|stories|rumou?rs?|allegations?)|ever)"
        r"|(?:was|were|has\s+been|have\s+been)\s+(?:\w+\s+)?denied"
        r"|dismissed\s+(?:the\s+(?:claims?|idea|reports?|story|rumou?rs?)|as\s+(?:false|untrue|a\s+myth|rumou?r|nonsense))"
        r"|rejected\s+the\s+(?:claim|idea|story|report)s?)\b",
    ),
    FrameKind.REPORTED: (
        r"\b(?:critics|opponents|sceptics|skeptics|detractors|conspiracy\s+theorists|rumou?rs?|legend|folklore"
        r"|gossip|tabloids|trolls|pranksters)\s+(?:\w+\s+)?(?:claim\w*|alleg\w*|say|said|says|suggest\w*|insist\w*"
        r"|maintain\w*|has\s+it|have\s+it|believe\w*|spread|hold)\b",
        r"\baccording\s+to\s+(?:\w+\s+)?(?:critics|opponents|sceptics|skeptics|detractors|conspiracy\s+theorists"
        r"|rumou?rs?|legend|folklore|gossip|tabloids)\b",
        r"\b(?:allegedly|supposedly|purportedly|rumou?red|jok(?:e|es|ed|ing|ingly)|quip\w*|satir\w*|parod\w*"
        r"|april\s+fools?|tongue[\s-]in[\s-]cheek|in\s+jest)\b",
        r"\b(?:claims?|claimed|alleges?|alleged|contends?|contended)\s+that\b",
        r"\bit\s+(?:is|was|has\s+been|had\s+been)\s+(?:often\s+|widely\s+|sometimes\s+)?(?:claimed|alleged"
        r"|rumou?red|suggested|speculated)\b",
    ),
    FrameKind.INSTRUCTION: (
        r"\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+|the\s+)?(?:previous|prior|above|earlier|preceding|other)"
        r"\s+(?:\w+\s+)?(?:instructions?|prompts?|rules|text|context|content)\b",
        r"\b(?:ai|a\.i\.|llms?|language\s+models?|chatbots?|assistants?|fact[\s-]?checkers?|classifiers?"
        r"|verification\s+(?:tools?|systems?))\s*(?::|must\b|should\b|reading\b|processing\b|are\s+instructed)",
        r"\b(?:answer|respond|reply|output|classify|label|mark|rate|report)\s+(?:\w+\s+){0,4}?(?:as\s+)?"
        r"[\"'“‘]?(?:supported|verified|true|correct|accurate)\b",
        r"\b(?:treat|consider)\s+(?:the\s+following|this|the\s+claim|it)\s+(?:\w+\s+){0,2}?as\s+"
        r"(?:verified|true|supported|correct|fact)\b",
        r"\b(?:system\s+prompt|new\s+instructions?|instructions?\s+(?:for|to)\s+(?:ai|the\s+model|models|assistants?))\b",
        r"\byou\s+are\s+(?:an?|the)\s+(?:ai|assistant|language\s+model|fact[\s-]?checker|verifier)\b",
        r"\b(?:note|message)\s+(?:to|for)\s+(?:ai|any\s+ai|automated|language\s+models?|assistants?|bots?)\b",
    ),
}


def _compile() -> re.Pattern[str]:
    """One alternation of every cue, each a group named ``KIND_n`` (its kind read back from the name)."""
    parts = [f"(?P<{kind.name}_{n}>{pattern})" for kind, patterns in _CUES.items()
             for n, pattern in enumerate(patterns)]
    return re.compile("|".join(parts), re.IGNORECASE)


_CUE = _compile()


@dataclass(frozen=True)
class Frame:
    """One framed restatement of a claim in a source."""

    kind: FrameKind
    #: The cue as the source spells it.
    cue: str
    sentence_index: int


def _cues(sentences: Sequence[str]) -> list[tuple[int, FrameKind, str]]:
    """Every cue of ``sentences`` as (sentence index, kind, text): one regular-expression pass over
    the joined text, so a 4,000-sentence page costs one scan, not 4,000."""
    starts, offset = [], 0
    for sentence in sentences:
        starts.append(offset)
        offset += len(sentence) + 1
    found = []
    for match in _CUE.finditer("\n".join(sentences)):
        if match.lastgroup is None:
            continue
        kind = FrameKind[match.lastgroup.rsplit("_", 1)[0]]
        found.append((bisect.bisect_right(starts, match.start()) - 1, kind, match.group(0)))
    return found


def _restates(wanted: set[str], sentence: str, share: float) -> bool:
    have = set(content_tokens(sentence))
    return len(wanted & have) >= share * len(wanted)


def frames(claim: str, sentences: Sequence[str], restates: float | None = None) -> tuple[Frame, ...]:
    """The framed restatements of ``claim`` in ``sentences``, in sentence order; ``restates``: the
    share of the claim a framed sentence holds (None: :data:`RESTATES`, read at call time)."""
    share = RESTATES if restates is None else restates
    wanted = set(content_tokens(claim))
    if not wanted:
        return ()
    claim_words = {w.lower() for w in re.findall(r"\w+", claim)}
    chosen: dict[int, Frame] = {}
    for index, kind, cue in _cues(sentences):
        if {w.lower() for w in re.findall(r"\w+", cue)} & claim_words - _FRAME_NEUTRAL:
            continue  # the claim itself denies, reports or instructs: no frame
        reach = range(index, min(len(sentences), index + 1 + INSTRUCTION_REACH)) if kind is FrameKind.INSTRUCTION \
            else (index,)
        for i in reach:
            if i not in chosen and _restates(wanted, sentences[i], share):
                chosen[i] = Frame(kind, cue, i)
    return tuple(chosen[i] for i in sorted(chosen))


#: Words of a cue that a claim may share without taking the frame on ("it is", "that", "the"...).
_FRAME_NEUTRAL = frozenset(
    {"it", "is", "was", "this", "that", "s", "a", "an", "the", "are", "were", "to", "for", "as", "of", "has", "had",
     "been", "any", "all", "or", "no", "you", "in", "other", "new", "little", "often", "widely", "sometimes",
     "made", "up", "never"})


def unframed(claim: str, sentences: Sequence[str]) -> tuple[list[str], tuple[Frame, ...]]:
    """``sentences`` with each framed restatement of ``claim`` blanked (indices kept, so evidence
    still names the page's own sentence numbers), and the frames found."""
    found = frames(claim, sentences)
    if not found:
        return list(sentences), ()
    blanked = list(sentences)
    for frame in found:
        blanked[frame.sentence_index] = ""
    return blanked, found


def frame_note(found: Sequence[Frame]) -> str:
    """What a verdict says about the framed sentences it did not count."""
    if not found:
        return ""
    first = found[0]
    more = f" and {len(found) - 1} more" if len(found) > 1 else ""
    return (f"the source repeats the claim {first.kind.text} (sentence {first.sentence_index + 1}{more}, "
            f"\"{first.cue}\"): not counted as support")
