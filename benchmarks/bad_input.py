"""What a check makes of bad input, and what it costs: level, reason, seconds and peak memory.

Each case is one citation whose URL serves a bad page (tests/hostile.py's :func:`bad_inputs`: an
empty page, a 10 MB page, one over the fetcher's size cap, binary junk as HTML, as text and as a
download, a page in Thai) from a local HTTP server. It goes the way every citation goes: the
Pipeline fetches it under the shipped FetchConfig limits (size cap, deadline), the assessment of
:mod:`side.sources.states` judges what was read, the archive is tried as the fallback (a local
stand-in for the Wayback Machine that holds no copy), and the real verifier (CPU) scores what
can be scored. The test of the same path (tests/test_source_states.py) asserts the levels and
reasons; this prints them with their cost:

- ``seconds``: wall time of ``Pipeline.verify_claims`` for the one citation (a run without
  tracing; the verifier is loaded and warmed up first);
- ``peak MiB``: the peak of Python allocations during a second, traced run (:mod:`tracemalloc`:
  Python objects and NumPy arrays, not the model's own tensors);
- ``RSS +MiB``: how much the process's resident-set high-water mark (``ru_maxrss``) grew during
  the untraced run (0 when the case needed no more than an earlier one had).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bad_input.py [--cases "Thai page" "empty page"] [--json]

Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import resource
import sys
import time
import tracemalloc
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from side.config import FetchConfig  # noqa: E402
from side.extract.wikitext import extract_claims  # noqa: E402
from side.pipeline import Pipeline, Result, make_source_loader  # noqa: E402
from side.sources.archive import ArchiveReader  # noqa: E402
from side.sources.fetch import fetch_source  # noqa: E402

from hostile import HARBOUR, BadInput, bad_inputs  # noqa: E402
from httpserver import LocalServer, Response  # noqa: E402
from wayback import LocalWayback  # noqa: E402

__all__ = ["Measured", "measure", "main"]

log = logging.getLogger("benchmarks.bad_input")


@dataclass(frozen=True)
class Measured:
    case: str
    bytes: int
    level: str
    source_status: str
    reason: str
    seconds: float
    peak_mib: float
    rss_growth_mib: float


def _max_rss_mib() -> float:
    """The process's resident-set high-water mark (Linux reports KiB, macOS bytes)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def _check(pipeline: Pipeline, url: str) -> Result:
    wikitext = f"'''Harbour''' is a port.\n\n== History ==\n{HARBOUR[0]}<ref>[{url} Harbour report]</ref>\n"
    results = pipeline.verify_claims(extract_claims(wikitext, "Harbour"))
    assert len(results) == 1, results
    return results[0]


def measure(case: BadInput, pipeline: Pipeline, server: LocalServer, n: int) -> Measured:
    """One citation of ``case``, checked twice: untraced (seconds, RSS growth, level and reason),
    then under :mod:`tracemalloc` (peak of Python allocations; tracing slows it down)."""
    url = server.add(f"/case{n}", Response(case.body, content_type=case.content_type))
    rss_before = _max_rss_mib()
    started = time.perf_counter()
    result = _check(pipeline, url)
    seconds = time.perf_counter() - started
    rss_growth = _max_rss_mib() - rss_before
    tracemalloc.start()
    try:
        _check(pipeline, url)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return Measured(case.name, len(case.body), result.level.value, str(result.source_status),
                    result.level_reason, seconds, peak / (1024 * 1024), rss_growth)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv: list[str] | None = None) -> int:
    names = [case.name for case in bad_inputs()]
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     epilog="Cases: " + ", ".join(names))
    parser.add_argument("--cases", nargs="+", choices=names, default=names, metavar="CASE",
                        help="cases to run, by name (default: all)")
    parser.add_argument("--no-archive", action="store_true", help="do not try an archived copy")
    parser.add_argument("--json", action="store_true", help="print one JSON object per case")
    parser.add_argument("--reason-chars", type=int, default=160, help="characters of each reason shown (table)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    logging.getLogger("trafilatura").setLevel(logging.CRITICAL)  # "Document is empty", on the empty page
    from side.verify.verifier import Query, Verifier

    verifier = Verifier.load(device="cpu")
    verifier.verify_many([(Query("Side checks citations."), ["Side checks citations."])])  # warm up
    cases = {case.name: case for case in bad_inputs()}
    measured: list[Measured] = []
    with LocalServer() as server:
        wayback = LocalWayback(server)  # holds no copy: the fallback is tried and says so
        config = FetchConfig(allow_hosts=["127.0.0.1"], wayback_api=wayback.api)

        def fetch(url: str, deadline: float | None = None):
            return fetch_source(url, config, deadline=deadline)

        archive = None if args.no_archive else ArchiveReader(config, fetch)
        pipeline = Pipeline(verifier, None, make_source_loader(None, fetch, archive=archive))
        if not args.json:
            print(f"CPU: {cpu_model()}; fetch limits: {config.max_bytes} bytes, {config.timeout_s:g} s; "
                  f"archive {'off' if archive is None else 'on (holds no copy)'}", flush=True)
        for n, name in enumerate(args.cases):
            row = measure(cases[name], pipeline, server, n)
            measured.append(row)
            if args.json:
                print(json.dumps(asdict(row), ensure_ascii=False), flush=True)
            else:
                reason = row.reason.replace(server.url(""), "")  # drop the local server's address
                print(f"{row.case:<24} {row.bytes:>10,} B  {row.level:<13} {row.seconds:6.2f} s  "
                      f"peak {row.peak_mib:7.1f} MiB  RSS +{row.rss_growth_mib:6.1f} MiB  "
                      f"{reason[: args.reason_chars] or '-'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
