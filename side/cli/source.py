"""``side source URL``: fetch a cited source and show the text Side would verify against."""

from __future__ import annotations

import argparse

from side.cli.jsonout import json_text
from side.cli.terminal import printable
from side.config import Config

__all__ = ["register", "run_source"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "source", help="fetch a cited URL and print its main text and sentences",
        description="Fetch a URL the way `side verify` does (SSRF guard, size and time limits, "
        "disk cache), extract its main text (HTML with trafilatura, PDF with pypdf) and print it, "
        "with whether Side can check claims against it (a paywall, a login or cookie wall, a soft "
        "404, a parked domain or a page in another language cannot be checked).",
    )
    p.add_argument("url", help="http(s) URL of the cited source")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the source cache")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run_source)


def run_source(args: argparse.Namespace, config: Config) -> int:
    from side.sources.fetch import fetch_source
    from side.sources.states import assess_source

    source = fetch_source(args.url, config.fetch, None if args.no_cache else config.cache_dir)
    assessment = assess_source(source)
    if args.json:
        judged = {"state": assessment.state, "reason": assessment.describe() if not assessment.readable else ""}
        print(json_text({**source.to_dict(), "assessment": judged}, indent=2, ensure_ascii=False))
        return 0
    state = "readable" if assessment.readable else f"cannot check: {assessment.describe()}"
    # The page wrote its title, text and type (and the server the URL it redirected to): printed
    # with their control characters made visible, so no escape sequence reaches the terminal.
    print(printable(f"title: {source.title}\ndate: {source.date}\nurl: {source.final_url}\n"
                    f"type: {source.content_type}\nsentences: {len(source.sentences)}\nstate: {state}\n"))
    print(printable(source.text))
    return 0
