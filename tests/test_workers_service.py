"""The queue end to end: real Redis (AOF), real ``side-worker`` processes, the real model.

Sources are served by a local HTTP server (``SIDE_FETCH_ALLOW_HOSTS=127.0.0.1``); slow routes
make a job last long enough to kill its worker or exceed its timeout. Every test checks the
two promises of the queue: work is never silently lost (done, retried, or failed with a
reason) and never duplicated in the store.
"""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest
from rq.job import Job, JobStatus

from service.health import queue_health
from service.queue import redis_connection
from service.store import CheckRequest
from side.extract.claims import Citation, Claim

from alsea import ALSEA, alsea_sources
from harness.stack import pid_alive
from hostile import decompression_bomb, pdf
from httpserver import Response

pytestmark = pytest.mark.slow

def claim(text: str, url: str, key: str) -> Claim:
    return Claim(article_title="Alsea (company)", section=("History",), text=text, left_context=text,
                 citation=Citation(id=key, kind="external_link", url=url))


@pytest.fixture(scope="module")
def sources():
    with alsea_sources() as server:
        yield server


@pytest.fixture(scope="module")
def stack(service_stack, sources):
    return service_stack(with_web=False, env={"SIDE_FETCH_ALLOW_HOSTS": "127.0.0.1"},
                         config={"retries": 2, "retry_backoff_s": 1})


def fetch_job(stack, check_id: str) -> Job:
    queue = stack.queue()
    return Job.fetch(check_id, connection=queue.connection, serializer=queue.serializer)


