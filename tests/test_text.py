"""The text path: the cheaper extraction gives the text and title the full one gives, and the
sentence splitter finds sentences as well as pysbd did, on real pages."""

from __future__ import annotations

import gzip

import pytest

from side.data import load_wice
from side.sources.fetch import MAX_HTML_ELEMENTS, MAX_HTML_TEXT_CHARS, _is_small, _limit_tree, extract_html
from side.text import is_one_sentence, normalize_space, split_sentences

from conftest import need_data


def real_pages(limit: int) -> list[bytes]:
    folder = need_data("fixtures/web_html/article_extraction_benchmark/html")
    return [gzip.decompress(path.read_bytes()) for path in sorted(folder.glob("*.html.gz"))[:limit]]


@pytest.mark.parametrize("chunk, whole", [
    ("The tower was completed in 1889.", True),
    ("Is it tall?", True),
    ("A heading without a full stop", True),
    ("It is 330 m tall. It was built in 1889.", False),
    ("The U.S. Army", False),
    ("Wait..", False),
    ('"It is tall." He said so', False),
    ("a) one b) two", False),
])
def test_one_sentence_paragraphs_are_recognised(chunk, whole):
    assert is_one_sentence(chunk) is whole


def test_the_fast_path_gives_the_splitter_s_own_sentences():
    """Paragraphs :func:`is_one_sentence` passes are kept whole without the splitter, as the
    splitter itself keeps them, and every sentence is the page's own text, in order."""
    texts = [extract_html(html)[0] for html in real_pages(40)]
    texts += ["\n".join(row.evidence) for row in load_wice(need_data("wice/claim_dev.jsonl"))[:60]]
    skipped = 0
    for text in texts:
        sentences = split_sentences(text)
        assert sentences == split_sentences(text, segment_all=True)
        skipped += sum(is_one_sentence(p) for p in normalize_space(text).split("\n"))
        flat, at = normalize_space(text), 0
        for sentence in sentences:
            found = flat.find(sentence, at)
            assert found >= 0, sentence
            at = found + len(sentence)
    assert skipped > 1000  # the fast path is taken, not only defined


def test_the_markup_date_search_keeps_text_and_title():
    for html in real_pages(25):
        fast, full = extract_html(html), extract_html(html, extensive_dates=True)
        assert fast[:2] == full[:2]


@pytest.mark.parametrize("paragraph, sentences", [
    ("Dr. Smith met Mr. Jones at 5 p.m. on Monday. They talked.",
     ["Dr. Smith met Mr. Jones at 5 p.m. on Monday.", "They talked."]),
    ("The U.S. is large. Is it? Yes! It is 3.5 km wide.",
     ["The U.S. is large.", "Is it?", "Yes!", "It is 3.5 km wide."]),
    ('He said "it is tall." Then he left.', ['He said "it is tall."', "Then he left."]),
    ("See Fig. 3 and Vol. 2 of the report. Xavier agreed with Prof. Grey.",
     ["See Fig. 3 and Vol. 2 of the report.", "Xavier agreed with Prof. Grey."]),
    ("\u201cIt is tall,\u201d he said. \u201cIs it?\u201d", ["\u201cIt is tall,\u201d he said.", "\u201cIs it?\u201d"]),
])
def test_sentences_end_where_a_reader_ends_them(paragraph, sentences):
    assert split_sentences(paragraph) == sentences


def test_no_text_is_dropped_by_the_splitter(monkeypatch):
    """A NUL (which would end the splitter's C string; between sentences it separates them, as a
    space would) and a lone surrogate (which has no UTF-8) stay in their sentences; a chunk the
    splitter answers nothing for stays one sentence."""
    import side.text

    assert split_sentences("One is here.\0Two is here. Three.") == ["One is here.", "Two is here.", "Three."]
    assert split_sentences("One\0two is here. Three.") == ["One\0two is here.", "Three."]
    assert split_sentences("A \ud800 is odd. It is kept.") == ["A \ud800 is odd.", "It is kept."]
    assert split_sentences("\u200bAbout us\n\ufeff It is. Here.") == ["About us", "It is.", "Here."]
    monkeypatch.setattr(side.text, "_bling_fire", lambda: lambda text: "")
    assert split_sentences("It is 330 m tall. It was built in 1889.") == ["It is 330 m tall. It was built in 1889."]


