"""The cheaper text path gives the sentences, text and title the full one gives, on real pages."""

from __future__ import annotations

import gzip

import pytest

from side.data import load_wice
from side.sources.fetch import extract_html
from side.text import _chunks, is_one_sentence, normalize_space, split_sentences

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
