"""trafilatura's boilerplate rules in Python select what trafilatura's own expressions select."""

from __future__ import annotations

import gzip

import pytest
from lxml import html as lxml_html

from side.sources import discard
from side.sources.fetch import extract_html

from conftest import need_data


def in_place() -> list:
    """What is now in each place :mod:`side.sources.discard` knows of trafilatura's expressions."""
    from trafilatura import xpaths

    return [getattr(xpaths, name)[index] for name, index, _, _ in discard._PLACES]


@pytest.fixture(scope="module")
def rules():
    """(Python rules, trafilatura's own expressions), place by place."""
    assert discard.install(), "this trafilatura's expressions are not the ones Side knows"
    python = in_place()
    with discard.library_rules():
        library = in_place()
    assert all(type(rule).__module__ == discard.__name__ for rule in python)
    assert not any(type(expression).__module__ == discard.__name__ for expression in library)
    return python, library


#: Elements where XPath's reading of attributes matters: which of id/class comes first, absent
#: attributes, tags the first expression leaves alone, comments (not elements), prefixed names.
PAGE = """<html><head><title>t</title></head><body>
<div class="article"><p>Text of the article. It is long enough to keep.</p>
<div class="cookie" id="main">class first: the class is read for the cookie test</div>
<div id="main" class="cookie">id first: the id is read for the cookie test</div>
<div id="cookie-notice" class="x">cookie in the id</div>
<div class="x" id="cookie-notice">cookie in the id, class first</div>
<section class="cookie">cookie in the class</section>
<span role="NAVIGATION">role with a capital N</span>
<p data-lp-replacement-content="">an empty attribute is still there</p>
<p data-component="MostPopularStories">most popular</p>
<a class="share-bar">a link: not a block the first expression looks at</a>
<ul class="menu"><li>a list is not one either</li></ul>
<item class="related">trafilatura's own item tag</item>
<o:p class="navbar">a prefixed name</o:p>
<div id="reply-to" class="x">starts with reply-</div>
<div class="x" id="reply-to">reply- in the id, class first</div>
<div class="reply-to" id="x">reply- in the class</div>
<div style="color: red; display:none">display none</div>
<b style="display: none">display none with a space</b>
<i id="hidden-part" style="x">hidden in the id</i>
<i style="visibility: hidden" id="x">hidden in the style, style first</i>
<i id="x" style="visibility: hidden">hidden in the style, id first</i>
<h2 class="comments-title">Comments</h2>
<h2 class="comments-title big">Comments with another class</h2>
<div id="reader-comments">reader comments</div>
<div class="noprint">no print</div>
<em aria-hidden="true">hidden to readers</em>
<em aria-hidden="false">not hidden</em>
<!-- a comment class="share" -->
<div><div class="sidebar"><p class="byline">nested matches</p></div></div>
<table class="widget"><tr><td>a table</td></tr></table>
<div id="comments">a comment section</div>
<section class="post-comments">comments by class</section>
<div class="commentary">commentary is not comments</div>
<ol class="comment-list"><li>a list of comments</li></ol>
<ul id="disqus_thread"><li>a list whose id alone does not make it one of comments</li></ul>
<list class="Comments">trafilatura's list tag</list>
<details id="comol">comments folded</details>
<div class="infinite-scroll"><p>appended article</p></div>
<div class="infinite-scroll"><h1>the article itself</h1></div>
<aside id="mvp-post-add-box"><h1>an appended article with its own heading</h1></aside>
</div>
<div class="infinite-scroll"><h1>the page's article</h1><div class="infinite-scroll"><p>next</p></div></div>
</body></html>"""


def test_the_rules_select_what_trafilaturas_expressions_select(rules):
    python, library = rules
    tree = lxml_html.fromstring(PAGE)
    for rule, expression in zip(python, library, strict=True):
        selected = rule(tree)
        assert selected == expression(tree)
        assert selected  # the page exercises every expression
    first, second = (rule(tree) for rule in python[:2])
    assert {element.text for element in first} >= {"cookie in the id", "most popular",
                                                    "class first: the class is read for the cookie test"}
    assert not {"id first: the id is read for the cookie test", "a prefixed name"} & {element.text for element in first}
    assert {element.text for element in second} >= {"hidden in the style, style first", "display none with a space"}
    assert "hidden in the style, id first" not in {element.text for element in second}
    scroll, comment_lists, comments = ([element.text_content() for element in rule(tree)] for rule in python[2:])
    assert "appended article" in scroll and "the article itself" not in scroll
    assert "an appended article with its own heading" in scroll
    assert "a list of comments" in comment_lists and "commentary is not comments" not in comment_lists
    assert "a list whose id alone does not make it one of comments" not in comment_lists
    assert "a comment section" in comments and "a list of comments" not in comments