def test_sentence_boundaries_of_cited_pages_are_found_as_well_as_pysbd_found_them():
    """On the sentences of pages cited on Wikipedia (all of WiCE train's evidence), joined four
    at a time, Side's splitter finds the boundaries at an F1 no lower than pysbd's."""
    import pysbd

    from side.evaluation.sentences import boundaries, wice_evidence

    sentences = wice_evidence(need_data("wice/non_supported_tokens_train.jsonl"))
    groups = [sentences[i:i + 4] for i in range(0, len(sentences) - 3, 4)]
    assert len(groups) > 10_000
    segmenter = pysbd.Segmenter(language="en", clean=False)
    side = boundaries(groups, split_sentences)
    before = boundaries(groups, lambda text: [s.strip() for s in segmenter.segment(text) if s.strip()])
    assert side.f1 >= before.f1 > 0.5


def test_every_mark_the_splitter_ends_a_sentence_at_sends_a_paragraph_to_it():
    """A paragraph is kept whole without the splitter only if it holds none of the marks the
    splitter ends sentences at: every character is tried between two sentences."""
    import blingfire

    ends_at = []
    for code in range(0x21, 0x30000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        text = f"Abc def{chr(code)} Ghi jkl"
        if "\n" in blingfire.text_to_sentences(text):
            ends_at.append(text)
    assert len(ends_at) > 10
    for text in ends_at:
        assert split_sentences(text) == split_sentences(text, segment_all=True), text
        if "\n" not in normalize_space(text):  # line breaks always end a paragraph before this
            assert not is_one_sentence(text), text


@pytest.mark.parametrize("text", ["\0Cornerback", "Cornerback\0", "\u2060", "\u200b\ufeff", "\0"])
def test_a_paragraph_kept_whole_reads_as_the_splitter_returns_it(text):
    assert split_sentences(text) == split_sentences(text, segment_all=True)


def test_pysbd_splits_where_bling_fire_does_not_load(monkeypatch, caplog):
    """Bling Fire's wheel carries an x86-64 library only: where it does not load, pysbd splits."""
    import sys

    import pysbd

    import side.text

    paragraph = "Dr. Smith met Mr. Jones at 5 p.m. on Monday. They talked. It is 3.5 km wide."
    side.text._bling_fire.cache_clear()
    try:
        with monkeypatch.context() as patch, caplog.at_level("WARNING", logger="side.text"):
            patch.setitem(sys.modules, "blingfire", None)  # what an import that fails leaves
            sentences = split_sentences(paragraph)
    finally:
        side.text._bling_fire.cache_clear()
    assert sentences == [s.strip() for s in pysbd.Segmenter(language="en", clean=False).segment(paragraph)]
    assert "splitting sentences with pysbd" in caplog.text
    assert side.text._bling_fire() is not None  # and Bling Fire again once it loads


def test_text_title_and_date_are_trafilatura_s_with_its_whole_metadata_search():
    """extract_html asks trafilatura only for the title and date of the metadata, and walks a
    page's elements for its size only where its markup could be too large."""
    import trafilatura
    from trafilatura.settings import set_date_params

    for n, html in enumerate(real_pages(30)):
        url = f"http://127.0.0.1/{n}" if n % 2 else None
        for extensive in (False, True):
            doc = trafilatura.bare_extraction(html, url=url, favor_precision=True, include_comments=False,
                                              include_tables=True, with_metadata=True,
                                              date_extraction_params=set_date_params(extensive))
            assert extract_html(html, url, extensive_dates=extensive) == (doc.text, doc.title or "", doc.date or "")
        assert _is_small(html, MAX_HTML_ELEMENTS, MAX_HTML_TEXT_CHARS)
        assert _limit_tree(trafilatura.utils.load_html(html), MAX_HTML_ELEMENTS, MAX_HTML_TEXT_CHARS) is None
    many = "<html><body>" + "<p>a</p>" * (MAX_HTML_ELEMENTS // 2) + "</body></html>"
    assert not _is_small(many, MAX_HTML_ELEMENTS, MAX_HTML_TEXT_CHARS)
    assert not _is_small(many.encode(), MAX_HTML_ELEMENTS, 1000)
    implied = "text<br>" * (MAX_HTML_ELEMENTS // 2)  # no <p>, <html> or <body> in the markup
    assert not _is_small(implied, MAX_HTML_ELEMENTS, MAX_HTML_TEXT_CHARS)
