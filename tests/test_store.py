"""The results store on both engines it supports: embedded SQLite and MariaDB (ToolsDB's engine)."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

import pytest
import sqlalchemy as sa

from service.store import CheckRequest, Store, schema_version, suggestion_key, utcnow
from side.errors import InputError
from side.extract.claims import Citation, Claim
from side.pipeline import Result, SourceStatus, Suggestion
from side.verify.verifier import Evidence, Verdict, VerdictLabel

from harness.mariadb import throwaway_url


@pytest.fixture(scope="module")
def mariadb_url():
    """A throwaway database on the MariaDB server (CI and this machine run one on :3306)."""
    with throwaway_url() as url:
        yield url


@pytest.fixture(params=["sqlite", "mariadb"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'side.sqlite3'}"
    url = request.getfixturevalue("mariadb_url")
    engine = sa.create_engine(url)
    with engine.begin() as conn:  # each test starts from an empty schema
        for table in ("reports", "feedback", "results", "checks", "alembic_version"):
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))
    engine.dispose()
    return url


def claim(text: str, url: str) -> Claim:
    return Claim(article_title="Alsea", section=("History",), text=text, left_context=text,
                 citation=Citation(id=url, kind="cite", url=url, title="T"))


def outcome(c: Claim, score: float, flagged: bool, suggestion_url: str = "") -> Result:
    suggestions = [Suggestion(url=suggestion_url, title="Better", score=0.9,
                              evidence=Evidence("It says so.", 0, 0.9), cite="{{cite web |url=x}}")] \
        if suggestion_url else []
    label = VerdictLabel.SUPPORTS if score > 0.5 else VerdictLabel.NOT_ENOUGH_INFO
    return Result(claim=c, source_status=SourceStatus.FETCHED,
                  verdict=Verdict(label, score, evidence=(Evidence("Evidence sentence.", 0, score),)),
                  url_depth=2, rank=1, flagged=flagged, reasons=["low support"] if flagged else [],
                  suggestions=suggestions)


def test_check_lifecycle_is_idempotent(store_url):
    store = Store.open(store_url)
    claims = [claim("Alsea runs Starbucks in Mexico.", "https://a.example/1"),
              claim("Alsea was founded in 1997.", "https://b.example/2")]
    new = CheckRequest("enwiki", "Alsea", claims, revision=10, parent_revision=9, origin="bot")
    record, created = store.add_check(new)
    assert created and record.status == "queued" and record.citations == 2
    again, created_again = store.add_check(CheckRequest("enwiki", "Alsea", list(reversed(claims)), 10, 9, "bot"))
    assert not created_again and again.id == record.id  # same work, any claim order: one row

    store.start(record.id)
    store.finish(record.id, [outcome(claims[0], 0.9, False), outcome(claims[1], 0.1, True, "https://c.example/3")], 1.5)
    # a retried job finishing a second time replaces its results instead of duplicating them
    store.start(record.id)
    done = store.finish(record.id, [outcome(claims[0], 0.9, False),
                                    outcome(claims[1], 0.1, True, "https://c.example/3")], 1.2)
    assert done.status == "done" and done.attempts == 2 and done.flagged == 1
    rows = store.results(record.id)
    assert [r.position for r in rows] == [0, 1]
    assert rows[1].flagged and rows[1].suggestions[0].url == "https://c.example/3"
    assert rows[1].evidence[0].text == "Evidence sentence." and rows[1].wiki == "enwiki"

    latest, page = store.page_results("enwiki", "Alsea")
    assert latest.id == record.id and len(page) == 2
    store.close()


def test_patrol_queue_feedback_and_stats(store_url):
    store = Store.open(store_url)
    for rev, score in ((1, 0.3), (2, 0.05)):
        c = claim(f"Claim of revision {rev}.", f"https://x.example/{rev}")
        rec, _ = store.add_check(CheckRequest("enwiki", f"Page {rev}", [c], revision=rev, origin="bot"))
        store.finish(rec.id, [outcome(c, score, True)], 0.5)
    c = claim("A supported claim.", "https://ok.example/")
    rec, _ = store.add_check(CheckRequest("dewiki", "Seite", [c], revision=5, origin="gadget"))
    store.finish(rec.id, [outcome(c, 0.95, False)], 0.5)

    queue = store.flagged()
    assert [r.score for r in queue] == [0.05, 0.3]  # most likely failed verification first
    assert store.flagged(wiki="dewiki") == [] and len(store.flagged(max_score=0.1)) == 1

    with pytest.raises(InputError):
        store.add_feedback(queue[0].id, "dismiss")  # a dismissal needs a reason
    with pytest.raises(InputError):
        store.add_feedback(10_000, "accept")
    store.add_feedback(queue[0].id, "dismiss", "source-is-fine", user="Alice")
    store.add_feedback(queue[1].id, "accept", user="Bob")
    assert store.flagged() == []
    assert store.result(queue[0].id).review_status == "dismissed"
    assert [f.reason for f in store.feedback_for(queue[0].id)] == ["source-is-fine"]

    stats = store.stats(days=7)
    assert stats.flagged == 2 and stats.results == 3 and stats.checks == 3
    assert stats.acceptance_rate == 0.5 and stats.dismiss_reasons == {"source-is-fine": 1}
    assert sum(stats.score_histogram) == 1 and stats.flagged_histogram[0] == 1 and stats.flagged_histogram[3] == 1
    assert stats.flagged_per_day[-1] == (utcnow().date().isoformat(), 2)
    store.close()


def test_bot_report_bookkeeping(store_url):
    store = Store.open(store_url)
    key = suggestion_key("enwiki", "abc", "https://better.example/")
    assert not store.suggestion_reported("enwiki", key)
    store.record_report("enwiki", "Alsea", "chk_x", None, key, "Talk:Alsea", posted=False)
    assert not store.suggestion_reported("enwiki", key)  # a dry run does not count as posted
    store.record_report("enwiki", "Alsea", "chk_x", None, key, "Talk:Alsea", posted=True)
    assert store.suggestion_reported("enwiki", key)
    assert store.reports_since("enwiki", utcnow() - timedelta(days=1)) == 1
    assert store.reports_since("dewiki", utcnow() - timedelta(days=1)) == 0
    assert store.last_report("enwiki", "Alsea").talk_title == "Talk:Alsea"
    store.close()


def test_results_survive_reopening_and_migrations_are_versioned(tmp_path):
    url = f"sqlite:///{tmp_path / 'side.sqlite3'}"
    store = Store.open(url)
    c = claim("Kept claim.", "https://k.example/")
    rec, _ = store.add_check(CheckRequest("enwiki", "Kept", [c], revision=1))
    store.close()
    # a fresh process opens the same file: the check is there and migrating again is a no-op
    code = ("import sys; from service.store import Store; s = Store.open(sys.argv[1]); "
            "print(s.check(sys.argv[2]).status, s.ping())")
    out = subprocess.run([sys.executable, "-c", code, url, rec.id], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["queued", "0004_priority"]
    assert schema_version(sa.create_engine(url)) == "0004_priority"


def test_bad_database_url_is_a_clear_error(tmp_path):
    from service.store import StoreError

    with pytest.raises(StoreError, match="invalid database URL"):
        Store.open("nonsense://")
    with pytest.raises(StoreError):
        Store.open("mysql+pymysql://nobody@127.0.0.1:1/none")


def test_every_stored_record_round_trips_through_its_dict(store_url):
    """Check, StoredResult, Feedback and Report: ``from_dict(to_dict())`` is the record, also as JSON."""
    import json

    from service.store import Check, Feedback, Report, StoredResult

    store = Store.open(store_url)
    c = claim("The bridge opened in 1932.", "https://x.example/bridge")
    rec, _ = store.add_check(CheckRequest("enwiki", "Bridge", [c], revision=9, parent_revision=8, origin="bot",
                                          client_keys=["k1"]))
    store.finish(rec.id, [outcome(c, 0.1, True, suggestion_url="https://better.example/b")], 0.5)
    [result] = store.results(rec.id)
    feedback = store.add_feedback(result.id, "dismiss", "source-is-fine", user="Alice", comment="fine")
    store.record_report("enwiki", "Bridge", rec.id, result.id, "key", "Talk:Bridge", posted=True)
    records = [(Check, store.check(rec.id)), (StoredResult, store.result(result.id)), (Feedback, feedback),
               (Report, store.last_report("enwiki", "Bridge"))]
    for kind, record in records:
        assert record is not None
        assert kind.from_dict(record.to_dict()) == record, kind.__name__
        assert kind.from_dict(json.loads(json.dumps(record.to_dict()))) == record, kind.__name__
    assert store.check(rec.id).claims == [c] and store.result(result.id).verdict is not None
    store.close()