def wait_until(condition, timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def test_a_worker_checks_a_revision_end_to_end(stack, sources):
    new = CheckRequest(wiki="enwiki", title="Alsea (company)", revision=101, origin="bot", claims=[
        claim("Alsea operates Starbucks in Mexico.", sources.url("/alsea"), "c1"),
        claim("Alsea was founded in 1990.", sources.url("/weather"), "c2")], client_keys=["c1", "c2"])
    record, enqueued = stack.submit(new)
    assert enqueued and record.status == "queued"
    done = stack.wait_for(record.id)
    assert done.status == "done", done.error
    results = stack.store().results(record.id)
    assert [r.client_key for r in results] == ["c1", "c2"]
    assert all(r.source_status == "fetched" for r in results)
    supported, unsupported = results
    assert supported.score > unsupported.score and unsupported.flagged
    assert done.attempts == 1 and done.citations == 2

    again, enqueued_again = stack.submit(new)  # the same work: no new job, no new rows
    assert not enqueued_again and again.status == "done"
    assert [r.id for r in stack.store().results(record.id)] == [r.id for r in results]
    wait_until(lambda: fetch_job(stack, record.id).get_status() == JobStatus.FINISHED, what="RQ's success record")

    health = queue_health(redis_connection(stack.redis_url), stack.config)
    assert health["redis"]["ok"] and health["redis"]["aof"]
    assert [w["state"] for w in health["workers"]] == ["idle"]
    assert health["workers"][0]["successful_jobs"] >= 1 and health["workers"][0]["last_heartbeat"]


def test_a_flaky_source_is_fetched_again_with_backoff(stack, sources):
    sources.add("/flaky", Response(status=503, body=b"busy", content_type="text/plain"))

    def recover() -> None:  # the site answers once the worker has been turned away
        wait_until(lambda: sources.hits["/flaky"] >= 1, what="first fetch")
        sources.add("/flaky", Response(body=ALSEA))

    threading.Thread(target=recover, daemon=True).start()
    new = CheckRequest(wiki="enwiki", title="Alsea (company)", revision=102,
                   claims=[claim("Alsea operates Starbucks in Mexico.", sources.url("/flaky"), "c1")])
    record, _ = stack.submit(new)
    done = stack.wait_for(record.id)
    assert done.status == "done"
    [result] = stack.store().results(record.id)
    assert result.source_status == "fetched" and result.label is not None
    assert sources.hits["/flaky"] == 2
    assert done.attempts == 1  # retried inside the job, not by requeueing the whole check


def test_a_pdf_bomb_fails_its_own_citation_not_the_check(stack, sources):
    """pypdf's LimitReachedError once escaped the fetcher: the job failed 4 times and took the
    revision's good citations with it. Now the bomb is one citation's reason, never retried."""
    sources.add("/bomb.pdf", Response(pdf(decompression_bomb()), content_type="application/pdf"))
    new = CheckRequest(wiki="enwiki", title="Alsea (company)", revision=107, claims=[
        claim("Alsea operates Starbucks in Mexico.", sources.url("/alsea"), "c1"),
        claim("Alsea was founded in 1990.", sources.url("/bomb.pdf"), "c2")])
    record, _ = stack.submit(new)
    done = stack.wait_for(record.id)
    assert done.status == "done", done.error
    assert done.attempts == 1
    good, bomb = stack.store().results(record.id)
    assert good.source_status == "fetched" and good.label is not None
    assert bomb.source_status == "unavailable" and bomb.label is None
    assert "unreadable PDF" in bomb.source_error and "LimitReachedError" in bomb.source_error
    assert sources.hits["/bomb.pdf"] == 1  # not transient: not fetched again


def test_a_job_over_its_timeout_fails_with_the_reason(stack, sources):
    sources.add("/slow-timeout", Response(body=ALSEA, delay_s=8))
    config = dataclasses.replace(stack.config, job_timeout_s=2)
    new = CheckRequest(wiki="enwiki", title="Alsea (company)", revision=103,
                   claims=[claim("Alsea operates Starbucks in Mexico.", sources.url("/slow-timeout"), "c1")])
    from service.queue import submit

    record, _ = submit(stack.store(), stack.queue(), new, config)
    failed = stack.wait_for(record.id, timeout=60)
    assert failed.status == "failed" and "JobTimeoutException" in failed.error
    # RQ records the failure just after the job wrote the store; not retried: it would time out again
    wait_until(lambda: fetch_job(stack, record.id).get_status() == JobStatus.FAILED, what="RQ's failure record")
    assert record.id in stack.queue().failed_job_registry.get_job_ids()
    health = queue_health(redis_connection(stack.redis_url), stack.config)
    [failure] = [f for f in health["failures"] if f["id"] == record.id]
    assert "JobTimeoutException" in failure["reason"] and "2 seconds" in failure["reason"]
    assert stack.store().results(record.id) == []


def test_a_killed_worker_s_job_is_retried_by_another_worker(stack, sources):
    sources.add("/slow-kill", Response(body=ALSEA, delay_s=5))
    new = CheckRequest(wiki="enwiki", title="Alsea (company)", revision=104,
                   claims=[claim("Alsea operates Starbucks in Mexico.", sources.url("/slow-kill"), "c1")])
    record, _ = stack.submit(new)
    stack.wait_for(record.id, timeout=60, statuses=("running",))
    wait_until(lambda: sources.hits["/slow-kill"] >= 1, what="the worker fetching the slow source")
    victim = stack.workers[0]
    stack.kill_worker(victim)  # kill -9 in the middle of the job
    assert not pid_alive(victim.process.pid)
    assert stack.store().check(record.id).status == "running"

    stack.start_worker()
    done = stack.wait_for(record.id, timeout=120)
    assert done.status == "done", done.error
    assert done.attempts == 2
    wait_until(lambda: fetch_job(stack, record.id).get_status() == JobStatus.FINISHED, what="RQ's success record")
    assert len(stack.store().results(record.id)) == 1  # never duplicated
    assert sources.hits["/slow-kill"] == 2


def test_a_killed_worker_s_job_without_retries_is_failed_with_the_reason(stack, sources):
    sources.add("/slow-abandoned", Response(body=ALSEA, delay_s=5))
    config = dataclasses.replace(stack.config, retries=0)
    new = CheckRequest(wiki="enwiki", title="Alsea (company)", revision=105,
                   claims=[claim("Alsea operates Starbucks in Mexico.", sources.url("/slow-abandoned"), "c1")])
    from service.queue import submit

    record, _ = submit(stack.store(), stack.queue(), new, config)
    stack.wait_for(record.id, timeout=60, statuses=("running",))
    wait_until(lambda: sources.hits["/slow-abandoned"] >= 1, what="the worker fetching the slow source")
    stack.kill_worker()
    stack.start_worker()
    failed = stack.wait_for(record.id, timeout=120)
    assert failed.status == "failed" and "AbandonedJobError" in failed.error
    assert fetch_job(stack, record.id).get_status() == JobStatus.FAILED
    assert record.id in stack.queue().failed_job_registry.get_job_ids()
    assert stack.store().results(record.id) == []

    again, enqueued = submit(stack.store(), stack.queue(), new, config)  # resubmitting runs it again
    assert enqueued and again.status == "queued"
    done = stack.wait_for(record.id, timeout=120)
    assert done.status == "done" and len(stack.store().results(record.id)) == 1


def test_a_check_whose_job_redis_lost_is_queued_again(stack, sources):
    new = CheckRequest(wiki="enwiki", title="Alsea (company)", revision=106,
                   claims=[claim("Alsea operates Starbucks in Mexico.", sources.url("/alsea"), "c1")])
    record, created = stack.store().add_check(new)  # the row exists, its job never reached Redis
    assert created and stack.queue().fetch_job(record.id) is None
    done = stack.wait_for(record.id, timeout=60)  # a worker's maintenance queues it again
    assert done.status == "done" and len(stack.store().results(record.id)) == 1
    assert "no job in Redis; queued it again" in "".join(p.log_path.read_text() for p in stack.workers)


# -- Redis restarts ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def idle_stack(service_stack, sources):
    """A stack with no worker yet, so jobs stay queued."""
    return service_stack(with_web=False, workers=0, env={"SIDE_FETCH_ALLOW_HOSTS": "127.0.0.1"},
                         config={"retries": 2, "retry_backoff_s": 1})


def test_queued_jobs_survive_a_redis_crash_and_run_afterwards(idle_stack, sources):
    records = [idle_stack.submit(CheckRequest(wiki="enwiki", title="Alsea (company)", revision=200 + n, claims=[
        claim("Alsea operates Starbucks in Mexico.", sources.url("/alsea"), f"c{n}")]))[0] for n in range(2)]
    idle_stack.redis.restart(kill=True)  # kill -9: only the AOF survives
    assert sorted(idle_stack.queue().job_ids) == sorted(r.id for r in records)

    idle_stack.start_worker()
    for record in records:
        done = idle_stack.wait_for(record.id)
        assert done.status == "done" and done.attempts == 1
        assert len(idle_stack.store().results(record.id)) == 1


def test_a_worker_keeps_its_model_across_a_redis_restart(idle_stack, sources):
    worker = idle_stack.workers[0]
    idle_stack.redis.restart()
    record, enqueued = idle_stack.submit(CheckRequest(wiki="enwiki", title="Alsea (company)", revision=300, claims=[
        claim("Alsea operates Starbucks in Mexico.", sources.url("/alsea"), "c1")]))
    assert enqueued
    done = idle_stack.wait_for(record.id, timeout=120)
    assert done.status == "done"
    assert worker.alive and worker in idle_stack.workers
    assert worker.log_path.read_text().count("loaded the verifier") == 1
