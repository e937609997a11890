"""Latency of one citation whose source text is in hand: the pipeline now vs before its last change.

One :meth:`Pipeline.verify_claims` call per citation, on real WiCE dev claims
(``SIDE_DATA_DIR``/wice/claim_dev.jsonl) with the sentences of the pages they cite in hand (the
loader returns them: no fetch, no index), in two settings:

- **never seen**: every page is new to the verifier's sentence-embedding cache (the cold cost
  of a source: what the gadget's first check of a ref costs);
- **cached**: the same citations again (the page's embeddings are in memory).

Peer, measured in the same run on the same inputs: the pipeline before length-bucketed batches
(``batch_overhead`` None on its bi-encoder and cross-encoder: a page's shortlist embedded as one
batch of up to 64 sentences, each padded to the longest, as all releases before did). Both share
the models' weights; each has its own embedding cache. The two run interleaved citation by
citation, in alternating order, so load from other work on the machine hits both alike. Also
printed: how often the two agree on the level, and the mean change of the support score
(``side eval verify wice`` measures quality itself).

Target (the issue "A stronger verifier"): p95 <= 0.5 s per citation with the source text in
hand, on a 2-core CPU with the default backbone.

``--threads 1,2`` compares two torch thread counts instead (the current pipeline at each, each
with its own embedding cache, interleaved the same way): what ``verifier.threads`` should be where
other work competes for the cores. Each runner sets its count on the thread that runs its checks
(an OpenMP thread count belongs to the thread that set it).

``--on worker`` (default) runs the calls on a worker thread, as the Lift Wing server and the
worker do; ``--on main`` on the process's main thread; ``--on both`` times the new settings on
both, interleaved, to compare them.

    .venv/bin/python benchmarks/citation_latency.py [--claims 40] [--min-sentences 0] [--on worker|main|both]
    .venv/bin/python benchmarks/citation_latency.py --threads 1,2
"""

from __future__ import annotations

import argparse
import copy
import logging
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from stats import cpu_model, percentile  # noqa: E402  (benchmarks/stats.py, beside this script)

TARGET_S = 0.5


@dataclass
class Timing:
    """Latencies of one runner in one setting, and its verdicts."""

    name: str
    latencies: list[float] = field(default_factory=list)
    verdicts: list = field(default_factory=list)
    #: CPU seconds of the whole process per check (all its threads): less moved by other work
    #: on the machine than wall time, though waiting torch threads spin on it too.
    cpu: list[float] = field(default_factory=list)

    def percentile(self, q: float, cpu: bool = False) -> float:
        """The ``q`` quantile in milliseconds, of wall time or (``cpu``) of CPU time."""
        return percentile(self.cpu if cpu else self.latencies, q) * 1000


def load_cases(n: int, skip: int = 0, min_sentences: int = 0):
    """WiCE dev claims (pages of at least ``min_sentences``) as Claims citing a URL of their own,
    and each page's sentences by that URL."""
    from side.config import load_config
    from side.data import load_wice
    from side.evaluation.verify import wice_sentences
    from side.extract.claims import Citation, Claim

    path = load_config().data_dir / "wice" / "claim_dev.jsonl"
    if not path.is_file():
        raise SystemExit(f"no WiCE dev claims at {path} (set SIDE_DATA_DIR)")
    claims, pages = [], {}
    chosen = [(number, wice) for number, wice in enumerate(load_wice(path))
              if len(wice.evidence) >= min_sentences][skip : skip + n]
    for number, wice in chosen:
        url = f"https://wice.invalid/{number}"
        pages[url] = wice_sentences(wice)
        citation = Citation(id=f"wice{number}", kind="template", url=url)
        claims.append(Claim(wice.title, (wice.section,) if wice.section else (), wice.claim, wice.context, citation))
    return claims, pages


def pipeline_for(verifier, pages):
    from side.pipeline import Pipeline, SourceStatus

    return Pipeline(verifier, None, lambda url: (SourceStatus.CACHE, list(pages[url]), "", ""))


def unbucketed(model):
    """A view of the bi-encoder or cross-encoder ``model`` (same weights) batching as before:
    consecutive runs of the batch size, padded to their longest member."""
    view = copy.copy(model)
    view.batch_overhead = None
    return view


def thread_counts(text: str) -> tuple[int, int]:
    """``--threads``: two positive counts, comma-separated."""
    try:
        counts = tuple(int(part) for part in text.split(","))
    except ValueError:
        counts = ()
    if len(counts) != 2 or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"two thread counts of at least 1, as A,B: not {text!r}")
    return counts


@dataclass
class WithThreads:
    """``pipeline``'s checks with torch at ``count`` threads, set on the thread that runs each."""

    count: int
    pipeline: object

    def verify_one(self, claim):
        import torch

        torch.set_num_threads(self.count)
        return self.pipeline.verify_claims([claim])[0]


