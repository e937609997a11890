"""Loopback load test of the web API (a script, not a test): requests/s and p50/p95 latency.

The served stack runs as in production on 127.0.0.1: Redis (own port, AOF), one
``side-worker`` (the shipped verifier, ``--no-index``) and ``python -m gadget.server.serve``
(waitress). Scenarios, each bounded by ``--requests`` and ``--max-seconds``:

- **known result**: ``POST /api/v1/checks`` of work the worker has already done (200 from the
  store: validation, check id, one SELECT, JSON);
- **poll**: ``GET /api/v1/checks/<id>`` of a done check (what the gadget does while waiting);
- **new check**: ``POST /api/v1/checks`` with a claim never seen (202: a row inserted, a job
  queued in Redis); the worker scores these meanwhile, on the same 2 CPU cores;
- **healthz** (the floor of a request that touches Redis, the database and the RQ registries).

Peer, measured in the same run on the same store and Redis: the same known-result POST
through Flask's test client in this process (no HTTP, no waitress), one request at a time;
the ratio served / in-process shows what HTTP and the server cost. The load generator shares
the machine's cores with the server and the worker, so figures are a floor for the API.

    .venv/bin/python benchmarks/api.py [--requests 2000] [--concurrency 8] [--max-seconds 30]
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import requests
from stats import percentile  # benchmarks/stats.py, beside this script

log = logging.getLogger("benchmarks.api")

PAGE = (b"<html><head><title>Alsea annual report</title></head><body><article><h1>Alsea</h1>"
        b"<p>Alsea operates Starbucks, Burger King and Domino's restaurants in Mexico and Spain.</p>"
        b"<p>The company was founded in 1990 in Mexico City.</p></article></body></html>")


class _Page(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return None

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)


@dataclass
class Result:
    name: str
    latencies: list[float]
    seconds: float
    errors: int
    concurrency: int

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        return percentile(self.latencies, q) * 1000

    def line(self) -> str:
        return (f"{self.name:<34} c={self.concurrency:<2} {len(self.latencies):6d} req {self.errors:3d} err "
                f"{self.rate:8.1f} req/s  p50 {self.percentile(0.5):7.2f} ms  p95 {self.percentile(0.95):7.2f} ms")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def body(n: int, url: str, revision: int = 1) -> dict[str, Any]:
    """A one-claim check; ``n`` makes the work (and so the check id) distinct."""
    return {"wiki": "enwiki", "title": "Alsea (company)", "revision": revision,
            "claims": [{"key": "c1", "text": f"Alsea operates {n} Starbucks stores in Mexico.", "url": url,
                        "left_context": "Alsea is a Mexican restaurant operator.", "section": ["History"]}]}


def run_load(name: str, call: Callable[[requests.Session, int], int], expected: int, total: int,
             concurrency: int, max_seconds: float) -> Result:
    """``total`` calls over ``concurrency`` threads (each with its own keep-alive session)."""
    latencies: list[float] = []
    errors = [0]
    counter = iter(range(total))
    lock = threading.Lock()
    deadline = time.perf_counter() + max_seconds

    def worker() -> None:
        session = requests.Session()
        while time.perf_counter() < deadline:
            with lock:
                n = next(counter, None)
            if n is None:
                return
            started = time.perf_counter()
            status = call(session, n)
            elapsed = time.perf_counter() - started
            with lock:
                if status == expected:
                    latencies.append(elapsed)
                else:
                    errors[0] += 1

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return Result(name, latencies, time.perf_counter() - started, errors[0], concurrency)


def start_stack(folder: Path, threads: int):
    from workers.stack import Stack

    env = {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "SIDE_VAR_DIR": str(folder / "var"),
           "SIDE_FETCH_ALLOW_HOSTS": "127.0.0.1", "SIDE_SERVICE_RATE_LIMIT": "10000000/minute",
           "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    stack = Stack(redis_url=f"redis://127.0.0.1:{free_port()}/0", database_url=f"sqlite:///{folder / 'side.sqlite3'}",
                  log_dir=folder / "log", redis_dir=folder / "redis", web_port=free_port(), workers=1,
                  with_web=True, env=env, worker_args=["--no-index"])
    return stack.start()


def prepare_known(api: str, url: str, n: int, timeout_s: float = 300.0) -> list[str]:
    """Submit ``n`` checks and wait until the worker has done them; returns their ids."""
    ids = [requests.post(f"{api}/checks", json=body(-1 - i, url), timeout=30).json()["check"]["id"]
           for i in range(n)]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        statuses = {requests.get(f"{api}/checks/{i}", timeout=30).json()["check"]["status"] for i in ids}
        if statuses == {"done"}:
            return ids
        time.sleep(0.5)
    raise SystemExit(f"the worker did not finish the warm-up checks in {timeout_s:.0f} s (statuses {statuses})")


def in_process_peer(stack, url: str, known: int, total: int, max_seconds: float) -> Result:
    """The known-result POST through Flask's test client: the app without HTTP or waitress."""
    from gadget.server import create_app
    from side.config import load_config

    app = create_app(load_config(environ=stack.child_env()))
    client = app.test_client()
    latencies, deadline = [], time.perf_counter() + max_seconds
    started = time.perf_counter()
    for n in range(total):
        if time.perf_counter() > deadline:
            break
        t0 = time.perf_counter()
        status = client.post("/api/v1/checks", json=body(-1 - n % known, url)).status_code
        if status == 200:
            latencies.append(time.perf_counter() - t0)
    result = Result("known result, Flask test client (peer)", latencies, time.perf_counter() - started,
                    0, 1)
    app.extensions["side"].store.close()
    return result


