"""The dashboard's Backlog view: tagged claims from side-bot -backlog, filters, and "Fix it"."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import lxml.html

from service.store import CheckRequest, Origin
from side.extract.tagged import find_tagged

from webapp import finish, outcome

WIKITEXT = """The bridge opened in 1932.<ref>{{cite web|url=http://s.example/b|title=B}}</ref>{{fv|date=May 2024}}

== History ==
Intro.

== Paint ==
It was painted red.{{citation needed|date=June 2023}}
"""


def backlog_check(store, title="Bridge"):
    categories = {"failed verification": "All articles with failed verification",
                  "citation needed": "All articles with unsourced statements"}
    claims = [t.claim(title, category=categories[t.template]) for t in find_tagged(WIKITEXT, title).claims]
    check, _ = store.add_check(CheckRequest(wiki="enwiki", title=title, revision=5, origin=Origin.BACKLOG,
                                            claims=claims))
    return store.check(check.id)


def rows(client, **query):
    response = client.get("/dashboard/backlog", query_string=query, headers={"Accept": "text/html"})
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    doc = lxml.html.fromstring(response.get_data(as_text=True))
    return doc, doc.xpath("//tr[@class='backlog-row']")


def test_backlog_lists_tagged_claims_with_fix_it_at_the_section(client, store):
    check = backlog_check(store)
    fv, cn = check.claims
    finish(store, check.id, [outcome(fv, 0.1, True),
                             outcome(cn, 0.0, False, suggestion=("https://paint.example/red", "Red paint",
                                                                 "The bridge was painted red in 1950."))])
    doc, found = rows(client)
    assert [" ".join(r.xpath("string(td[3])").split()) for r in found] == [
        "The bridge opened in 1932.cited: http://s.example/b", "It was painted red."]
    fix = found[1].xpath(".//a[@class='fix-it']/@href")[0]
    parts = urlsplit(fix)
    assert (parts.netloc, parts.path) == ("en.wikipedia.org", "/w/index.php")
    assert parse_qs(parts.query) == {"title": ["Bridge"], "action": ["edit"], "section": ["2"]}
    assert "https://paint.example/red" in found[1].xpath("string(.//code[@class='cite'])")
    assert found[0].xpath(".//a[@class='fix-it']/@href")[0].endswith("section=0")


def test_backlog_filters_by_category_and_tag(client, store):
    backlog_check(store)
    _, by_category = rows(client, category="All articles with unsourced statements")
    assert [r.xpath("string(td[2]/span)") for r in by_category] == ["citation needed"]
    _, by_tag = rows(client, template="failed verification")
    assert [r.xpath("string(td[2]/span)") for r in by_tag] == ["failed verification"]
    doc, none = rows(client, template="better source needed")
    assert none == [] and "matches these filters" in doc.text_content()
