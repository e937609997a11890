"""The bot's compliance rules and report text, on a real SQLite results store."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

import mwparserfromhell
import pytest

from bot.checkpoint import Checkpoint, CheckpointError, CheckpointFile, Position
from bot.markup import nowiki
from bot.policy import (
    ReportPolicy,
    exclusion_reason,
    is_reportable,
    is_run_enabled,
    report_decision,
    report_threshold,
    result_suggestion_key,
)
from bot.report import DEFAULT_MAX_PAGE_BYTES, HEADROOM_BYTES, ReportItem, build_report
from service.store import CheckRequest, Store
from side.extract.claims import Citation, Claim
from side.pipeline import Result, SourceStatus, Suggestion
from side.verify.levels import LevelThresholds, VerdictLevel
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


def test_report_threshold_is_the_checks_own_unless_configured():
    assert report_threshold(-1.0) is None  # each result's stored ``reportable``
    assert report_threshold(0.3) == 0.3 and report_threshold(0.0) == 0.0


def _claim(text: str, url: str, title: str = "Article") -> Claim:
    citation = Citation(id=url[-8:], kind="template", url=url, title="Source " + url[-1])
    return Claim(title, ("History",), text, text, citation)


#: The tests' cuts: supported from 0.5, not supported under 0.3, reported under 0.236.
CUTS = LevelThresholds(supported=0.5, not_supported=0.3, report=0.236)
PAYWALL = "paywall: only the first paragraph is shown"


def worker_result(claim: Claim, url: str, score: float | None, flagged: bool, words: tuple[str, ...] = (),
                  suggest: bool = True) -> Result:
    """What a worker stores: the level of ``score`` under CUTS and ``reportable`` as the Pipeline
    sets it; ``score`` None is a source that could not be checked."""
    suggestions = [Suggestion("https://better.example/" + url[-1], "Better source", 0.91,
                              Evidence("The claim, stated plainly.", 3, 0.9),
                              "{{cite web |url=https://better.example/x |title=Better source}}")] if suggest else []
    if score is None:
        return Result(claim, SourceStatus.CANNOT_CHECK, source_error=PAYWALL, flagged=flagged, suggestions=suggestions)
    level = CUTS.level(score)
    verdict = Verdict("NOT ENOUGH INFO", score, evidence=(Evidence("Salmon migrate upstream.", 0, 0.1),), level=level,
                      unsupported=words)
    return Result(claim, SourceStatus.FETCHED, verdict, flagged=flagged, reasons=["support below threshold"],
                  suggestions=suggestions, reportable=flagged and CUTS.reportable(level, score))


def finished_check(store: Store, title: str, revision: int, rows: list[tuple], suggest: bool = True) -> str:
    """A done bot check whose citations have the given (claim, url, score, flagged[, words...]):
    levels and ``reportable`` as a worker with CUTS stores them; a None score could not be checked."""
    claims = [_claim(text, url, title) for text, url, *_ in rows]
    record, _ = store.add_check(CheckRequest("testwiki", title, claims, revision, origin="bot"))
    outcomes = [worker_result(claim, url, score, flagged, tuple(words), suggest)
                for claim, (_, url, score, flagged, *words) in zip(claims, rows, strict=True)]
    store.finish(record.id, outcomes, 1.0)
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
    for threshold in (None, 0.236):  # the stored operating point, or the same cut configured
        reportable = [r.claim_text for r in store.results(check_id) if is_reportable(r, threshold)]
        assert reportable == ["Weak."], threshold


def test_only_reportable_not_supported_citations_are_reported(store):
    check_id = finished_check(store, "A", 10, [
        ("Weak.", "http://s/1", 0.05, True),                        # not supported, reportable
        ("Weak, not precise enough.", "http://s/2", 0.25, True),    # not supported above the report cut
        ("Half.", "http://s/3", 0.40, True, "330 metres"),           # partially supported
        ("Fine, better source.", "http://s/4", 0.80, True),         # supported, flagged for a better source
        ("Walled.", "http://s/5", None, True),                      # could not be checked (a row says flagged)
    ])
    results = {r.claim_text: r for r in store.results(check_id)}
    assert [r.level for r in results.values()] == [
        VerdictLevel.NOT_SUPPORTED, VerdictLevel.NOT_SUPPORTED, VerdictLevel.PARTIALLY_SUPPORTED,
        VerdictLevel.SUPPORTED, VerdictLevel.CANNOT_CHECK]
    assert [r.reportable for r in results.values()] == [True, False, False, False, False]
    decisions = {text: report_decision(r) for text, r in results.items()}
    assert {text: bool(d) for text, d in decisions.items()} == {
        "Weak.": True, "Weak, not precise enough.": False, "Half.": False, "Fine, better source.": False,
        "Walled.": False}
    assert decisions["Weak, not precise enough."].reason == "not supported, but not at the report's operating point"
    assert decisions["Half."].reason == "partially supported: only not supported citations are reported"
    assert decisions["Walled."].reason == "cannot check: only not supported citations are reported"
    # a configured cut moves the operating point, never the level rule
    loose = {text for text, r in results.items() if is_reportable(r, 0.3)}
    assert loose == {"Weak.", "Weak, not precise enough."}
    assert {text for text, r in results.items() if is_reportable(r, 1.0)} == loose
    assert {text for text, r in results.items() if is_reportable(r, 0.01)} == set()


def test_a_row_marked_reportable_is_still_refused_unless_not_supported(store):
    """``reportable`` alone is not enough: a partially supported or unread row is never reported,
    whatever its other columns say (rows written by hand, or by an older worker)."""
    claims = [_claim(t, f"http://s/{n}") for n, t in enumerate(("Half.", "Walled.", "Weak."), 1)]
    record, _ = store.add_check(CheckRequest("testwiki", "A", claims, 10, origin="bot"))
    half = Verdict("NOT ENOUGH INFO", 0.01, level=VerdictLevel.PARTIALLY_SUPPORTED, unsupported=("x",))
    store.finish(record.id, [
        Result(claims[0], SourceStatus.FETCHED, half, flagged=True, reportable=True),
        Result(claims[1], SourceStatus.CANNOT_CHECK, Verdict("NOT ENOUGH INFO", 0.01), source_error=PAYWALL,
               flagged=True, reportable=True),
        Result(claims[2], SourceStatus.FETCHED, Verdict("REFUTES", 0.01, level=VerdictLevel.NOT_SUPPORTED),
               flagged=True, reportable=True)], 1.0)
    stored = store.results(record.id)
    assert [r.reportable for r in stored] == [True, True, True]
    assert [is_reportable(r) for r in stored] == [False, False, True]
    assert [is_reportable(r, 1.0) for r in stored] == [False, False, True]


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
    check_id = finished_check(store, "Tower", 42, [("The tower is 330 metres tall.", "http://s/1", 0.05, True,
                                                    "330 metres", "tall")])
    result = store.results(check_id)[0]
    report = build_report("testwiki", "Tower", "Talk:Tower", check_id, 42,
                          [ReportItem(result, result_suggestion_key("testwiki", result))],
                          "http://dash.example/dashboard/checks/" + check_id, "User:SideBot/Run",
                          "User talk:SideBot", "side", today=date(2026, 11, 22))
    body = report.body
    assert report.heading == "Automated citation check: 1 citation not supported by the cited source (2026-11-22)"
    assert "automated suggestion" in body                                   # disclosure
    assert "The tower is 330 metres tall." in body                          # the claim
    assert "; Verdict\n: '''not supported''': the cited source does not appear to support the claim." in body
    assert (": Words of the claim the source does not back: <nowiki>330 metres</nowiki>, <nowiki>tall</nowiki>"
            in body)                                                        # the unsupported words
    assert "[http://s/1 " in body and "support score 0.05" in body          # the cited source and its score
    assert "Salmon migrate upstream." in body                               # its best passage
    assert "[https://better.example/1 " in body and "The claim, stated plainly." in body  # suggestion + evidence
    assert "<nowiki>{{cite web |url=https://better.example/x |title=Better source}}</nowiki>" in body
    assert "http://dash.example/dashboard/checks/" + check_id in body       # feedback
    assert "{{bots|optout=side}}" in body and "[[User:SideBot/Run]]" in body  # opt out, shutoff
    assert body.rstrip().endswith("~~~~")                                   # signature
    assert "[[Special:Diff/42|" in body
    assert "[[:Tower]]" in report.summary and "Automated" in report.summary  # a link, never a category
    assert "not supported" in report.summary


def test_a_report_without_unsupported_words_has_no_words_line(store):
    result = store.results(finished_check(store, "Tower", 42, [("Tall.", "http://s/1", 0.05, True)]))[0]
    report = build_report("testwiki", "Tower", "Talk:Tower", result.check_id, 42,
                          [ReportItem(result, "k")], "http://dash.example/", "User:SideBot/Run", "User talk:SideBot",
                          "side", today=date(2026, 11, 22))
    assert "'''not supported'''" in report.body and "does not back" not in report.body


HOSTILE_WORDS = ("</nowiki>{{delete}}", "~~~~", "[[Category:Hijacked]]", "<script>alert(1)</script>",
                 "__NOTOC__", "\n== Injected ==\n", "{{subst:User:Attacker}}", "&#123;&#123;x&#125;&#125;")


def test_hostile_unsupported_words_stay_inert(store):
    result = store.results(finished_check(store, "Tower", 42, [("The tower is tall.", "http://s/1", 0.05, True,
                                                                *HOSTILE_WORDS)]))[0]
    assert report_decision(result)
    report = build_report("testwiki", "Tower", "Talk:Tower", result.check_id, 42, [ReportItem(result, "k")],
                          "http://dash.example/", "User:SideBot/Run", "User talk:SideBot", "side",
                          today=date(2026, 11, 22))
    [line] = [line for line in report.body.splitlines() if "does not back" in line]
    assert line.count("<nowiki>") == line.count("</nowiki>") == len(HOSTILE_WORDS)  # one quote each, none broken
    outside = re.sub(r"<nowiki>.*?</nowiki>", "", line)
    assert outside == ": Words of the claim the source does not back: " + ", " * (len(HOSTILE_WORDS) - 1)
    assert "&lt;/nowiki&gt;{{delete}}" in line and "&lt;script&gt;" in line
    assert "&amp;#123;" in line  # an entity cannot spell a brace either
    # what MediaWiki's grammar sees: no template, link, heading or comment from the words
    parsed = mwparserfromhell.parse(report.body)
    assert parsed.filter_templates() == [] and parsed.filter_headings() == [] and parsed.filter_comments() == []
    assert not [link for link in parsed.filter_wikilinks() if "Category" in str(link.title)]
    assert re.sub(r"<nowiki>.*?</nowiki>", "", report.body).count("~~~~") == 1  # the bot's own signature


def _size_report(store, rows, max_bytes=DEFAULT_MAX_PAGE_BYTES):
    check_id = finished_check(store, "Tower", 42, rows)
    items = [ReportItem(r, f"k{r.id}") for r in store.results(check_id)]
    return build_report("testwiki", "Tower", "Talk:Tower", check_id, 42, items,
                        "http://dash.example/dashboard/checks/" + check_id, "User:SideBot/Run", "User talk:SideBot",
                        "side", today=date(2026, 11, 22), max_bytes=max_bytes)


def report_bytes(report) -> int:
    return len(report.heading.encode()) + len(report.body.encode())


@pytest.mark.parametrize("size", [200_000, 1_100_000, 3_000_000])
def test_a_huge_cited_url_still_gets_a_small_report(store, size):
    """An editor's 200 KB URL made a 402,609-character section; a 1.1 MB one went past the wiki's 2 MB."""
    url = "http://s.example/" + "a" * size + "/1"
    report = _size_report(store, [("The tower is 330 metres tall.", url, 0.05, True),
                                  ("The tower is grey.", "http://s.example/2", 0.05, True)])
    assert report_bytes(report) < 20_000
    assert "The tower is 330 metres tall." in report.body and "The tower is grey." in report.body
    assert "http://s.example/aaaa" in report.body and "aaaa/1)</nowiki>" in report.body  # start and end, quoted
    assert "[http://s.example/2 " in report.body and report.body.rstrip().endswith("~~~~")
    assert len(report.items) == 2


def test_a_report_too_big_for_the_page_is_given_in_brief_then_cut_never_dropped(store):
    words = [f"word{w}-" + "x" * 70 for w in range(12)]  # the details a brief report leaves out
    rows = [(f"Fact {n} about the tower.", f"http://s.example/{n}", 0.05, True, *words) for n in range(30)]
    full = _size_report(store, rows)
    assert "Salmon migrate upstream." in full.body and "did not fit" not in full.body
    room = report_bytes(full) * 2 // 3
    brief = _size_report(store, rows, max_bytes=room)
    assert report_bytes(brief) <= room - HEADROOM_BYTES
    assert "in brief" in brief.body and "Salmon migrate upstream." not in brief.body
    assert brief.body.count("; Claim") == 30 and "[https://better.example/" in brief.body
    tight = _size_report(store, rows, max_bytes=12_000)
    assert report_bytes(tight) <= 12_000 - HEADROOM_BYTES
    listed = tight.body.count("; Claim")
    assert 0 < listed < 30
    assert f"{30 - listed} more citations rated '''not supported''' did not fit" in tight.body
    assert tight.heading == full.heading and tight.body.rstrip().endswith("~~~~")
    assert "{{bots|optout=side}}" in tight.body and len(tight.items) == 30
    nothing_fits = _size_report(store, rows, max_bytes=0)
    assert "30 more citations" in nothing_fits.body and nothing_fits.body.rstrip().endswith("~~~~")


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
    for damaged in ("{torn", "[1]", '{"wiki": "testwiki", "pending": "abc"}'):  # never read as 'a', 'b', 'c'
        (tmp_path / "bot.json").write_text(damaged)
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


def test_an_unsure_result_is_never_reported(store):
    """Side's guess (between its sure flag cut and its supported cut) never goes to a talk page,
    whatever a row's other columns say."""
    from types import SimpleNamespace

    check_id = finished_check(store, "A", 10, [("Weak.", "http://s/1", 0.05, True)])
    (row,) = store.results(check_id)
    assert is_reportable(row) and is_reportable(row, 0.236)
    guess = SimpleNamespace(**{**vars(row), "unsure": True})
    for threshold in (None, 0.236, 1.0):
        decision = report_decision(guess, threshold)
        assert not decision and decision.reason == "Side is unsure of its level: never reported"


def test_the_reporter_lists_a_checks_citations_in_queue_order(store):
    """A talk-page report lists its citations most likely failing first (side.ranking), not in
    article order: one cut short by the page's size keeps the worst."""
    from bot.policy import ReportPolicy
    from bot.reporter import Reporter

    check_id = finished_check(store, "A", 10, [("Weak.", "http://s/1", 0.2, True),
                                               ("Weakest.", "http://s/2", 0.01, True),
                                               ("Weaker.", "http://s/3", 0.1, True)])
    reporter = Reporter.__new__(Reporter)
    reporter.store, reporter.threshold = store, None
    reporter.policy = ReportPolicy(store, "testwiki", 5, 24.0, posted=False)
    items = reporter.items_for(store.check(check_id))
    assert [i.result.claim_text for i in items] == ["Weakest.", "Weaker.", "Weak."]
