"""trafilatura's removal of the characters XML cannot hold, skipped where markup holds none
(side.sources.xmlchars): the same characters as trafilatura's expression, the same markup out,
the same text from real pages."""

from __future__ import annotations

import gzip
import re
import sys

import pytest

from side.sources import xmlchars
from side.sources.fetch import extract_html

from conftest import need_data


@pytest.fixture(scope="module")
def expression() -> re.Pattern[str]:
    assert xmlchars.install(), "this trafilatura's INVALID_XML_CHARS is not the expression Side knows"
    return xmlchars._original[0]


def test_the_characters_are_the_ones_the_expression_matches(expression):
    """Every code point: the expression matches it exactly where it is one of CHARACTERS."""
    matched = [c for c in range(sys.maxunicode + 1) if expression.match(chr(c))]
    assert matched == [ord(char) for char in xmlchars.CHARACTERS]


@pytest.mark.parametrize("markup", [
    "<html><body><p>plain</p></body></html>",
    "<p>caf\u00e9 \u2019quoted\u2019 \U0001f600</p>",  # two- and four-byte strings
    "<p>a\x00b\x08c\td\ne\rf\x0bg\x1fh</p>",
    "<p>\ufffe and \uffff in \u4e2d\u6587</p>",
    "<p>\x0c\U0001f600\x1e</p>",
    "",
])
def test_the_stand_in_removes_what_the_expression_removes(expression, markup):
    from trafilatura.utils import INVALID_XML_CHARS

    class Markup(str):
        """A str subclass, as markupsafe's: the expression's sub gives a plain str for it."""

    assert isinstance(INVALID_XML_CHARS, xmlchars._Removal)
    for given in (markup, Markup(markup)):
        ours, theirs = INVALID_XML_CHARS.sub("", given), expression.sub("", given)
        assert ours == theirs and type(ours) is type(theirs) is str
    assert INVALID_XML_CHARS.pattern == xmlchars.KNOWN_PATTERN  # what it does not stand in for is the expression's


def test_real_pages_load_into_the_same_trees(expression):
    """The extraction benchmark's pages and trafilatura's test pages, with a control character
    put into every third: the same tree, and the same text, title and date."""
    from lxml.etree import tostring
    from trafilatura.utils import decode_file

    folder = need_data("fixtures/web_html")
    pages = [decode_file(gzip.decompress(path.read_bytes()))
             for path in sorted((folder / "article_extraction_benchmark" / "html").glob("*.html.gz"))[::2]]
    pages += [decode_file(path.read_bytes()) for path in sorted((folder / "trafilatura_tests_cache").glob("*.html"))]
    pages = [page.replace("<p>", "<p>\x07", 1) if n % 3 == 0 else page for n, page in enumerate(pages)]
    assert len(pages) > 150 and sum("\x07" in page for page in pages) > 30

    def trees_and_texts() -> tuple[list[bytes | None], list[tuple[str, str, str]]]:
        trees = [xmlchars.load_html(page) for page in pages]
        return ([None if tree is None else tostring(tree) for tree in trees],
                [extract_html(page, url="http://127.0.0.1/page") for page in pages])

    ours = trees_and_texts()
    with xmlchars.library_removal():
        from trafilatura.utils import INVALID_XML_CHARS

        assert INVALID_XML_CHARS is expression
        theirs = trees_and_texts()
    assert ours == theirs


def test_an_unknown_expression_is_left_alone(expression, monkeypatch):
    import trafilatura.utils

    monkeypatch.setattr(xmlchars._once, "tried", False)
    monkeypatch.setattr(xmlchars, "_original", [])
    other = re.compile(r"[\x00-\x08]")
    monkeypatch.setattr(trafilatura.utils, "INVALID_XML_CHARS", other)
    assert not xmlchars.install()
    assert trafilatura.utils.INVALID_XML_CHARS is other
