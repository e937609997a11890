"""Readers and a scorer end to end: real Redis (AOF), real ``side-worker`` processes, the real model.

Readers (``--role reader``, no model) take the check jobs from the RQ queue, read the cited
pages from a local HTTP server (slow enough that a reader is killed holding a job) and add
each prepared check to the scorers' stream; the scorer (``--role scorer``) scores them several
checks at a time. Both kinds are killed with SIGKILL mid-run and started again; every check
must still end done, with exactly one Result per citation, and with the verdicts the
single-process pipeline gives for the same claims and pages.
"""

from __future__ import annotations

import signal
import time

import pytest
from rq import Worker

from service.store import CheckRequest
from service.stream import stream_key, stream_summary
from side.extract.claims import Citation, Claim

from alsea import ALSEA, WEATHER
from harness.stack import TEST_WORKER_ARGS
from httpserver import LocalServer, Response

pytestmark = pytest.mark.slow

CLAIMS = [
    "Alsea operates Starbucks coffee shops in Mexico.",
    "The company was founded in 1990 in Mexico City.",
    "Alsea was founded in 1975 in Buenos Aires.",
    "It also operates Domino's Pizza restaurants.",
]
CHECKS = 8
#: Seconds each page takes to answer: a reader is busy long enough to be killed holding a job.
PAGE_DELAY_S = 1.5
#: Seconds a scorer's prepared checks stay its own before the restarted scorer takes them over.
CLAIM_AFTER_S = 3
ENV = {"SIDE_FETCH_ALLOW_HOSTS": "127.0.0.1", "SIDE_VERIFIER_PRECISION": "fp32"}


def checks(server: LocalServer, delay_s: float = PAGE_DELAY_S) -> list[CheckRequest]:
    """Checks of three citations each, every one citing pages of its own (no cache hits), served
    ``delay_s`` late."""
    out = []
    for n in range(CHECKS):
        claims = []
        for k in range(3):
            path = f"/c{n}/{'weather' if (n + k) % 4 == 3 else 'alsea'}{k}"
            server.add(path, Response(body=WEATHER if "weather" in path else ALSEA, delay_s=delay_s))
            text = CLAIMS[(n + k) % len(CLAIMS)]
            claims.append(Claim(article_title="Alsea (company)", section=("History",), text=text, left_context=text,
                                citation=Citation(id=f"r{k}", kind="external_link", url=server.url(path))))
        out.append(CheckRequest(wiki="enwiki", title="Alsea (company)", revision=1000 + n, claims=claims,
                                origin="bot"))
    return out


def wait_until(condition, timeout: float, what: str, stack=None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    logs = "" if stack is None else "\n".join(f"--- {p.name}\n{p.log_tail(30)}" for p in stack.stack.parts)
    pytest.fail(f"timed out waiting for {what}\n{logs}")


def reading(stack, name: str) -> bool:
    """Whether the reader registered as ``name`` holds a job whose check it has started (RQ says
    busy, and the store counts the attempt), so a kill now interrupts its reading: killed between
    taking the job and starting the check, it would leave no attempt to run again."""
    with stack.stack.redis_client() as client:
        for worker in Worker.all(connection=client):
            if worker.name == name and worker.get_state() == "busy":
                check_id = worker.get_current_job_id()  # the job id is the check id
                record = stack.store().check(check_id) if check_id else None
                return record is not None and record.status == "running" and record.attempts >= 1
    return False


def single_process_verdicts(requests: list[CheckRequest]) -> list[list]:
    """The same claims through the in-process Pipeline (what ``side verify`` runs)."""
    from side.config import FetchConfig, load_config
    from side.pipeline import Pipeline
    from side.sources.fetch import fetch_source

    config = load_config()
    config.verifier.precision = "fp32"
    fetch_config = FetchConfig(allow_hosts=["127.0.0.1"])
    pipeline = Pipeline.from_config(config, use_index=False,
                                    fetch=lambda url, deadline=None: fetch_source(url, fetch_config, None))
    return [pipeline.verify_claims(request.claims) for request in requests]


@pytest.fixture(scope="module")
def pages():
    with LocalServer() as server:
        yield server


def test_killed_readers_and_scorer_lose_and_duplicate_nothing(service_stack, pages):
    stack = service_stack(with_web=False, workers=2, env=ENV, config={"retries": 3, "retry_backoff_s": 1},
                          worker_args=[*TEST_WORKER_ARGS, "--role", "reader", "--no-ingest"])
    scorer_args = ["--claim-after", str(CLAIM_AFTER_S), "--batch-checks", "3", "--no-ingest"]
    score = stack.stack.start_scorer(scorer_args)
    requests = checks(pages)
    ids = [stack.submit(request)[0].id for request in requests]
    key = stream_key(stack.config)
    connection = stack.queue().connection

    wait_until(lambda: reading(stack, stack.stack.slots[1].name), 60, "the first reader to read a check", stack)
    stack.kill_worker(stack.workers[0], signal.SIGKILL)
    stack.start_worker()  # the reader comes back (as a supervisor would start it again)

    wait_until(lambda: stream_summary(connection, key)["pending"] > 0, 120,
               "the scorer to hold prepared checks", stack)
    score.signal(signal.SIGKILL)
    score.process.wait(30)
    held = stream_summary(connection, key)["pending"]
    assert held > 0
    again = stack.stack.start_scorer(scorer_args)

    for check_id in ids:
        record = stack.wait_for(check_id, timeout=300)
        assert record.status == "done", record.error
    assert "claimed" in again.log_path.read_text(), "the restarted scorer did not take over the killed one's checks"
    assert max(stack.store().check(i).attempts for i in ids) >= 2, "no reader job was run again after the kill"
    wait_until(lambda: stream_summary(connection, key) == {"entries": 0, "pending": 0}, 60,
               "every entry to be acknowledged and deleted", stack)

    # the same pages, served at once: only the split path needs a reader slow enough to be killed
    expected = single_process_verdicts(checks(pages, delay_s=0))
    for check_id, request, reference in zip(ids, requests, expected, strict=True):
        stored = stack.store().results(check_id)
        assert sorted(r.position for r in stored) == list(range(len(request.claims)))  # one Result per citation
        for row, result in zip(sorted(stored, key=lambda r: r.position), reference, strict=True):
            assert row.claim.text == result.claim.text
            assert (row.verdict.level, row.verdict.label) == (result.verdict.level, result.verdict.label)
            # the scorer batches across checks: float sums may run in another order, never 1e-3 apart
            assert row.verdict.score == pytest.approx(result.verdict.score, abs=1e-3)
            assert [e.text for e in row.verdict.evidence] == [e.text for e in result.verdict.evidence]
