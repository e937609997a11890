"""``side eval lead``: lead claims of real articles, and the share their own body does not back."""

from __future__ import annotations

import argparse
from pathlib import Path

from side.cli.jsonout import json_text
from side.config import Config
from side.verify.levels import VerdictLevel

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "lead",
        help="count lead claims of real articles and the share the article's body does not support",
        description="Reads the uncited lead sentences of each real article in the shared data (the wikitext "
                    "fixtures and the MediaWiki XML exports), checks each against its article's body and "
                    "prints how many there are and what share ends not supported (PeopleProfiles reports "
                    "20-22%). No gold labels: these are Side's verdicts, counted.",
    )
    parser.add_argument("files", type=Path, nargs="*", help="wikitext files instead of the shared data's articles")
    parser.add_argument("--data-dir", type=Path, help="shared data directory (default: config data_dir)")
    parser.add_argument("--model", type=Path, help="verifier model directory (default: the shipped one)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--per-article", action="store_true", help="with --json: each article's counts")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, config: Config) -> int:
    from tqdm import tqdm

    from side.evaluation.lead import articles, evaluate_lead
    from side.verify.lead import check_lead
    from side.verify.verifier import Verifier

    pages = list(articles(Path(args.data_dir or config.data_dir), args.files))
    verifier = Verifier.from_config(config, args.model)
    with tqdm(total=len(pages), desc="checking leads", unit="article") as bar:  # on stderr, beside --json
        report = evaluate_lead(lambda lead: check_lead(verifier, lead), pages, bar.update)
    if args.json:
        print(json_text(report.to_dict(per_article=args.per_article), indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    data = report.to_dict()
    table = Table(title=f"Lead claims against the article's body ({data['articles']} articles, "
                        f"{data['seconds']:.0f} s)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    rows = [("articles with uncited lead claims", data["articles_with_lead_claims"]),
            ("lead sentences", data["lead_sentences"]), ("  cited (not checked)", data["cited_lead_sentences"]),
            ("uncited lead claims", data["lead_claims"]), ("  checked against a body", data["checked"])]
    rows += [(f"  {level.text}", data["levels"][str(level)]) for level in VerdictLevel]
    rows += [("share not supported", f"{data['share_not_supported']:.1%}"),
             ("share not fully supported (partially + not)", f"{data['share_not_fully_supported']:.1%}")]
    rows += [(f"pages skipped: {reason}", n) for reason, n in data["skipped"].items()]
    for name, value in rows:
        table.add_row(name, str(value))
    Console().print(table)
    return 0
