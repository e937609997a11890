"""How long a check takes when one of its sources is hostile, and what its citations get.

Each run is one check of four citations, as a worker runs it: the real verifier (CPU), the
worker's fetch (``fetch_source`` with retries of transient failures) and the Pipeline's source
loading. Three citations cite good pages on a local server; the fourth cites, in turn:

- ``none``: a fourth good page (the baseline);
- ``silent``: a server that accepts the connection and never answers;
- ``dribble``: a server that sends its status line and headers one byte every ``--drip`` s;
- ``slow-body``: a server that answers at once, then sends 30 KB 200 bytes every ``--drip`` s;
- ``pdf-bomb``: a 100 KB PDF whose page inflates to 100 MB;
- ``pdf-cpu``: a PDF of 50 pages each just under the content-stream parsing limit.

Printed per run: wall seconds for ``verify_claims`` and each citation's outcome. Timings are
printed, never asserted. To compare with an older checkout, put it first on ``PYTHONPATH``
(its ``side`` and ``workers``); the fetch budget is then whatever that checkout had (none).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/hostile_source.py [--quick] [--kinds silent dribble]

``--quick`` uses a 2 s fetch timeout and a 6 s check budget (defaults: the shipped FetchConfig).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from side.config import FetchConfig  # noqa: E402
from side.extract.wikitext import extract_claims  # noqa: E402
from side.pipeline import Pipeline, make_source_loader  # noqa: E402
from side.sources.fetch import fetch_source  # noqa: E402
from workers.jobs import retrying  # noqa: E402

from hostile import decompression_bomb, pdf, text_page  # noqa: E402
from httpserver import LocalServer, Response, SilentServer  # noqa: E402

__all__ = ["KINDS", "main"]

PAGES = {
    "harbour": ("Harbour report", "The harbour was rebuilt in 1902 after a storm destroyed the old pier."),
    "fleet": ("Fleet report", "The harbour shelters the town's fishing fleet and a lifeboat station."),
    "lighthouse": ("Lighthouse", "The lighthouse was built in 1850 by the harbour board."),
    "customs": ("Customs house", "The harbour master lives in the old customs house."),
}
KINDS = ["none", "silent", "dribble", "slow-body", "pdf-bomb", "pdf-cpu"]


def page(title: str, sentence: str) -> bytes:
    return (f"<html><head><title>{title}</title></head><body><article><h1>{title}</h1><p>{sentence}</p>"
            f"<p>The town council published this report for visitors and residents.</p></article></body></html>"
            ).encode()


def cpu_pdf() -> bytes:
    """50 pages of ~190,000 tokens each: no limit reached, about a second of parsing per page."""
    return pdf(*[text_page("Hello world") + b"\n" + b"BT /F1 12 Tf 72 720 Td (Hello world) Tj ET\n" * 19_000] * 50)


def hostile_url(kind: str, server: LocalServer, silent: SilentServer, drip: float) -> str:
    body = page(*PAGES["customs"])
    if kind == "none":
        return server.add("/customs", Response(body))
    if kind == "silent":
        return silent.url("/customs")
    if kind == "dribble":
        return server.add("/customs", Response(body, header_drip_s=drip))
    if kind == "slow-body":
        return server.add("/customs", Response(body * 100, chunk_size=200, chunk_delay_s=drip))
    if kind == "pdf-bomb":
        return server.add("/customs.pdf", Response(pdf(decompression_bomb()), content_type="application/pdf"))
    if kind == "pdf-cpu":
        return server.add("/customs.pdf", Response(cpu_pdf(), content_type="application/pdf"))
    raise ValueError(kind)


def article(urls: dict[str, str]) -> str:
    lines = [f"{sentence}<ref>[{urls[key]} {title}]</ref>" for key, (title, sentence) in PAGES.items()]
    return "'''Harbour''' is a small port.\n\n== History ==\n" + "\n".join(lines) + "\n"


def loader(config: FetchConfig, budget_s: float | None):
    """The worker's fetch and the Pipeline's loader; a check budget only where the code has one."""

    def fetch(url: str, deadline: float | None = None):
        return fetch_source(url, config) if deadline is None else fetch_source(url, config, deadline=deadline)

    try:
        from side.sources.batch import FetchBudget
    except ImportError:  # a checkout from before concurrent fetching
        return make_source_loader(None, retrying(fetch))
    budget = FetchBudget.from_config(config)
    if budget_s is not None:
        budget = FetchBudget(budget_s, budget.concurrency, budget.per_host)
    return make_source_loader(None, retrying(fetch), budget)


def run(kind: str, verifier, config: FetchConfig, budget_s: float | None, drip: float) -> None:
    with LocalServer() as server, SilentServer() as silent:
        urls = {key: server.add(f"/{key}", Response(page(*PAGES[key]))) for key in ("harbour", "fleet", "lighthouse")}
        urls["customs"] = hostile_url(kind, server, silent, drip)
        claims = extract_claims(article(urls), "Harbour")
        pipeline = Pipeline(verifier, None, loader(config, budget_s))
        started = time.perf_counter()
        try:
            results = pipeline.verify_claims(claims)
        except Exception as exc:  # an older checkout lets a parser error fail the whole check
            print(f"{kind:<10} {time.perf_counter() - started:7.1f} s  check FAILED: {type(exc).__name__}: "
                  f"{str(exc)[:100]}", flush=True)
            return
        took = time.perf_counter() - started
    outcomes = []
    for result in results:
        if result.verdict is not None:
            outcomes.append(f"{result.verdict.score:.2f}")
        else:
            outcomes.append(f"unavailable ({result.source_error[:70]})")
    print(f"{kind:<10} {took:7.1f} s  " + " | ".join(outcomes), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 s fetch timeout, 6 s check budget")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=KINDS)
    parser.add_argument("--timeout", type=float, help="fetch timeout_s (default: FetchConfig's)")
    parser.add_argument("--budget", type=float, help="check budget in s (default: FetchConfig's)")
    parser.add_argument("--drip", type=float, default=0.5, help="seconds between dribbled bytes / body chunks")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    from side.verify.verifier import Query, Verifier

    config = FetchConfig(allow_hosts=["127.0.0.1"])
    if args.timeout or args.quick:
        config.timeout_s = args.timeout or 2.0
    budget_s = args.budget or (6.0 if args.quick else None)
    verifier = Verifier.load(device="cpu")
    verifier.verify_many([(Query("Side checks citations."), ["Side checks citations."])])  # warm up
    print(f"fetch timeout {config.timeout_s:g} s, check budget {budget_s or 'default'}; "
          "per run: wall time of the check, then each citation's score or reason", flush=True)
    for kind in args.kinds:
        run(kind, verifier, config, budget_s, args.drip)


if __name__ == "__main__":
    main()
