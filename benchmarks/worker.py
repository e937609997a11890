"""Worker throughput: citations per minute through Redis + ``side-worker``, against in-process.

Real claims (WiCE dev: claim, Wikipedia context, and the cited web page's sentences) are
grouped into Checks of ``--per-check`` citations, as the bot groups a revision's citations.
Each cited page is served as HTML by a local HTTP server, so both paths fetch and extract it.

- **peer**: the in-process ``Pipeline`` (what ``side verify`` runs), model loaded once, one
  ``verify_claims`` call per Check, in this process;
- **Side's queue**: the same Checks submitted with ``service.queue.submit`` to a fresh Redis
  (AOF on) and run by ``--workers`` ``side-worker`` subprocesses (model loaded and warmed up
  before the clock starts), measured from the first submit until the store has every result.

Both use ``--threads`` torch threads per process and no evidence index (corpus suggestions
would add the same retrieval cost to both). Runs alternate (peer, queue, peer, queue...) so
both see the same machine load. Each run takes the next ``--citations`` claims, so no run
finds the pages of an earlier one in a process's sentence-embedding cache (which would time
cache hits, not verification); both paths get the same claims within a run. Reported: each
path's citations per minute over all ``--repeat`` runs, with the ratio.

``--split N`` adds, beside them in the same runs, the split deployment: the same Redis queue
served by N ``side-worker --role reader`` processes (no model) that hand prepared checks to one
``side-worker --role scorer`` (the models, scoring many checks per pass) on each device.

On a GPU host, ``--worker-device cpu --worker-device cuda --no-in-process`` measures the same
worker on each device instead: one Redis and one ``side-worker`` per device
(``SIDE_VERIFIER_DEVICE``), the first device named being the peer the others are compared with.

    .venv/bin/python benchmarks/worker.py [--citations 60] [--per-check 10] [--threads 2] [--repeat 2]
    python benchmarks/worker.py --worker-device cpu --worker-device cuda --no-in-process --threads 16
    python benchmarks/worker.py --worker-device cuda --split 8 --threads 16   # readers + a GPU scorer
"""

from __future__ import annotations

import argparse
import html
import os
import tempfile
import threading
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from side.extract.claims import Claim

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


class Pages(ThreadingHTTPServer):
    """Serves one HTML page per claim at /<n> on 127.0.0.1."""

    daemon_threads = True
    pages: dict[str, bytes]


class _Handler(BaseHTTPRequestHandler):
    server: Pages

    def log_message(self, format: str, *args: object) -> None:
        return None

    def do_GET(self) -> None:
        body = self.server.pages.get(self.path.split("?", 1)[0])
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")


def page(title: str, sentences: tuple[str, ...]) -> bytes:
    from side.data import WICE_META_PREFIX

    paragraphs = "".join(f"<p>{html.escape(s)}</p>" for s in sentences if not s.startswith(WICE_META_PREFIX))
    return f"<html><head><title>{html.escape(title)}</title></head><body>{paragraphs}</body></html>".encode()


def real_checks(n: int, per_check: int, server: Pages) -> list[list[Claim]]:
    """``n`` WiCE dev claims as Claims citing the local pages, in Checks of ``per_check``."""
    from side.config import load_config
    from side.data import load_wice
    from side.extract.claims import Citation, Claim

    wice = load_wice(load_config().data_dir / "wice" / "claim_dev.jsonl")[:n]
    host, port = server.server_address[:2]
    claims = []
    for i, row in enumerate(wice):
        server.pages[f"/{i}"] = page(row.title, row.evidence)
        context = " ".join(f"{row.context} {row.claim}".split()[-100:])
        claims.append(Claim(article_title=row.title, section=(row.section,), text=row.claim, left_context=context,
                            citation=Citation(id=f"r{i}", kind="external_link", url=f"http://{host}:{port}/{i}")))
    return [claims[i : i + per_check] for i in range(0, len(claims), per_check)]


def load_pipeline(threads: int):
    """The in-process peer: the Pipeline ``side verify`` builds, model loaded and warmed up."""
    import torch

    from side.config import FetchConfig, load_config
    from side.pipeline import Pipeline
    from side.sources.fetch import fetch_source
    from side.verify.verifier import Query

    torch.set_num_threads(threads)
    fetch_config = FetchConfig(allow_hosts=["127.0.0.1"])
    pipeline = Pipeline.from_config(load_config(), use_index=False,
                                  fetch=lambda url: fetch_source(url, fetch_config, None))
    pipeline.verifier.verify_many([(Query("Side checks citations."), ["Side checks citations."])])
    return pipeline


def fresh(checks: list[list[Claim]], run: int) -> list[list[Claim]]:
    """The same claims citing ``?run=N`` URLs: new check ids, and no fetch cache hits."""
    return [[replace(c, citation=replace(c.citation, url=f"{c.citation.url}?run={run}")) for c in claims]
            for claims in checks]


def run_in_process(pipeline, checks: list[list[Claim]]) -> float:
    """Seconds for the in-process Pipeline to check every Check."""
    started = time.perf_counter()
    for claims in checks:
        pipeline.verify_claims(claims)
    return time.perf_counter() - started


