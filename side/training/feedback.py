"""Reviewed results as a file: the format ``side-feedback export`` writes and training reads.

Patrollers accept or dismiss flagged citations in the dashboard and the gadget; the results
store keeps those decisions. This module is the store-free half of the loop: one typed
:class:`FeedbackRecord` per reviewed result, written as versioned JSON Lines, so that
``side calibrate --from FILE`` and ``side train verifier --feedback FILE`` work from the file
alone (reproducibly, on a machine without the service stack, and after the store has moved on).

The file is a header line ``{"format": "side-feedback", "version": 1, "records": N}`` followed by
one record per line, each with its own ``"version": 1``. The cited source's text is not kept
(the store never had it): each record carries the best sentences the verifier read in it, with
their scores, the support score and level it gave, and the suggestion the reviewer saw. The
reviewer's name is not exported.

What a decision says about the *cited* source (:func:`citation_supported`):

* accepted (the suggested source was taken instead): the cited source did not support the
  claim, so the flag was right;
* dismissed ``source-is-fine``: the cited source supports the claim, so the flag was wrong;
* dismissed ``suggestion-wrong``: the reviewer agreed that the citation needs a look but not with
  the replacement offered, so the flag was right (the suggestion is a negative pair for training);
* dismissed ``not-relevant`` or ``other``: says nothing about the cited source; left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from side.errors import InputError

__all__ = [
    "FEEDBACK_FORMAT", "FEEDBACK_VERSION", "FeedbackAction", "DismissReason", "ReviewedSentence",
    "ReviewedSuggestion", "FeedbackRecord", "citation_supported", "write_feedback", "read_feedback",
]

FEEDBACK_FORMAT = "side-feedback"
#: Bumped when a field changes meaning or goes away; readers refuse versions they do not know.
FEEDBACK_VERSION = 1


class FeedbackAction(StrEnum):
    """What a patroller did with a flagged citation's suggestion."""

    ACCEPT = "accept"
    DISMISS = "dismiss"


class DismissReason(StrEnum):
    """Why a suggestion was dismissed (after Edit Check's decline reasons)."""

    NOT_RELEVANT = "not-relevant"
    SOURCE_IS_FINE = "source-is-fine"
    SUGGESTION_WRONG = "suggestion-wrong"
    OTHER = "other"


@dataclass(frozen=True)
class ReviewedSentence:
    """One sentence the verifier read in a source, with its score."""

    text: str
    score: float
    sentence_index: int = -1

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReviewedSentence:
        return cls(text=str(data["text"]), score=float(data["score"]),
                   sentence_index=int(data.get("sentence_index", -1)))


@dataclass(frozen=True)
class ReviewedSuggestion:
    """The replacement source the reviewer was shown (or took), with the sentence that backs it."""

    url: str
    title: str = ""
    score: float | None = None
    evidence: str = ""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReviewedSuggestion:
        score = data.get("score")
        return cls(url=str(data["url"]), title=str(data.get("title") or ""),
                   score=None if score is None else float(score), evidence=str(data.get("evidence") or ""))


