"""Talk-page reports posted to a real local MediaWiki, under every compliance rule.

The checks are finished by hand in a real SQLite store (the worker is exercised in
test_bot_e2e.py); everything on the wiki side is real: pywikibot logs in with a BotPassword,
reads the run page and the talk page, and saves a new section.
"""

from __future__ import annotations

import hashlib
import io
import re
import uuid
from datetime import datetime

import pytest
from test_bot_policy import finished_check

from bot.reporter import Reporter
from service.store import CheckRequest, Store
from side.config import BotConfig
from side.extract.claims import Citation, Claim
from side.pipeline import Result, SourceStatus, Suggestion
from side.verify.levels import VerdictLevel
from side.verify.verifier import Evidence, Verdict, VerdictLabel

RUN_PAGE = "User:TestBot/Run"
LONG_AGO = datetime(2000, 1, 1)
WEAK, FINE = ("The bridge opened in 1932.", "http://s.example/1", 0.05, True), \
             ("The bridge is 500 metres long.", "http://s.example/2", 0.93, False)


def sections(text: str | None) -> list[str]:
    return re.findall(r"^==([^=].*?)==\s*$", text or "", flags=re.MULTILINE)


@pytest.fixture(scope="module")
def site(mediawiki):
    return mediawiki.pywikibot_site()


@pytest.fixture()
def store(tmp_path):
    store = Store.open(f"sqlite:///{tmp_path / 'side.sqlite3'}")
    yield store
    store.close()


@pytest.fixture()
def run_page(mediawiki):
    mediawiki.edit_now(RUN_PAGE, "yes")
    yield
    mediawiki.edit_now(RUN_PAGE, "yes")


def make_reporter(site, store, post=True, wikis=("testwiki",), threshold=None, **changes) -> Reporter:
    """The bot's reporter; ``threshold`` None (the default) uses each result's stored ``reportable``."""
    config = BotConfig(wiki="testwiki", talk_report_wikis=list(wikis), run_page=RUN_PAGE, daily_cap=10,
                       cooldown_hours=24, **changes)
    return Reporter(site, store, config, threshold=threshold, public_url="http://127.0.0.1:9/", post=post,
                    out=io.StringIO())


def article(mediawiki) -> str:
    title = f"Bridge {uuid.uuid4().hex[:8]}"
    mediawiki.edit(title, "An article.", user="Alice")
    return title


def test_posts_one_section_naming_only_the_weak_citation_and_never_twice(mediawiki, site, store, run_page):
    title = article(mediawiki)
    check_id = finished_check(store, title, 100, [WEAK, FINE])
    reporter = make_reporter(site, store)
    assert reporter.handle([check_id]) == {check_id}
    outcome = reporter.outcomes[-1]
    assert outcome.status == "posted", outcome.reason
    talk = mediawiki.page_text("Talk:" + title)
    assert len(sections(talk)) == 1 and "Automated citation check" in sections(talk)[0]
    assert WEAK[0] in talk and WEAK[1] in talk
    assert FINE[0] not in talk and FINE[1] not in talk
    assert "[[User:TestBot|TestBot]]" in talk  # the signature expanded
    last = mediawiki.revisions("Talk:" + title)[-1]
    assert last["user"] == "TestBot" and "Automated citation check" in last["comment"]

    # the same check again, and a later revision with the same weak citation: nothing new
    again = finished_check(store, title, 101, [WEAK, FINE])
    reporter.handle([check_id, again])
    assert [o.status for o in reporter.outcomes[-2:]] == ["nothing", "nothing"]
    assert len(sections(mediawiki.page_text("Talk:" + title))) == 1


