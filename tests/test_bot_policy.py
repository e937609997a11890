"""The bot's compliance rules and report text, on a real SQLite results store."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import pytest

from bot.checkpoint import Checkpoint, CheckpointError, CheckpointFile, Position
from bot.markup import nowiki
from bot.policy import (
    ReportPolicy,
    exclusion_reason,
    is_reportable,
    is_run_enabled,
    report_threshold,
    result_suggestion_key,
)
from bot.report import ReportItem, build_report
from service.store import CheckRequest, Store
from side.extract.claims import Citation, Claim
from side.pipeline import Result, Suggestion
from side.verify.verifier import Evidence, Verdict


@pytest.mark.parametrize("text, enabled", [
    ("yes", True), ("Yes\n", True), ("<!-- set to no to stop the bot -->\nyes", True), ("true", True),
    ("no", False), ("", False), (None, False), ("<!-- yes -->no", False), ("nope", False), ("yesterday", False),
])
def test_run_page_must_say_yes(text, enabled):
    assert is_run_enabled(text) is enabled


@pytest.mark.parametrize("text, reason", [
    ("Some discussion.", None),
    ("{{nobots}}", "{{nobots}}"),
    ("{{Nobots}}\nTalk.", "{{nobots}}"),
    ("{{bots|deny=all}}", "{{bots|deny=...}}"),
    ("{{bots|deny=OtherBot, TestBot}}", "{{bots|deny=...}}"),
    ("{{bots|deny=OtherBot}}", None),
    ("{{bots|allow=none}}", "{{bots|allow=...}} without this bot"),
    ("{{bots|allow=OtherBot}}", "{{bots|allow=...}} without this bot"),
    ("{{bots|allow=TestBot}}", None),
    ("{{bots|optout=side}}", "{{bots|optout=side}}"),
    ("{{bots|optout=all}}", "{{bots|optout=side}}"),
    ("{{bots|optout=nosource,side}}", "{{bots|optout=side}}"),
    ("{{bots|optout=nosource}}", None),
    ("{{bots}}", None),
    ("<!-- {{nobots}} -->", None),
])
def test_bot_exclusion_templates(text, reason):
    assert exclusion_reason(text, "TestBot", "side") == reason


def test_report_threshold_comes_from_the_shipped_model_unless_configured():
    shipped = report_threshold(-1.0)
    assert 0.0 < shipped < 0.5
    assert report_threshold(0.3) == 0.3


def _claim(text: str, url: str, title: str = "Article") -> Claim:
    citation = Citation(id=url[-8:], kind="template", url=url, title="Source " + url[-1])
    return Claim(title, ("History",), text, text, citation)


def finished_check(store: Store, title: str, revision: int, rows: list[tuple[str, str, float, bool]],
              suggest: bool = True) -> str:
    """A done bot check whose citations have the given (claim, url, score, flagged)."""
    claims = [_claim(text, url, title) for text, url, _, _ in rows]
    record, _ = store.add_check(CheckRequest("testwiki", title, claims, revision, origin="bot"))
    checks = []
    for claim, (_, url, score, flagged) in zip(claims, rows, strict=False):
        verdict = Verdict("NOT ENOUGH INFO", score, evidence=(Evidence("Salmon migrate upstream.", 0, 0.1),))
        suggestion = Suggestion("https://better.example/" + url[-1], "Better source", 0.91,
                                Evidence("The claim, stated plainly.", 3, 0.9),
                                "{{cite web |url=https://better.example/x |title=Better source}}")
        checks.append(Result(claim, "fetched", verdict, flagged=flagged, reasons=["support below threshold"],
                                    suggestions=[suggestion] if suggest else []))
    store.finish(record.id, checks, 1.0)
    return record.id


@pytest.fixture()
def store(tmp_path):
    store = Store.open(f"sqlite:///{tmp_path / 'side.sqlite3'}")
    yield store
    store.close()


def test_only_flagged_citations_under_the_threshold_are_reportable(store):
    check_id = finished_check(store, "A", 10, [("Weak.", "http://s/1", 0.05, True),
                                               ("Borderline.", "http://s/2", 0.3, True),
                                               ("Fine.", "http://s/3", 0.9, False),
                                               ("Low, unflagged.", "http://s/4", 0.1, False)])
    reportable = [r.claim_text for r in store.results(check_id) if is_reportable(r, 0.236)]
    assert reportable == ["Weak."]


def test_cap_cooldown_and_dedupe_count_in_the_store(store):
    policy = ReportPolicy(store, "testwiki", daily_cap=2, cooldown_hours=24, posted=True)
    check_id = finished_check(store, "A", 10, [("Weak.", "http://s/1", 0.05, True)])
    result = store.results(check_id)[0]
    key = result_suggestion_key("testwiki", result)
    assert policy.article_decision("A") and policy.is_new(key) and policy.remaining_today() == 2

    store.record_report("testwiki", "A", check_id, result.id, key, "Talk:A", posted=True)
    assert not policy.is_new(key)
    assert "cooldown" in policy.article_decision("A").reason
    assert policy.article_decision("B")
    # the dry-run ledger is separate: a dry run never blocks a real post
    assert ReportPolicy(store, "testwiki", 2, 24, posted=False).is_new(key)

    store.record_report("testwiki", "B", check_id, result.id, "other", "Talk:B", posted=True)
    assert "daily cap" in policy.article_decision("C").reason
    assert policy.remaining_today() == 0


def test_suggestion_key_is_stable_across_revisions(store):
    first = store.results(finished_check(store, "A", 10, [("Weak.", "http://s/1", 0.05, True)]))[0]
    again = store.results(finished_check(store, "A", 11, [("Weak.", "http://s/1", 0.04, True)]))[0]
    other = store.results(finished_check(store, "A", 12, [("Weak.", "http://s/1", 0.04, True)], suggest=False))[0]
    assert result_suggestion_key("testwiki", first) == result_suggestion_key("testwiki", again)
    assert result_suggestion_key("testwiki", first) != result_suggestion_key("testwiki", other)


def test_report_text_has_every_required_part(store):
    check_id = finished_check(store, "Tower", 42, [("The tower is 330 metres tall.", "http://s/1", 0.05, True)])
    result = store.results(check_id)[0]
    report = build_report("testwiki", "Tower", "Talk:Tower", check_id, 42,
                          [ReportItem(result, result_suggestion_key("testwiki", result))],
                          "http://dash.example/dashboard/checks/" + check_id, "User:SideBot/Run",
                          "User talk:SideBot", "side", today=date(2026, 11, 22))
    body = report.body
    assert report.heading == "Automated citation check: 1 citation may not support the text (2026-11-22)"
    assert "automated suggestion" in body                                   # disclosure
    assert "The tower is 330 metres tall." in body                          # the claim
    assert "[http://s/1 " in body and "support score 0.05" in body          # the cited source and its score
    assert "Salmon migrate upstream." in body                               # its best passage
    assert "[https://better.example/1 " in body and "The claim, stated plainly." in body  # suggestion + evidence
    assert "<nowiki>{{cite web |url=https://better.example/x |title=Better source}}</nowiki>" in body
    assert "http://dash.example/dashboard/checks/" + check_id in body       # feedback
    assert "{{bots|optout=side}}" in body and "[[User:SideBot/Run]]" in body  # opt out, shutoff
    assert body.rstrip().endswith("~~~~")                                   # signature
    assert "[[Special:Diff/42|" in body
    assert "[[:Tower]]" in report.summary and "Automated" in report.summary  # a link, never a category


def test_quoted_text_cannot_inject_wikitext():
    quoted = nowiki("Evil </nowiki>{{delete}} ~~~~ [[Category:X]]")
    assert quoted.count("</nowiki>") == 1 and quoted.endswith("</nowiki>")
    assert "&lt;/nowiki&gt;" in quoted


def test_checkpoint_round_trip_and_atomic_save(tmp_path):
    file = CheckpointFile(tmp_path / "bot.json")
    assert file.load("testwiki") == Checkpoint("testwiki")
    checkpoint = Checkpoint("testwiki").advance(Position("2026-11-22T10:00:00Z", 7)).add_pending("chk_1")
    file.save(checkpoint)
    assert file.load("testwiki") == checkpoint
    assert [p.name for p in tmp_path.iterdir()] == ["bot.json"]  # no temporary file left behind
    assert (Position("2026-11-22T10:00:00Z", 7) < Position("2026-11-22T10:00:00Z", 8)
            < Position("2026-11-22T10:00:01Z", 1))
    with pytest.raises(CheckpointError, match="belongs to wiki"):
        file.load("enwiki")
    (tmp_path / "bot.json").write_text("{torn")
    with pytest.raises(CheckpointError, match="cannot read"):
        file.load("testwiki")


def test_cooldown_expires(store):
    clock = [datetime(2000, 1, 1)]
    policy = ReportPolicy(store, "testwiki", daily_cap=10, cooldown_hours=24, clock=lambda: clock[0])
    check_id = finished_check(store, "A", 10, [("Weak.", "http://s/1", 0.05, True)])
    store.record_report("testwiki", "A", check_id, None, "k", "Talk:A", posted=True)
    created = store.last_report("testwiki", "A").created_at
    clock[0] = created + timedelta(hours=23)
    assert not policy.article_decision("A")
    clock[0] = created + timedelta(hours=25)
    assert policy.article_decision("A")