@dataclass(frozen=True)
class FeedbackRecord:
    """One reviewed result: the claim, what Side said about its citation, and the decision."""

    claim: str
    #: The plain text before the ref, ending with the claim (what the verifier reads).
    context: str
    article_title: str
    section: str
    cited_url: str
    #: The verifier's support score for the cited source (None: it could not be scored).
    score: float | None
    #: The level Side showed: supported, partially_supported, not_supported, cannot_check.
    level: str
    flagged: bool
    #: The cited source's best sentences, best first.
    evidence: tuple[ReviewedSentence, ...]
    action: FeedbackAction
    #: A :class:`DismissReason` value for a dismissal; free text (often "") for an acceptance.
    reason: str
    suggestion: ReviewedSuggestion | None = None
    comment: str = ""
    wiki: str = ""
    revision: int | None = None
    result_id: int | None = None
    #: ISO 8601 UTC times: when the citation was checked, and when it was reviewed.
    checked_at: str = ""
    reviewed_at: str = ""
    version: int = field(default=FEEDBACK_VERSION)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["action"] = str(self.action)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FeedbackRecord:
        """The inverse of :meth:`to_dict`; an InputError names what is wrong with ``data``."""
        if not _is_version(data.get("version")):
            raise InputError(f"feedback record version {data.get('version')!r} is not {FEEDBACK_VERSION}")
        try:
            action = FeedbackAction(data["action"])
            reason = str(data.get("reason") or "")
            if action is FeedbackAction.DISMISS:
                reason = DismissReason(reason)
            score = data.get("score")
            if score is not None and not 0 <= float(score) <= 1:  # NaN too
                raise ValueError(f"score {score!r} is not a support score from 0 to 1")
            suggestion = data.get("suggestion")
            revision, result_id = data.get("revision"), data.get("result_id")
            return cls(claim=str(data["claim"]), context=str(data.get("context") or ""),
                       article_title=str(data.get("article_title") or ""), section=str(data.get("section") or ""),
                       cited_url=str(data.get("cited_url") or ""), score=None if score is None else float(score),
                       level=str(data.get("level") or ""), flagged=bool(data.get("flagged")),
                       evidence=tuple(ReviewedSentence.from_dict(e) for e in data.get("evidence") or ()),
                       action=action, reason=reason,
                       suggestion=ReviewedSuggestion.from_dict(suggestion) if suggestion else None,
                       comment=str(data.get("comment") or ""), wiki=str(data.get("wiki") or ""),
                       revision=None if revision is None else int(revision),
                       result_id=None if result_id is None else int(result_id),
                       checked_at=str(data.get("checked_at") or ""), reviewed_at=str(data.get("reviewed_at") or ""))
        except KeyError as exc:
            raise InputError(f"feedback record lacks {exc.args[0]!r}") from None
        except (TypeError, ValueError) as exc:
            raise InputError(f"malformed feedback record: {exc}") from None


def citation_supported(record: FeedbackRecord) -> bool | None:
    """Whether the reviewer's decision says the cited source supports the claim (None: it says nothing).

    The mapping is the module docstring's: accepted or ``suggestion-wrong`` -> False (the flag was
    right), ``source-is-fine`` -> True (the flag was wrong), ``not-relevant`` / ``other`` -> None.
    """
    if record.action is FeedbackAction.ACCEPT or record.reason == DismissReason.SUGGESTION_WRONG:
        return False
    if record.reason == DismissReason.SOURCE_IS_FINE:
        return True
    return None


def write_feedback(records: Iterable[FeedbackRecord], path: str | Path) -> int:
    """Write the header and one line per record to ``path``; returns how many records."""
    rows = [r.to_dict() for r in records]
    header = {"format": FEEDBACK_FORMAT, "version": FEEDBACK_VERSION, "records": len(rows)}
    with open(path, "w", encoding="utf-8") as out:
        for row in [header, *rows]:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return len(rows)


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with open(path, "rb") as lines:
        for number, raw in enumerate(lines, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(f"{path}:{number}: not UTF-8 text") from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{number}: not JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise InputError(f"{path}:{number}: not a JSON object")
            yield number, row


def read_feedback(path: str | Path) -> list[FeedbackRecord]:
    """The records of an export; an InputError (one line, with the line number) for anything else."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"feedback file not found: {path}")
    rows = _lines(path)
    first = next(rows, None)
    if first is None or first[1].get("format") != FEEDBACK_FORMAT:
        raise InputError(f"{path} is not a feedback export: its first line is not a {FEEDBACK_FORMAT} header")
    if not _is_version(first[1].get("version")):
        raise InputError(f"{path}: feedback format version {first[1].get('version')!r} is not {FEEDBACK_VERSION}")
    records = []
    for number, row in rows:
        try:
            records.append(FeedbackRecord.from_dict(row))
        except InputError as exc:
            raise InputError(f"{path}:{number}: {exc}") from None
    expected = first[1].get("records")
    if expected is not None and expected != len(records):
        raise InputError(f"{path}: its header counts {expected!r} records and it holds {len(records)} "
                         "(cut short, or added to by hand)")
    return records


def _is_version(value: Any) -> bool:
    """The format version this reader knows (``true`` is no version, though Python calls it 1)."""
    return type(value) is int and value == FEEDBACK_VERSION
