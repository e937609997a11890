"""Cost of turning a very large HTML page into a Source: extraction plus sentence splitting.

A cited page of 9 MB of paragraphs once cost 49 s of CPU in ``source_from_html`` (trafilatura
over every element, then the sentence splitter over all of its text). Pages are built here,
shaped as the costly ones were (many paragraphs, a long table, one giant paragraph, a real
article page repeated), and each is timed through the fetcher's own path
(:func:`side.sources.fetch.source_from_html`): wall and CPU seconds, text and sentences kept.
To compare with an older checkout, run this same script with that checkout first on
``PYTHONPATH``.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/large_html.py [--mb 9] [--quick]

``--quick`` builds 1 MB pages. Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import gzip
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from side.sources.fetch import source_from_html

__all__ = ["PAGES", "main"]

log = logging.getLogger("benchmarks.large_html")

BENCHMARK_HTML = "fixtures/web_html/article_extraction_benchmark/html"


def paragraphs(size: int) -> bytes:
    row = b"<p>Paragraph %d with some words about the harbour and the town and its long history.</p>\n"
    return _fill(b"<html><head><title>Paragraphs</title></head><body><article>", row,
                 b"</article></body></html>", size)


def table(size: int) -> bytes:
    row = b"<tr><td>%d</td><td>cell text here</td><td><a href='/x'>link</a></td></tr>\n"
    return _fill(b"<html><body><p>Intro text about the table below, long enough to count.</p><table>", row,
                 b"</table></body></html>", size)


def giant_paragraph(size: int) -> bytes:
    return _fill(b"<html><body><article><p>", b"The harbour was rebuilt in 1902 after a storm (%d). ",
                 b"</p></article></body></html>", size)


def real_page(size: int) -> bytes | None:
    """The largest page of the extraction benchmark, its article repeated up to ``size``."""
    root = Path(os.environ.get("SIDE_DATA_DIR", "../shared/data")) / BENCHMARK_HTML
    files = sorted(root.glob("*.html.gz"), key=lambda p: p.stat().st_size)
    if not files:
        return None
    page = gzip.decompress(files[-1].read_bytes())
    head, sep, rest = page.partition(b"<body")
    body = sep + rest
    return head + body * max(1, size // max(1, len(body)))


def _fill(head: bytes, row: bytes, tail: bytes, size: int) -> bytes:
    rows, n, total = [], 0, len(head) + len(tail)
    while total < size:
        line = row % n if b"%d" in row else row
        rows.append(line)
        total += len(line)
        n += 1
    return head + b"".join(rows) + tail


PAGES: dict[str, Callable[[int], bytes | None]] = {
    "paragraphs": paragraphs, "table": table, "giant paragraph": giant_paragraph, "real page repeated": real_page,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=9.0, help="page size in MB (default 9)")
    parser.add_argument("--quick", action="store_true", help="1 MB pages")
    parser.add_argument("--only", choices=sorted(PAGES), help="time one page shape")
    args = parser.parse_args()
    size = int((1.0 if args.quick else args.mb) * 1_000_000)
    logging.basicConfig(level=logging.WARNING)
    print(f"{'page':<20} {'MB':>5} {'wall s':>7} {'CPU s':>7} {'text chars':>11} {'sentences':>9}")
    for name, build in PAGES.items():
        if args.only and name != args.only:
            continue
        html = build(size)
        if html is None:
            print(f"{name:<20} skipped (no extraction benchmark under SIDE_DATA_DIR)")
            continue
        wall, cpu = time.perf_counter(), time.process_time()
        source = source_from_html(html, "https://example.org/large")
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(f"{name:<20} {len(html) / 1e6:>5.1f} {wall:>7.2f} {cpu:>7.2f} {len(source.text):>11,} "
              f"{len(source.sentences):>9,}", flush=True)


if __name__ == "__main__":
    main()
