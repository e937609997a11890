"""Pages prepared per second per CPU core: what a reader does before a model sees a page.

A reader (``side-worker --role reader``) turns a cited page into a prepared citation: extract
the text (trafilatura), read the page's signals from its markup (title, visible words, markers
of paywalls and bot walls: :func:`side.sources.states.page_signals`), split the text into
sentences, score whether it can be checked at all
(:func:`side.pipeline.checkable`) and shortlist the sentences the models will read
(:func:`side.verify.verifier.shortlist_source`, BM25). This script times that in one process,
on pages already on disk (no network), for:

- **today's path**: the date also searched for in the page text (htmldate with dateparser),
  trafilatura's whole metadata search (author, site name, categories, tags, licence too) and its
  own boilerplate expressions, every page's elements walked for its size, pysbd run on every
  paragraph, the language identifier run on every page, and the page's signals read from a
  second parse of the page, their markers searched as written, case ignored, every pattern
  run on every page (each wall's on every sentence), quotes made plain by ``str.translate``, and
  every page's markup scanned for characters XML cannot hold, and the BM25 shortlist indexed over
  a page's whole vocabulary, as before the cheaper text path;
- **the cheaper path**: the date from the markup only, only the title and date of the metadata
  (:func:`side.sources.fetch.extract_html`), trafilatura's boilerplate rules evaluated in Python
  (:mod:`side.sources.discard`), readability and the raw tree's pruning for it not run where
  readability cannot win trafilatura's comparison (:mod:`side.sources.comparison`), two of
  trafilatura's copies of the tree that nothing reads again not made (:mod:`side.sources.copies`),
  markup scanned for characters XML cannot hold only where it has one (:mod:`side.sources.xmlchars`),
  a page's elements walked only when its markup could be too large, Bling Fire's sentence splitter
  (:func:`side.text.split_sentences`) where a paragraph may hold more than one sentence
  (:func:`side.text.is_one_sentence`), the language identifier asked only about pages with few
  English function words, and the page's signals read from the tree its text is extracted from
  (:func:`side.sources.fetch.read_html`: one parse), with their markers and phrases searched for
  only where a string each must contain is there (:func:`side.sources.states.find_markers`,
  :func:`side.sources.states.find_phrases`; a wall's pattern on a page's sentences only where they
  hold one of its phrases), and the BM25 shortlist indexed over the claim's tokens alone
  (:func:`side.verify.evidence.bm25_scores`, the same scores).

Both run over the same pages, alternating, and report pages per CPU second (``process_time``,
so other processes on the host do not count), on how many pages both gave the same title (one
of the signs of a page that cannot be checked) and the same text, and on how many the same
sentences. The sentences differ where the two splitters differ; ``benchmarks/splitters.py``
measures both splitters against known sentence boundaries and the verdicts on each one's
sentences.

Pages: WiCE dev claims with their cited page's sentences as HTML (as ``benchmarks/worker.py``
serves them), and the real article pages of the extraction benchmark (claim: the page's first
sentence).

    .venv/bin/python benchmarks/readers.py [--pages 100] [--repeat 2] [--profile] [--discard] [--comparison] [--signals]
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import gzip
import html
import pstats
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from side.sources.source import PageSignals

Page = tuple[str, bytes]
#: A page as prepared: its title, its text and its sentences.
Prepared = tuple[str, str, tuple[str, ...]]


def wice_pages(data_dir: Path, n: int) -> list[Page]:
    from side.data import WICE_META_PREFIX, load_wice

    pages = []
    for row in load_wice(data_dir / "wice" / "claim_dev.jsonl")[:n]:
        body = "".join(f"<p>{html.escape(s)}</p>" for s in row.evidence if not s.startswith(WICE_META_PREFIX))
        pages.append((row.claim, f"<html><head><title>{html.escape(row.title)}</title></head>"
                                 f"<body>{body}</body></html>".encode()))
    return pages


def real_pages(data_dir: Path, n: int) -> list[Page]:
    import json

    folder = data_dir / "fixtures" / "web_html" / "article_extraction_benchmark"
    truth = json.loads((folder / "ground-truth.json").read_text())
    pages = []
    for path in sorted((folder / "html").glob("*.html.gz"))[:n]:
        article = truth.get(path.name.removesuffix(".html.gz"), {}).get("articleBody") or "news"
        pages.append((article.split(". ")[0][:300], gzip.decompress(path.read_bytes())))
    return pages


def pysbd_sentences(text: str, limit: int) -> tuple[str, ...]:
    """Today's split: pysbd's own Segmenter on every paragraph (``split_sentences`` before)."""
    import pysbd

    from side.text import _chunks

    segmenter, sentences = pysbd.Segmenter(language="en", clean=False), []
    for paragraph in text.split("\n"):
        for chunk in _chunks(paragraph):
            sentences += [s.strip() for s in segmenter.segment(chunk) if s.strip()]
            if len(sentences) >= limit:
                return tuple(sentences[:limit])
    return tuple(sentences)


def today_extract(data: bytes, url: str) -> tuple[str, str, str]:
    """Today's extraction: every element walked for the page's size, trafilatura's whole metadata
    search with the date also searched for in the text, trafilatura's own discard expressions and
    its whole comparison with readability and all its copies of the tree, and its scan for
    characters XML cannot hold on every page (``extract_html`` before)."""
    import trafilatura
    from trafilatura.settings import set_date_params
    from trafilatura.utils import load_html

    from side.sources.comparison import library_comparison
    from side.sources.copies import library_copies
    from side.sources.discard import library_rules
    from side.sources.fetch import MAX_HTML_ELEMENTS, MAX_HTML_TEXT_CHARS, _limit_tree
    from side.sources.xmlchars import library_removal

    with library_removal():
        tree = load_html(data)
    _limit_tree(tree, MAX_HTML_ELEMENTS, MAX_HTML_TEXT_CHARS)
    with library_rules(), library_comparison(), library_copies():
        doc = trafilatura.bare_extraction(tree, url=url, favor_precision=True, include_comments=False,
                                          include_tables=True, with_metadata=True,
                                          date_extraction_params=set_date_params(True))
    return (doc.text or "", doc.title or "", doc.date or "") if doc is not None else ("", "", "")


def written_markers(markup: str) -> tuple[str, ...]:
    """Today's search for the page's markers: each pattern as written, case ignored, over the
    markup itself (:func:`side.sources.states.find_markers` before)."""
    import re

    from side.sources.states import MARKERS

    return tuple(name for name, (_state, pattern) in MARKERS.items() if re.search(pattern, markup, re.IGNORECASE))


def every_phrase(normalized: str) -> tuple[str, ...]:
    """Today's search for wall phrases: the pattern run on every page
    (:func:`side.sources.states.find_phrases` before)."""
    from side.sources.states import _all_phrases

    return tuple(dict.fromkeys(m.group(0) for m in _all_phrases().finditer(normalized)))


def smart_visible_text(tree: Any) -> list[str]:
    """Today's visible text: lxml's "smart" strings, each then made a plain one."""
    from side.sources.states import _VISIBLE

    return [str(t) for t in tree.xpath(_VISIBLE)]


def squeezed_by_pattern(text: str) -> str:
    """Today's squeezing of white space, by a pattern."""
    import re

    return re.sub(r"\s+", " ", text).strip()


