"""What the results store hands out and takes in: typed records, never rows or dicts.

The enums are StrEnums, so what is stored in the database and written to JSON stays the same
plain string (``"queued"``, ``"dismissed"``...) while code compares against named members. The
side records (:class:`~side.extract.claims.Claim`, :class:`~side.verify.verifier.Verdict`,
:class:`~side.pipeline.Suggestion`) travel inside these unchanged, so a consumer reads
``result.claim.citation.title`` instead of digging through the JSON the store keeps.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

from side.errors import InputError, SideError
from side.extract.claims import Claim
from side.extract.lead import ArticleLead
from side.pipeline import SourceCopy, SourceStatus, Suggestion
from side.priority import Priority
from side.training.feedback import DismissReason, FeedbackAction
from side.verify.judge import JudgeVerdict
from side.verify.lead import LeadVerdict
from side.verify.levels import VerdictLevel
from side.verify.severity import MissingKind, Severity
from side.verify.verifier import Evidence, Verdict, VerdictLabel

# FeedbackAction and DismissReason are the export format's (side.training.feedback): one name per
# concept, and the file written from the store reads back without it.

__all__ = [
    "Check", "CheckRequest", "CheckStatus", "DismissReason", "Feedback", "FeedbackAction", "Origin",
    "QueueView", "ReviewStatus", "StoreError", "StoredLeadClaim", "StoredResult", "check_key", "iso", "parse_enum",
    "suggestion_key", "utcnow",
]


class CheckStatus(StrEnum):
    """Where a Check is on its way through the queue."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class Origin(StrEnum):
    """Who asked for a Check."""

    BOT = "bot"
    GADGET = "gadget"
    API = "api"
    CLI = "cli"
    #: side-bot -backlog: a claim an editor already tagged ({{failed verification}}, {{citation needed}}...).
    BACKLOG = "backlog"


class ReviewStatus(StrEnum):
    """A patroller's decision on a flagged citation."""

    OPEN = "open"
    ACCEPTED = "accepted"
    DISMISSED = "dismissed"


class QueueView(StrEnum):
    """Which results the patrol queue shows: the flags (its default), the unsure ones, or both."""

    #: Likely fails review: needs review, and Side is sure (``flagged``).
    FLAGS = "flags"
    #: Side's guess only (``unsure``): between the sure flag cut and the supported cut.
    UNSURE = "unsure"
    #: The flags, then the unsure ones.
    ALL = "all"


class StoreError(SideError):
    code = "store_error"


E = TypeVar("E", bound=StrEnum)


def parse_enum(kind: type[E], value: object, what: str) -> E:
    """``value`` as a member of ``kind``, or an InputError naming the allowed values.

    Python 3.11's ``"x" in SomeEnum`` raises instead of answering, hence one helper for every check.
    """
    try:
        return kind(value if isinstance(value, str) else repr(value))
    except ValueError:
        raise InputError(f"{what} must be one of {', '.join(kind)}, not {value!r}") from None


def utcnow() -> datetime:
    """Naive UTC: DATETIME columns on MariaDB and SQLite carry no zone."""
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0)


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat() + "Z"


def from_iso(value: str | None) -> datetime | None:
    """The inverse of :func:`iso`: naive UTC again."""
    return None if value is None else datetime.fromisoformat(value.removesuffix("Z"))


def required_time(value: str | None) -> datetime:
    parsed = from_iso(value)
    if parsed is None:
        raise InputError("a stored record's created_at is missing")
    return parsed


def _claim_identity(claim: Claim) -> list[str]:
    """What makes two claims the same work; a claim whose URL may not be fetched (a spent fetch
    budget) is other work than the same claim fetched, so a later submission within budget runs."""
    citation = claim.citation
    identity = [claim.text, claim.left_context, citation.url or "", citation.title or "", claim.key]
    return [*identity, "no_fetch"] if claim.no_fetch else identity


