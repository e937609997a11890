"""``side verify``: which citations of an article probably fail verification, and better sources."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from side.cli.checks import at_least
from side.cli.jsonout import json_text
from side.config import Config
from side.data import read_text_file
from side.errors import InputError
from side.verify.levels import VerdictLevel

__all__ = ["register", "add_article_arguments", "load_article", "run_verify", "print_report"]

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from side.pipeline import ArticleResults, Result


def add_article_arguments(p: argparse.ArgumentParser) -> None:
    """Where the article comes from: a wikitext file, or a page (and revision) of a wiki."""
    p.add_argument("article", type=Path, nargs="?", help="wikitext file of the article (or use --title with --wiki)")
    p.add_argument("--title", help="article title (default: the file name); with --wiki, the page to read")
    p.add_argument("--wiki", help="read the article from a wiki instead of a file: enwiki, testwiki, or local "
                   "(the API URL from --api or $SIDE_WIKI_LOCAL_API)")
    p.add_argument("--api", metavar="URL", help="Action API URL of --wiki local, e.g. http://127.0.0.1:8080/api.php")
    p.add_argument("--revision", type=int, help="with --wiki: check this revision instead of the current one")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify", aliases=["check"],
        help="verify every citation of an article (wikitext file); 'check' is its old name",
        description="Score each citation of an article against its source, retrieve better "
        "candidates from the evidence index and print a table ordered by likelihood of failed "
        "verification, with ready-to-paste {{cite web}} suggestions.",
    )
    add_article_arguments(p)
    p.add_argument("--index", type=Path, help="evidence index directory (default: var/index)")
    p.add_argument("--no-index", action="store_true", help="do not suggest sources from an index")
    p.add_argument("--offline", action="store_true", help="never fetch cited URLs (cache and index only)")
    p.add_argument("--candidates", type=int, default=3, help="corpus candidates scored per claim (default 3)")
    p.add_argument("--limit", type=int, help="only the first N citations")
    p.add_argument("--model", type=Path, help="verifier model directory: Side's own or a Hugging Face "
                   "sequence-classification checkpoint (default: verifier.model_dir, else the shipped one)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run_verify)


def _title(path: Path) -> str:
    return path.stem.replace("_", " ").replace("-", " ")


def load_article(args: argparse.Namespace, config: Config) -> tuple[str, str]:
    """(wikitext, title) from the file argument, or from ``--wiki`` and ``--title``."""
    if args.wiki is None:
        if args.article is None:
            raise InputError("give a wikitext file, or --title T with --wiki enwiki|local")
        if args.api or args.revision is not None:
            raise InputError("--api and --revision only apply with --wiki")
        return read_text_file(args.article), args.title or _title(args.article)
    if args.article is not None:
        raise InputError("give either a wikitext file or --wiki, not both")
    if not args.title:
        raise InputError("--wiki needs --title (the page to check)")
    at_least(1, revision=args.revision)
    import os

    from side.extract.wikiapi import LOCAL_API_ENV, api_url_for, fetch_page

    api = api_url_for(args.wiki, args.api or os.environ.get(LOCAL_API_ENV))
    page = fetch_page(api, args.title, wiki=args.wiki, revision=args.revision,
                      user_agent=config.fetch.user_agent, timeout_s=config.fetch.timeout_s)
    return page.text, page.title


def run_verify(args: argparse.Namespace, config: Config) -> int:
    from tqdm import tqdm

    from side.extract.wikitext import extract_claims
    from side.pipeline import ArticleResults, Pipeline

    at_least(1, limit=args.limit)
    at_least(0, candidates=args.candidates)
    wikitext, title = load_article(args, config)
    claims = extract_claims(wikitext, title, config.context_words)[: args.limit]
    # An index given or configured must exist (unlike a worker's, which may run without one).
    pipeline = Pipeline.from_config(config, offline=args.offline, index_dir=args.index or config.index_dir,
                                    use_index=not args.no_index, model_dir=args.model, candidates=args.candidates)
    with tqdm(total=len(claims), desc="verifying citations", unit="claim", disable=args.json) as bar:
        results = pipeline.verify_claims(claims, bar.update)
    report = ArticleResults(title, results, bar.format_dict["elapsed"])
    if args.json:
        print(json_text(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        print_report(report)
    return 0


def print_report(report: ArticleResults, console: Console | None = None) -> None:
    """The table ``side verify`` prints. Every text in it that an editor or a web page wrote (title,
    claim, URL, reasons, evidence, suggestions) is printed as text (:mod:`side.cli.terminal`):
    never read as console markup, never a terminal hyperlink, no control character let through."""
    from rich.table import Table

    from side.cli.terminal import plain, report_console

    console = console or report_console()
    flagged = sum(c.flagged for c in report.results)
    unsure = sum(c.unsure for c in report.results)
    table = Table(title=plain(f"{report.title}: {len(report.results)} citations: {report.levels_text()}; "
                              f"{flagged} flagged, {unsure} unsure"), show_lines=True, expand=True)
    for col, kw in (("#", {"justify": "right"}), ("fail?", {}), ("verdict", {}), ("claim", {"ratio": 3}),
                    ("source", {"ratio": 2}), ("why / suggestion", {"ratio": 3})):
        table.add_column(col, **kw)
    for n, result in enumerate(report.ordered(), 1):
        failure = result.failure_score  # the level's band first, then Side's score (side.ranking)
        table.add_row(str(n), "-" if failure is None else f"{failure:.2f}", _label(result),
                      plain(result.claim.text[:300]), _source(result),
                      _why(result))
    console.print(table)


#: The style of each level's name in the table.
LEVEL_STYLE = {
    VerdictLevel.SUPPORTED: "green", VerdictLevel.PARTIALLY_SUPPORTED: "yellow",
    VerdictLevel.NOT_SUPPORTED: "red", VerdictLevel.CANNOT_CHECK: "dim",
}


def _label(result: Result) -> Text:
    from rich.text import Text

    label = Text()
    if result.flagged:
        label.append("FLAG", "red").append(" ")
    # an unsure level is worded as Side's guess ("probably partially supported; Side is unsure")
    label.append(result.level_text, "dim " + LEVEL_STYLE[result.level] if result.unsure else LEVEL_STYLE[result.level])
    if result.failure_likelihood is not None and result.verdict is not None:
        label.append(f" ({result.verdict.score:.2f})")
    return label


def _source(result: Result) -> Text:
    from side.cli.terminal import plain

    cite = result.claim.citation
    source = plain(cite.url or cite.title or cite.raw[:80])
    if result.url_depth is not None:
        source.append(f"  (depth {result.url_depth})", "dim")
    return source.append_text(_copy_note(result))


def _why(result: Result) -> Text:
    from rich.text import Text

    from side.cli.terminal import plain

    verdict = result.verdict
    lines = [plain("; ".join(result.reasons))] if result.reasons else []
    if verdict and verdict.unsupported:
        lines.append(Text("not backed by the source: ", "dim").append_text(
            plain(", ".join(f"“{w}”" for w in verdict.unsupported))))
    if verdict and verdict.evidence:
        lines.append(Text("best evidence: ", "dim").append_text(plain(verdict.evidence[0].text[:200])))
    for s in result.suggestions[:2]:
        ev = f" — “{s.evidence.text[:160]}”" if s.evidence else ""
        lines.append(Text("suggest", "green").append_text(plain(f" {s.title or s.url} ({s.score:.2f}){ev}\n{s.cite}")))
    return Text("\n").join(lines)


def _copy_note(result: Result) -> Text:
    """Which copy of the source was read, when it was not simply the live page."""
    from rich.text import Text

    from side.cli.terminal import plain
    from side.pipeline import SourceCopy

    note = Text()
    if result.source_copy == SourceCopy.ARCHIVE:
        note.append("\n").append("read from archived copy", "yellow").append(" ").append_text(plain(result.source_url))
        if result.source_fallback:
            note.append_text(plain(f" ({result.source_fallback})", "dim"))
    elif result.source_copy == SourceCopy.LIVE and result.source_fallback:
        note.append("\n").append_text(plain(f"live page read ({result.source_fallback})", "dim"))
    return note
