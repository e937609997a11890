"""``side eval sources``: tell readable pages from paywalls, walls, shells and foreign pages;
with ``--wice``, count the citations of WiCE that end as cannot check, and why."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from side.cli.checks import at_least
from side.cli.jsonout import json_text
from side.config import Config

__all__ = ["register", "run"]

if TYPE_CHECKING:
    from side.evaluation.sources import CannotCheckReport, SourcesReport


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
    parser.add_argument("--per-page", action="store_true", help="with --json: every page's (or citation's) outcome")
    parser.add_argument("--wice", nargs="?", type=Path, const=WICE_DEFAULT, metavar="CLAIMS",
                        help="instead: how many WiCE citations end as cannot check, and why (each cited page "
                             "assessed, then pre-checked as the verifier does), counted per reason and gold label; "
                             "CLAIMS defaults to wice/claim_dev.jsonl under the data directory")
    parser.set_defaults(func=run)


#: ``--wice`` without a path: WiCE dev under the data directory.
WICE_DEFAULT = Path("-")


def run(args: argparse.Namespace, config: Config) -> int:
    from side.evaluation.sources import LABELS_FILE, evaluate_sources

    at_least(1, limit=args.limit)
    if args.wice is not None:
        return _run_wice(args, config)
    report = evaluate_sources(Path(args.data_dir or config.data_dir), args.labels or LABELS_FILE, args.limit)
    if args.json:
        print(json_text(report.to_dict(per_page=args.per_page), indent=1))
    else:
        _print(report)
    return 0


def _run_wice(args: argparse.Namespace, config: Config) -> int:
    from side.evaluation.sources import WICE_DEV, evaluate_wice_cannot_check

    data_dir = Path(args.data_dir or config.data_dir)
    path = data_dir / WICE_DEV if args.wice == WICE_DEFAULT else args.wice
    report = evaluate_wice_cannot_check(path, args.limit)
    if args.json:
        print(json_text(report.to_dict(per_citation=args.per_page), indent=1))
    else:
        _print_cannot_check(report)
    return 0


def _print_cannot_check(report: CannotCheckReport) -> None:
    from rich.console import Console
    from rich.table import Table

    from side.evaluation.sources import WICE_LABELS

    share = report.cannot_check / report.citations if report.citations else 0.0
    table = Table(title=f"{report.citations} WiCE citations: {report.cannot_check} cannot check ({share:.1%}), "
                        f"{report.mean_ms:.1f} ms/citation")
    table.add_column("outcome")
    table.add_column("citations", justify="right")
    for label in WICE_LABELS:
        table.add_column(f"gold {label.replace('_', ' ')}", justify="right")
    table.add_column("why")
    table.add_column("e.g.")
    for name, counts in report.counts():
        examples = [o.id for o in report.outcomes if o.outcome == name][:2]
        table.add_row(name, str(counts["all"]), *(str(counts[label]) for label in WICE_LABELS),
                      report.reason(name), ", ".join(examples))
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)  # piped or logged: do not squeeze the table to 80 columns
    console.print(table)
    console.print("WiCE's annotators judged every claim against its page, so each cannot check here is a false "
                  "cannot check: a page Side would not read that people could.")


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _print(report: SourcesReport) -> None:
    from rich.console import Console
    from rich.table import Table

    from side.cli.terminal import plain

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
        console.print(plain(f"  wrong: {outcome.path}: labelled {outcome.label.value}, assessed "
                            f"{outcome.predicted.value} ({outcome.evidence})"), highlight=False)
