"""The cascade: Side decides where it is sure, the LLM judge where it is not.

``[judge] mode`` (:class:`side.config.JudgeConfig`) says which citations the judge reads:

* ``off``: none (the default when no endpoint is configured);
* ``uncertain``: those whose support score lies in ``[band_low, band_high)`` (chosen on WiCE
  train, see docs/judge.md), and sources Side cannot check only because they are not in English
  (an LLM reads them);
* ``all``: every citation Side scored, and the foreign sources too.

Each one goes to the judge with its evidence window (:func:`side.verify.window.build_evidence_window`)
and the whole source for the quote check. A verdict the judge backs with a quote found in the
source (or a not supported one) replaces Side's level, and the Result records who
decided it (:attr:`side.results.Result.decided_by`). Otherwise Side's verdict stands and
:attr:`~side.results.Result.judge_note` says why; an endpoint that is down, slow or out of budget
leaves the request on the Result (:attr:`~side.results.Result.judge_request`) to be judged later.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from side.verify.judge import Judge, JudgeError, JudgeRequest, JudgeUnavailable, JudgeVerdict
from side.verify.levels import VerdictLevel
from side.verify.verifier import Query, Verdict, VerdictLabel
from side.verify.window import build_evidence_window

if TYPE_CHECKING:
    from side.results import Result

__all__ = ["CascadeSettings", "Cascade", "wants_judge", "judge_request", "apply_judgement", "judge_score"]

log = logging.getLogger(__name__)

#: The model's label that goes with each judge level, for the Verdict record.
_LABELS = {VerdictLevel.SUPPORTED: VerdictLabel.SUPPORTS, VerdictLevel.PARTIALLY_SUPPORTED: VerdictLabel.SUPPORTS,
           VerdictLevel.NOT_SUPPORTED: VerdictLabel.REFUTES, VerdictLevel.CANNOT_CHECK: VerdictLabel.NOT_ENOUGH_INFO}


@dataclass(frozen=True)
class CascadeSettings:
    """Which citations the judge reads, and how much of each source."""

    mode: str = "off"
    band_low: float = 0.309
    band_high: float = 0.8263
    window_tokens: int = 1000

    @classmethod
    def from_config(cls, judge: Any) -> CascadeSettings:
        return cls(judge.active_mode, judge.band_low, judge.band_high, judge.window_tokens)


def wants_judge(result: Result, settings: CascadeSettings) -> bool:
    """Whether ``result`` goes to the judge under ``settings`` (its source's text still loaded)."""
    if settings.mode == "off":
        return False
    if result.verdict is None or result.level is VerdictLevel.CANNOT_CHECK:
        return bool(result.foreign_sentences)  # not English: Side cannot read it, an LLM can
    if not result.source_sentences:
        return False
    return settings.mode == "all" or settings.band_low <= result.verdict.score < settings.band_high


def judge_request(result: Result, window_tokens: int) -> JudgeRequest:
    """The judge's request for ``result``: its claim, the evidence window and the whole source."""
    claim = result.claim
    sentences = result.source_sentences or result.foreign_sentences
    query = Query(claim.text, claim.article_title, claim.section_path, claim.left_context)
    window = build_evidence_window(query, sentences, budget=window_tokens)
    return JudgeRequest(claim=claim.text, window=window.text, source_text="\n".join(sentences),
                        title=claim.article_title, section=claim.section_path, context=claim.left_context,
                        language=result.source_language or "en", window_tokens=window.tokens)


def judge_score(verdict: JudgeVerdict) -> float:
    """A support score for a judge's verdict where Side has none (a foreign source): the level's
    middle, moved by the judge's confidence; what the patrol queue orders by."""
    if verdict.level is VerdictLevel.SUPPORTED:
        return round(0.5 + verdict.confidence / 2, 4)
    if verdict.level is VerdictLevel.NOT_SUPPORTED:
        return round(0.5 - verdict.confidence / 2, 4)
    return 0.5


def apply_judgement(result: Result, verdict: JudgeVerdict) -> bool:
    """Record ``verdict`` on ``result``; its level replaces Side's when it is accepted (True)."""
    result.judge, result.judge_request = verdict, None
    if not verdict.accepted:
        result.judge_note = verdict.rejection
        return False
    result.decided_by, result.judge_note = verdict.decided_by, ""
    why = f"{verdict.decided_by}: {verdict.level.text}"
    if verdict.unsupported and verdict.level.needs_review:
        why += f" (not backed: {verdict.unsupported})"
    if result.verdict is None:
        result.verdict = Verdict(label=_LABELS[verdict.level], score=judge_score(verdict), level=verdict.level,
                                 reason=why)
    else:
        unsupported = (verdict.unsupported,) if verdict.unsupported else ()
        result.verdict = replace(result.verdict, level=verdict.level, reason=why,
                                 unsupported=unsupported or result.verdict.unsupported)
    return True


class Cascade:
    """Sends the citations ``settings`` select to ``judge`` and applies what comes back."""

    def __init__(self, judge: Judge, settings: CascadeSettings) -> None:
        self.judge = judge
        self.settings = settings

    @classmethod
    def from_config(cls, config: Any, judge: Judge | None = None) -> Cascade | None:
        """The configured cascade, or None when ``[judge]`` is off (or has no endpoint)."""
        settings = CascadeSettings.from_config(config.judge)
        if settings.mode == "off":
            return None
        return cls(judge or Judge.from_config(config), settings)

    def run(self, results: Iterable[Result]) -> int:
        """Judge the selected ``results`` in place; returns how many verdicts the judge decided."""
        decided = 0
        for result in results:
            if not wants_judge(result, self.settings):
                continue
            decided += self.judge_one(result, judge_request(result, self.settings.window_tokens))
        return decided

    def judge_one(self, result: Result, request: JudgeRequest) -> bool:
        """Ask about one citation; on failure Side's verdict stands (and, when the endpoint may
        answer later, the request stays on the Result to be judged then)."""
        try:
            verdict = self.judge.judge(request)
        except JudgeUnavailable as exc:
            log.info("judge unavailable (%s) for %r: Side's verdict stands, judged later", exc.reason,
                     request.claim[:80])
            result.judge_request = request
            result.judge_note = f"to be judged later by the LLM ({exc.reason}): {exc}"
            return False
        except JudgeError as exc:
            log.warning("judge gave no verdict for %r: %s", request.claim[:80], exc)
            result.judge_note = f"the LLM gave no usable verdict ({exc}); Side's verdict stands"
            return False
        return apply_judgement(result, verdict)

