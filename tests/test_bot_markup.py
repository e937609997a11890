"""Editor- and source-controlled text never becomes markup in what the bot posts (unit level).

tests/test_bot_report_injection.py posts the same payloads to a real MediaWiki and reads the
result back through the parse API.
"""

from __future__ import annotations

import pytest

from bot.markup import MAX_URL_CHARS, elide, external_link, nowiki, page_link, safe_url

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


def test_quoted_text_is_capped_with_its_middle_elided():
    text = "Start of the claim " + "x" * 5000 + " end of the claim"
    quoted = nowiki(text, 100)
    inner = quoted.removeprefix("<nowiki>").removesuffix("</nowiki>")
    assert len(inner) == 100 and inner.startswith("Start of the claim") and inner.endswith("end of the claim")
    assert "…" in inner
    assert elide("abcdefghij", 5) == "ab…ij" and elide("abc", 5) == "abc"


@pytest.mark.parametrize("size", [200_000, 1_100_000])
def test_a_huge_url_is_quoted_short_never_linked(size):
    url = "http://host/start" + "a" * size + "/end"
    assert safe_url(url) is None
    text = external_link(url, "A title " + "t" * size)
    assert len(text) < 500 and text.startswith("<nowiki>A title") and text.endswith("/end)</nowiki>")
    assert "http://host/start" in text and "…" in text


def test_a_url_at_the_cap_is_still_a_link_and_one_past_it_is_not():
    base = "http://host/"
    assert safe_url(base + "a" * (MAX_URL_CHARS - len(base))) is not None
    assert safe_url(base + "a" * (MAX_URL_CHARS - len(base) + 1)) is None
    # the cap holds after percent-encoding: 700 '|' grow to 2,100 characters
    assert safe_url(base + "|" * 700) is None


def test_a_too_long_title_is_quoted_not_linked():
    assert page_link("T" * 300).startswith("<nowiki>") and len(page_link("T" * 300)) < 300