def test_only_not_supported_reportable_citations_reach_the_talk_page(mediawiki, site, store, run_page):
    """Partially supported, could not be checked and not-supported-but-not-precise-enough
    citations stay on the dashboard; the section names the level and the unsupported words."""
    title = article(mediawiki)
    half = ("The bridge cost 4 million.", "http://s.example/h", 0.40, True, "4 million")
    walled = ("The bridge has six lanes.", "http://s.example/w", None, True)
    vague = ("The bridge is busy.", "http://s.example/v", 0.25, True)
    weak = ("The bridge opened in 1932.", "http://s.example/1", 0.05, True, "1932")
    reporter = make_reporter(site, store)
    reporter.handle([finished_check(store, title, 100, [half, walled, vague])])
    assert reporter.outcomes[-1].status == "nothing"
    assert mediawiki.page_text("Talk:" + title) is None
    reporter.handle([finished_check(store, title, 101, [half, walled, vague, weak])])
    assert reporter.outcomes[-1].status == "posted", reporter.outcomes[-1].reason
    assert [i.claim_text for i in reporter.outcomes[-1].report.items] == [weak[0]]
    talk = mediawiki.page_text("Talk:" + title)
    assert weak[0] in talk and "; Verdict\n: '''not supported''':" in talk
    assert "the source does not back: <nowiki>1932</nowiki>" in talk
    for text in (half[0], walled[0], vague[0], "partially supported", "could not be checked", "cannot check"):
        assert text not in talk, text


def test_a_configured_report_threshold_moves_the_operating_point_not_the_level_rule(mediawiki, site, store,
                                                                                     run_page):
    title = article(mediawiki)
    half = ("The bridge cost 4 million.", "http://s.example/h", 0.40, True, "4 million")
    vague = ("The bridge is busy.", "http://s.example/v", 0.25, True)
    reporter = make_reporter(site, store, threshold=0.9)
    reporter.handle([finished_check(store, title, 100, [half, vague])])
    assert reporter.outcomes[-1].status == "posted", reporter.outcomes[-1].reason
    assert [i.claim_text for i in reporter.outcomes[-1].report.items] == [vague[0]]
    assert half[0] not in mediawiki.page_text("Talk:" + title)


def test_cooldown_allows_one_section_per_article_per_day(mediawiki, site, store, run_page):
    title = article(mediawiki)
    reporter = make_reporter(site, store)
    reporter.handle([finished_check(store, title, 100, [WEAK])])
    other = ("The bridge was painted red.", "http://s.example/3", 0.02, True)
    reporter.handle([finished_check(store, title, 101, [other])])
    assert reporter.outcomes[-1].status == "skipped" and "cooldown" in reporter.outcomes[-1].reason
    assert len(sections(mediawiki.page_text("Talk:" + title))) == 1


@pytest.mark.parametrize("template", ["{{nobots}}", "{{bots|optout=side}}", "{{bots|deny=TestBot}}"])
def test_excluded_talk_pages_get_nothing(mediawiki, site, store, run_page, template):
    title = article(mediawiki)
    before = f"{template}\nEarlier discussion."
    mediawiki.edit("Talk:" + title, before, user="Alice")
    reporter = make_reporter(site, store)
    reporter.handle([finished_check(store, title, 100, [WEAK])])
    assert reporter.outcomes[-1].status == "skipped"
    assert mediawiki.page_text("Talk:" + title) == before
    assert store.reports_since("testwiki", LONG_AGO) == 0


def test_pywikibot_bot_may_edit_is_honoured_too(mediawiki, site, store, run_page):
    """{{bots|allow=...}} without this bot, saved through maintenance so the links tables know it."""
    title = article(mediawiki)
    mediawiki.edit_now("Talk:" + title, "{{bots|allow=SomeOtherBot}}", user="Alice")
    import pywikibot

    assert not pywikibot.Page(site, "Talk:" + title).botMayEdit()
    reporter = make_reporter(site, store)
    reporter.handle([finished_check(store, title, 100, [WEAK])])
    assert reporter.outcomes[-1].status == "skipped"
    assert sections(mediawiki.page_text("Talk:" + title)) == []


