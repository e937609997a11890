"""How much a weak citation's gap matters, in the results store on SQLite and MariaDB: the
``missing`` and ``severity`` columns are written from the Result and read back; the patrol queue
breaks a tie of the same band and likelihood by severity (high, low, none: the order of
:func:`side.ranking.ranked`), filters by it, and a judge's later verdict re-grades it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from service.store import CheckRequest, Store
from side.config import PriorityConfig
from side.errors import InputError
from side.extract.claims import Citation, Claim
from side.pipeline import Result, SourceStatus
from side.priority import result_priority
from side.ranking import ranked
from side.verify.levels import VerdictLevel
from side.verify.severity import MissingKind, Severity, missing_and_severity
from side.verify.verifier import Verdict, VerdictLabel

NS, PS = VerdictLevel.NOT_SUPPORTED, VerdictLevel.PARTIALLY_SUPPORTED


def outcome(key: str, text: str, level: VerdictLevel, unsupported: tuple[str, ...] = (), score: float = 0.2,
            graded: bool = True) -> Result:
    claim = Claim(article_title="Alsea", section=(), text=text, left_context="",
                  citation=Citation(id=key, kind="external_link", url=f"https://example.org/{key}"))
    result = Result(claim, SourceStatus.FETCHED, Verdict(VerdictLabel.NOT_ENOUGH_INFO, score, level=level,
                                                         unsupported=unsupported), flagged=True)
    if graded:  # as the pipeline grades a needs-review verdict
        result.missing, result.severity = missing_and_severity(unsupported, text, claim.living_person)
    return result


def stored(store: Store, outcomes: list[Result], scores: list[float]) -> str:
    record, _ = store.add_check(CheckRequest(wiki="enwiki", title="Alsea", revision=1, origin="api",
                                             claims=[o.claim for o in outcomes]))
    store.start(record.id)
    store.finish(record.id, outcomes, 1.0, priorities=[replace(result_priority(o, PriorityConfig()), score=s)
                                                     for o, s in zip(outcomes, scores, strict=True)])
    return record.id


def ids(rows) -> list[str]:
    return [r.claim.citation.id for r in rows]


def three() -> list[Result]:
    """Three partially supported flags of the same likelihood: wording only, none graded, a date."""
    return [outcome("wording", "Alsea is a large company.", PS, ("large",)),
            outcome("ungraded", "Alsea has offices.", PS, ("offices",), graded=False),
            outcome("date", "Alsea was founded in 1997.", PS, ("in 1997",))]


def test_missing_and_severity_are_stored_and_read_back(store_url):
    store = Store.open(store_url)
    check_id = stored(store, three(), [0.5, 0.5, 0.5])
    rows = store.results(check_id)
    assert [(r.missing, r.severity) for r in rows] == [(MissingKind.WORDING, Severity.LOW), (None, None),
                                                      (MissingKind.DATE, Severity.HIGH)]
    assert rows[2].to_dict()["severity"] == "high" and rows[2].to_dict()["missing"] == "date"
    assert type(rows[2]).from_dict(rows[2].to_dict()) == rows[2]
    store.close()


def test_equal_likelihoods_put_high_severity_first_as_side_ranking_does(store_url):
    store = Store.open(store_url)
    outcomes = three()
    stored(store, outcomes, [0.5, 0.5, 0.5])
    order = ids(store.flagged())
    assert order == ["date", "wording", "ungraded"]
    assert order == ids(ranked(outcomes, [0.5, 0.5, 0.5]))
    store.close()


def test_severity_never_outranks_a_higher_priority_or_band(store_url):
    store = Store.open(store_url)
    outcomes = [outcome("date", "Alsea was founded in 1997.", PS, ("in 1997",)),
                outcome("wording", "Alsea is a large company.", PS, ("large",)),
                outcome("not", "Alsea is big.", NS, ("big",))]
    stored(store, outcomes, [0.5, 0.6, 0.1])
    assert ids(store.flagged()) == ["not", "wording", "date"] == ids(ranked(outcomes, [0.5, 0.6, 0.1]))
    store.close()


def test_the_queue_filters_by_severity(store_url):
    store = Store.open(store_url)
    stored(store, three(), [0.5, 0.5, 0.5])
    assert ids(store.flagged(severity="high")) == ["date"]
    assert ids(store.flagged(severity=Severity.LOW)) == ["wording"]
    with pytest.raises(InputError, match="severity"):
        store.flagged(severity="urgent")
    store.close()


def test_a_judges_level_is_graded_again():
    from service.store.judging import _judged_values
    from side.verify.judge import JudgeVerdict, QuoteCheck

    claim = outcome("c", "Alsea was founded in 1997 by Alberto Torrado.", PS).claim
    row = {"level": "supported", "verdict": None, "flagged": False, "reasons": "[]",
           "claim": json.dumps(claim.to_dict())}
    taken = JudgeVerdict(VerdictLevel.NOT_SUPPORTED, (), model="m", quote_check=QuoteCheck.UNCHECKED,
                         unsupported="in 1997")
    values = _judged_values(row, taken)
    assert values["level"] is VerdictLevel.NOT_SUPPORTED
    assert (values["missing"], values["severity"]) == ("date", "high")
    # a supported verdict taken (Side had none of its own: the source was not read) leaves nothing missing
    fine = JudgeVerdict(VerdictLevel.SUPPORTED, ("Founded in 1997.",), model="m", quote_found=True,
                        quote_check=QuoteCheck.UNREAD)
    values = _judged_values({**row, "level": "not_supported"}, fine)
    assert values["level"] is VerdictLevel.SUPPORTED
    assert values["missing"] is None and values["severity"] is None
