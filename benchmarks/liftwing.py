"""Lift Wing model server latency per citation (a script, not a test): p50 and p95 of ``:predict``.

The real KServe server (``python -m deploy.liftwing.side_verifier.model``, the shipped verifier,
no evidence index) runs on 127.0.0.1 as tests/test_liftwing.py starts it, and is asked for one
citation per request (what the gadget asks when an editor checks a ref), on real WiCE dev claims
and the sentences of the pages they cite (``SIDE_DATA_DIR``/wice/claim_dev.jsonl):

- **source text in the request**: the claim sent with its source's text (never fetched);
- **source text, sent again**: the same requests again (a caller checking refs that cite one source);
- **URL, fetched (fresh cache)**: the claim with a URL a local web server answers with the
  source's sentences as an HTML page, asked for the first time (the server's fetch cache is empty);
- **URL, cached**: the same requests again: the page is read from the fetch cache.

A source's sentences are embedded the first time the server sees them (the evidence shortlist,
side/verify) and kept in memory, so the first row (every source new) is the cold cost of a
source and the last the warm one; both runners see the settings in the same order.

Targets (the issue "Reach editors on Wikipedia itself"): p95 <= 300 ms per citation with the
source cached or sent, <= 1.5 s with the source fetched from a local server.

``--today`` also serves the same requests from a second server with today's settings before the
BM25 shortlist (``SIDE_VERIFIER_SHORTLIST=0``: every sentence of a new source embedded), run
after the first, and prints the ratio now / today per setting (``benchmarks/citation_latency.py``
compares the two interleaved, without KServe).

Peer, measured in the same run on the same inputs: the in-process :meth:`Pipeline.verify_claims`
(``Pipeline.from_config`` with its own fresh fetch cache, the claims built from the same request
bodies by the server's own ``parse_request``/``claims_of_request``), one citation at a time, on a
worker thread as the server runs it (``asyncio.to_thread``). An earlier run here found the model
several times slower on the main thread; measured interleaved (the same calls alternating
between the main thread and a worker, kserve imported or not, ``benchmarks/citation_latency.py
--on both``) the two are within a few percent: the gap was load from other work on the shared
machine between separately timed runs, not the thread. The ratio served / in-process is what
KServe, HTTP and JSON add. The client, the server and the local web server share the machine's
cores; the peer runs while the server is idle.

    .venv/bin/python benchmarks/liftwing.py [--claims 40] [--threads 0] [--today]
"""

from __future__ import annotations

import argparse
import html
import logging
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import requests  # noqa: E402
from stats import cpu_model, percentile  # noqa: E402  (benchmarks/stats.py, beside this script)

from harness.liftwing import MODEL, start_model_server  # noqa: E402  (tests/harness: the tests start it so too)
from httpserver import LocalServer, Response  # noqa: E402

log = logging.getLogger("benchmarks.liftwing")

STARTUP_S = 300
#: p95 targets per citation, in seconds, by setting.
TARGETS = {"text": 0.300, "again": 0.300, "fetched": 1.5, "cached": 0.300}
SERVED = "served (KServe)"
TODAY = "served, today's settings"
NAMES = {"text": "source text in the request", "again": "source text, sent again",
         "fetched": "URL, fetched (fresh cache)", "cached": "URL, cached"}


@dataclass
class Timing:
    """Latencies of one setting, one citation per call, and the source each answer names."""

    setting: str
    runner: str
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    sources: Counter[str] = field(default_factory=Counter)

    def percentile(self, q: float) -> float:
        return percentile(self.latencies, q) * 1000


@dataclass(frozen=True)
class Case:
    """One WiCE claim as a request item, and its source's sentences (served as a page)."""

    item: dict[str, Any]
    sentences: tuple[str, ...]


def load_cases(n: int) -> list[Case]:
    """The first ``n`` WiCE dev claims whose cited page has sentences, as the gadget sends claims (one
    sentence a line; the control characters some WiCE pages hold, which the service refuses, as spaces)."""
    from deploy.liftwing.side_verifier.request import MAX_CONTEXT, MAX_SECTION, MAX_SOURCE_TEXT, MAX_TEXT
    from side.config import load_config
    from side.data import load_wice
    from side.evaluation.verify import wice_sentences
    from side.fields import CONTROL as _CONTROL

    path = load_config().data_dir / "wice" / "claim_dev.jsonl"
    if not path.is_file():
        raise SystemExit(f"no WiCE dev claims at {path} (set SIDE_DATA_DIR)")
    cases = []
    for n_claim, claim in enumerate(load_wice(path)):
        sentences = tuple(clean for s in wice_sentences(claim) if (clean := _CONTROL.sub(" ", s).strip()))
        if not sentences or len(claim.claim) > MAX_TEXT:
            continue
        context = _CONTROL.sub(" ", claim.context[-MAX_CONTEXT:])
        item = {"key": f"wice{n_claim}", "text": claim.claim, "left_context": context,
                "section": [claim.section[:MAX_SECTION]] if claim.section else [],
                "source_text": "\n".join(sentences)[:MAX_SOURCE_TEXT]}
        cases.append(Case(item, sentences))
        if len(cases) == n:
            break
    return cases


