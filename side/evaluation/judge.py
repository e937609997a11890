"""Side alone, the LLM judge alone and the cascade, on the same labelled citations in one run.

Citations come from WiCE (the claim with the sentences of the page it cites) or from any JSONL of
real citations in this schema, one object a line (:func:`read_citations`)::

    {"claim": "...", "source_text": "...", "label": "supported",
     "title": "...", "section": "...", "context": "...", "id": "..."}

``label`` is one of the four levels (``supported``, ``partially supported``, ``not supported``,
``cannot check``; spaces or underscores). Citations labelled cannot check are counted and left
out of the metrics, which need one of the three judged levels.

Per method (:func:`method_metrics`): AUROC of not supported and of not fully supported against
the rest (from a support score, higher = better supported), level macro-F1, and the F1 of
"needs review" (gold partially or not supported) at the method's own levels (the shipped cut)
and with the cut moved so that 15% and 30% of the good (supported) citations are flagged.

* **Side**: the verifier's score and level.
* **Judge**: the judge's level for every citation, and a score read off it
  (:func:`side.verify.cascade.judge_score`: the level moved by the judge's confidence); Side's
  level and score where the judge gave no verdict (down, past its deadline, bad output: counted
  as errors), as a deployment would show. A supported
  or partially supported answer whose quote is not in the source keeps its level here (it is what
  the model said) and is counted; the cascade never shows it.
* **Cascade**: Side's verdict, replaced by the judge's accepted verdict for the citations whose
  Side score lies in the cascade's band; their score is the judge's mapped into the band, so the
  order outside the band is Side's.

The ranking figures (:func:`ranking_metrics`, ``report["ranking"]``): AUROC of needs review (gold
partially or not supported) against supported for three orders of the same citations:

* **judge level**: the judge's level alone, as an ordinal (not supported > partially supported >
  supported; ties stay ties); Side's level where the judge gave no verdict (or said cannot check).
* **judge level, then Side** (:mod:`side.ranking`, as the queue orders): the level shown (the
  judge's where its verdict was accepted, Side's otherwise; every citation judged, as ``mode =
  all``), then Side's own failure score inside it.
* **Side**: Side's own verdicts in :mod:`side.ranking`'s order (band, then failure likelihood).

Calls, prompt tokens per citation and latency p50/p95 are the judge's as its server reported and
as the client timed them. A small local model's figures say nothing of a large one's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from side.data import load_wice, read_jsonl
from side.errors import InputError
from side.evaluation.verify import LEVELS, auroc, level_metrics, operating_points, wice_sentences
from side.verify.judge import QUOTED_LEVELS, QuoteCheck
from side.verify.levels import LevelThresholds, VerdictLevel

if TYPE_CHECKING:
    from side.verify.cascade import CascadeSettings
    from side.verify.judge import Judge, JudgeVerdict
    from side.verify.verifier import Verifier

__all__ = ["FLAG_SHARES", "PEER_LIFTWING_AUC", "LabelledCitation", "normalize_label", "read_citations",
           "wice_citations", "needs_review_f1", "flags_at_share", "method_metrics", "percentile",
           "Outcome", "evaluate_judge", "ranking_metrics"]

#: Shares of good (supported) citations flagged at which needs-review F1 is also printed.
FLAG_SHARES = (0.15, 0.30)
#: The expected range for a large served model, as published elsewhere (not measured here): the
#: peer userscript's AUC for Lift Wing's llm-qwen36-27b on its strict set.
PEER_LIFTWING_AUC = 0.791
_LABELS = {level.value: level.value for level in VerdictLevel}


@dataclass(frozen=True)
class LabelledCitation:
    """A claim, its source and the level people gave it."""

    claim: str
    source_text: str
    label: str
    title: str = ""
    section: str = ""
    context: str = ""
    id: str = ""
    #: The source's sentences when the data set gives them (WiCE); else split from the text.
    sentences: tuple[str, ...] = ()


def normalize_label(value: Any) -> str | None:
    """The level a label names (``partially supported``, ``Partially_Supported``...), or None."""
    if not isinstance(value, str):
        return None
    key = "_".join(value.strip().lower().replace("-", " ").split())
    return _LABELS.get(key)


def _field(record: dict[str, Any], name: str, where: str, required: bool = False) -> str:
    value = record.get(name)
    if value is None or value == "":
        if required:
            raise InputError(f"{where}: missing {name!r}")
        return ""
    if not isinstance(value, str):
        raise InputError(f"{where}: {name!r} must be a string")
    return value


def read_citations(path: str | Path, limit: int | None = None) -> list[LabelledCitation]:
    """The labelled citations of a JSONL file; a bad record is an :class:`InputError` naming its line."""
    out: list[LabelledCitation] = []
    for number, record in enumerate(read_jsonl(path), 1):
        where = f"{path}: record {number}"
        claim = _field(record, "claim", where, required=True)
        source = _field(record, "source_text", where, required=True)
        label = normalize_label(record.get("label"))
        if label is None:
            raise InputError(f"{where}: label {record.get('label')!r} is not one of supported, partially "
                             "supported, not supported, cannot check")
        out.append(LabelledCitation(claim, source, label, _field(record, "title", where),
                                    _field(record, "section", where), _field(record, "context", where),
                                    str(record.get("id") or number)))
        if limit is not None and len(out) >= limit:
            break
    if not out:
        raise InputError(f"{path}: no citations")
    return out


def wice_citations(path: str | Path, limit: int | None = None) -> list[LabelledCitation]:
    """WiCE claims as labelled citations (the page's sentences kept as they are split there)."""
    out = []
    for claim in load_wice(path)[:limit]:
        sentences = tuple(wice_sentences(claim))
        out.append(LabelledCitation(claim.claim, "\n".join(sentences), claim.label, claim.title, claim.section,
                                    claim.context, claim.id, sentences))
    return out


def needs_review_f1(gold_flagged: np.ndarray, flagged: np.ndarray) -> float:
    """F1 of flagging the citations that need review (gold partially or not supported)."""
    hits = int(np.sum(gold_flagged & flagged))
    said, wanted = int(flagged.sum()), int(gold_flagged.sum())
    precision = hits / said if said else 0.0
    recall = hits / wanted if wanted else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def flags_at_share(score: np.ndarray, good: np.ndarray, share: float) -> np.ndarray:
    """Citations flagged by a cut on ``score`` (lower = flagged) that flags ``share`` of the good
    ones: every citation scoring at most the good scores' ``share`` quantile (ties flag together,
    so a coarse score may flag more)."""
    if not good.any():
        return np.zeros(len(score), dtype=bool)
    cut = float(np.quantile(score[good], share, method="inverted_cdf"))
    return score <= cut


def method_metrics(gold: Sequence[str], score: np.ndarray, levels: Sequence[str]) -> dict[str, Any]:
    """AUROCs, level macro-F1 and needs-review F1 (own levels, and 15% / 30% of good flagged)."""
    labels = np.array(gold)
    good = labels == VerdictLevel.SUPPORTED.value
    review = ~good
    own = np.array([VerdictLevel(level).needs_review for level in levels], dtype=bool)
    out: dict[str, Any] = {
        "auroc_not_supported": auroc(labels == VerdictLevel.NOT_SUPPORTED.value, -score),
        "auroc_not_fully_supported": auroc(review, -score),
        "macro_f1": level_metrics(list(gold), list(levels))["macro_f1"],
        "needs_review_f1": needs_review_f1(review, own),
        "good_flagged": float(own[good].mean()) if good.any() else 0.0,
    }
    for share in FLAG_SHARES:
        flagged = flags_at_share(score, good, share)
        out[f"needs_review_f1_at_{round(share * 100)}"] = needs_review_f1(review, flagged)
        out[f"good_flagged_at_{round(share * 100)}"] = float(flagged[good].mean()) if good.any() else 0.0
    return out


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else float("nan")


@dataclass
class Outcome:
    """One citation's three verdicts."""

    gold: str
    side_score: float
    side_level: str
    side_s: float
    in_band: bool
    judge: JudgeVerdict | None = None
    judge_s: float = 0.0
    error: str = ""
    #: Side's verdict is high severity (:mod:`side.verify.severity`; for the operating points).
    side_high: bool = False
    #: Side is unsure of its level (:meth:`side.verify.levels.LevelThresholds.unsure`).
    side_unsure: bool = False


def _judge_one(judge: Judge, item: LabelledCitation, sentences: list[str], window_tokens: int,
               verifier: Verifier | None = None, quote_cut: float | None = None,
               ) -> tuple[JudgeVerdict | None, float, str]:
    """The judge's verdict with Side's check of its quotes (as the cascade makes it)."""
    from side.verify.cascade import DEFAULT_QUOTE_CUT, review_verdict, verifier_quote_scorer
    from side.verify.judge import JudgeError, JudgeRequest
    from side.verify.verifier import Query
    from side.verify.window import build_evidence_window

    window = build_evidence_window(Query(item.claim, item.title, item.section, item.context), sentences,
                                   budget=window_tokens)
    request = JudgeRequest(claim=item.claim, window=window.text, source_text=item.source_text, title=item.title,
                           section=item.section, context=item.context, window_tokens=window.tokens)
    started = time.perf_counter()
    try:
        verdict = judge.judge(request)
        took = time.perf_counter() - started
        scorer = verifier_quote_scorer(verifier) if verifier is not None else None
        cut = DEFAULT_QUOTE_CUT if quote_cut is None else quote_cut
        return review_verdict(request, verdict, scorer, cut), took, ""
    except JudgeError as exc:
        return None, time.perf_counter() - started, f"{type(exc).__name__}: {exc}"


def evaluate_judge(verifier: Verifier, judge: Judge | None, citations: Sequence[LabelledCitation],
                   settings: CascadeSettings, progress: Callable[[int], Any] | None = None) -> dict[str, Any]:
    """Side alone, the judge alone and the cascade on ``citations`` (each judged once; Side
    alone when ``judge`` is None)."""
    from side.text import split_sentences
    from side.verify.severity import Severity, missing_and_severity
    from side.verify.verifier import MAX_SOURCE_CHARS, Query

    settings = settings.resolved(verifier.levels)  # no explicit band: the verifier's unsure band
    outcomes: list[Outcome] = []
    for item in citations:
        sentences = list(item.sentences) or split_sentences(item.source_text[:MAX_SOURCE_CHARS])
        started = time.perf_counter()
        verdict = verifier.verify(Query(item.claim, item.title, item.section, item.context), sentences)
        side_s = time.perf_counter() - started
        in_band = verdict.level is not VerdictLevel.CANNOT_CHECK and (
            settings.mode == "all" or settings.band_low <= verdict.score < settings.band_high)
        answer, judge_s, error = (_judge_one(judge, item, sentences, settings.window_tokens, verifier,
                                             settings.quote_cut) if judge else (None, 0.0, ""))
        high = missing_and_severity(verdict.unsupported, item.claim)[1] is Severity.HIGH
        unsure = verifier.levels.unsure(verdict.level, verdict.score)
        outcomes.append(Outcome(item.label, verdict.score, verdict.level.value, side_s, in_band, answer, judge_s,
                                error, high, unsure))
        if progress:
            progress(1)
    return summarize(outcomes, settings, judged=judge is not None, cuts=verifier.levels)


def _judge_level_score(outcome: Outcome) -> tuple[str, float]:
    """The judge's own level and score (Side's when the judge gave none)."""
    from side.verify.cascade import judge_score

    if outcome.judge is None:
        return outcome.side_level, outcome.side_score
    return outcome.judge.level.value, judge_score(outcome.judge)


def _cascade_level_score(outcome: Outcome, settings: CascadeSettings) -> tuple[str, float]:
    from side.verify.cascade import judge_score

    if not outcome.in_band or outcome.judge is None or not outcome.judge.accepted:
        return outcome.side_level, outcome.side_score
    width = settings.band_high - settings.band_low
    return outcome.judge.level.value, settings.band_low + width * judge_score(outcome.judge)


#: The judge's level alone as an ordinal score (higher = more likely to fail review); cannot
#: check (Side could not score it either) last.
_ORDINAL = {VerdictLevel.NOT_SUPPORTED: 2.0, VerdictLevel.PARTIALLY_SUPPORTED: 1.0, VerdictLevel.SUPPORTED: 0.0,
            VerdictLevel.CANNOT_CHECK: -1.0}


def _side_likelihood(outcome: Outcome) -> float | None:
    """Side's own failure likelihood (None: Side could not check the citation)."""
    if outcome.side_level == VerdictLevel.CANNOT_CHECK.value:
        return None
    return 1.0 - outcome.side_score


def _ranked_failure_score(outcome: Outcome, with_judge: bool) -> float:
    """:func:`side.ranking.failure_score` of the level shown (the judge's accepted verdict when
    ``with_judge``, a sure one; else Side's, unsure or not), with Side's own likelihood (the
    judge's score where Side could not check); -1 (last, as the queue puts them) when unscored."""
    from side.ranking import failure_score
    from side.verify.cascade import judge_score

    verdict = outcome.judge
    if with_judge and verdict is not None and verdict.accepted:
        likelihood = _side_likelihood(outcome)
        if likelihood is None:
            likelihood = 1.0 - judge_score(verdict)
        score = failure_score(verdict.level, likelihood)
    else:
        score = failure_score(VerdictLevel(outcome.side_level), _side_likelihood(outcome), outcome.side_unsure)
    return -1.0 if score is None else score


def _judge_ordinal(outcome: Outcome) -> float:
    verdict = outcome.judge
    if verdict is None or verdict.level is VerdictLevel.CANNOT_CHECK:
        return _ORDINAL[VerdictLevel(outcome.side_level)]
    return _ORDINAL[verdict.level]


def ranking_metrics(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """AUROC of needs review (gold partially or not supported) against supported for the judge's
    level alone, for :mod:`side.ranking`'s order (the level shown, then Side's own failure score
    inside it) and for Side alone (its own verdicts in that order); outcomes whose gold is cannot
    check are left out. ``judge_level_from_side``: citations where the judge gave no verdict (or
    said cannot check), so the judge's level is Side's; ``shown_level_from_side``: citations where
    no judge's verdict was accepted, so the level shown is Side's; ``unscored``: citations neither
    Side nor an accepted verdict scored, ranked last."""
    kept = [o for o in outcomes if o.gold in LEVELS]
    review = np.array([o.gold != VerdictLevel.SUPPORTED.value for o in kept], dtype=bool)
    judge = np.array([_judge_ordinal(o) for o in kept], dtype=float)
    shown = np.array([_ranked_failure_score(o, True) for o in kept], dtype=float)
    side = np.array([_ranked_failure_score(o, False) for o in kept], dtype=float)
    return {
        "citations": len(kept),
        "needs_review": int(review.sum()),
        "judge_level": auroc(review, judge),
        "judge_level_then_side": auroc(review, shown),
        "side": auroc(review, side),
        "judge_level_from_side": sum(o.judge is None or o.judge.level is VerdictLevel.CANNOT_CHECK for o in kept),
        "shown_level_from_side": sum(o.judge is None or not o.judge.accepted for o in kept),
        "unscored": int((shown < 0).sum()),
    }


def summarize(outcomes: Sequence[Outcome], settings: CascadeSettings, judged: bool = True,
              cuts: LevelThresholds | None = None) -> dict[str, Any]:
    """The three methods' metrics and the judge's cost, from per-citation outcomes (Side's
    alone when nothing was ``judged``); with Side's ``cuts``, also Side's operating points
    (:func:`side.evaluation.verify.operating_points`) as ``report["side"]["operating_points"]``;
    when ``judged``, the ranking figures (:func:`ranking_metrics`) as ``report["ranking"]``."""
    kept = [o for o in outcomes if o.gold in LEVELS]
    gold = [o.gold for o in kept]
    methods: dict[str, list[tuple[str, float]]] = {
        "side": [(o.side_level, o.side_score) for o in kept],
        "judge": [_judge_level_score(o) for o in kept],
        "cascade": [_cascade_level_score(o, settings) for o in kept],
    }
    report: dict[str, Any] = {"citations": len(outcomes), "scored": len(kept),
                              "gold_cannot_check": len(outcomes) - len(kept),
                              "band": [settings.band_low, settings.band_high], "mode": settings.mode}
    for name, pairs in methods.items():
        if name != "side" and not judged:
            continue
        scores = np.array([score for _, score in pairs], dtype=float)
        report[name] = method_metrics(gold, scores, [level for level, _ in pairs]) if kept else {}
    if judged:
        report["ranking"] = ranking_metrics(outcomes)
    if cuts is not None and kept:
        report["side"]["operating_points"] = operating_points(
            gold, np.array([o.side_score for o in kept], dtype=float), [o.side_level for o in kept],
            np.array([o.side_high for o in kept], dtype=bool), cuts)
    answered = [o.judge for o in outcomes if o.judge is not None]
    sent = [o for o in outcomes if o.in_band]
    report["cost"] = {
        "side_p50_s": percentile([o.side_s for o in outcomes], 50),
        "side_p95_s": percentile([o.side_s for o in outcomes], 95),
        "judge_calls": len(outcomes), "judge_answers": len(answered),
        "judge_errors": sum(bool(o.error) for o in outcomes),
        "judge_cached": sum(v.cached for v in answered),
        "quotes_not_found": sum(v.level in QUOTED_LEVELS and not v.quote_found for v in answered),
        "quotes_not_backed": sum(v.quote_check is QuoteCheck.NOT_BACKED for v in answered),
        "prompt_tokens_per_citation": float(np.mean([v.prompt_tokens for v in answered])) if answered else 0.0,
        "judge_p50_s": percentile([o.judge_s for o in outcomes], 50),
        "judge_p95_s": percentile([o.judge_s for o in outcomes], 95),
        "cascade_calls": len(sent), "cascade_share": len(sent) / len(outcomes) if outcomes else 0.0,
        "cascade_prompt_tokens_per_citation": (sum(o.judge.prompt_tokens for o in sent if o.judge)
                                               / len(outcomes)) if outcomes else 0.0,
        "cascade_p50_s": percentile([o.side_s + (o.judge_s if o.in_band else 0.0) for o in outcomes], 50),
        "cascade_p95_s": percentile([o.side_s + (o.judge_s if o.in_band else 0.0) for o in outcomes], 95),
    }
    errors = [o.error for o in outcomes if o.error]
    if errors:
        report["cost"]["first_error"] = errors[0]
    return report