def measure(runners: dict[str, Callable], claims, rounds: int) -> dict[str, Timing]:
    """Each runner on each claim, interleaved in alternating order; ``rounds`` passes (the first
    never seen, the next cached)."""
    timings = {}
    for name in runners:
        timings[name] = Timing(name)
    names = list(runners)
    for n, claim in enumerate(claims * rounds):
        for name in names if n % 2 == 0 else names[::-1]:
            started, cpu = time.perf_counter(), time.process_time()
            result = runners[name](claim)
            timings[name].latencies.append(time.perf_counter() - started)
            timings[name].cpu.append(time.process_time() - cpu)
            timings[name].verdicts.append(result.verdict)
    return timings


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=40, help="WiCE dev claims, one citation each")
    parser.add_argument("--min-sentences", type=int, default=0,
                        help="only claims whose page has at least this many sentences (65: pages the shortlist cuts)")
    parser.add_argument("--warmup", type=int, default=3, help="other WiCE claims checked first, not measured")
    parser.add_argument("--on", choices=("worker", "main", "both"), default="worker",
                        help="the thread the checks run on (both: compare them, new settings only)")
    parser.add_argument("--threads", type=thread_counts, default=None, metavar="A,B",
                        help="compare two torch thread counts on the current pipeline (not before vs now)")
    args = parser.parse_args(argv)
    if args.claims < 1 or args.warmup < 0:
        parser.error("--claims must be at least 1, --warmup at least 0")
    if args.threads and args.on == "both":
        parser.error("--threads compares thread counts on one thread: --on worker or main")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    import torch

    from side.config import load_config
    from side.threads import usable_cpus
    from side.verify.verifier import Verifier

    now = Verifier.from_config(load_config())
    before = Verifier(unbucketed(now.cross_encoder), unbucketed(now.encoder), now.combiner, now.k, now.batch_size,
                      now.tagger, now.split_claims, now.shortlist, now.shortlist_neighbours)
    claims, pages = load_cases(args.claims, min_sentences=args.min_sentences)
    warm, warm_pages = load_cases(args.warmup, skip=args.claims, min_sentences=args.min_sentences)
    pages.update(warm_pages)
    worker = ThreadPoolExecutor(max_workers=1)

    def on(thread: str, pipeline) -> Callable:
        call = pipeline.verify_one if hasattr(pipeline, "verify_one") else (
            lambda claim: pipeline.verify_claims([claim])[0])
        return call if thread == "main" else (lambda claim: worker.submit(call, claim).result())

    if args.threads:
        runners = {}
        for count in args.threads:
            own = Verifier(now.cross_encoder, now.encoder, now.combiner, now.k, now.batch_size, now.tagger,
                           now.split_claims, now.shortlist, now.shortlist_neighbours)  # its own embedding cache
            runners[f"{count} torch thread{'s' if count > 1 else ''}"] = on(args.on, WithThreads(
                count, pipeline_for(own, pages)))
        title = (f"torch threads {args.threads[0]} vs {args.threads[1]} (shortlist {now.shortlist}), "
                 f"on the {args.on} thread")
    elif args.on == "both":
        pipeline = pipeline_for(now, pages)
        runners = {"main thread": on("main", pipeline), "worker thread": on("worker", pipeline)}
        title = f"new settings (shortlist {now.shortlist}), main vs worker thread"
    else:
        runners = {"before (one batch)": on(args.on, pipeline_for(before, pages)),
                   "now (length buckets)": on(args.on, pipeline_for(now, pages))}
        title = f"before vs now (shortlist {now.shortlist} both), on the {args.on} thread"
    for claim in warm:
        for run in runners.values():
            run(claim)
    load_before = os.getloadavg()[0]
    timings = measure(runners, claims, rounds=2)
    load_after = os.getloadavg()[0]
    threads = "" if args.threads else f", torch {torch.get_num_threads()} threads"
    sentences = sorted(len(pages[c.citation.url]) for c in claims)
    print(f"\nOne citation per Pipeline.verify_claims, source text in hand, {len(claims)} WiCE dev claims "
          f"(page sentences median {sentences[len(sentences) // 2]}, max {sentences[-1]}); {title}; "
          f"{cpu_model()}, {os.cpu_count()} cores ({usable_cpus()} usable){threads}, "
          f"precision {now.cross_encoder.precision}; load average {load_before:.1f} before, {load_after:.1f} after")
    print(f"{'setting':<14} {'runner':<28} {'n':>4} {'p50 ms':>8} {'p95 ms':>8} {'target':>7} {'met':>4} "
          f"{'CPU p50 ms':>11} {'CPU p95 ms':>11}")
    n = len(claims)
    for setting, part in (("never seen", slice(0, n)), ("cached", slice(n, 2 * n))):
        rows = {name: Timing(name, t.latencies[part], t.verdicts[part], t.cpu[part]) for name, t in timings.items()}
        for name, timing in rows.items():
            met = "yes" if timing.percentile(0.95) <= TARGET_S * 1000 else "NO"
            print(f"{setting:<14} {name:<28} {len(timing.latencies):4d} {timing.percentile(0.5):8.1f} "
                  f"{timing.percentile(0.95):8.1f} {TARGET_S * 1000:7.0f} {met:>4} "
                  f"{timing.percentile(0.5, cpu=True):11.1f} {timing.percentile(0.95, cpu=True):11.1f}")
        first, second = rows.values()
        print(f"{setting:<14} ratio {second.name} / {first.name}: p50 "
              f"{second.percentile(0.5) / first.percentile(0.5):.2f}x, p95 "
              f"{second.percentile(0.95) / first.percentile(0.95):.2f}x")
    first, second = (t.verdicts[:n] for t in timings.values())
    same = sum(a.level is b.level for a, b in zip(first, second, strict=True))
    change = sum(abs(a.score - b.score) for a, b in zip(first, second, strict=True)) / n
    print(f"verdicts: same level {same}/{n}, mean |support score change| {change:.4f}")
    worker.shutdown()


if __name__ == "__main__":
    main()