def scenarios(web: str, url: str, ids: list[str], known: int, offset: int) -> dict[str, tuple[Callable, int]]:
    api = f"{web}/api/v1"
    return {
        "known result POST (200)": (lambda s, n: s.post(f"{api}/checks", json=body(-1 - n % known, url),
                                                          timeout=30).status_code, 200),
        "poll GET /checks/<id> (200)": (lambda s, n: s.get(f"{api}/checks/{ids[n % len(ids)]}",
                                                           timeout=30).status_code, 200),
        "new check POST (202)": (lambda s, n: s.post(f"{api}/checks", json=body(offset + n, url),
                                                       timeout=30).status_code, 202),
        "GET /healthz (floor)": (lambda s, n: s.get(f"{web}/healthz", timeout=30).status_code, 200),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests per scenario (upper bound)")
    parser.add_argument("--concurrency", type=int, default=8, help="client threads for the served runs")
    parser.add_argument("--max-seconds", type=float, default=30.0, help="time bound per scenario")
    parser.add_argument("--known", type=int, default=5, help="distinct done checks the known-result runs repeat")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the worker")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    pages = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=pages.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{pages.server_address[1]}/alsea/report"
    with tempfile.TemporaryDirectory(prefix="side-bench-api-") as tmp:
        stack = start_stack(Path(tmp), args.threads)
        try:
            ids = prepare_known(stack.api_url, url, args.known)
            results = [in_process_peer(stack, url, args.known, args.requests, args.max_seconds)]
            for concurrency in (1, args.concurrency):
                for name, (call, expected) in scenarios(stack.web_url, url, ids, args.known,
                                                        offset=concurrency * 10 * args.requests).items():
                    results.append(run_load(f"{name}, served", call, expected, args.requests, concurrency,
                                            args.max_seconds))
                    print(results[-1].line(), flush=True)
            queued = requests.get(f"{stack.web_url}/healthz", timeout=30).json()["components"]["redis"]["jobs"]
        finally:
            stack.stop()
            pages.shutdown()
    print()
    print(f"{os.cpu_count()} CPU cores shared by the load generator, waitress, Redis and the worker")
    for result in results:
        print(result.line())
    peer, served = results[0], results[1]
    print(f"known result, served (c=1) vs in-process peer: p50 {served.percentile(0.5) / peer.percentile(0.5):.2f}x, "
          f"throughput {served.rate / peer.rate:.2f}x")
    print(f"jobs left in the queue at the end: {queued.get('queued')} queued, {queued.get('started')} running "
          f"(the worker scores new checks while the API is loaded)")


if __name__ == "__main__":
    main()
