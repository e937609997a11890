"""Whether Side is sure of a level, in the results store on SQLite and MariaDB: the ``unsure``
column is written from the Result and read back, and the patrol queue shows the flags by
default, the unsure results in their own view, and both (flags first) when asked."""

from __future__ import annotations

from dataclasses import replace

import pytest

from service.store import CheckRequest, QueueView, Store
from side.config import PriorityConfig
from side.errors import InputError
from side.extract.claims import Citation, Claim
from side.pipeline import Result, SourceStatus
from side.priority import result_priority
from side.verify.levels import VerdictLevel
from side.verify.verifier import Verdict, VerdictLabel


def outcome(key: str, level: VerdictLevel, flagged: bool, unsure: bool) -> Result:
    claim = Claim(article_title="Alsea", section=(), text=f"Claim {key}.", left_context="",
                  citation=Citation(id=key, kind="external_link", url=f"https://example.org/{key}"))
    result = Result(claim, SourceStatus.FETCHED, Verdict(VerdictLabel.NOT_ENOUGH_INFO, 0.3, level=level),
                    flagged=flagged)
    result.unsure = unsure
    return result


def stored(store: Store) -> tuple[str, list[Result]]:
    outcomes = [outcome("sure", VerdictLevel.NOT_SUPPORTED, flagged=True, unsure=False),
                outcome("guess-low", VerdictLevel.PARTIALLY_SUPPORTED, flagged=False, unsure=True),
                outcome("fine", VerdictLevel.SUPPORTED, flagged=False, unsure=False),
                outcome("guess-high", VerdictLevel.PARTIALLY_SUPPORTED, flagged=False, unsure=True),
                outcome("sure-low", VerdictLevel.PARTIALLY_SUPPORTED, flagged=True, unsure=False)]
    record, _ = store.add_check(CheckRequest(wiki="enwiki", title="Alsea", revision=1, origin="api",
                                             claims=[o.claim for o in outcomes]))
    store.start(record.id)
    # priorities: the unsure "guess-high" outranks every flag, yet the flags come first
    scores = [0.5, 0.2, None, 0.9, 0.3]
    store.finish(record.id, outcomes, 1.0, priorities=[replace(result_priority(o, PriorityConfig()), score=s)
                                                     for o, s in zip(outcomes, scores, strict=True)])
    return record.id, outcomes


def test_unsure_is_stored_and_read_back(store_url):
    store = Store.open(store_url)
    check_id, _ = stored(store)
    rows = store.results(check_id)
    assert [(r.flagged, r.unsure) for r in rows] == [(True, False), (False, True), (False, False), (False, True),
                                                     (True, False)]
    assert rows[1].to_dict()["unsure"] is True and rows[0].to_dict()["unsure"] is False
    assert type(rows[1]).from_dict(rows[1].to_dict()) == rows[1]
    store.close()


def test_queue_shows_the_flags_by_default_and_the_unsure_ones_when_asked(store_url):
    store = Store.open(store_url)
    stored(store)
    key = lambda rows: [r.claim.citation.id for r in rows]  # noqa: E731
    assert key(store.flagged()) == ["sure", "sure-low"]
    assert key(store.flagged(view=QueueView.FLAGS)) == ["sure", "sure-low"]
    assert key(store.flagged(view=QueueView.UNSURE)) == ["guess-high", "guess-low"]
    assert key(store.flagged(view="all")) == ["sure", "sure-low", "guess-high", "guess-low"]
    assert store.count_flagged()["open"] == 2 and store.count_flagged(QueueView.UNSURE)["open"] == 2
    with pytest.raises(InputError):
        store.flagged(view="maybe")
    store.close()


def test_the_queue_follows_side_ranking_band_first_then_priority(store_url):
    """A sure not supported flag leads a partially supported one of higher priority (the band of
    :mod:`side.ranking` first), a flag for a better source follows them, the unsure ones come last:
    the order :func:`side.ranking.ranked` gives the same Results."""
    from side.ranking import ranked

    store = Store.open(store_url)
    outcomes = [outcome("better-source", VerdictLevel.SUPPORTED, flagged=True, unsure=False),
                outcome("partial", VerdictLevel.PARTIALLY_SUPPORTED, flagged=True, unsure=False),
                outcome("guess", VerdictLevel.PARTIALLY_SUPPORTED, flagged=False, unsure=True),
                outcome("not", VerdictLevel.NOT_SUPPORTED, flagged=True, unsure=False)]
    scores = [0.95, 0.9, 0.99, 0.4]
    record, _ = store.add_check(CheckRequest(wiki="enwiki", title="Ranked", revision=2, origin="api",
                                             claims=[o.claim for o in outcomes]))
    store.start(record.id)
    store.finish(record.id, outcomes, 1.0, priorities=[replace(result_priority(o, PriorityConfig()), score=s)
                                                       for o, s in zip(outcomes, scores, strict=True)])
    order = [r.claim.citation.id for r in store.flagged(view=QueueView.ALL)]
    assert order == ["not", "partial", "better-source", "guess"]
    flags = [n for n, o in enumerate(outcomes) if o.flagged]
    expected = ranked([outcomes[n] for n in flags], [scores[n] for n in flags])
    assert order[:3] == [o.claim.citation.id for o in expected]
    store.close()


def test_a_judged_result_is_no_longer_unsure(store_url):
    """The judge's verdict, once taken, is the level: the result is flagged or not, never unsure."""
    from service.store.judging import _judged_values
    from side.verify.judge import JudgeVerdict, QuoteCheck

    verdict = JudgeVerdict(VerdictLevel.NOT_SUPPORTED, (), model="m", quote_check=QuoteCheck.UNCHECKED)
    row = {"level": "partially_supported", "verdict": None, "flagged": False, "reasons": "[]"}
    values = _judged_values(row, verdict)
    assert values.get("unsure") is False and values.get("flagged") is True
