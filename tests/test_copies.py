"""trafilatura's copies of a tree nothing reads again, not made (side.sources.copies): the same
text on real pages in every mode, fewer copies, and a caller's own tree left alone."""

from __future__ import annotations

import copy
import gzip

import pytest

from side.sources import copies
from side.sources.fetch import extract_html, read_html

from conftest import need_data


@pytest.fixture(scope="module")
def installed():
    extract_html("<html><body><p>Installs the copies as every extraction does.</p></body></html>")
    assert copies.installed(), "this trafilatura's core is not the code Side knows"


def real_pages(every: int = 1) -> list[bytes]:
    """Every ``every``-th of trafilatura's 110 test pages and of every third page of the
    extraction benchmark."""
    folder = need_data("fixtures/web_html")
    pages = [gzip.decompress(path.read_bytes())
             for path in sorted((folder / "article_extraction_benchmark" / "html").glob("*.html.gz"))[::3 * every]]
    return pages + [path.read_bytes() for path in sorted((folder / "trafilatura_tests_cache").glob("*.html"))[::every]]


def counted(monkeypatch) -> list[int]:
    """Counts every tree copy trafilatura's core makes (``copy.copy`` of an lxml element)."""
    from lxml.html import HtmlElement

    made = [0]
    library = copy.copy

    def counting(obj):
        made[0] += isinstance(obj, HtmlElement)
        return library(obj)

    monkeypatch.setattr(copies._copy_module, "copy", counting)
    return made


@pytest.mark.parametrize("mode", ["precision", "balanced", "recall"])
def test_real_pages_extract_the_same_text_with_fewer_copies(installed, monkeypatch, mode):
    """The same text, title and date as with all of trafilatura's copies, in each mode (Side's,
    precision, on 171 pages; the others on half as many); in precision mode two copies fewer a
    page, in the others one."""
    pages = real_pages(1 if mode == "precision" else 2)
    assert len(pages) > 80
    made = counted(monkeypatch)
    ours = [extract_html(page, url="http://127.0.0.1/page", mode=mode) for page in pages]
    ours_made, made[0] = made[0], 0
    with copies.library_copies(), pytest.MonkeyPatch.context() as patch:
        import trafilatura.core
        from lxml.html import HtmlElement

        library, original = [0], trafilatura.core.copy

        def counting(obj):
            library[0] += isinstance(obj, HtmlElement)
            return original(obj)

        patch.setattr(trafilatura.core, "copy", counting)
        theirs = [extract_html(page, url="http://127.0.0.1/page", mode=mode) for page in pages]
    assert ours == theirs
    fewer = 2 if mode == "precision" else 1
    assert library[0] - ours_made == fewer * len(pages), (library[0], ours_made)


def test_a_callers_own_tree_is_still_copied(installed):
    """Only a tree Side hands over goes uncopied: trafilatura called on someone's tree leaves
    it as it was, in precision mode too."""
    import trafilatura
    from lxml.etree import tostring
    from trafilatura.utils import load_html

    page = ("<html><body><nav class=\"menu\">Home News</nav><article><p>"
            + "Words of the article that say something long enough to be kept. " * 4
            + "</p></article><div class=\"comments\">A comment.</div></body></html>")
    tree = load_html(page)
    before = tostring(tree)
    document = trafilatura.bare_extraction(tree, favor_precision=True)
    assert document is not None and "Words of the article" in document.text
    assert tostring(tree) == before


def fragment_pages() -> list[str]:
    """Markup without ``<html>`` that trafilatura's parser reads as an element with a parent: the
    body's only child, and the body itself (renamed ``div``); readability, which reads an
    element's parent, returns the whole tree for both when it is left attached."""
    items = ("First point, with details, and more details, about the topic at hand, really.",
             "Second point, also long, with commas, and words, to make readability score it, somewhat, more.",
             "Third point, on another list, of the same page, that carries, the text along.",
             "Fourth point, closing, with a final remark, on everything said, so far.")
    lists = "".join(f'<ul class="article"><li>{a}</li><li>{b}</li></ul>' for a, b in (items[:2], items[2:]))
    return [f'<div class="comment"><p>Posted by admin</p>{lists}</div>',
            f'<body class="sidebar"><p>Posted by admin</p>{lists}</body>']


@pytest.mark.parametrize("mode", ["precision", "balanced", "recall"])
def test_a_tree_with_a_parent_is_copied_as_trafilatura_does(installed, mode):
    """A copy also cuts an element loose from its document: a tree with a parent is never
    handed over, and such pages keep trafilatura's text."""
    from trafilatura.utils import load_html

    for page in fragment_pages():
        assert load_html(page).getparent() is not None
        with copies.library_copies():
            theirs = extract_html(page, mode=mode)
        assert extract_html(page, mode=mode) == theirs, page
        if mode == "precision":  # Side's mode, and read_html's
            assert read_html(page)[:3] == theirs and theirs[0] == "Posted by admin"


def test_library_copies_puts_ours_back_and_unknown_code_is_left_alone(installed):
    import trafilatura.core

    ours = trafilatura.core.copy, trafilatura.core._extract_and_compare
    with copies.library_copies():
        library = trafilatura.core.copy, trafilatura.core._extract_and_compare
        assert library == (copies._originals["copy"], copies._originals["_extract_and_compare"])
        assert library[0] is copy.copy
        with pytest.MonkeyPatch.context() as patch:  # another trafilatura: nothing is put in
            patch.setattr(copies._once, "tried", False)
            patch.setattr(copies, "_originals", {})
            patch.setattr(copies, "KNOWN_SOURCE", "0" * 64)
            assert not copies.install()
            assert (trafilatura.core.copy, trafilatura.core._extract_and_compare) == library
    assert (trafilatura.core.copy, trafilatura.core._extract_and_compare) == ours
    assert ours[0] is copies._copy and copies.install()