def start_stack(threads: int, workers: int, folder: Path, device: str = "auto", readers: int = 0):
    """Redis (own port, AOF) and ``workers`` side-worker processes on ``device``, ready to take jobs;
    with ``readers``, that many ``--role reader`` workers and one ``--role scorer`` instead."""
    import socket

    from side.config import ServiceConfig
    from workers.stack import Stack

    folder.mkdir(parents=True, exist_ok=True)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        redis_port = sock.getsockname()[1]
    config = ServiceConfig(redis_url=f"redis://127.0.0.1:{redis_port}/0",
                           database_url=f"sqlite:///{folder / 'side.sqlite3'}")
    env = {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "SIDE_VAR_DIR": str(folder / "var"),
           "SIDE_FETCH_ALLOW_HOSTS": "127.0.0.1", "SIDE_VERIFIER_DEVICE": device}
    role = ["--role", "reader"] if readers else []
    stack = Stack(redis_url=config.redis_url, database_url=config.database_url, log_dir=folder / "log",
                  redis_dir=folder / "redis", workers=readers or workers, with_web=False, env=env,
                  worker_args=["--no-index", *role])
    stack.start()
    if readers:
        try:
            stack.start_scorer(["--no-index"])
        except BaseException:
            stack.stop()
            raise
    return stack, config


def loaded_as(stack) -> str:
    """What the first worker's log says it loaded: device, number format and load time."""
    part = (stack.judge_parts() or stack.worker_parts())[0]
    for line in part.log_path.read_text(errors="replace").splitlines():
        if "loaded the verifier on" in line:
            return line[line.index("loaded the verifier on"):]
    return "no load line in the worker log"


def run_queue(config, checks: list[list[Claim]], run: int) -> float:
    """Seconds from the first submit until every Check is done, through Redis and side-worker."""
    from service.queue import get_queue, redis_connection, submit
    from service.store import CheckRequest, CheckStatus, Origin, Store

    store = Store.open(config.database_url)
    queue = get_queue(redis_connection(config.redis_url), config)
    started = time.perf_counter()
    ids = [submit(store, queue, CheckRequest(wiki="enwiki", title=f"Benchmark {n}", revision=run * 10_000 + n,
                                         claims=claims, origin=Origin.BOT), config)[0].id
           for n, claims in enumerate(checks)]
    pending = set(ids)
    while pending:  # poll gently: this process shares the CPU with the worker it measures
        time.sleep(0.25)
        pending = {i for i in pending if store.check(i).status not in (CheckStatus.DONE, CheckStatus.FAILED)}
    elapsed = time.perf_counter() - started
    failed = [i for i in ids if store.check(i).status != CheckStatus.DONE]
    if failed:
        raise SystemExit(f"{len(failed)} checks failed: {store.check(failed[0]).error}")
    store.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--citations", type=int, default=60, help="WiCE dev claims per run (default 60)")
    parser.add_argument("--per-check", type=int, default=10, help="citations per Check / job (default 10)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads per process (default 2)")
    parser.add_argument("--workers", type=int, default=1, help="side-worker processes per device (default 1)")
    parser.add_argument("--repeat", type=int, default=2,
                        help="alternating runs of each, new claims each run (default 2)")
    parser.add_argument("--worker-device", action="append", dest="devices", metavar="DEVICE",
                        help="the workers' verifier device (auto, cpu, cuda); repeat it to measure "
                             "one stack per device (default: auto)")
    parser.add_argument("--split", type=int, default=0, metavar="N",
                        help="also measure N reader processes feeding one scorer per device")
    parser.add_argument("--no-in-process", action="store_true",
                        help="leave out the in-process peer; the first --worker-device is the peer")
    args = parser.parse_args()
    devices = args.devices or ["auto"]
    if args.no_in_process and len(devices) < 2:
        parser.error("--no-in-process needs two --worker-device values to compare")
    os.environ["OMP_NUM_THREADS"] = str(args.threads)

    server = Pages(("127.0.0.1", 0), _Handler)
    server.pages = {}
    threading.Thread(target=server.serve_forever, daemon=True).start()
    every = real_checks(args.citations * args.repeat, args.per_check, server)
    per_run = -(-args.citations // args.per_check)
    runs = [every[r * per_run : (r + 1) * per_run] for r in range(args.repeat)]
    citations = sum(len(c) for checks in runs for c in checks)
    print(f"{citations} WiCE dev citations in {args.repeat} runs of {per_run} checks; "
          f"{args.threads} torch threads per process")

    pipeline = None if args.no_in_process else load_pipeline(args.threads)
    seconds: dict[str, list[float]] = {} if pipeline is None else {"in-process Pipeline": []}
    configs = {}  # path name -> the ServiceConfig its stack answers on
    with tempfile.TemporaryDirectory() as tmp:
        stacks = []
        try:
            for device in devices:
                stack, config = start_stack(args.threads, args.workers, Path(tmp) / device, device)
                stacks.append(stack)
                print(f"{device}: {loaded_as(stack)}", flush=True)
                name = f"Redis + {args.workers} side-worker ({device})"
                configs[name], seconds[name] = config, []
                if args.split:
                    stack, config = start_stack(args.threads, 0, Path(tmp) / f"split-{device}", device, args.split)
                    stacks.append(stack)
                    name = f"Redis + {args.split} readers + 1 scorer ({device})"
                    configs[name], seconds[name] = config, []
            for run, checks in enumerate(runs):  # alternate, so all see the same machine load
                for n, name in enumerate(seconds):
                    claims = fresh(checks, len(seconds) * run + n)
                    seconds[name].append(run_in_process(pipeline, claims) if name not in configs
                                         else run_queue(configs[name], claims, run))
                print(f"run {run + 1}: " + ", ".join(f"{name} {times[-1]:.1f} s" for name, times in seconds.items()),
                      flush=True)
        finally:
            for stack in stacks:
                stack.stop()
    server.shutdown()
    rates = {name: citations / sum(times) * 60 for name, times in seconds.items()}
    peer = next(iter(rates))
    print(f"all {args.repeat} runs (peer: {peer}):")
    for name, times in seconds.items():
        print(f"{name:38s} {sum(times):7.1f} s  {rates[name]:7.1f} citations/min  "
              f"ratio {rates[name] / rates[peer]:.2f}")


if __name__ == "__main__":
    main()