@pytest.mark.parametrize("run_text", ["no", "<!-- set to yes to run -->", None])
def test_run_page_must_say_yes(mediawiki, site, store, run_page, run_text):
    if run_text is None:
        mediawiki.delete(RUN_PAGE)
    else:
        mediawiki.edit_now(RUN_PAGE, run_text)
    title = article(mediawiki)
    reporter = make_reporter(site, store)
    reporter.handle([finished_check(store, title, 100, [WEAK])])
    assert reporter.outcomes[-1].status == "skipped" and "run page" in reporter.outcomes[-1].reason
    assert mediawiki.page_text("Talk:" + title) is None


def test_not_enabled_wiki_posts_nothing(mediawiki, site, store, run_page):
    title = article(mediawiki)
    reporter = make_reporter(site, store, wikis=())
    reporter.handle([finished_check(store, title, 100, [WEAK])])
    assert "not enabled" in reporter.outcomes[-1].reason
    assert mediawiki.page_text("Talk:" + title) is None


def test_dry_run_prints_the_section_once_and_saves_nothing(mediawiki, site, store):
    title = article(mediawiki)
    reporter = make_reporter(site, store, post=False, wikis=())
    check_id = finished_check(store, title, 100, [WEAK, FINE])
    reporter.handle([check_id])
    printed = reporter.out.getvalue()
    assert reporter.outcomes[-1].status == "printed"
    assert f"would post to [[Talk:{title}]]" in printed and WEAK[0] in printed and FINE[0] not in printed
    assert mediawiki.page_text("Talk:" + title) is None
    reporter.handle([check_id])
    assert reporter.outcomes[-1].status == "nothing"
    # the dry-run ledger does not count as posted
    assert store.suggestion_reported("testwiki", reporter.outcomes[0].report.items[0].suggestion_key, posted=False)
    assert not store.suggestion_reported("testwiki", reporter.outcomes[0].report.items[0].suggestion_key)


def test_simulate_goes_through_pywikibot_without_writing(mediawiki, site, store, run_page):
    from pywikibot import config

    title = article(mediawiki)
    config.simulate = True
    try:
        reporter = make_reporter(site, store)
        reporter.handle([finished_check(store, title, 100, [WEAK])])
    finally:
        config.simulate = False
    assert reporter.outcomes[-1].status == "simulated"
    assert mediawiki.page_text("Talk:" + title) is None
    assert store.reports_since("testwiki", LONG_AGO) == 0


def test_deleted_and_moved_articles(mediawiki, site, store, run_page):
    deleted, moved = article(mediawiki), article(mediawiki)
    mediawiki.delete(deleted)
    new_title = moved + " (renamed)"
    mediawiki.call({"action": "move", "from": moved, "to": new_title, "reason": "test",
                    "token": mediawiki.token("Admin")}, "Admin", post=True)  # leaves a redirect
    reporter = make_reporter(site, store)
    reporter.handle([finished_check(store, deleted, 100, [WEAK])])
    assert "deleted" in reporter.outcomes[-1].reason and mediawiki.page_text("Talk:" + deleted) is None
    reporter.handle([finished_check(store, moved, 100, [WEAK])])
    assert reporter.outcomes[-1].status == "posted"
    assert len(sections(mediawiki.page_text("Talk:" + new_title))) == 1


# -- no text an editor or a source controls becomes markup ------------------------------------
# An outside probe made the bot transclude an attacker's page, put the talk page in the attacker's
# category, hide the opt-out notice and the signature, and add headings, all through a cited URL.
# Here each payload is planted in every field a report quotes (claim, cited URL, citation title,
# evidence, reasons, suggested URL, title, evidence and citation), the report is posted by the real
# Reporter, and the saved page is read back through the parse API.

ATTACKER_PAGE = "User:Attacker/Payload"
ATTACKER_CATEGORY = "Attacked"
PAYLOADS = {
    "braces": "{{User:Attacker/Payload}}",
    "subst": "{{subst:User:Attacker/Payload}}",
    "invoke": "{{#invoke:Attacker|run}}",
    "signature": "~~~~",
    "comment": "<!--",
    "notoc": "__NOTOC__",
    "ref": "<ref>{{User:Attacker/Payload}}</ref>",
    "quotes": "'''bold''' ''it'' \"q\"",
    "newlines": "x\n== Injected heading ==\n[[Category:Attacked]]",
    "category": "[[Category:Attacked]]",
    "entities": "&#123;&#123;User:Attacker/Payload&#125;&#125;",
}