def page(case: Case) -> bytes:
    """The source's sentences as the cited web page."""
    paragraphs = "".join(f"<p>{html.escape(s)}</p>" for s in case.sentences)
    return (f"<html><head><title>Source</title></head><body><article>{paragraphs}</article></body></html>"
            ).encode()


def body(case: Case, url: str | None) -> dict[str, Any]:
    """A one-citation claims request: the source's text, or its URL."""
    item = dict(case.item)
    if url is not None:
        item.pop("source_text")
        item["url"] = url
    return {"lang": "en", "title": "WiCE", "claims": [item]}


def server_env(folder: Path, threads: int) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MODEL_NAME": MODEL, "SIDE_FETCH_ALLOW_HOSTS": "127.0.0.1",
           "SIDE_FETCH_WAYBACK_API": "", "SIDE_VAR_DIR": str(folder / "var"), "HF_HUB_OFFLINE": "1",
           "WIKI_API_URL": "http://127.0.0.1:9/api.php", "TOKENIZERS_PARALLELISM": "false"}
    if threads:
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    for name in ("MODEL_PATH", "INDEX_PATH"):
        env.pop(name, None)
    return env


def measure(setting: str, runner: str, calls: list[Callable[[], str | None]]) -> Timing:
    """Each call once, in order; a call returns the answer's source, or None for an error."""
    timing = Timing(setting, runner)
    for call in calls:
        started = time.perf_counter()
        source = call()
        elapsed = time.perf_counter() - started
        if source is None:
            timing.errors += 1
        else:
            timing.latencies.append(elapsed)
            timing.sources[source] += 1
    return timing


def served(session: requests.Session, base: str, request: dict[str, Any]) -> Callable[[], str | None]:
    def call() -> str | None:
        response = session.post(f"{base}/v1/models/{MODEL}:predict", json=request, timeout=120)
        if response.status_code != 200:
            log.warning("HTTP %s: %s", response.status_code, response.text[:300])
            return None
        return response.json()["citations"][0]["source"]
    return call


def in_process(pipeline, request: dict[str, Any]) -> Callable[[], str | None]:
    """The same request through the server's parsing and the pipeline, without KServe or HTTP."""
    from kserve.errors import InvalidInput

    from deploy.liftwing.side_verifier.model import GIVEN_TEXT, GivenSources, claims_of_request
    from deploy.liftwing.side_verifier.request import parse_request

    def call() -> str | None:
        try:
            prepared = claims_of_request(parse_request(request))
        except InvalidInput as exc:
            log.warning("refused: %s", exc)
            return None
        loader = GivenSources(prepared.given, pipeline.load_source) if prepared.given else pipeline.load_source
        saved, pipeline.load_source = pipeline.load_source, loader
        try:
            result = pipeline.verify_claims(prepared.claims)[0]
        finally:
            pipeline.load_source = saved
        return GIVEN_TEXT if prepared.given else str(result.source_status)
    return call


def settings(cases: list[Case], urls: list[str], make: Callable[[dict[str, Any]], Callable[[], str | None]],
             runner: str) -> list[Timing]:
    """The settings in order: source text, the same again, URL first read (fetched), URL again (cached)."""
    return [measure("text", runner, [make(body(c, None)) for c in cases]),
            measure("again", runner, [make(body(c, None)) for c in cases]),
            measure("fetched", runner, [make(body(c, u)) for c, u in zip(cases, urls, strict=True)]),
            measure("cached", runner, [make(body(c, u)) for c, u in zip(cases, urls, strict=True)])]


