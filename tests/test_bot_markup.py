"""Editor- and source-controlled text never becomes markup in what the bot posts (unit level).

tests/test_bot_report_injection.py posts the same payloads to a real MediaWiki and reads the
result back through the parse API.
"""

from __future__ import annotations

import pytest

from bot.markup import external_link, nowiki, page_link, safe_url

PAYLOADS = [
    "http://host/a{{User:Attacker/Payload}}", "http://host/a{{subst:User:Attacker/Payload}}",
    "http://host/a{{#invoke:Attacker|run}}", "http://host/a~~~~", "http://host/a<!--x",
    "http://host/a__NOTOC__", "http://host/a<ref>x</ref>", "http://host/a'''bold'''\"q\"",
    "http://host/a]][[Category:Attacked", "http://host/a|x}}", "http://host/a&#123;&#123;x&#125;&#125;",
]


@pytest.mark.parametrize("url", PAYLOADS)
def test_a_crafted_url_is_a_link_with_no_wikitext_in_it(url):
    target = safe_url(url)
    assert target is not None and target.startswith("http://host/a")
    assert not set(target) & set("[]{}<>|'\"~&")
    assert "__" not in target
    link = external_link(url, "label")
    assert link.startswith(f"[{target} <nowiki>") and link.endswith("</nowiki>]")


@pytest.mark.parametrize("url", [
    "javascript:alert(1)", "data:text/html,x", "ftp://host/x", "//host/x", "http://", "http://host/a\n== Heading ==",
    "http://host/a b", "http://host/a\tb", "http://host/a\u0085b", "http://host/a\u2028b", "http://host/\u200bx",
    "", None, 42,
])
def test_other_urls_are_quoted_as_text_never_linked(url):
    assert safe_url(url) is None
    text = external_link(url, "a label")
    assert text.startswith("<nowiki>") and text.endswith("</nowiki>") and text.count("<nowiki>") == 1
    assert "\n" not in text


def test_nowiki_cannot_be_closed_from_inside_and_stays_on_one_line():
    quoted = nowiki("x</nowiki>{{Payload}}\n== H ==\r\n~~~~ <!-- c")
    assert quoted.count("</nowiki>") == 1 and quoted.endswith("</nowiki>")
    assert "\n" not in quoted and "\r" not in quoted and "<!--" not in quoted


def test_page_links_never_categorise_or_transclude():
    assert page_link("Category:Attacked") == "[[:Category:Attacked]]"
    assert page_link("Foo~~~~") == "[[:Foo&#126;&#126;&#126;&#126;]]"
    assert page_link("Foo_bar", "the {{page}}") == "[[:Foo bar|<nowiki>the {{page}}</nowiki>]]"
    for title in ("Foo{{x}}", "Foo]]bar", "A|b", "A\nB", "A<b>"):
        assert page_link(title).startswith("<nowiki>")
