"""The one order of failure scores (side.ranking): the level shown first, then Side's own score."""

from __future__ import annotations

import pytest

from side.extract.claims import Citation, Claim
from side.ranking import Band, band_of, failure_score, queue_key, ranked
from side.results import ArticleResults, Result, SourceStatus
from side.verify.levels import VerdictLevel
from side.verify.verifier import Verdict, VerdictLabel

NS, PS, SUP, CC = (VerdictLevel.NOT_SUPPORTED, VerdictLevel.PARTIALLY_SUPPORTED, VerdictLevel.SUPPORTED,
                   VerdictLevel.CANNOT_CHECK)


def result(name: str, score: float | None, level: VerdictLevel, unsure: bool = False, judge: str = "") -> Result:
    claim = Claim(article_title="A", section=(), text=f"claim {name}", left_context="",
                  citation=Citation(id=name, kind="external_link", url=f"http://example.org/{name}"))
    verdict = None if score is None else Verdict(label=VerdictLabel.SUPPORTS, score=score, level=level)
    out = Result(claim, SourceStatus.FETCHED, verdict=verdict, unsure=unsure)
    if judge:
        out.decided_by = f"LLM: {judge}"
    return out


def names(results: list[Result]) -> list[str]:
    return [r.claim.citation.id for r in results]


def test_bands_put_sure_flags_before_unsure_before_supported():
    assert band_of(NS) is Band.NOT_SUPPORTED and band_of(PS) is Band.PARTIALLY_SUPPORTED
    assert band_of(NS, unsure=True) is band_of(PS, unsure=True) is Band.UNSURE
    assert band_of(SUP, unsure=True) is Band.SUPPORTED  # a supported level is never a guess
    assert band_of(CC) is None
    assert Band.NOT_SUPPORTED > Band.PARTIALLY_SUPPORTED > Band.UNSURE > Band.SUPPORTED


def test_the_judges_level_comes_before_sides_score():
    # Side scored "judged-ns" well (0.7), but the judge said not supported: it goes before a
    # partially supported with a far worse Side score; supported by the judge goes after an unsure guess.
    items = [
        result("side-ps", 0.40, PS),
        result("judged-ns", 0.70, NS, judge="qwen"),
        result("unsure", 0.60, PS, unsure=True),
        result("judged-sup", 0.35, SUP, judge="qwen"),
        result("side-ns", 0.10, NS),
        result("unscored", None, CC),
    ]
    assert names(ranked(items)) == ["side-ns", "judged-ns", "side-ps", "unsure", "judged-sup", "unscored"]
    assert names(ArticleResults("A", items).ordered()) == names(ranked(items))


def test_inside_a_level_sides_own_score_orders():
    items = [result("a", 0.6, NS, judge="m"), result("b", 0.2, NS, judge="m"), result("c", 0.4, NS)]
    assert names(ranked(items)) == ["b", "c", "a"]


def test_failure_score_keeps_the_order_and_stays_in_its_band():
    scores = {
        "sure-ns-best": failure_score(NS, 0.0), "sure-ps-worst": failure_score(PS, 1.0),
        "unsure-worst": failure_score(NS, 1.0, unsure=True), "supported-worst": failure_score(SUP, 1.0),
    }
    assert scores["sure-ns-best"] >= scores["sure-ps-worst"] >= scores["unsure-worst"] >= scores["supported-worst"]
    assert all(0.0 <= s <= 1.0 for s in scores.values())
    # inside a band, a higher failure likelihood scores higher
    assert failure_score(PS, 0.7) > failure_score(PS, 0.3)
    assert failure_score(CC, 0.5) is None and failure_score(NS, None) is None
    judged = result("j", 0.9, NS, judge="m")
    assert judged.failure_score == failure_score(NS, judged.failure_likelihood)
    assert judged.to_dict()["failure_score"] == judged.failure_score


def test_priority_signals_order_inside_a_band_never_across():
    sure, unsure = result("sure", 0.45, PS), result("unsure", 0.55, PS, unsure=True)
    # the unsure one's queue signals (generic URL, unreliable domain...) add a lot; it stays after
    assert queue_key(sure, 0.55) < queue_key(unsure, 0.45 + 0.4)
    a, b = result("a", 0.45, PS), result("b", 0.40, PS)
    assert names(ranked([a, b], [0.55 + 0.3, 0.60])) == ["a", "b"]
    with pytest.raises(ValueError):
        ranked([a, b], [0.1])


def test_severity_breaks_a_tie_of_the_same_likelihood_high_first():
    from side.verify.severity import MissingKind, Severity
    low, high, none = result("low", 0.3, PS), result("high", 0.3, PS), result("none", 0.3, PS)
    low.missing, low.severity = MissingKind.WORDING, Severity.LOW
    high.missing, high.severity = MissingKind.DATE, Severity.HIGH
    assert names(ranked([none, low, high])) == ["high", "low", "none"]
    # it never moves a flag past a higher likelihood, nor across bands
    worse = result("worse", 0.2, PS)
    assert names(ranked([high, worse])) == ["worse", "high"]
    assert names(ranked([result("ns", 0.3, NS), high])) == ["ns", "high"]
    assert queue_key(high, 0.5) < queue_key(low, 0.5) < queue_key(none, 0.5)