def report(timings: list[Timing], peers: list[Timing], cpu: str, startup_s: float, n: int,
           load: tuple[float, float], today: list[Timing] | None = None) -> None:
    print()
    print(f"Lift Wing side-verifier, one citation per :predict, {n} WiCE dev claims; {cpu}, "
          f"{os.cpu_count()} cores (client, server and page server share them); server ready in {startup_s:.1f} s; "
          f"load average {load[0]:.1f} before, {load[1]:.1f} after (other work on the machine slows every row)")
    print(f"{'setting':<28} {'runner':<22} {'n':>4} {'err':>4} {'p50 ms':>8} {'p95 ms':>8} {'target':>8} "
          f"{'met':>4}  sources")
    for timing in timings + (today or []) + peers:
        target = TARGETS[timing.setting] * 1000
        met = "yes" if timing.percentile(0.95) <= target else "NO"
        sources = ", ".join(f"{k} {v}" for k, v in sorted(timing.sources.items()))
        print(f"{NAMES[timing.setting]:<28} {timing.runner:<22} {len(timing.latencies):4d} {timing.errors:4d} "
              f"{timing.percentile(0.5):8.1f} {timing.percentile(0.95):8.1f} {target:8.0f} "
              f"{met if timing.runner == SERVED else '':>4}  {sources}")
    print()
    for timing, peer in zip(timings, peers, strict=True):
        p50, p95 = (timing.percentile(q) / peer.percentile(q) for q in (0.5, 0.95))
        print(f"{NAMES[timing.setting]:<28} served / in-process: p50 {p50:.2f}x, p95 {p95:.2f}x")
    for timing, before in zip(timings, today or [], strict=False):
        p50, p95 = (timing.percentile(q) / before.percentile(q) for q in (0.5, 0.95))
        print(f"{NAMES[timing.setting]:<28} served now / today's settings: p50 {p50:.2f}x, p95 {p95:.2f}x")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=40, help="WiCE dev claims, one request each per setting")
    parser.add_argument("--threads", type=int, default=0,
                        help="torch threads of the server and the peer (0: Side's automatic count, verifier.threads)")
    parser.add_argument("--warmup", type=int, default=3, help="requests (source text) before measuring")
    parser.add_argument("--today", action="store_true",
                        help="also serve with today's settings before the shortlist (SIDE_VERIFIER_SHORTLIST=0)")
    args = parser.parse_args(argv)
    if args.claims < 1 or args.threads < 0 or args.warmup < 0:
        parser.error("--claims must be at least 1, --threads and --warmup at least 0")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    cases = load_cases(args.claims)
    load_before = os.getloadavg()[0]

    with tempfile.TemporaryDirectory(prefix="side-bench-liftwing-") as tmp, LocalServer() as pages:
        folder = Path(tmp)
        urls = [pages.add(f"/served/{n}", Response(body=page(c))) for n, c in enumerate(cases)]
        today_urls = [pages.add(f"/today/{n}", Response(body=page(c))) for n, c in enumerate(cases)]
        peer_urls = [pages.add(f"/peer/{n}", Response(body=page(c))) for n, c in enumerate(cases)]
        env = server_env(folder, args.threads)
        timings, startup_s = served_timings(folder / "now", env, cases, urls, args.warmup, SERVED)
        today = None
        if args.today:
            today, _ = served_timings(folder / "today", {**env, "SIDE_VERIFIER_SHORTLIST": "0"}, cases, today_urls,
                                      args.warmup, TODAY)
        peers = peer_timings(folder, env, cases, peer_urls, args)
        hits = {runner: sum(pages.hits[f"/{runner}/{n}"] for n in range(len(cases))) for runner in ("served", "peer")}
    report(timings, peers, cpu_model(), startup_s, len(cases), (load_before, os.getloadavg()[0]), today)
    print(f"page server: {hits['served']} requests from the server, {hits['peer']} from the peer, for {len(cases)} "
          "pages each (one each: the cached rows read the fetch cache; answers name a cached page 'fetched')")


def served_timings(folder: Path, env: dict[str, str], cases: list[Case], urls: list[str], warmup: int,
                   runner: str) -> tuple[list[Timing], float]:
    """The settings through a model server of its own (own var dir: a fresh fetch cache)."""
    folder.mkdir()
    started = time.perf_counter()
    with start_model_server(folder, {**env, "SIDE_VAR_DIR": str(folder / "var")}, STARTUP_S) as port:
        startup_s = time.perf_counter() - started
        base = f"http://127.0.0.1:{port}"
        session = requests.Session()
        for case in cases[:warmup]:
            served(session, base, body(case, None))()
        return settings(cases, urls, lambda r: served(session, base, r), runner), startup_s


def peer_timings(folder: Path, env: dict[str, str], cases: list[Case], urls: list[str], args) -> list[Timing]:
    """The in-process peer, with the server's settings and its own fresh fetch cache."""
    from side.config import load_config
    from side.pipeline import Pipeline

    if args.threads:  # as the server's OMP_NUM_THREADS, which this process's environment lacks
        from side.threads import set_threads

        set_threads(args.threads, "--threads")
    config = load_config(environ={**env, "SIDE_VAR_DIR": str(folder / "peer-var")})
    pipeline = Pipeline.from_config(config, use_index=False)
    with ThreadPoolExecutor(max_workers=1) as worker:
        def make(request: dict[str, Any]) -> Callable[[], str | None]:
            call = in_process(pipeline, request)
            return lambda: worker.submit(call).result()

        for case in cases[: args.warmup]:
            make(body(case, None))()
        return settings(cases, urls, make, "in-process Pipeline")


if __name__ == "__main__":
    main()
