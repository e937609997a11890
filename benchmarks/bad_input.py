"""What a check makes of bad input, and what it costs: level, reason, seconds and peak memory.

First the bot's worst revisions (tests/hostile.py's :func:`huge_revisions`, 2 MiB of wikitext,
MediaWiki's page limit): 2 MiB of ``a<ref name=n/>`` (149,796 citation uses) and 2 MiB of prose
cited with ``{{cite web}}``, each read as the bot reads a page creation
(:func:`bot.limits.revision_claims` under the shipped ``[bot]`` caps), each in a fresh
subprocess so its peak RSS (``VmHWM``, the interpreter and imports included) is its own:

- ``seconds``: from the wikitext in hand to the first skip or verdict on the revision (the
  skip and its reason, or the list of added citations);
- ``peak RSS``: the subprocess's resident-set high-water mark, ``VmHWM`` of
  ``/proc/self/status`` (not ``ru_maxrss``: Linux copies a parent's into its child at fork, and
  exec keeps it, so a child of a large process would report the parent's peak).

``--uncapped`` measures the same revisions with both caps lifted (0), the bot before it had caps.

Then the cited pages.
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
- ``RSS +MiB``: how much the process's resident-set high-water mark (``VmHWM``) grew during
  the untraced run (0 when the case needed no more than an earlier one had).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bad_input.py [--cases "Thai page" "empty page"] [--json]
        [--uncapped]

Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import resource
import subprocess
import sys
import time
import tracemalloc
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # the bot package before benchmarks/bot.py
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from hostile import HARBOUR, BadInput, bad_inputs, huge_revisions  # noqa: E402

if TYPE_CHECKING:
    from side.pipeline import Pipeline, Result

    from httpserver import LocalServer

__all__ = ["Measured", "RevisionMeasured", "measure", "measure_revision", "main"]

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


@dataclass(frozen=True)
class RevisionMeasured:
    case: str
    bytes: int
    caps: str
    outcome: str
    seconds: float
    peak_rss_mib: float


def _read_revision(name: str, uncapped: bool) -> RevisionMeasured:
    """In this process: one huge revision read as the bot reads it; the time to its outcome."""
    from bot.limits import RevisionLimits, RevisionSkipped, revision_claims
    from side.config import BotConfig

    text = huge_revisions()[name]
    limits = RevisionLimits() if uncapped else RevisionLimits.from_config(BotConfig())
    caps = "none" if uncapped else f"{limits.max_bytes:,} B, {limits.max_claims:,} citations"
    started = time.perf_counter()
    try:
        outcome = f"{len(revision_claims('', text, 'Harbour', limits)):,} citations added"
    except RevisionSkipped as skipped:
        outcome = f"skipped: {skipped}"
    seconds = time.perf_counter() - started
    return RevisionMeasured(name, len(text.encode("utf-8")), caps, outcome, seconds, _max_rss_mib())


def measure_revision(name: str, uncapped: bool = False) -> RevisionMeasured:
    """:func:`_read_revision` in a fresh interpreter, so that its peak RSS is its own."""
    command = [sys.executable, __file__, "--read-revision", name, *(["--uncapped"] if uncapped else [])]
    out = subprocess.run(command, capture_output=True, text=True, check=True)
    return RevisionMeasured(**json.loads(out.stdout.strip().splitlines()[-1]))


def _max_rss_mib() -> float:
    """This process's own resident-set high-water mark: ``VmHWM`` (KiB) where ``/proc`` has it,
    else ``ru_maxrss`` (macOS: bytes, and not inherited from the parent there)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def _check(pipeline: Pipeline, url: str) -> Result:
    from side.extract.wikitext import extract_claims

    wikitext = f"'''Harbour''' is a port.\n\n== History ==\n{HARBOUR[0]}<ref>[{url} Harbour report]</ref>\n"
    results = pipeline.verify_claims(extract_claims(wikitext, "Harbour"))
    assert len(results) == 1, results
    return results[0]