def test_a_subtree_is_asked_about_its_descendants_only(rules):
    python, library = rules
    tree = lxml_html.fromstring(PAGE)
    block = tree.find(".//div[@class='sidebar']")
    for rule, expression in zip(python, library, strict=True):
        assert rule(block) == expression(block)
        assert block not in rule(block)


def test_answers_kept_by_attributes_are_the_rules_own_and_stay_bounded(rules, monkeypatch):
    """A rule keeps its answer for an attribute list (pages repeat their classes): the kept
    answer is the one it works out, and at most KNOWN_ATTRIBUTES of them are kept."""
    python, _ = rules
    tree = lxml_html.fromstring(PAGE)
    elements = [e for e in tree.iter() if isinstance(e.tag, str) and e.items()]
    monkeypatch.setattr(discard, "KNOWN_ATTRIBUTES", 5)
    by_attributes = [rule for rule in python if isinstance(rule, discard._ByAttributes)]
    assert by_attributes and len({tuple(e.items()) for e in elements}) > 5
    for rule in by_attributes:
        rule.known.clear()
        for _ in range(2):  # the second time, some answers come from what the first kept
            assert [rule.matches(e) for e in elements] == [rule.selects(e.items()) for e in elements]
            assert 0 < len(rule.known) <= 5
        assert any(rule.matches(e) for e in elements) and not all(rule.matches(e) for e in elements)
        rule.known.clear()
    # only the attributes a rule reads make its key, and a long value is answered, not kept
    hidden = next(rule for rule in by_attributes if "style" in rule.reads)
    long_style = lxml_html.fromstring(f'<div style="{"color: red; " * 40}display:none">x</div>')
    assert hidden.matches(long_style) and not hidden.known
    assert hidden.matches(lxml_html.fromstring('<div href="/a" style="display:none">x</div>'))
    assert list(hidden.known) == [(("style", "display:none"),)]
    hidden.known.clear()


def test_library_rules_puts_the_python_rules_back(rules):
    python, library = rules
    with discard.library_rules():
        assert in_place() == library
    assert in_place() == python
    assert discard.installed() and discard.install()


def test_unknown_expressions_are_left_alone(rules):
    from lxml.etree import XPath

    python, library = rules
    for (_, _, template, kind), expression in zip(discard._PLACES, library, strict=True):
        assert discard._rule(template, kind, expression) is not None
        changed = XPath(expression.path.replace("or", "and", 1), namespaces={"re": "http://exslt.org/regular-expressions"})
        assert discard._rule(template, kind, changed) is None
    assert discard._rule(discard._TEMPLATE_COMMENTS, discard._Comments, None) is None


def test_real_pages_extract_the_same_text_title_and_date(rules):
    """Every page of the extraction benchmark and of trafilatura's tests, and every tree each rule
    sees while they are extracted: the same elements, the same text, title and date. (The raw
    tree's pruning for readability is left out where readability cannot win,
    side.sources.comparison: it is compared where it runs.)"""
    import trafilatura.core
    import trafilatura.htmlprocessing
    import trafilatura.main_extractor

    from side.sources import comparison

    python, library = rules
    counterpart = {id(rule): expression for rule, expression in zip(python, library, strict=True)}
    folder = need_data("fixtures/web_html")
    pages = [gzip.decompress(path.read_bytes())
             for path in sorted((folder / "article_extraction_benchmark" / "html").glob("*.html.gz"))]
    pages += [path.read_bytes() for path in sorted((folder / "trafilatura_tests_cache").glob("*.html"))]
    assert len(pages) > 250
    prune = trafilatura.htmlprocessing.prune_unwanted_nodes
    differ, compared = [], 0

    def comparing_prune(tree, nodelist, with_backup=False):
        nonlocal compared
        for rule in nodelist:
            if id(rule) in counterpart:
                compared += 1
                if rule(tree) != counterpart[id(rule)](tree):
                    differ.append(rule.path)
        return prune(tree, nodelist, with_backup)

    assert comparison.install(), "this trafilatura's comparison is not the code Side knows"
    with pytest.MonkeyPatch.context() as patch:
        for module in (trafilatura.core, trafilatura.main_extractor):
            patch.setattr(module, "prune_unwanted_nodes", comparing_prune)
        patch.setitem(comparison._originals, "prune_unwanted_nodes", comparing_prune)
        ours = [extract_html(page, url="http://127.0.0.1/page") for page in pages]
    with discard.library_rules():
        theirs = [extract_html(page, url="http://127.0.0.1/page") for page in pages]
    # five rules on every page, two more on the raw tree where readability may win
    assert 5 * len(pages) < compared < 7 * len(pages) and not differ
    assert ours == theirs