def check_key(wiki: str, title: str, revision: int | None, claims: Iterable[Claim]) -> str:
    """Deterministic id of a unit of work: the same wiki, revision and claims give the same id.

    It is also the RQ job id, which is what makes enqueueing the same work twice run it once.
    """
    body = json.dumps([wiki, title, revision, sorted(_claim_identity(c) for c in claims)], ensure_ascii=False)
    return "chk_" + hashlib.sha256(body.encode("utf-8")).hexdigest()[:32]


def suggestion_key(wiki: str, claim_key: str, url: str) -> str:
    """Identity of one suggestion (a claim and the source proposed for it) across revisions."""
    return hashlib.sha256(f"{wiki}\x1f{claim_key}\x1f{url}".encode()).hexdigest()[:40]


@dataclass(frozen=True)
class CheckRequest:
    """Work to do: the claims of one revision or one gadget request.

    ``client_keys`` are the caller's own names for its claims (the API's ``key``), one per claim,
    handed back with each result so a client can match them; empty means each claim's own key.
    """

    wiki: str
    title: str
    claims: list[Claim]
    revision: int | None = None
    parent_revision: int | None = None
    origin: Origin = Origin.API
    client_keys: list[str] = field(default_factory=list)
    #: The article's uncited lead sentences and its body, checked with the claims when given
    #: (the bot gives them for a revision it has whole); not part of the check's identity.
    lead: ArticleLead | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.client_keys and len(self.client_keys) != len(self.claims):
            raise ValueError(f"{len(self.client_keys)} client keys for {len(self.claims)} claims")

    @property
    def id(self) -> str:
        return check_key(self.wiki, self.title, self.revision, self.claims)

    def keys(self) -> list[str]:
        """The client key of every claim, in order."""
        return list(self.client_keys) or [c.key for c in self.claims]


@dataclass(frozen=True)
class Check:
    """A stored unit of work: its claims, where it is, and a summary of its outcome."""

    id: str
    wiki: str
    title: str
    revision: int | None
    parent_revision: int | None
    origin: Origin
    status: CheckStatus
    error: str
    claims: list[Claim]
    #: The client's key of each claim (see :class:`CheckRequest`), in claim order.
    client_keys: list[str]
    citations: int
    flagged: int
    attempts: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    seconds: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "wiki": self.wiki, "title": self.title, "revision": self.revision,
                "parent_revision": self.parent_revision, "origin": self.origin, "status": self.status,
                "error": self.error, "claims": [c.to_dict() for c in self.claims],
                "client_keys": list(self.client_keys), "citations": self.citations, "flagged": self.flagged,
                "attempts": self.attempts, "created_at": iso(self.created_at),
                "started_at": iso(self.started_at), "finished_at": iso(self.finished_at),
                "seconds": self.seconds}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Check:
        return cls(id=data["id"], wiki=data["wiki"], title=data["title"], revision=data.get("revision"),
                   parent_revision=data.get("parent_revision"), origin=Origin(data["origin"]),
                   status=CheckStatus(data["status"]), error=data.get("error", ""),
                   claims=[Claim.from_dict(c) for c in data.get("claims", [])],
                   client_keys=list(data.get("client_keys", [])), citations=int(data.get("citations", 0)),
                   flagged=int(data.get("flagged", 0)), attempts=int(data.get("attempts", 0)),
                   created_at=required_time(data.get("created_at")), started_at=from_iso(data.get("started_at")),
                   finished_at=from_iso(data.get("finished_at")), seconds=data.get("seconds"))