def crafted_check(store: Store, title: str, payload: str) -> str:
    """A done bot check with one reportable citation that carries ``payload`` in every field
    (the unsupported words included)."""
    url = "http://cited.example/a" + payload
    citation = Citation(id=hashlib.sha1(url.encode()).hexdigest()[:16], kind="template", url=url,
                        title="Title " + payload)
    claim = Claim(title, ("History",), "Claim " + payload, "Claim " + payload, citation)
    record, _ = store.add_check(CheckRequest("testwiki", title, [claim], 100, origin="bot"))
    better = "https://better.example/b" + payload
    suggestion = Suggestion(better, "Better " + payload, 0.91, Evidence("Evidence " + payload, 3, 0.9),
                            "{{cite web |url=" + better + " |title=" + payload + "}}")
    verdict = Verdict(VerdictLabel.NOT_ENOUGH_INFO, 0.05, evidence=(Evidence("Passage " + payload, 0, 0.1),),
                      level=VerdictLevel.NOT_SUPPORTED, unsupported=("Claim", payload, "word " + payload))
    result = Result(claim, SourceStatus.FETCHED, verdict, flagged=True, reasons=["reason " + payload],
                    suggestions=[suggestion], reportable=True)
    store.finish(record.id, [result], 1.0)
    return record.id


@pytest.fixture(scope="module")
def attacker_page(mediawiki):
    """The page a transclusion would pull in: it categorises whatever includes it."""
    mediawiki.edit_now(ATTACKER_PAGE, f"PAYLOAD-RAN [[Category:{ATTACKER_CATEGORY}]]")
    return ATTACKER_PAGE


@pytest.mark.parametrize("name", list(PAYLOADS))
def test_a_report_quoting_a_payload_renders_as_plain_text(mediawiki, site, store, run_page, attacker_page, name):
    payload = PAYLOADS[name]
    title = f"Bridge {uuid.uuid4().hex[:8]}"
    mediawiki.edit(title, "An article.", user="Alice")
    reporter = make_reporter(site, store)
    reporter.handle([crafted_check(store, title, payload)])
    assert reporter.outcomes[-1].status == "posted", reporter.outcomes[-1].reason

    parsed = mediawiki.call({"action": "parse", "page": "Talk:" + title, "formatversion": "2",
                             "prop": "text|templates|categories|sections|links|externallinks"})["parse"]
    assert parsed["templates"] == [], "something was transcluded"
    assert parsed["categories"] == [], "the talk page was categorised"
    assert [s["line"] for s in parsed["sections"]] == [reporter.outcomes[-1].report.heading]
    html = parsed["text"]
    assert "PAYLOAD-RAN" not in html
    assert "User:TestBot" in {link["title"] for link in parsed["links"]}, "the signature is gone"
    assert "bots|optout=" in html and "Opt out" in html, "the opt-out notice is hidden"
    assert "Claim " in html and "Evidence " in html
    assert "does not back" in html and "word " in html  # the unsupported words, quoted as text
    for link in parsed["externallinks"]:  # MediaWiki shows %7E as "~": the signature check covers it
        assert not set(link) & set("{}<>|\"'\n"), link
    raw = mediawiki.page_text("Talk:" + title)
    assert raw.count("[[User:TestBot|") == 1, "a quoted ~~~~ was expanded into a second signature"


#: MediaWiki's default $wgMaxArticleSize (2048 KiB), which the test wiki keeps, as Wikimedia's wikis do.
WIKI_LIMIT = 2048 * 1024


