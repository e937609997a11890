"""The cascade: Side decides where it is sure, the LLM judge where it is not.

``[judge] mode`` (:class:`side.config.JudgeConfig`) says which citations the judge reads:

* ``off``: none (the default when no endpoint is configured);
* ``uncertain``: exactly the Results Side is *unsure* of (:meth:`LevelThresholds.unsure`): a
  partially or not supported level at a support score from the verifier's sure flag cut up (its
  band is ``[flag, supported)``, the cuts chosen on WiCE train, see docs/judge.md), and sources
  Side cannot check only because they are not in English (an LLM reads them). ``judge.band_low``
  / ``band_high``, when set (0 or more; negative, the default, is unset), replace that with a
  plain score band, for experiments;

* ``all``: every citation Side scored, and the foreign sources too.

Each one goes to the judge with its evidence window (:func:`side.verify.window.build_evidence_window`)
and the whole source for the quote check. A quote found on the page proves it is there, not that
it backs the claim: a hostile page can tell an obliging model to answer "supported" and quote
any sentence of the page. So a supported or partially supported verdict is taken only when Side's
own verifier, reading the quotes alone, scores them as supporting the claim at or above
``judge.quote_cut`` (:meth:`Cascade.review`; the cut is chosen on WiCE train by
``benchmarks/judge_quote_cut.py``). A verdict that passes (or a not supported one) replaces Side's
level, and the Result records who decided it (:attr:`side.results.Result.decided_by`). Otherwise
Side's verdict stands and :attr:`~side.results.Result.judge_note` says why; an endpoint that is
down, slow or out of budget leaves the request on the Result
(:attr:`~side.results.Result.judge_request`) to be judged later.

The verifier is the Pipeline's own (:meth:`Cascade.use_verifier`, called by the Pipeline that
runs the cascade): no second model is loaded. A cascade without one takes no supported verdict.
A source in a language Side does not read has no verifier score; the judge's word is taken there
(the citation had no level of its own but "cannot check"), except for a page that holds
instruction-like text (:func:`side.verify.judge.instruction_phrases`), which is not sent at all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from side.verify.judge import (
    Judge,
    JudgeError,
    JudgeRequest,
    JudgeUnavailable,
    JudgeVerdict,
    QuoteCheck,
    instruction_phrases,
    quote_pieces,
)
from side.verify.levels import LevelThresholds, VerdictLevel
from side.verify.verifier import Query, Verdict, VerdictLabel
from side.verify.window import build_evidence_window

if TYPE_CHECKING:
    from side.results import Result
    from side.verify.verifier import Verifier

__all__ = ["CascadeSettings", "Cascade", "wants_judge", "judge_request", "apply_judgement", "judge_score",
           "QuoteScorer", "review_verdict", "quote_sentences", "score_quotes", "verifier_quote_scorer",
           "note_instructions", "DEFAULT_QUOTE_CUT"]

log = logging.getLogger(__name__)

#: The model's label that goes with each judge level, for the Verdict record.
_LABELS = {VerdictLevel.SUPPORTED: VerdictLabel.SUPPORTS, VerdictLevel.PARTIALLY_SUPPORTED: VerdictLabel.SUPPORTS,
           VerdictLevel.NOT_SUPPORTED: VerdictLabel.REFUTES, VerdictLevel.CANNOT_CHECK: VerdictLabel.NOT_ENOUGH_INFO}


#: Side's support score the judge's quotes must reach against the claim (``judge.quote_cut``,
#: chosen on WiCE train: ``benchmarks/judge_quote_cut.py``).
DEFAULT_QUOTE_CUT = 0.135

#: Scores a claim (its request) against the judge's quotes: Side's support score, 0 to 1.
QuoteScorer = Callable[[JudgeRequest, Sequence[str]], float]


@dataclass(frozen=True)
class CascadeSettings:
    """Which citations the judge reads, how much of each source, and the score its quotes need."""

    mode: str = "off"
    #: An explicit score band for ``uncertain`` (both 0 or more, from ``judge.band_low`` /
    #: ``band_high``); negative (the default): Side's unsure Results, by the verifier's cuts
    #: (:func:`wants_judge`).
    band_low: float = -1.0
    band_high: float = -1.0
    window_tokens: int = 1000
    quote_cut: float = DEFAULT_QUOTE_CUT

    @classmethod
    def from_config(cls, judge: Any) -> CascadeSettings:
        return cls(judge.active_mode, judge.band_low, judge.band_high, judge.window_tokens, judge.quote_cut)

    @property
    def explicit_band(self) -> bool:
        """Whether ``band_low`` / ``band_high`` set a score band of their own."""
        return self.band_low >= 0 and self.band_high >= 0

    def band(self, levels: LevelThresholds | None = None) -> tuple[float, float]:
        """The ``uncertain`` band on the support score: the explicit one, else ``levels``' unsure
        band ``[flag, supported)`` (the default cuts without ``levels``)."""
        if self.explicit_band:
            return self.band_low, self.band_high
        return (levels or LevelThresholds()).band

    def resolved(self, levels: LevelThresholds | None) -> CascadeSettings:
        """These settings with the band written out (:meth:`band`), for readers of the two numbers."""
        low, high = self.band(levels)
        return replace(self, band_low=low, band_high=high)


def quote_sentences(quotes: Sequence[str]) -> list[str]:
    """The judge's quotes as the sentences Side's verifier reads: each split into sentences, a
    quote shortened with "..." into its pieces."""
    from side.text import split_sentences

    return [s for quote in quotes for piece in quote_pieces(quote) for s in split_sentences(piece) if s.strip()]


def score_quotes(verifier: Verifier, items: Sequence[tuple[Query, Sequence[str]]]) -> list[float]:
    """Side's support score of each claim against its quotes alone (one batch of the verifier):
    what :meth:`Cascade.review` compares with the cut, and what the benchmark that chose the cut
    measured. No quote sentences: 0."""
    pairs = [(query, quote_sentences(quotes)) for query, quotes in items]
    scored = [(query, sentences) for query, sentences in pairs if sentences]
    verdicts = iter(verifier.verify_many(scored) if scored else [])
    return [float(next(verdicts).score) if sentences else 0.0 for _, sentences in pairs]


def verifier_quote_scorer(verifier: Verifier) -> QuoteScorer:
    """A :data:`QuoteScorer` that asks ``verifier`` (the Pipeline's, already loaded)."""

    def score(request: JudgeRequest, quotes: Sequence[str]) -> float:
        query = Query(request.claim, request.title, request.section, request.context)
        return score_quotes(verifier, [(query, quotes)])[0]

    return score


def note_instructions(result: Result) -> tuple[str, ...]:
    """Note on ``result`` the instruction-like phrases its source holds (its text still loaded)."""
    sentences = result.source_sentences or result.foreign_sentences
    result.source_instructions = list(instruction_phrases("\n".join(sentences))) if sentences else []
    return tuple(result.source_instructions)


def wants_judge(result: Result, settings: CascadeSettings, levels: LevelThresholds | None = None) -> bool:
    """Whether ``result`` goes to the judge under ``settings`` (its source's text still loaded).

    ``uncertain`` sends exactly what Side is unsure of under ``levels`` (the verifier's cuts, as
    the Pipeline decides with them; default cuts without): a partially or not supported level at a
    score at or above the sure flag cut. An explicit band in ``settings`` sends the scores in it.
    """
    if settings.mode == "off":
        return False
    if result.verdict is None or result.level is VerdictLevel.CANNOT_CHECK:
        return bool(result.foreign_sentences)  # not English: Side cannot read it, an LLM can
    if not result.source_sentences:
        return False
    if settings.mode == "all":
        return True
    if settings.explicit_band:
        return settings.band_low <= result.verdict.score < settings.band_high
    return (levels or LevelThresholds()).unsure(result.level, result.verdict.score)


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
    """Record ``verdict`` (reviewed: :meth:`Cascade.review`) on ``result``; its level replaces
    Side's when it may (True): never a supported or partially supported one whose quotes Side's
    verifier did not score as backing a claim Side had scored."""
    result.judge, result.judge_request = verdict, None
    rejection = verdict.rejection_for(None if result.verdict is None else result.level)
    if rejection:
        result.judge_note = rejection
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


def review_verdict(request: JudgeRequest, verdict: JudgeVerdict, scorer: QuoteScorer | None,
                   cut: float = DEFAULT_QUOTE_CUT) -> JudgeVerdict:
    """``verdict`` with Side's check of its quotes (:class:`QuoteCheck`): a supported or partially
    supported verdict whose quotes are on the page is BACKED only when ``scorer`` (Side's
    verifier) scores the claim against the quotes alone at ``cut`` or above, else NOT_BACKED. A
    source Side does not read (``request.language`` not English) is UNREAD; without a scorer the
    verdict stays UNCHECKED, and is not shown. Other verdicts need no check and come back as they are."""
    if not verdict.needs_check:
        return verdict
    if request.language and request.language != "en":
        return replace(verdict, quote_check=QuoteCheck.UNREAD)
    if scorer is None:
        log.warning("no verifier to score the judge's quote: its %s verdict is not taken", verdict.level.text)
        return verdict.unchecked()
    score = round(float(scorer(request, verdict.quotes)), 4)
    backed = score >= cut
    if not backed:
        log.info("judge said %s for %r, but Side scores its quote %.3f (cut %.3f): not taken",
                 verdict.level.text, request.claim[:80], score, cut)
    return replace(verdict, quote_check=QuoteCheck.BACKED if backed else QuoteCheck.NOT_BACKED,
                   quote_support=score, quote_cut=cut)


class Cascade:
    """Sends the citations ``settings`` select to ``judge``, checks the quotes of what comes back
    with ``quote_scorer`` (Side's verifier: :func:`verifier_quote_scorer`) and applies it."""

    def __init__(self, judge: Judge, settings: CascadeSettings, quote_scorer: QuoteScorer | None = None) -> None:
        self.judge = judge
        self.settings = settings
        #: Side's score of a claim against the judge's quotes; None: no supported verdict is taken.
        self.quote_scorer = quote_scorer
        #: The cuts Side decides with (:meth:`use_levels`; the verifier's): its unsure band is the
        #: ``uncertain`` mode's.
        self.levels: LevelThresholds | None = None

    @classmethod
    def from_config(cls, config: Any, judge: Judge | None = None, verifier: Verifier | None = None) -> Cascade | None:
        """The configured cascade, or None when ``[judge]`` is off (or has no endpoint); its
        quotes are scored by ``verifier`` (else by the Pipeline's, see :meth:`use_verifier`)."""
        settings = CascadeSettings.from_config(config.judge)
        if settings.mode == "off":
            return None
        return cls(judge or Judge.from_config(config), settings,
                   verifier_quote_scorer(verifier) if verifier is not None else None)

    def use_verifier(self, verifier: Verifier) -> None:
        """Score the judge's quotes with ``verifier`` unless a scorer was given already; its cuts
        decide what Side is unsure of (unless :meth:`use_levels` gave others)."""
        if self.quote_scorer is None:
            self.quote_scorer = verifier_quote_scorer(verifier)
        if self.levels is None:
            self.levels = verifier.levels

    def use_levels(self, levels: LevelThresholds) -> None:
        """Judge what Side is unsure of under ``levels`` (the Pipeline's cuts)."""
        self.levels = levels

    def run(self, results: Iterable[Result]) -> int:
        """Judge the selected ``results`` in place; returns how many verdicts the judge decided."""
        decided = 0
        for result in results:
            if not wants_judge(result, self.settings, self.levels):
                continue
            foreign = result.verdict is None or result.level is VerdictLevel.CANNOT_CHECK
            if foreign and (result.source_instructions or note_instructions(result)):
                # no verifier reads this source, so nothing would check the judge's quote
                result.judge_note = ("not sent to the LLM: the source, in a language Side does not read, holds "
                                     f"instruction-like text ({'; '.join(result.source_instructions[:2])})")
                log.warning("foreign source with instruction-like text not judged: %r", result.claim.text[:80])
                continue
            decided += self.judge_one(result, judge_request(result, self.settings.window_tokens))
        return decided

    def review(self, request: JudgeRequest, verdict: JudgeVerdict) -> JudgeVerdict:
        """``verdict`` with Side's check of its quotes by this cascade's scorer and cut
        (:func:`review_verdict`)."""
        return review_verdict(request, verdict, self.quote_scorer, self.settings.quote_cut)

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
        return apply_judgement(result, self.review(request, verdict))

