"""The cheaper text path gives the sentences, text and title the full one gives, on real pages."""

from __future__ import annotations

import gzip

import pytest

from side.data import load_wice
from side.sources.fetch import MAX_HTML_ELEMENTS, MAX_HTML_TEXT_CHARS, _is_small, _limit_tree, extract_html
from side.text import (
    _chunks,
    _is_plain,
    _segmenter,
    _words_before_periods,
    is_one_sentence,
    normalize_space,
    split_sentences,
)

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


def pysbd_sentences(text: str) -> list[str]:
    """What pysbd itself gives for every paragraph of ``text``."""
    import pysbd

    segmenter = pysbd.Segmenter(language="en", clean=False)
    return [sentence.strip() for paragraph in normalize_space(text).split("\n") for chunk in _chunks(paragraph)
            for sentence in segmenter.segment(chunk) if sentence.strip()]


def test_sentences_are_those_pysbd_gives_every_paragraph():
    texts = [extract_html(html)[0] for html in real_pages(40)]
    texts += ["\n".join(row.evidence) for row in load_wice(need_data("wice/claim_dev.jsonl"))[:60]]
    skipped = 0
    for text in texts:
        assert split_sentences(text) == split_sentences(text, segment_all=True) == pysbd_sentences(text)
        skipped += sum(is_one_sentence(p) for p in normalize_space(text).split("\n"))
    assert skipped > 1000  # the fast path is taken, not only defined


def test_the_markup_date_search_keeps_text_and_title():
    for html in real_pages(25):
        fast, full = extract_html(html), extract_html(html, extensive_dates=True)
        assert fast[:2] == full[:2]


PARAGRAPHS = [
    "He lives on St. Mark's street. It is fine, and so is the co. next door.",
    "Dr. Smith met Mr. Jones at 5 p.m. on Jan. 5. They talked about Co. Ltd. and Inc. firms.",
    "See p. 5 and pp. 7-9 of the report. No. 5 is here; nos. 6 and 7 are not. Art. 3 applies.",
    "It is. Is it? The U.S. is large. E.g. this one. I.e. that one. Ph.D. students came.",
    "The \u017ft. and the \u212aan. items are odd (a long s, a Kelvin sign). Mt. Fuji is tall.",
    "Fig. 3 shows it. Gen. Lee and Sgt. Pepper met Prof. Xavier vs. Mag. Neto in Wash. state.",
    "Alsea is listed. It is in Mexico. Ill. and Ind. are states. Is Ky. one? Yes. I am sure.",
    "Made by Acme co. Ltd. in 1990. See the x.co. site and (Vol. 2) and no.5 here. CO. AND GEN. MET.",
    "Caf\u00e9. Na\u00efve ideas, etc. are fine. He met Ms. \u014cno at St.\u00a0Mark's. Tue. came.",
]


@pytest.mark.parametrize("paragraph", PARAGRAPHS)
def test_abbreviations_are_replaced_as_pysbd_replaces_them(paragraph):
    """pysbd's abbreviation step is skipped where no period follows an abbreviation: the
    sentences stay pysbd's own, also where its case-insensitive patterns match odd letters."""
    import pysbd

    assert _segmenter().segment(paragraph) == pysbd.Segmenter(language="en", clean=False).segment(paragraph)


def test_words_before_periods_answer_as_pysbd_s_pattern():
    """For an abbreviation of plain letters, the words before the periods say whether pysbd's
    pattern finds it followed by a period; a word outside ASCII sends the text to the pattern."""
    import re

    from pysbd.lang.english import English

    plain = [abbr.strip() for abbr in English.Abbreviation.ABBREVIATIONS if _is_plain(abbr.strip())]
    assert len(plain) > 150
    pages = [normalize_space(extract_html(html)[0]) for html in real_pages(20)]
    texts = PARAGRAPHS + [line for page in pages for line in page.split("\n")]
    checked = 0
    for text in texts:
        words, odd = _words_before_periods(text)
        if odd:
            continue
        for abbr in plain:
            found = re.search(rf"(?:^|\s)(?:{abbr})\.", text, re.IGNORECASE) is not None
            assert (abbr in words) == found, (abbr, text)
            checked += abbr in words
    assert checked > 40  # the words found an abbreviation's period, not only its absence
    words, odd = _words_before_periods("The \u212aan. and \u017ft. items")  # Kelvin sign, long s
    assert odd and "st" not in words and re.search(r"(?:^|\s)(?:st)\.", "the \u017ft.", re.IGNORECASE)


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
