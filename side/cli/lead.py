"""``side lead``: which uncited sentences of an article's lead its own body does not back."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from side.cli.jsonout import json_text
from side.cli.verify import LEVEL_STYLE, add_article_arguments, load_article
from side.config import Config
from side.errors import InputError

__all__ = ["register", "run_lead", "print_lead"]

if TYPE_CHECKING:
    from rich.console import Console

    from side.extract.lead import ArticleLead
    from side.verify.lead import LeadVerdict


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "lead",
        help="check the lead's uncited sentences against the article's own body",
        description="The lead summarises the article and often cites nothing: each of its uncited "
        "sentences should be backed by the body. Side scores every uncited lead sentence against the "
        "body's sentences with its verifier and prints its level (supported, partially or not supported) "
        "with the nearest body sentence and its section. Cited lead sentences, infobox values, notes and "
        "captions are not checked.",
    )
    add_article_arguments(p)
    p.add_argument("--model", type=Path, help="verifier model directory (default: verifier.model_dir, else the "
                   "shipped one)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run_lead)


def run_lead(args: argparse.Namespace, config: Config) -> int:
    from side.extract.lead import read_lead
    from side.verify.lead import check_lead
    from side.verify.verifier import Verifier

    if args.model is not None and not args.model.is_dir():  # said now, even if no lead claim needs the model
        raise InputError(f"--model {args.model}: no such model folder")
    wikitext, title = load_article(args, config)
    lead = read_lead(wikitext, title)
    verdicts: list[LeadVerdict] = []
    if lead.claims:
        verifier = Verifier.from_config(config, args.model)
        verdicts = check_lead(verifier, lead)
    if args.json:
        print(json_text({"title": title, "lead_sentences": lead.sentences, "cited": lead.cited,
                          "body_sentences": len(lead.body), "claims": [v.to_dict() for v in verdicts]},
                         indent=2, ensure_ascii=False))
    else:
        print_lead(lead, verdicts)
    return 0


def print_lead(lead: ArticleLead, verdicts: list[LeadVerdict], console: Console | None = None) -> None:
    """The table ``side lead`` prints; the article's sentences and headings are printed as text
    (:mod:`side.cli.terminal`), never as console markup or control characters."""
    from rich.table import Table
    from rich.text import Text

    from side.cli.terminal import plain, report_console

    console = console or report_console()
    unsupported = sum(v.level.needs_review for v in verdicts)
    title = plain(f"{lead.title}: {lead.sentences} lead sentences, {lead.cited} cited, {len(verdicts)} uncited "
                  f"checked against {len(lead.body)} body sentences; {unsupported} not fully supported")
    if not verdicts:
        console.print(title)
        return
    table = Table(title=title, show_lines=True, expand=True)
    for col, kw in (("#", {"justify": "right"}), ("verdict", {}), ("lead claim", {"ratio": 3}),
                    ("nearest body sentence", {"ratio": 3})):
        table.add_column(col, **kw)
    for verdict in verdicts:
        label = Text(verdict.level.text, LEVEL_STYLE[verdict.level])
        if verdict.score is not None:
            label.append(f" ({verdict.score:.2f})")
        nearest = plain(verdict.nearest or verdict.reason)
        if verdict.nearest_section:
            nearest.append("\n").append_text(plain(verdict.nearest_section_path, "dim"))
        table.add_row(str(verdict.position + 1), label, plain(verdict.claim), nearest)
    console.print(table)
