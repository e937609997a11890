"""``side eval sources``: tell readable pages from paywalls, walls, shells and foreign pages."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from side.config import Config

__all__ = ["register", "run"]

if TYPE_CHECKING:
    from side.evaluation.sources import SourcesReport


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "sources",
        help="score the readable / cannot-check assessment of fetched pages on labelled real pages",
        description="Precision and recall per source state (paywall, login wall, soft 404, ...) on the "
                    "shared data's real web pages, labelled in side/evaluation/data/source_states.json.",
    )
    parser.add_argument("--data-dir", type=Path, help="shared data directory (default: config data_dir)")
    parser.add_argument("--labels", type=Path, help="labels file in the same schema (default: the shipped one)")
    parser.add_argument("--limit", type=int, help="only the first N labelled pages (quick check)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--per-page", action="store_true", help="with --json: every page's outcome")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, config: Config) -> int:
    from side.errors import InputError
    from side.evaluation.sources import LABELS_FILE, evaluate_sources

    if args.limit is not None and args.limit < 1:
        raise InputError("--limit must be at least 1")
    report = evaluate_sources(Path(args.data_dir or config.data_dir), args.labels or LABELS_FILE, args.limit)
    if args.json:
        print(json.dumps(report.to_dict(per_page=args.per_page), indent=1))
    else:
        _print(report)
    return 0


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _print(report: SourcesReport) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=f"Source states on {report.pages} labelled real pages "
                        f"(accuracy {report.accuracy:.3f}, {report.mean_ms:.0f} ms/page)")
    for column in ("state", "labelled", "predicted", "correct", "precision", "recall"):
        table.add_column(column, justify="left" if column == "state" else "right")
    for score in report.states:
        table.add_row(score.state.value, str(score.support), str(score.predicted), str(score.correct),
                      _ratio(score.precision), _ratio(score.recall))
    console.print(table)
    c = report.confusion
    confusion = Table(title="readable vs cannot check (rows: label, columns: assessment)")
    for column in ("", "readable", "cannot check"):
        confusion.add_column(column, justify="right" if column else "left")
    confusion.add_row("readable", str(c.readable_as_readable), str(c.readable_as_unreadable))
    confusion.add_row("cannot check", str(c.unreadable_as_readable), str(c.unreadable_as_unreadable))
    console.print(confusion)
    console.print(f"cannot check: precision {_ratio(c.precision)}, recall {_ratio(c.recall)}")
    if report.missing:
        console.print("no real example in the data (tested on written pages in tests/test_source_states.py): "
                      + ", ".join(s.value for s in report.missing))
    for outcome in report.errors:
        console.print(f"  wrong: {outcome.path}: labelled {outcome.label.value}, assessed "
                      f"{outcome.predicted.value} ({outcome.evidence})", markup=False, highlight=False)
