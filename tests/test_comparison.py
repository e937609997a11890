"""trafilatura's comparison with readability, skipped where readability cannot win
(side.sources.comparison): the same text on real pages, and the bound it rests on."""

from __future__ import annotations

import gzip

import pytest

from side.sources import comparison
from side.sources.fetch import extract_html

from conftest import need_data


@pytest.fixture(scope="module")
def installed():
    extract_html("<html><body><p>Installs the wrappers as every extraction does.</p></body></html>")
    assert comparison.installed(), "this trafilatura's comparison is not the code Side knows"


def real_pages() -> list[bytes]:
    """trafilatura's 110 test pages and every third page of the extraction benchmark (all 291
    pages: ``python benchmarks/readers.py --pages 181 --comparison``, "the same text")."""
    folder = need_data("fixtures/web_html")
    pages = [gzip.decompress(path.read_bytes())
             for path in sorted((folder / "article_extraction_benchmark" / "html").glob("*.html.gz"))[::3]]
    return pages + [path.read_bytes() for path in sorted((folder / "trafilatura_tests_cache").glob("*.html"))]


def readability_text(tree) -> str:
    """readability's text as trafilatura measures it (compare_extraction)."""
    from lxml.etree import tostring
    from trafilatura.utils import trim

    return trim(tostring(tree, method="text", encoding="utf-8").decode("utf-8"))


def test_real_pages_extract_the_same_text_and_readability_stays_within_its_bound(installed):
    """Real pages: the same text, title and date with readability skipped where it cannot win; on
    every tree readability is given, its text is no longer than the bound; and readability is
    skipped on some pages, not all."""
    import trafilatura.external

    pages = real_pages()
    assert len(pages) > 150
    library = comparison._originals["try_readability"]
    runs, beyond = {"ours": 0, "theirs": 0}, []
    current = "ours"

    def measured(tree):
        runs[current] += 1
        bound = comparison.readability_bound(tree)  # before readability changes the tree
        result = library(tree)
        if len(readability_text(result)) > bound:
            beyond.append((bound, len(readability_text(result))))
        return result

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(comparison._originals, "try_readability", measured)
        ours = [extract_html(page, url="http://127.0.0.1/page") for page in pages]
    current = "theirs"
    with comparison.library_comparison(), pytest.MonkeyPatch.context() as patch:
        patch.setattr(trafilatura.external, "try_readability", measured)
        theirs = [extract_html(page, url="http://127.0.0.1/page") for page in pages]
    assert ours == theirs
    assert not beyond
    assert runs["theirs"] == len(pages) and 0 < runs["ours"] < runs["theirs"]


def test_pruning_never_raises_the_bound_and_is_left_out_where_readability_cannot_win(installed):
    """In precision mode trafilatura prunes the raw tree for readability alone. Pruning removes
    elements and keeps their tails, so on real pages the bound after it is never above the bound
    before (what leaving both out rests on); it is left out on some pages, not all, and the
    text is the same (the test above)."""
    from copy import deepcopy

    from trafilatura.utils import load_html
    from trafilatura.xpaths import OVERALL_DISCARD_XPATH

    library = comparison._originals["prune_unwanted_nodes"]
    pages = real_pages()
    raised = []
    for n, page in enumerate(pages):
        tree = load_html(page)
        before = comparison.readability_bound(tree)
        after = comparison.readability_bound(library(deepcopy(tree), OVERALL_DISCARD_XPATH))
        if after > before:
            raised.append((n, before, after))
    assert not raised
    pruned = []

    def counted(tree, nodelist, with_backup=False):
        pruned.append(tree)
        return library(tree, nodelist, with_backup)

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(comparison._originals, "prune_unwanted_nodes", counted)
        for page in pages:
            extract_html(page, url="http://127.0.0.1/page")
    assert 0 < len(pruned) < len(pages)


def test_the_bound_counts_what_readability_adds_to_a_video_frame(installed):
    """readability writes VIDEO into an iframe of a video it keeps: text the page does not have."""
    from trafilatura.utils import load_html

    page = ("<html><body><div class=\"article\"><p>" + "Words of the article, long enough to score. " * 6
            + "</p><p><iframe src=\"https://www.youtube.com/embed/x\"></iframe></p></div></body></html>")
    tree = load_html(page)
    bound, text = comparison.readability_bound(tree), len(readability_text(tree))
    result = readability_text(comparison._originals["try_readability"](tree))
    assert result.endswith("VIDEO") and len(result) > text
    assert len(result) <= bound


def test_a_page_with_a_raw_text_element_always_goes_through_readability(installed, monkeypatch):
    """readability's output is written as XML and read back as HTML: in an element the parser
    reads as raw text (xmp) ``&amp;`` comes back longer, so readability's text can pass the
    bound; such a page is not bounded, and its text is trafilatura's own."""
    from trafilatura.utils import load_html

    assert {"xmp", "plaintext"} <= comparison.regrown_tags() and "p" not in comparison.regrown_tags()
    article = "<p>" + "Words of the article that say something long enough to be kept by the extractor. " * 2
    page = (f"<html><body><article>{article}</p><div class=\"related-posts\"><xmp>" + "<b>&amp;</b> " * 10
            + "</xmp></div></article></body></html>")
    assert comparison.readability_bound(load_html(page)) == comparison.UNBOUNDED
    with comparison.library_comparison():
        theirs = extract_html(page, mode="balanced")
    assert extract_html(page, mode="balanced") == theirs
    monkeypatch.setattr(comparison, "_regrown", frozenset())  # the bound without the raw-text check
    assert extract_html(page, mode="balanced") != theirs


def test_library_comparison_puts_the_wrappers_back_and_unknown_code_is_left_alone(installed, monkeypatch):
    import trafilatura.core
    import trafilatura.external

    wrappers = trafilatura.core.compare_extraction, trafilatura.external.try_readability
    with comparison.library_comparison():
        assert trafilatura.external.prune_unwanted_nodes is comparison._originals["prune_unwanted_nodes"]
        library = trafilatura.core.compare_extraction, trafilatura.external.try_readability
        assert library == (trafilatura.external.compare_extraction, comparison._originals["try_readability"])
        with pytest.MonkeyPatch.context() as patch:  # another trafilatura: nothing is put in
            patch.setattr(comparison._once, "tried", False)
            patch.setattr(comparison, "_originals", {})
            patch.setitem(comparison.KNOWN_SOURCES, "trafilatura.external", "0" * 64)
            assert not comparison.install()
            assert (trafilatura.core.compare_extraction, trafilatura.external.try_readability) == library
    assert (trafilatura.core.compare_extraction, trafilatura.external.try_readability) == wrappers
    assert wrappers[0] is comparison._compare_extraction and comparison.install()
    assert trafilatura.external.prune_unwanted_nodes is comparison._prune_unwanted_nodes
