"""``side eval window``: gold evidence inside the LLM judge's evidence window, beside the page's head."""

from __future__ import annotations

import argparse
from pathlib import Path

from side.cli.checks import at_least
from side.cli.jsonout import json_text
from side.config import Config

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    from side.evaluation.window import DEFAULT_BUDGETS, HEAD_CHARS
    from side.verify.window import DEFAULT_CONTEXT_WEIGHT, DEFAULT_NEIGHBOUR_WEIGHT, DEFAULT_NEIGHBOURS

    p = sub.add_parser(
        "window", help="how often the judge's evidence window holds a complete gold evidence set",
        description="For each claim of WiCE claim dev (or --claims, any file in its schema) with gold evidence, "
        "build the evidence window the LLM judge reads at each budget and count the claims for which one "
        f"complete gold set lies inside it; beside it, in the same run, the page's first {HEAD_CHARS:,} "
        "characters (what LLM userscripts send). Tokens are characters / 4 for both.",
    )
    p.add_argument("task", choices=("wice",), nargs="?", default="wice")
    p.add_argument("--claims", type=Path, help="claims file in the WiCE schema (default: the shared WiCE claim dev)")
    p.add_argument("--budget", type=int, action="append", metavar="TOKENS",
                   help=f"window budget in tokens, repeatable (default: {', '.join(map(str, DEFAULT_BUDGETS))})")
    p.add_argument("--neighbours", type=int, default=DEFAULT_NEIGHBOURS,
                   help="sentences kept either side of each chosen sentence (default: %(default)s)")
    p.add_argument("--neighbour-weight", type=float, default=DEFAULT_NEIGHBOUR_WEIGHT,
                   help="share of the better neighbour's relevance added to a sentence's (default: %(default)s)")
    p.add_argument("--context-weight", type=float, default=DEFAULT_CONTEXT_WEIGHT,
                   help="weight of the claim's title, section and context in the relevance (default: %(default)s)")
    p.add_argument("--dense", action="store_true",
                   help="add the bi-encoder's cosine (encoder.model) to the relevance, as the verifier ranks evidence")
    p.add_argument("--limit", type=int, help="only the first N claims with gold evidence")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, config: Config) -> int:
    from side.data import require_file
    from side.evaluation.window import DEFAULT_BUDGETS, evaluate_windows, window_items

    budgets = tuple(args.budget or DEFAULT_BUDGETS)
    for budget in budgets:
        at_least(1, budget=budget)
    at_least(1, limit=args.limit)
    at_least(0, neighbours=args.neighbours, neighbour_weight=args.neighbour_weight,
             context_weight=args.context_weight)
    claims = require_file(args.claims or Path(config.data_dir) / "wice" / "claim_dev.jsonl")
    items = window_items(claims, args.limit)
    encoder = None
    if args.dense:
        from side.retrieval.encoder import EmbeddingCache, shared_encoder

        encoder = EmbeddingCache(shared_encoder(config.verifier.device, config.verifier.precision,
                                                config.encoder.model))
    report = evaluate_windows(items, budgets, args.neighbours, args.context_weight, encoder,
                              neighbour_weight=args.neighbour_weight)
    report["claims_file"] = str(claims)
    if args.json:
        print(json_text(report, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Complete gold evidence set in what the judge reads ({report['claims']} claims with gold "
                        f"evidence, {claims.name}; tokens = characters / 4)")
    for col in ("method", "budget (tokens)", "claims covered", "tokens per claim"):
        table.add_column(col, justify="right" if col != "method" else "left")
    names = {"window": "evidence window", "plain_bm25_neighbours": "plain BM25 + 1 neighbour"}
    for key, name in names.items():
        for row in report[key]:
            table.add_row(name, str(row["budget"]), f"{row['coverage']:.3f}", f"{row['tokens_per_claim']:.0f}")
    head = report["head_cut"]
    table.add_row(f"page head (first {head['chars']:,} characters)", "-", f"{head['coverage']:.3f}",
                  f"{head['tokens_per_claim']:.0f}")
    console = Console()
    console.print(table)
    console.print(f"evidence window: relevance {report['scores']} of the claim, context weight "
                  f"{report['context_weight']}, neighbour weight {report['neighbour_weight']}, neighbours "
                  f"{report['neighbours']}; plain: the claim's BM25 alone, one neighbour either side")
    return 0
