"""Lead claims grounded in the body: is each uncited lead sentence backed by the article itself?

The body is one Source for all of an article's lead claims: its sentences go to the verifier
once per claim, but the sentence embeddings are computed once (the verifier's
:class:`~side.retrieval.encoder.EmbeddingCache` holds them) and the cross-encoder runs over all
claims' evidence in shared batches. Each claim gets the Verdict level the same verifier and cuts
give a citation (:mod:`side.verify.verifier`), with the nearest body sentence and its section,
so a patroller sees at once what the body says instead.

An article with no body (every sentence in the lead), or not in English (the verifier reads
English only), gives *cannot check* with the reason for every claim, never *not supported*.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from side.extract.lead import ArticleLead, BodySentence
from side.verify.levels import LevelThresholds, VerdictLevel
from side.verify.verifier import MIN_ENGLISH_SHARE, Prepared, Query, english_share

if TYPE_CHECKING:
    from side.verify.verifier import Verifier

__all__ = ["NO_BODY", "NOT_ENGLISH", "LeadVerdict", "check_lead", "lead_verdicts"]

NO_BODY = "the article has no body to check its lead against"
NOT_ENGLISH = "the article is not in English"


@dataclass(frozen=True)
class LeadVerdict:
    """One uncited lead sentence and how well the article's body backs it."""

    claim: str
    #: The claim's place among the lead's sentences (see :class:`side.extract.lead.LeadClaim`).
    position: int
    level: VerdictLevel
    #: Calibrated support in [0, 1] (None when it could not be checked).
    score: float | None
    #: The body sentence nearest the claim, and the headings above it ("" / () when none).
    nearest: str = ""
    nearest_section: tuple[str, ...] = ()
    #: Why it cannot be checked ("" when it could).
    reason: str = ""

    @property
    def supported(self) -> bool:
        return self.level is VerdictLevel.SUPPORTED

    @property
    def nearest_section_path(self) -> str:
        return " / ".join(s for s in self.nearest_section if s)

    def to_dict(self) -> dict[str, Any]:
        return {"claim": self.claim, "position": self.position, "level": self.level, "score": self.score,
                "nearest": self.nearest, "nearest_section": list(self.nearest_section), "reason": self.reason}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LeadVerdict:
        score = data.get("score")
        return cls(claim=str(data["claim"]), position=int(data.get("position", 0)),
                   level=VerdictLevel(data["level"]), score=None if score is None else float(score),
                   nearest=str(data.get("nearest", "")),
                   nearest_section=tuple(str(s) for s in data.get("nearest_section", ())),
                   reason=str(data.get("reason", "")))


def _cannot_check(lead: ArticleLead, reason: str) -> list[LeadVerdict]:
    return [LeadVerdict(c.text, c.position, VerdictLevel.CANNOT_CHECK, None, reason=reason) for c in lead.claims]


def _nearest(lead: ArticleLead, prepared: Prepared, level: VerdictLevel) -> BodySentence | None:
    """What the body says nearest the claim: for a supported claim, the evidence that backs it;
    otherwise the sentence retrieval ranks nearest (what the body says instead, or about the
    same thing), since the cross-encoder's support ranks mean little when nothing supports it."""
    verdict = prepared.decided
    if level is VerdictLevel.SUPPORTED and verdict.evidence:
        index = verdict.evidence[0].sentence_index
    elif prepared.candidates:
        index = prepared.candidates[0].index
    else:
        return None
    return lead.body[index] if 0 <= index < len(lead.body) else None


def lead_verdicts(lead: ArticleLead, prepared: list[Prepared], levels: LevelThresholds) -> list[LeadVerdict]:
    """Each lead claim with its level against the body (under ``levels``) and the nearest body sentence."""
    out = []
    for claim, item in zip(lead.claims, prepared, strict=True):
        verdict = item.decided
        if verdict.level is VerdictLevel.CANNOT_CHECK and verdict.reason:
            out.append(LeadVerdict(claim.text, claim.position, VerdictLevel.CANNOT_CHECK, None, reason=verdict.reason))
            continue
        level = levels.level(verdict.score)
        nearest = _nearest(lead, item, level)
        out.append(LeadVerdict(claim.text, claim.position, level, verdict.score, nearest.text if nearest else "",
                               nearest.section if nearest else ()))
    return out


def check_lead(verifier: Verifier, lead: ArticleLead, levels: LevelThresholds | None = None) -> list[LeadVerdict]:
    """A :class:`LeadVerdict` per uncited lead claim, in lead order (none for a lead all cited);
    ``levels`` are the cuts from score to level (default: the verifier's, chosen on train data)."""
    if not lead.claims:
        return []
    if not lead.body:
        return _cannot_check(lead, NO_BODY)
    if english_share([c.text for c in lead.claims]) < MIN_ENGLISH_SHARE:
        return _cannot_check(lead, NOT_ENGLISH)
    # Indices into the body must survive the verifier's bounds: it keeps non-empty sentences in
    # order and cuts the list, and read_lead gives no empty ones.
    sentences = [b.text for b in lead.body]
    items = [(Query(claim=c.text, title=lead.title), sentences) for c in lead.claims]
    # A lead verdict shows no unsupported words, so the verifier is told not to look for them.
    return lead_verdicts(lead, verifier.run(items, shown=[False] * len(items)), levels or verifier.levels)