@functools.cache
def _quotes_table() -> dict[int, str]:
    from side.sources.states import _QUOTES

    return str.maketrans(dict(_QUOTES))


def translated(text: str) -> str:
    """Today's plain quotes: ``str.translate`` with the table of
    :data:`side.sources.states._QUOTES`, made once (:func:`side.sources.states._plain` before)."""
    return text.translate(_quotes_table())


def today_signals(data: bytes) -> PageSignals:
    """Today's :func:`side.sources.states.page_signals`: a second parse of the page, with
    :func:`written_markers`, :func:`every_phrase`, :func:`smart_visible_text`,
    :func:`squeezed_by_pattern` and :func:`translated`, and trafilatura's scan for characters
    XML cannot hold on every page."""
    from unittest import mock

    from side.sources import states
    from side.sources.xmlchars import library_removal

    with library_removal(), mock.patch.object(states, "find_markers", written_markers), \
            mock.patch.object(states, "find_phrases", every_phrase), \
            mock.patch.object(states, "_visible_strings", smart_visible_text), \
            mock.patch.object(states, "_squeeze", squeezed_by_pattern), \
            mock.patch.object(states, "_plain", translated):
        return states.page_signals(data)


def today_checkable(source: Any) -> Any:
    """Today's :func:`side.pipeline.checkable`: quotes made plain by :func:`translated`, and each
    wall's pattern run on every sentence (no :meth:`side.sources.states._Sentences.may_hold`)."""
    from unittest import mock

    from side.pipeline import checkable
    from side.sources import states

    with mock.patch.object(states, "_plain", translated), \
            mock.patch.object(states._Sentences, "may_hold", lambda _self, _phrases: True):
        return checkable(source)