def test_a_one_megabyte_cited_url_still_gets_its_report_posted(mediawiki, site, store, run_page):
    """A 1.1 MB URL pushed the section past the wiki's limit and the save failed (contenttoobig):
    an editor could keep the bot from reporting their own edit."""
    title = article(mediawiki)
    url = "http://s.example/start" + "a" * 1_100_000 + "/end"
    reporter = make_reporter(site, store)
    reporter.handle([finished_check(store, title, 100, [("The bridge opened in 1932.", url, 0.05, True),
                                                         ("The bridge is red.", "http://s.example/r", 0.04, True)])])
    outcome = reporter.outcomes[-1]
    assert outcome.status == "posted", outcome.reason
    talk = mediawiki.page_text("Talk:" + title)
    assert len(talk.encode()) < 20_000 and len(sections(talk)) == 1
    assert "The bridge opened in 1932." in talk and "http://s.example/startaaa" in talk and "aaa/end" in talk
    assert "[http://s.example/r " in talk


def test_a_report_fits_what_a_full_talk_page_has_left(mediawiki, site, store, run_page):
    """A talk page a few kilobytes under the wiki's limit still gets the report, in brief."""
    title = article(mediawiki)
    earlier = "== Earlier ==\n" + ("Earlier discussion of the bridge. " * 40 + "\n\n") * 1600
    earlier = earlier[: WIKI_LIMIT - 8_000].rstrip() + "\n\nLast comment."
    mediawiki.edit("Talk:" + title, earlier, user="Alice")
    assert len(mediawiki.page_text("Talk:" + title).encode()) > WIKI_LIMIT - 8_100
    words = [f"word{w}-" + "x" * 70 for w in range(12)]
    rows = [(f"Fact {n} about the bridge.", f"http://s.example/{n}", 0.05, True, *words) for n in range(8)]
    reporter = make_reporter(site, store)
    reporter.handle([finished_check(store, title, 100, rows)])
    outcome = reporter.outcomes[-1]
    assert outcome.status == "posted", outcome.reason
    talk = mediawiki.page_text("Talk:" + title)
    assert talk.startswith(earlier[:1000]) and len(talk.encode()) <= WIKI_LIMIT
    assert "Automated citation check" in sections(talk)[-1] and talk.rstrip().endswith("(UTC)")
    assert "in brief" in talk and "Fact 0 about the bridge." in talk


def test_the_section_names_how_much_each_reported_citation_s_gap_matters(mediawiki, site, store, run_page):
    """Each reported citation's severity (side.verify.severity, as the pipeline grades a
    needs-review verdict) is on the talk page under its level: a missing year is high, wording
    only low."""
    from test_bot_policy import _claim, worker_result

    from side.verify.severity import missing_and_severity

    title = article(mediawiki)
    rows = [("The bridge opened in 1932.", "http://s.example/1", "1932"),
            ("The bridge is very elegant.", "http://s.example/2", "very elegant")]
    claims = [_claim(text, url, title) for text, url, _ in rows]
    outcomes = [worker_result(claim, url, 0.05, True, (words,))
                for claim, (_, url, words) in zip(claims, rows, strict=True)]
    for result in outcomes:
        result.missing, result.severity = missing_and_severity(result.verdict.unsupported, result.claim.text)
    record, _ = store.add_check(CheckRequest("testwiki", title, claims, 100, origin="bot"))
    store.finish(record.id, outcomes, 1.0)
    reporter = make_reporter(site, store)
    reporter.handle([record.id])
    assert reporter.outcomes[-1].status == "posted", reporter.outcomes[-1].reason
    talk = mediawiki.page_text("Talk:" + title)
    year, wording = (item_of(talk, text, [t for t, _, _ in rows if t != text]) for text, _, _ in rows)
    assert ": Severity: high: a date is not backed." in year
    assert ": Severity: low: wording only." in wording and "Severity: high" not in wording


def item_of(talk: str, text: str, others: list[str]) -> str:
    """The part of a section from the claim ``text`` to the next of the ``others`` claims."""
    start = talk.index(text)
    return talk[start:min((talk.index(o) for o in others if talk.index(o) > start), default=len(talk))]
