"""``side eval extraction``: score HTML main-text extraction on the article-extraction benchmark."""

from __future__ import annotations

import argparse
from pathlib import Path

from side.cli.checks import at_least
from side.cli.jsonout import json_text
from side.config import Config

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "extraction",
        help="score HTML text extraction (trafilatura vs. naive) on the article-extraction benchmark",
        description="Token-overlap precision/recall/F1 of extracted vs. hand-written article bodies.",
    )
    parser.add_argument("--data-dir", type=Path, help="shared data directory (default: config data_dir)")
    parser.add_argument("--limit", type=int, help="only the first N pages (quick check)")
    parser.add_argument(
        "--ngram", type=int, default=1, help="n-gram size: 1 = bag of words (default), 4 = benchmark shingles"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--per-page", action="store_true", help="with --json: include per-page scores")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, config: Config) -> int:
    from side.evaluation.extraction import evaluate_extraction

    at_least(1, limit=args.limit, ngram=args.ngram)
    data_dir = args.data_dir or config.data_dir
    results = evaluate_extraction(Path(data_dir), limit=args.limit, n=args.ngram)
    if args.json:
        payload = {"ngram": args.ngram, "results": [r.to_dict(per_page=args.per_page) for r in results]}
        print(json_text(payload, indent=2))
    else:
        _print_table(results, args.ngram)
    return 0


def _print_table(results: list, ngram: int) -> None:
    from rich.console import Console
    from rich.table import Table

    pages = results[0].pages if results else 0
    table = Table(title=f"Article extraction benchmark ({pages} pages, {ngram}-gram overlap)")
    table.add_column("extractor")
    for column in ("P macro", "R macro", "F1 macro", "P micro", "R micro", "F1 micro", "empty", "ms/page"):
        table.add_column(column, justify="right")
    for r in results:
        table.add_row(
            r.name,
            f"{r.macro_precision:.3f}",
            f"{r.macro_recall:.3f}",
            f"{r.macro_f1:.3f}",
            f"{r.micro_precision:.3f}",
            f"{r.micro_recall:.3f}",
            f"{r.micro_f1:.3f}",
            str(r.empty_pages),
            f"{r.mean_ms:.1f}",
        )
    Console().print(table)
