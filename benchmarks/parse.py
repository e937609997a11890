"""Claim extraction time against input size, for the inputs that used to take quadratic time.

Each shape is built at sizes doubling from 10 KB to 5 MB and run through
``side.extract.wikitext.extract_claims``; the table prints the time, the growth ratio against
the size before (about 2.0 per doubling is linear, 4.0 quadratic), the parse level used and the
tokenizer's reads per text segment. Nothing is asserted: tests/test_parse_linear.py checks the
growth with operation counts instead of clocks.

Shapes:
- ``unclosed <ref>``: a sentence and an opening ``<ref>`` with a citation, never closed.
- ``one paragraph``: one paragraph of sentences, each with its ``<ref>``, no blank line.
- ``no full stop``: one paragraph of refs with no sentence end (each claim is capped).
- ``{{a|{{b}}``: an unclosed template around a closed one, repeated.
- ``{{a|<ref>x}}</ref>``: a template closed inside a ref, repeated (mismatched nesting).
- ``punctuation, refs``: punctuation and refs with no letter: no sentence ends, no safe cuts.
- ``real articles``: the fixture articles (data/fixtures/wikitext) concatenated, repeated.

A second table gives the CPU one API request can cost: each shape at the API's snippet cap (half
of ``service.max_body_bytes``: 262,144 characters by default), read as the API reads it (stopping
at the 51st citation), plus the two slowest shapes the fuzzing in tests/test_parse_linear.py found.

    .venv/bin/python benchmarks/parse.py            # 10 KB .. 5 MB
    .venv/bin/python benchmarks/parse.py --quick    # 10 KB .. 640 KB
    .venv/bin/python benchmarks/parse.py --api-only # the second table only
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Callable
from pathlib import Path

from side.config import load_config
from side.extract.wikitext import _walk_page, extract

KB = 1024
MB = 1024 * KB


def repeat(unit: str) -> Callable[[int], str]:
    def build(size: int) -> str:
        return (unit * (size // len(unit) + 1))[:size]

    return build


def real_articles(data_dir: Path) -> Callable[[int], str]:
    files = sorted((data_dir / "fixtures" / "wikitext").glob("*.txt"))
    corpus = "\n\n".join(path.read_text(encoding="utf-8") for path in files)
    return repeat(corpus + "\n\n")


def shapes(data_dir: Path) -> dict[str, Callable[[int], str]]:
    return {
        "unclosed <ref>": repeat("Some claim here. <ref>{{cite web |url=https://e.example/x |title=T}} more words "),
        "one paragraph": repeat("A sentence about one fact of the article.<ref>[https://e.example/a A]</ref> "),
        "no full stop": repeat("a fact without an end<ref>[https://e.example/a A]</ref> "),
        "{{a|{{b}}": repeat("{{a|{{b}} text "),
        "{{a|<ref>x}}</ref>": repeat("Text {{a|<ref>x}}</ref> "),
        "punctuation, refs": repeat(". . ! ?<ref name=a/> "),
        "real articles": real_articles(data_dir),
    }


#: Shapes that make the exact reading run out of its budget before a fallback reads them.
API_EXTRA = {
    "<li>, bold after refs": repeat("Fact.<ref>x</ref> <li>a " + "'" * 4 + "b "),
    "italics in refs": repeat("b c</ref><ref>" + "'" * 2 + "<span>"),
}


def api_table(data_dir: Path, cap: int, max_claims: int) -> None:
    print(f"{'shape, at the API cap':<24} {'chars':>8} {'seconds':>8} {'level':>10} {'claims':>7}")
    for name, build in {**shapes(data_dir), **API_EXTRA}.items():
        started = time.perf_counter()
        extraction = extract(build(cap), "T", 100, max_claims=max_claims)
        seconds = time.perf_counter() - started
        claims = f"{len(extraction.claims)}{'' if extraction.complete else '+'}"
        print(f"{name:<24} {cap:>8} {seconds:>8.3f} {extraction.parse.level!s:>10} {claims:>7}", flush=True)


def measure(text: str) -> tuple[float, int, str, float]:
    """Seconds, claims, parse level and tokenizer reads per segment for one extraction."""
    started = time.perf_counter()
    walker = _walk_page(text, 100)
    seconds = time.perf_counter() - started
    report = walker.report
    assert report is not None
    return seconds, len(walker.uses), str(report.level), report.work / max(1, report.segments)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="sizes up to 640 KB only")
    parser.add_argument("--shape", action="append", help="run only this shape (repeatable)")
    parser.add_argument("--api-only", action="store_true", help="only the table at the API's snippet cap")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    config = load_config()
    if args.api_only:
        api_table(config.data_dir, config.service.max_body_bytes // 2, 50)
        return
    sizes = [10 * KB * 2**n for n in range(10)]  # 10 KB .. 5 MB
    if args.quick:
        sizes = sizes[:7]
    print(f"{'shape':<20} {'size':>8} {'seconds':>8} {'x prev':>7} {'uses':>7} {'level':>10} {'reads/seg':>9}")
    for name, build in shapes(config.data_dir).items():
        if args.shape and name not in args.shape:
            continue
        previous = None
        for size in sizes:
            seconds, uses, level, reads = measure(build(size))
            ratio = f"{seconds / previous:.2f}" if previous else "-"
            label = f"{size // KB} KB" if size < MB else f"{size / MB:.2f} MB"
            print(f"{name:<20} {label:>8} {seconds:>8.3f} {ratio:>7} {uses:>7} {level:>10} {reads:>9.1f}", flush=True)
            previous = seconds
        print()
    if not args.shape:
        api_table(config.data_dir, config.service.max_body_bytes // 2, 50)


if __name__ == "__main__":
    main()