def time_signals(pages: list[Page], repeat: int) -> None:
    """A page's signals alone, each path parsing the page itself: today's (:func:`today_signals`)
    against :func:`side.sources.states.page_signals`, alternating runs: ms of CPU a page, and
    whether every page's signals are the same. (A reader also saves the parse:
    :func:`side.sources.fetch.read_html`.)"""
    from side.sources.states import page_signals

    paths = {"today": today_signals, "cheaper": page_signals}
    spent, signals = dict.fromkeys(paths, 0.0), {}
    for _ in range(repeat):
        for path, read in paths.items():
            started = time.process_time()
            signals[path] = [read(data) for _claim, data in pages]
            spent[path] += time.process_time() - started
    same = sum(a == b for a, b in zip(*signals.values(), strict=True))
    print(f"page signals, {len(pages)} pages x {repeat} runs; the same signals on {same}/{len(pages)} pages")
    for path, seconds in spent.items():
        print(f"  {path:11s} {1000 * seconds / (len(pages) * repeat):6.1f} ms a page")


def today_shortlist(claim: str, sentences: list[str]) -> Any:
    """Today's :func:`side.verify.verifier.shortlist_source`: bm25s's index over the sentences'
    whole vocabulary (no :func:`side.verify.evidence._query_terms_only`)."""
    from unittest import mock

    from side.verify import evidence
    from side.verify.verifier import shortlist_source

    with mock.patch.object(evidence, "_query_terms_only", lambda tokens, _query_tokens: tokens):
        return shortlist_source(claim, sentences)


def prepare(pages: list[Page], cheaper: bool) -> list[Prepared]:
    """Each page extracted, its signals read from the markup (as a reader does for a page it
    fetched, :func:`side.sources.fetch.source_from_html`), split, assessed and shortlisted;
    returns each page's title, text and sentences."""
    from side.errors import SourceFetchError
    from side.pipeline import checkable
    from side.sources.fetch import MAX_SENTENCES, MAX_TEXT_CHARS, Source, read_html
    from side.sources.states import LANGUAGE_SAMPLE_CHARS, detect_language
    from side.text import normalize_space, split_sentences
    from side.verify.verifier import bounded_sentences, shortlist_source

    out = []
    for n, (claim, data) in enumerate(pages):
        if cheaper:
            text, title, date, signals = read_html(data, url=f"http://127.0.0.1/{n}")
        else:
            text, title, date = today_extract(data, f"http://127.0.0.1/{n}")
            signals = today_signals(data)
        text = normalize_space(text)[:MAX_TEXT_CHARS]
        sentences = (tuple(split_sentences(text, MAX_SENTENCES)) if cheaper
                     else pysbd_sentences(text, MAX_SENTENCES))
        try:
            (checkable if cheaper else today_checkable)(Source(
                f"http://127.0.0.1/{n}", f"http://127.0.0.1/{n}", title, date, text, "text/html", sentences,
                page=signals))
        except SourceFetchError:
            pass
        if not cheaper:  # before, every page went through the identifier, English or not
            detect_language(text[:LANGUAGE_SAMPLE_CHARS])
        (shortlist_source if cheaper else today_shortlist)(claim, bounded_sentences(list(sentences)))
        out.append((title, text, sentences))
    return out