@dataclass(frozen=True)
class StoredResult:
    """One citation use of a Check with its Verdict, Evidence and Suggestions (a stored Result)."""

    id: int
    check_id: str
    position: int
    client_key: str
    claim_key: str
    claim: Claim
    citation_url: str
    source_status: SourceStatus
    source_error: str
    label: VerdictLabel | None
    score: float | None
    failure_likelihood: float | None
    flagged: bool
    rank: int | None
    url_depth: int | None
    reasons: list[str]
    verdict: Verdict | None
    suggestions: list[Suggestion]
    review_status: ReviewStatus
    reviewed_at: datetime | None
    created_at: datetime
    # from the check
    wiki: str = ""
    title: str = ""
    revision: int | None = None
    parent_revision: int | None = None
    origin: Origin | None = None
    #: Which copy of the cited source was read (None: a corpus document, nothing read, or a
    #: result stored before this was kept), the URL actually read, and why that copy.
    source_copy: SourceCopy | None = None
    source_url: str = ""
    source_fallback: str = ""
    #: What people are shown: supported, partially / not supported, or cannot check ...
    level: VerdictLevel = VerdictLevel.CANNOT_CHECK
    #: ... why it cannot be checked ("" when it could be) ...
    level_reason: str = ""
    #: ... and whether it is not supported at the talk-page report's operating point.
    reportable: bool = False
    #: Its place in the patrol queue and why (None: not scored, or stored before priorities).
    priority: Priority | None = None
    #: Who decided the level: "Side", or "LLM: <model>" when the judge's verdict was taken ...
    decided_by: str = "Side"
    #: ... the judge's answer when it was asked (also when it was not taken) ...
    judge: JudgeVerdict | None = None
    #: ... why that answer is not shown, or why it is still to come ...
    judge_note: str = ""
    #: ... and whether the citation waits to be judged later (it keeps Side's verdict until then).
    judge_pending: bool = False
    #: Instruction-like phrases the cited source holds (:attr:`side.results.Result.source_instructions`).
    source_instructions: list[str] = field(default_factory=list)
    #: Side is unsure of its level (:attr:`side.results.Result.unsure`): shown as its guess, never flagged.
    unsure: bool = False
    #: What a needs-review level's source does not back, and how much that matters
    #: (:mod:`side.verify.severity`); None for other levels and results stored before them.
    missing: MissingKind | None = None
    severity: Severity | None = None

    @property
    def claim_text(self) -> str:
        return self.claim.text

    @property
    def citation_title(self) -> str:
        return self.claim.citation.title or ""

    @property
    def evidence(self) -> list[Evidence]:
        """The cited source's best sentences, best first (empty when it could not be scored)."""
        return list(self.verdict.evidence) if self.verdict else []

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "check_id": self.check_id, "position": self.position,
                "client_key": self.client_key, "claim_key": self.claim_key, "claim": self.claim.to_dict(),
                "url": self.citation_url, "source_status": self.source_status,
                "source_error": self.source_error, "source_copy": self.source_copy, "source_url": self.source_url,
                "source_fallback": self.source_fallback, "label": self.label, "level": self.level,
                "level_reason": self.level_reason, "reportable": self.reportable, "score": self.score,
                "failure_likelihood": self.failure_likelihood, "flagged": self.flagged, "rank": self.rank,
                "url_depth": self.url_depth, "reasons": self.reasons,
                "priority": self.priority.to_dict() if self.priority else None,
                "evidence": [e.to_dict() for e in self.evidence],
                "verdict": self.verdict.to_dict() if self.verdict else None,
                "suggestions": [s.to_dict() for s in self.suggestions], "review_status": self.review_status,
                "reviewed_at": iso(self.reviewed_at), "created_at": iso(self.created_at),
                "wiki": self.wiki, "title": self.title, "revision": self.revision,
                "parent_revision": self.parent_revision, "origin": self.origin, "decided_by": self.decided_by,
                "judge": self.judge.to_dict() if self.judge else None, "judge_note": self.judge_note,
                "judge_pending": self.judge_pending, "source_instructions": list(self.source_instructions),
                "unsure": self.unsure, "missing": self.missing, "severity": self.severity}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StoredResult:
        """The inverse of :meth:`to_dict` (``evidence`` there is the verdict's, so it is not read)."""
        verdict = data.get("verdict")
        return cls(id=int(data["id"]), check_id=data["check_id"], position=int(data["position"]),
                   client_key=data.get("client_key", ""), claim_key=data.get("claim_key", ""),
                   claim=Claim.from_dict(data["claim"]), citation_url=data.get("url", ""),
                   source_status=SourceStatus(data["source_status"]), source_error=data.get("source_error", ""),
                   label=VerdictLabel(data["label"]) if data.get("label") else None, score=data.get("score"),
                   failure_likelihood=data.get("failure_likelihood"), flagged=bool(data.get("flagged")),
                   rank=data.get("rank"), url_depth=data.get("url_depth"), reasons=list(data.get("reasons", [])),
                   verdict=Verdict.from_dict(verdict) if verdict else None,
                   suggestions=[Suggestion.from_dict(s) for s in data.get("suggestions", [])],
                   review_status=ReviewStatus(data["review_status"]), reviewed_at=from_iso(data.get("reviewed_at")),
                   created_at=required_time(data.get("created_at")), wiki=data.get("wiki", ""),
                   title=data.get("title", ""), revision=data.get("revision"),
                   parent_revision=data.get("parent_revision"),
                   origin=Origin(data["origin"]) if data.get("origin") else None,
                   level=VerdictLevel(data.get("level") or VerdictLevel.CANNOT_CHECK),
                   level_reason=str(data.get("level_reason") or ""), reportable=bool(data.get("reportable")),
                   priority=Priority.from_dict(data.get("priority")),
                   decided_by=str(data.get("decided_by") or "Side"),
                   judge=JudgeVerdict.from_dict(data["judge"]) if data.get("judge") else None,
                   judge_note=str(data.get("judge_note") or ""), judge_pending=bool(data.get("judge_pending")),
                   source_instructions=[str(p) for p in data.get("source_instructions") or []],
                   unsure=bool(data.get("unsure")), missing=missing_kind(data.get("missing")),
                   severity=severity_of(data.get("severity")))


