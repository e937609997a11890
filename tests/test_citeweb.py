"""The pasteable {{cite web}}: one template with the right parameters, whatever the title and URL hold.

Each case is read back with mwparserfromhell, as MediaWiki would see it: from cite_web itself,
and from the gadget's insertion path (side-insert.js under Node), which puts the citation inside
``<ref>...</ref>`` in the article.
"""

from __future__ import annotations

import json
import re
import subprocess
from datetime import date
from urllib.parse import unquote

import mwparserfromhell
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_gadget_js import GADGET, require_node

from side.extract.citeweb import cite_web

TODAY = date(2026, 11, 22)
HOSTILE_TITLES = [
    "A | title",
    "Sales = up 10% | Alsea",
    "Closing}} early {{and opening",
    "{{cite news |title=x}}",
    "T</ref><ref>second reference",
    "<ref name=x/> and <nowiki>raw</nowiki>",
    "See [[Starbucks|the coffee chain]] and [https://x.example.org link]",
    "Signed ~~~~ and ~~~~~",
    "Line\nbreak\tand   spaces",
]
HOSTILE_URLS = [
    "https://example.org/a|b",
    "https://example.org/search?q={{x}}&r=[1]",
    "https://example.org/a b/<ref>'quoted\"",
    "https://example.org/~user/~~~~",
    "https://example.org/path?a=b=c",
]
#: Our escapes, undone: what the wiki displays for an escaped value.
UNESCAPES = {"{{!}}": "|", "&#123;": "{", "&#125;": "}", "&#91;": "[", "&#93;": "]", "&lt;": "<", "&gt;": ">",
             "&#126;": "~"}


def displayed(value: str) -> str:
    return re.sub("|".join(map(re.escape, UNESCAPES)), lambda m: UNESCAPES[m.group()], value)


def one_cite_web(wikitext: str):
    """The only template of ``wikitext``, checked to be a {{cite web}} (nested ones included)."""
    templates = mwparserfromhell.parse(wikitext).filter_templates(recursive=True)
    names = [str(t.name).strip() for t in templates]
    assert [n for n in names if n != "!"] == ["cite web"], wikitext
    return next(t for t in templates if str(t.name).strip() == "cite web")


def params(template) -> dict[str, str]:
    return {str(p.name).strip(): str(p.value).strip() for p in template.params}


@pytest.mark.parametrize("title", HOSTILE_TITLES)
def test_a_hostile_title_stays_one_title(title):
    cite = cite_web("https://www.example.org/a", title, today=TODAY)
    found = params(one_cite_web(cite))
    assert list(found) == ["url", "title", "website", "access-date"]
    assert displayed(found["title"]) == " ".join(title.split())
    assert found["url"] == "https://www.example.org/a" and found["access-date"] == "2026-11-22"
    assert not re.search(r"<|>|\[\[|~~~", cite)


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_a_hostile_url_stays_one_working_url(url):
    cite = cite_web(url, "Title", today=TODAY)
    found = params(one_cite_web(cite))
    assert list(found) == ["url", "title", "website", "access-date"]
    assert unquote(found["url"]) == url  # percent-encoding is what a browser sends anyway
    assert found["title"] == "Title" and found["website"] == "example.org"


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="&"), max_size=80)
       | st.sampled_from(HOSTILE_TITLES))
def test_any_title_reads_back_as_itself(title):
    """``&`` is left out: ``&lt;`` typed in a title is an entity to the wiki too, and shows as ``<``.
    Control characters are dropped (below)."""
    found = params(one_cite_web(cite_web("https://example.org/", title, today=TODAY)))
    assert displayed(found["title"]) == (re.sub(r"\s+", " ", title).strip() or "example.org")


def test_control_characters_are_dropped():
    found = params(one_cite_web(cite_web("https://example.org/\x00a", "A\x00\x07 b\x1b\x7f", today=TODAY)))
    assert found["title"] == "A b" and found["url"] == "https://example.org/a"


INSERT = """
const { planInsertion, applyInsertion } = require( './src/side-insert.js' );
const { findRefs } = require( './src/side-refs.js' );
const cases = JSON.parse( process.argv[ 1 ] );
const text = 'Alsea runs Starbucks in Mexico.<ref>https://example.org/weak</ref> More.';
const key = findRefs( text )[ 0 ].key;
process.stdout.write( JSON.stringify( cases.map( ( suggestion ) =>
    applyInsertion( text, planInsertion( text, key, suggestion, new Date( Date.UTC( 2026, 10, 22 ) ) ) ) ) ) );
"""


def insert_with_the_gadget(suggestions: list[dict]) -> list[str]:
    node = require_node()
    done = subprocess.run([node, "-e", INSERT, json.dumps(suggestions)], cwd=GADGET, capture_output=True, text=True,
                          timeout=60, check=True)
    return json.loads(done.stdout)


def test_the_gadget_inserts_one_reference_with_one_cite_web():
    suggestions = [{"url": url, "title": title, "cite": cite_web(url, title, today=TODAY)}
                   for url, title in zip(HOSTILE_URLS * 2, HOSTILE_TITLES, strict=False)]
    suggestions += [{"url": url, "title": title} for url, title in zip(HOSTILE_URLS * 2, HOSTILE_TITLES,
                                                                         strict=False)]  # built by the gadget
    for suggestion, article in zip(suggestions, insert_with_the_gadget(suggestions), strict=True):
        refs = [tag for tag in mwparserfromhell.parse(article).filter_tags() if str(tag.tag) == "ref"]
        assert len(refs) == 2, article
        found = params(one_cite_web(str(refs[1].contents)))
        assert displayed(found["title"]) == " ".join(suggestion["title"].split())
        assert unquote(found["url"]) == suggestion["url"]
        assert article.endswith("</ref> More.") and not re.search(r"~~~|\[\[", article)


def test_the_gadget_rebuilds_a_service_citation_that_would_break_out_of_its_ref():
    evil = "{{cite web |url=https://example.org/a}}</ref><ref>{{cite web |url=https://evil.example/}}"
    [article] = insert_with_the_gadget([{"url": "https://example.org/a", "title": "A", "cite": evil}])
    refs = [tag for tag in mwparserfromhell.parse(article).filter_tags() if str(tag.tag) == "ref"]
    assert len(refs) == 2 and "evil.example" not in article
    assert params(one_cite_web(str(refs[1].contents)))["url"] == "https://example.org/a"