def prepare_path(pages: list[Page], path: str) -> list[Prepared]:
    """``prepare`` on one path: "today", "cheaper", "xpath" (the cheaper path with trafilatura's
    own discard expressions: what :mod:`side.sources.discard` alone brings) or "readability" (the
    cheaper path with trafilatura's whole comparison: what :mod:`side.sources.comparison` brings)."""
    from side.sources.comparison import library_comparison
    from side.sources.discard import library_rules

    if path == "xpath":
        with library_rules():
            return prepare(pages, True)
    if path == "readability":
        with library_comparison():
            return prepare(pages, True)
    return prepare(pages, path == "cheaper")


def timed(fn: Callable[[], list[Prepared]]) -> tuple[float, list[Prepared]]:
    started = time.process_time()
    result = fn()
    return time.process_time() - started, result


def main() -> None:
    from side.config import load_config
    from side.sources.states import detect_language

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100, help="pages of each set (default 100)")
    parser.add_argument("--repeat", type=int, default=2, help="alternating runs of each path (default 2)")
    parser.add_argument("--profile", action="store_true", help="print the cProfile of one run of each path")
    parser.add_argument("--discard", action="store_true",
                        help="also time the cheaper path with trafilatura's own discard expressions (path 'xpath')")
    parser.add_argument("--signals", action="store_true",
                        help="also time the pages' signals alone, today's and the cheaper path's")
    parser.add_argument("--comparison", action="store_true",
                        help="also time the cheaper path with readability run on every page (path 'readability')")
    args = parser.parse_args()
    data_dir = load_config().data_dir
    sets = {"WiCE dev pages": wice_pages(data_dir, args.pages), "real article pages": real_pages(data_dir, args.pages)}
    # the language identifier's model is read once per process (half a second): a reader has it
    # loaded; here it would count against whichever path first meets a page with few English words
    detect_language("warm up")
    for name, pages in sets.items():
        prepare(pages[:3], True)  # imports and models of the parsers loaded before the clock
        prepare(pages[:3], False)
        seconds = dict.fromkeys(["today", "cheaper"] + (["xpath"] if args.discard else [])
                                + (["readability"] if args.comparison else []), 0.0)
        sentences: dict[str, list[Prepared]] = {}
        for _ in range(args.repeat):
            for path in seconds:
                spent, sentences[path] = timed(lambda pages=pages, path=path: prepare_path(pages, path))
                seconds[path] += spent
        same = [sum(all(a[part] == prepared[n][part] for prepared in sentences.values())
                    for n, a in enumerate(sentences["today"])) for part in range(3)]
        rate = {path: len(pages) * args.repeat / spent for path, spent in seconds.items()}
        print(f"{name}: {len(pages)} pages x {args.repeat} runs; the same title on {same[0]}/{len(pages)} pages, "
              f"text on {same[1]}, sentences on {same[2]}")
        for path, spent in seconds.items():
            print(f"  {path:11s} {spent:7.2f} CPU s  {rate[path]:7.1f} pages per CPU second  "
                  f"ratio {rate[path] / rate['today']:.2f}")
        if args.signals:
            time_signals(pages, args.repeat)
        if args.profile:
            for path in seconds:
                profile = cProfile.Profile()
                profile.runcall(prepare_path, pages, path)
                print(f"--- {name}, {path}")
                pstats.Stats(profile).sort_stats("cumulative").print_stats(15)


if __name__ == "__main__":
    main()