def missing_kind(value: object) -> MissingKind | None:
    """A stored ``missing`` as a :class:`MissingKind` (None: none, or a value this version does not know)."""
    return MissingKind(value) if isinstance(value, str) and value in MissingKind._value2member_map_ else None


def severity_of(value: object) -> Severity | None:
    """A stored ``severity`` as a :class:`Severity` (None: none, or a value this version does not know)."""
    return Severity(value) if isinstance(value, str) and value in Severity._value2member_map_ else None


@dataclass(frozen=True)
class Feedback:
    """A patroller's accept or dismiss of a flagged citation."""

    id: int
    result_id: int
    action: FeedbackAction
    #: A :class:`DismissReason` for a dismissal; free text (often empty) for an acceptance.
    reason: str
    comment: str
    suggestion_url: str
    #: The wiki user name the reviewer logged in with (Wikimedia OAuth); "" for a review stored
    #: before reviewers logged in (the free-text names typed then were never verified, and dropped).
    reviewer: str
    created_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "result_id": self.result_id, "action": self.action, "reason": self.reason,
                "comment": self.comment, "suggestion_url": self.suggestion_url, "reviewer": self.reviewer,
                "created_at": iso(self.created_at)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Feedback:
        return cls(id=int(data["id"]), result_id=int(data["result_id"]), action=FeedbackAction(data["action"]),
                   reason=data.get("reason", ""), comment=data.get("comment", ""),
                   suggestion_url=data.get("suggestion_url", ""), reviewer=data.get("reviewer", ""),
                   created_at=required_time(data.get("created_at")))


@dataclass(frozen=True)
class StoredLeadClaim:
    """One uncited lead sentence of a check's article, as the store keeps its check against the body."""

    id: int
    check_id: str
    verdict: LeadVerdict
    created_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "check_id": self.check_id, **self.verdict.to_dict(), "created_at": iso(self.created_at)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StoredLeadClaim:
        return cls(id=int(data["id"]), check_id=str(data["check_id"]), verdict=LeadVerdict.from_dict(data),
                   created_at=required_time(data.get("created_at")))
