"""``side eval framing``: wrapped claims ("it is false that X", "critics claim that X", an
instruction repeating X) scored supported, against the same claims stated plainly."""

from __future__ import annotations

import argparse
from pathlib import Path

from side.cli.checks import at_least
from side.cli.jsonout import json_text
from side.config import Config

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "framing", help="share of supported claims scored supported when a page denies, reports or instructs them",
        description="Each supported claim of WiCE claim dev (or --claims, any file in its schema) is put on a page "
        "of another claim's sentences: once stated plainly, and once per held-out wrapping (negation such as "
        "'it is completely false that ...', reported speech or a joke, and instruction paragraphs that repeat "
        "it). Prints the share scored supported for the plain and the wrapped pages. The wrappings differ from "
        "the ones the cues were chosen with on WiCE train (benchmarks/framing.py).",
    )
    p.add_argument("task", choices=("wice",), nargs="?", default="wice")
    p.add_argument("--claims", type=Path, help="claims file in the WiCE schema (default: the shared WiCE claim dev)")
    p.add_argument("--limit", type=int, help="only the first N supported claims")
    p.add_argument("--model", type=Path, help="verifier model directory (default: the shipped one)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, config: Config) -> int:
    from tqdm import tqdm

    from side.data import load_wice, require_file
    from side.evaluation.framing import HELD_OUT_WRAPS, dev_backed, evaluate_framing, wrapped_items
    from side.verify.verifier import Verifier

    at_least(1, limit=args.limit)
    claims = require_file(args.claims or Path(config.data_dir) / "wice" / "claim_dev.jsonl")
    items = wrapped_items(dev_backed(load_wice(claims))[: args.limit], HELD_OUT_WRAPS)
    verifier = Verifier.from_config(config, args.model)
    with tqdm(desc="wrapped pages", unit="page", total=len(items), leave=False) as bar:
        report = evaluate_framing(verifier, items, progress=bar.update)
    report["claims_file"] = str(claims)
    if args.json:
        print(json_text(report, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Scored supported: {report['claims']} supported claims of {claims.name}, plain and "
                        "wrapped (held-out wordings)")
    for col in ("page", "pages", "scored supported"):
        table.add_column(col, justify="left" if col == "page" else "right")
    table.add_row("claim stated plainly", str(report["claims"]), f"{report['plain_supported']:.3f}")
    for kind, row in report["by_kind"].items():
        table.add_row(f"wrapped: {kind}", str(row["items"]), f"{row['supported']:.3f}")
    table.add_row("wrapped: all", str(report["wrapped_items"]), f"{report['wrapped_supported']:.3f}")
    Console().print(table)
    return 0
