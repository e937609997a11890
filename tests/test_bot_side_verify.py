"""``side verify --title T --wiki local`` against the same real local MediaWiki the bot uses."""

from __future__ import annotations

import json
import uuid

import pytest
from test_bot_scenario import BAD_CLAIM, GOOD_CLAIM, scenario  # noqa: F401 -- the module fixture

from side.cli import main
from side.extract.wikiapi import PageNotFoundError, WikiUnavailableError, api_url_for, fetch_page


def test_fetch_page_reads_current_and_old_revisions_and_follows_redirects(mediawiki):
    title = f"Wiki API {uuid.uuid4().hex[:8]}"
    first = mediawiki.edit(title, "First text.", user="Alice")
    second = mediawiki.edit(title, "Second text.", user="Alice")
    mediawiki.edit(title + " redirect", f"#REDIRECT [[{title}]]", user="Alice")
    page = fetch_page(mediawiki.api, title, wiki="local")
    assert (page.title, page.revision, page.parent_revision, page.text) == (title, second, first, "Second text.")
    assert fetch_page(mediawiki.api, title, revision=first).text == "First text."
    assert fetch_page(mediawiki.api, title + " redirect").title == title
    with pytest.raises(PageNotFoundError, match="no page"):
        fetch_page(mediawiki.api, "No such page " + uuid.uuid4().hex)
    with pytest.raises(PageNotFoundError, match="no revision"):
        fetch_page(mediawiki.api, title, revision=10**9)
    with pytest.raises(WikiUnavailableError, match="JSON"):
        fetch_page(mediawiki.url + "/opensearch_desc.php", title)  # XML, not the Action API


def test_wiki_names():
    assert api_url_for("enwiki") == "https://en.wikipedia.org/w/api.php"
    assert api_url_for("local", "http://127.0.0.1:1/api.php") == "http://127.0.0.1:1/api.php"


def test_side_check_reads_the_article_from_the_wiki(mediawiki, scenario, monkeypatch, capsys):  # noqa: F811
    title = f"Todd Watson {uuid.uuid4().hex[:6]}"
    mediawiki.edit(title, scenario.edit, user="Alice")
    monkeypatch.setenv("SIDE_FETCH_ALLOW_HOSTS", "127.0.0.1")
    monkeypatch.setenv("SIDE_WIKI_LOCAL_API", mediawiki.api)
    code = main(["verify", "--title", title, "--wiki", "local", "--no-index", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["title"] == title and report["citations"] == 3
    by_claim = {c["claim"]["text"]: c for c in report["results"]}
    assert by_claim[BAD_CLAIM]["flagged"] and not by_claim[GOOD_CLAIM]["flagged"]
    assert by_claim[BAD_CLAIM]["source_status"] == "fetched"


@pytest.mark.parametrize("argv, message", [
    (["--title", "No such page xyz", "--wiki", "local"], "has no page 'No such page xyz'"),
    (["--title", "X", "--wiki", "local", "--api", "http://127.0.0.1:9/api.php"], "cannot reach the wiki"),
    (["--title", "X", "--wiki", "nowiki"], "unknown wiki 'nowiki'"),
    (["--wiki", "local"], "--wiki needs --title"),
    ([], "give a wikitext file, or --title T"),
])
def test_side_check_wiki_errors_are_one_line(mediawiki, monkeypatch, capsys, argv, message):
    monkeypatch.setenv("SIDE_WIKI_LOCAL_API", mediawiki.api)
    assert main(["verify", "--no-index", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("side: error:") and message in err and "\n" not in err