def measure(case: BadInput, pipeline: Pipeline, server: LocalServer, n: int) -> Measured:
    """One citation of ``case``, checked twice: untraced (seconds, RSS growth, level and reason),
    then under :mod:`tracemalloc` (peak of Python allocations; tracing slows it down)."""
    from httpserver import Response

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


def _print_revisions(names: list[str], uncapped: bool, as_json: bool) -> None:
    for name in names:
        row = measure_revision(name, uncapped)
        if as_json:
            print(json.dumps(asdict(row), ensure_ascii=False), flush=True)
        else:
            print(f"{row.case:<24} {row.bytes:>10,} B  caps: {row.caps:<30} {row.seconds:7.3f} s  "
                  f"peak RSS {row.peak_rss_mib:7.1f} MiB  {row.outcome}", flush=True)


def main(argv: list[str] | None = None) -> int:
    revisions = list(huge_revisions(0))  # the names only
    names = revisions + [case.name for case in bad_inputs()]
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     epilog="Cases: " + ", ".join(names))
    parser.add_argument("--cases", nargs="+", choices=names, default=names, metavar="CASE",
                        help="cases to run, by name (default: all)")
    parser.add_argument("--no-archive", action="store_true", help="do not try an archived copy")
    parser.add_argument("--uncapped", action="store_true", help="read the huge revisions with the bot's caps lifted")
    parser.add_argument("--json", action="store_true", help="print one JSON object per case")
    parser.add_argument("--reason-chars", type=int, default=160, help="characters of each reason shown (table)")
    parser.add_argument("--read-revision", choices=revisions, help=argparse.SUPPRESS)  # one case, in a subprocess
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    if args.read_revision:
        print(json.dumps(asdict(_read_revision(args.read_revision, args.uncapped))))
        return 0
    if not args.json:
        print(f"CPU: {cpu_model()}", flush=True)
    _print_revisions([name for name in args.cases if name in revisions], args.uncapped, args.json)
    sources = [name for name in args.cases if name not in revisions]
    if sources:
        _print_sources(sources, args)
    return 0


def _print_sources(names: list[str], args: argparse.Namespace) -> None:
    """The cited pages' cases, with the verifier loaded once."""
    from side.config import FetchConfig
    from side.pipeline import Pipeline, make_source_loader
    from side.sources.archive import ArchiveReader
    from side.sources.fetch import fetch_source
    from side.verify.verifier import Query, Verifier

    from httpserver import LocalServer
    from wayback import LocalWayback

    logging.getLogger("trafilatura").setLevel(logging.CRITICAL)  # "Document is empty", on the empty page

    verifier = Verifier.load(device="cpu")
    verifier.verify_many([(Query("Side checks citations."), ["Side checks citations."])])  # warm up
    cases = {case.name: case for case in bad_inputs()}
    with LocalServer() as server:
        wayback = LocalWayback(server)  # holds no copy: the fallback is tried and says so
        config = FetchConfig(allow_hosts=["127.0.0.1"], wayback_api=wayback.api)

        def fetch(url: str, deadline: float | None = None):
            return fetch_source(url, config, deadline=deadline)

        archive = None if args.no_archive else ArchiveReader(config, fetch)
        pipeline = Pipeline(verifier, None, make_source_loader(None, fetch, archive=archive))
        if not args.json:
            print(f"fetch limits: {config.max_bytes} bytes, {config.timeout_s:g} s; "
                  f"archive {'off' if archive is None else 'on (holds no copy)'}", flush=True)
        for n, name in enumerate(names):
            row = measure(cases[name], pipeline, server, n)
            if args.json:
                print(json.dumps(asdict(row), ensure_ascii=False), flush=True)
            else:
                reason = row.reason.replace(server.url(""), "")  # drop the local server's address
                print(f"{row.case:<24} {row.bytes:>10,} B  {row.level:<13} {row.seconds:6.2f} s  "
                      f"peak {row.peak_mib:7.1f} MiB  RSS +{row.rss_growth_mib:6.1f} MiB  "
                      f"{reason[: args.reason_chars] or '-'}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
