"""``side-bot -backlog`` against a local MediaWiki: tagged pages in tracking categories become Checks.

The wiki has the tags as real templates that put their pages in the tracking categories (as on
English Wikipedia), including a redirect ({{fv}}). The bot runs as an operator runs it, with a
real Redis queue and results store; no worker runs, so the Checks stay queued (the worker's
handling of any Check is tested in test_workers_*). Posting nothing is checked on the wiki.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
import sys
import uuid

import pytest

from service.store import Origin, Store

FV_CATEGORY = "All articles with failed verification"
CN_CATEGORY = "All articles with unsourced statements"


BSN_CATEGORY = "All articles lacking reliable references"


def add_tag_templates(mediawiki) -> None:
    """The maintenance tags as English Wikipedia has them: each puts its page in its tracking
    category; {{fv}} and {{cn}} are redirects."""
    for name, category in (("Failed verification", FV_CATEGORY), ("Citation needed", CN_CATEGORY),
                           ("Citation needed span", CN_CATEGORY), ("Better source needed", BSN_CATEGORY)):
        mediawiki.edit_now(f"Template:{name}", f"<sup>[{name.lower()}]</sup>"
                                               f"<includeonly>[[Category:{category}]]</includeonly>")
    mediawiki.edit_now("Template:Fv", "#REDIRECT [[Template:Failed verification]]")
    mediawiki.edit_now("Template:Cn", "#REDIRECT [[Template:Citation needed]]")


def backlog_env(mediawiki, redis_url: str, database_url: str, checkpoint, var_dir, **extra: str) -> dict[str, str]:
    """``side-bot -backlog`` as an operator runs it against ``mediawiki``: logged in as TestBot
    (BotPassword), with this queue and store, its checkpoint, no rate limit unless ``extra`` sets one."""
    folder = mediawiki.pywikibot_dir("TestBot")
    return {**mediawiki.pywikibot_env("TestBot"), "SIDE_BOT_WIKI": mediawiki.dbname, "SIDE_BOT_API_URL": mediawiki.api,
            "SIDE_BOT_USER": "TestBot", "SIDE_BOT_PASSWORD_FILE": str(folder / "user-password.py"),
            "SIDE_SERVICE_REDIS_URL": redis_url, "SIDE_SERVICE_DATABASE_URL": database_url,
            "SIDE_BOT_BACKLOG_CHECKPOINT": str(checkpoint), "SIDE_BOT_BACKLOG_PAGES_PER_MIN": "0",
            "SIDE_VAR_DIR": str(var_dir), **extra}


@pytest.fixture(scope="module")
def tagged_wiki(mediawiki):
    """Tag templates, a redirect, and four tagged pages (one only with a broken tag)."""
    add_tag_templates(mediawiki)
    tag = uuid.uuid4().hex[:6]
    pages = {
        f"Backlog bridge {tag}": "The bridge opened in 1932.<ref>{{cite web|url=http://s.example/b|title=B}}</ref>"
                                 "{{fv|date=May 2024|reason=The source says 1931}}\n\n== History ==\n"
                                 "It was painted red.{{citation needed|date=June 2023}}",
        f"Backlog tower {tag}": "== Build ==\nIntro.\n\n== Height ==\nThe tower is 300 m tall."
                                "<ref>{{cite web|url=http://s.example/t|title=T}}</ref>{{Failed verification}}",
        f"Backlog river {tag}": "The river is long.{{Citation needed|reason=no source}}",
        f"Backlog broken {tag}": f"{{{{citation needed}}}} starts the page. [[Category:{CN_CATEGORY}]]",
    }
    for title, text in pages.items():
        mediawiki.edit_now(title, text)
    return pages


def run_backlog(mediawiki, env, *args):
    result = subprocess.run([sys.executable, "-m", "bot.sidebot", "-backlog", *args], env=env, capture_output=True,
                            text=True, timeout=180, stdin=subprocess.DEVNULL, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = [line for line in result.stderr.splitlines() if "backlog: " in line]
    assert summary, result.stderr[-3000:]
    logging.getLogger(__name__).info("%s", summary[-1])  # the intake rate, for the operator reading the log
    return summary[-1]


def test_backlog_submits_tagged_claims_resumes_and_posts_nothing(mediawiki, tagged_wiki, redis_db, tmp_path):
    database = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    checkpoint = tmp_path / "backlog.json"
    env = backlog_env(mediawiki, redis_db.url, database, checkpoint, tmp_path / "var")
    ours = set(tagged_wiki)
    before = mediawiki.last_rc_timestamp()

    first = run_backlog(mediawiki, env, "-maxpages:2")
    done = set(json.loads(checkpoint.read_text())["done"])
    assert len(done) == 2 and re.search(r"backlog: 2 pages", first), first

    second = run_backlog(mediawiki, env)
    assert re.search(r"(\d+) pages done before", second).group(1) != "0", second  # the first run's pages skipped
    done = set(json.loads(checkpoint.read_text())["done"])
    assert ours <= done
    assert "1 no sentence before the tag" in second, second  # the broken page's tag, counted

    store = Store.open(database)
    checks = {c.title: c for c in store.checks(origin=Origin.BACKLOG) if c.title in ours}
    assert len(checks) == 3  # the broken page has no readable tag, so no Check
    bridge = next(c for t, c in checks.items() if t.startswith("Backlog bridge"))
    tags = [(c.text, c.citation.url, c.extra["tag"]["template"], c.extra["tag"]["section_index"],
             c.extra["tag"]["category"]) for c in bridge.claims]
    assert tags == [("The bridge opened in 1932.", "http://s.example/b", "failed verification", 0, FV_CATEGORY),
                    ("It was painted red.", None, "citation needed", 1, CN_CATEGORY)]
    tower = next(c for t, c in checks.items() if t.startswith("Backlog tower"))
    assert tower.claims[0].extra["tag"]["section_index"] == 2 and tower.revision

    third = run_backlog(mediawiki, env)  # all done: nothing submitted again
    assert "0 checks submitted" in third, third
    # Nothing was posted: no edit on the wiki since the runs began.
    assert mediawiki.last_rc_timestamp() == before


def test_a_category_larger_than_a_run_is_bounded_listed_through_continuation_and_resumed(mediawiki, redis_db,
                                                                                       tmp_path):
    """A category of 100,000 pages, in small: 13 pages, listed 4 per API request (pywikibot's
    ``step``, so the listing goes through the real API's continuation) and 5 pages a run. Each run
    reads exactly its limit of new pages (or what is left), the next goes on after them, and a run
    over a finished category reads nothing and ends. Every run is a subprocess with a timeout, so
    one that looped without end would fail the test."""
    add_tag_templates(mediawiki)
    tag = uuid.uuid4().hex[:6]
    total, per_run, per_request = 13, 5, 4
    titles = {f"Backlog bulk {tag} {n:02d}" for n in range(total)}
    for n, title in enumerate(sorted(titles)):
        mediawiki.edit_now(title, f"Survey {n} counted {n + 3} bridges.{{{{better source needed|date=May 2024}}}}")
    pywikibot_dir = tmp_path / "pywikibot"
    shutil.copytree(mediawiki.pywikibot_dir("TestBot"), pywikibot_dir)
    with (pywikibot_dir / "user-config.py").open("a", encoding="utf-8") as fh:
        fh.write(f"step = {per_request}\n")  # items per API request: continuation after every 4 pages
    checkpoint = tmp_path / "backlog.json"
    env = {**backlog_env(mediawiki, redis_db.url, f"sqlite:///{tmp_path / 'db.sqlite3'}", checkpoint,
                         tmp_path / "var"), "PYWIKIBOT_DIR": str(pywikibot_dir)}

    done_before = 0
    while True:
        summary = run_backlog(mediawiki, env, "-templates:bsn", f"-maxpages:{per_run}")
        expected = min(per_run, total - done_before)
        assert re.search(rf"backlog: {expected} pages, {expected} tagged claims .* {expected} checks submitted",
                         summary), summary
        assert re.search(rf" {done_before} pages done before", summary), summary
        assert set(json.loads(checkpoint.read_text())["done"]) <= titles
        done_before += expected
        if expected == 0:
            break
    assert set(json.loads(checkpoint.read_text())["done"]) == titles


@pytest.mark.parametrize("args, message", [
    (["-post"], "-backlog posts nothing"),
    (["-once"], "-once is for following recent changes"),
    (["-maxpages:x"], "-maxpages needs a number"),
    (["-maxpages:0"], "-maxpages must be more than 0"),
])
def test_backlog_option_errors_are_one_line(args, message, capsys):
    from bot.sidebot import main

    assert main("-backlog", "-api:http://127.0.0.1:9/api.php", *args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("side-bot: error:") and message in err[-1], err
