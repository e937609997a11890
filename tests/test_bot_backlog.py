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
import subprocess
import sys
import uuid

import pytest

from service.store import Origin, Store

FV_CATEGORY = "All articles with failed verification"
CN_CATEGORY = "All articles with unsourced statements"


@pytest.fixture(scope="module")
def tagged_wiki(mediawiki):
    """Tag templates, a redirect, and four tagged pages (one only with a broken tag)."""
    mediawiki.edit_now("Template:Failed verification",
                       f"<sup>[failed verification]</sup><includeonly>[[Category:{FV_CATEGORY}]]</includeonly>")
    mediawiki.edit_now("Template:Fv", "#REDIRECT [[Template:Failed verification]]")
    mediawiki.edit_now("Template:Citation needed",
                       f"<sup>[citation needed]</sup><includeonly>[[Category:{CN_CATEGORY}]]</includeonly>")
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
    folder = mediawiki.pywikibot_dir("TestBot")
    checkpoint = tmp_path / "backlog.json"
    env = {**mediawiki.pywikibot_env("TestBot"), "SIDE_BOT_WIKI": "testwiki", "SIDE_BOT_API_URL": mediawiki.api,
           "SIDE_BOT_USER": "TestBot", "SIDE_BOT_PASSWORD_FILE": str(folder / "user-password.py"),
           "SIDE_SERVICE_REDIS_URL": redis_db.url, "SIDE_SERVICE_DATABASE_URL": database,
           "SIDE_BOT_BACKLOG_CHECKPOINT": str(checkpoint), "SIDE_BOT_BACKLOG_PAGES_PER_MIN": "0",
           "SIDE_VAR_DIR": str(tmp_path / "var")}
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


@pytest.mark.parametrize("args, message", [
    (["-post"], "-backlog posts nothing"),
    (["-once"], "-once is for following recent changes"),
    (["-maxpages:x"], "-maxpages needs a number"),
])
def test_backlog_option_errors_are_one_line(args, message, capsys):
    from bot.sidebot import main

    assert main("-backlog", "-api:http://127.0.0.1:9/api.php", *args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("side-bot: error:") and message in err[-1], err
