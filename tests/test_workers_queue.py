"""service.queue and service.health against a real Redis (own server, flushed per test)."""

from __future__ import annotations

import json
import subprocess
import sys
import zlib

import pytest
import redis
from rq.job import Job
from rq.job_lifecycle import record_job_failure

from service.health import queue_health
from service.queue import (
    JOB_FUNC,
    QueueUnavailableError,
    get_queue,
    job_status,
    redis_connection,
    requeue_lost,
    retry_policy,
    submit,
)
from service.store import CheckRequest, Store
from side.config import FetchConfig, ServiceConfig
from side.errors import SourceFetchError
from side.extract.claims import Citation, Claim
from side.sources.fetch import fetch_source
from workers.jobs import retrying

from httpserver import LocalServer, Response


def claim(text: str, url: str = "https://example.org/a") -> Claim:
    return Claim(article_title="Foo", section=("History",), text=text, left_context=text,
                 citation=Citation(id="r1", kind="external_link", url=url))


@pytest.fixture
def config(redis_db) -> ServiceConfig:
    return ServiceConfig(redis_url=redis_db.url, queue="side-test", retries=2, retry_backoff_s=5)


@pytest.fixture
def store(tmp_path) -> Store:
    store = Store.open(f"sqlite:///{tmp_path / 'side.sqlite3'}")
    yield store
    store.close()


@pytest.fixture
def queue(config):
    return get_queue(redis_connection(config.redis_url), config)


def new_check(revision: int = 1, text: str = "Foo was founded in 1990.") -> CheckRequest:
    return CheckRequest(wiki="enwiki", title="Foo", revision=revision, claims=[claim(text)], origin="bot")


def test_submitting_twice_makes_one_row_and_one_job(store, queue, config):
    first, enqueued = submit(store, queue, new_check(), config)
    again, enqueued_again = submit(store, queue, new_check(), config)
    assert (enqueued, enqueued_again) == (True, False)
    assert first.id == again.id and first.status == "queued"
    assert queue.job_ids == [first.id]
    assert len(store.checks()) == 1


def test_job_is_plain_json_with_the_check_id(store, queue, config):
    record, _ = submit(store, queue, new_check(), config)
    raw = queue.connection.hgetall(f"rq:job:{record.id}")
    data = json.loads(zlib.decompress(raw[b"data"]).decode())  # RQ compresses the serialized call
    assert data[2] == [record.id]  # (func, instance, args, kwargs)
    job = Job.fetch(record.id, connection=queue.connection, serializer=queue.serializer)
    assert job.func_name == JOB_FUNC and job.args == [record.id]
    assert job.timeout == config.job_timeout_s
    assert job.retries_left == 2 and job.retry_intervals == [5, 10]


def test_other_work_gets_another_job(store, queue, config):
    a, _ = submit(store, queue, new_check(revision=1), config)
    b, _ = submit(store, queue, new_check(revision=2), config)
    assert a.id != b.id and sorted(queue.job_ids) == sorted([a.id, b.id])


def test_a_done_check_is_not_queued_again(store, queue, config):
    record, _ = submit(store, queue, new_check(), config)
    queue.empty()
    store.start(record.id)
    store.finish(record.id, [], 1.0)
    again, enqueued = submit(store, queue, new_check(), config)
    assert not enqueued and again.status == "done" and queue.count == 0


def test_a_failed_check_is_queued_again(store, queue, config):
    record, _ = submit(store, queue, new_check(), config)
    job = Job.fetch(record.id, connection=queue.connection, serializer=queue.serializer)
    queue.remove(job)
    job.set_status("failed")
    store.fail(record.id, "RuntimeError: boom")
    again, enqueued = submit(store, queue, new_check(), config)
    assert enqueued and again.status == "queued" and again.error == ""
    assert queue.job_ids == [record.id] and job_status(queue, record.id) == "queued"


def test_a_check_whose_job_was_lost_is_queued_again(store, queue, config):
    record, _ = submit(store, queue, new_check(), config)
    store.start(record.id)
    queue.connection.flushall()  # Redis lost its data (no persistence)
    again, enqueued = submit(store, queue, new_check(), config)
    assert enqueued and again.status == "queued" and queue.job_ids == [record.id]


def test_no_retries_configured_means_no_retry_policy():
    assert retry_policy(ServiceConfig(retries=0)) is None
    assert retry_policy(ServiceConfig(retries=3, retry_backoff_s=2)).intervals == [2, 4, 8]


def test_unreachable_redis_is_one_clear_error():
    with pytest.raises(QueueUnavailableError, match="cannot reach Redis at redis://127.0.0.1:1/0"):
        redis_connection("redis://127.0.0.1:1/0")
    with pytest.raises(QueueUnavailableError, match=r"redis://\*\*\*@127.0.0.1:1/0"):
        redis_connection("redis://:secret@127.0.0.1:1/0")


def test_worker_exits_2_without_traceback_when_redis_is_down(tmp_path):
    env = {"SIDE_SERVICE_REDIS_URL": "redis://127.0.0.1:1/0", "SIDE_VAR_DIR": str(tmp_path), "PATH": "/usr/bin"}
    done = subprocess.run([sys.executable, "-m", "workers", "--no-index"], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 2
    expected = ("side-worker: error: cannot reach Redis at redis://127.0.0.1:1/0: "
                "Error 111 connecting to 127.0.0.1:1. Connection refused.")
    assert done.stderr.strip().splitlines() == [expected]  # one line, no traceback


def test_worker_exits_2_on_a_malformed_fetch_allow_entry(tmp_path):
    env = {"SIDE_FETCH_ALLOW_HOSTS": "127.0.0.1:99999", "SIDE_SERVICE_REDIS_URL": "redis://127.0.0.1:1/0",
           "SIDE_VAR_DIR": str(tmp_path), "PATH": "/usr/bin"}
    done = subprocess.run([sys.executable, "-m", "workers", "--no-index"], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "side-worker: error: fetch.allow_hosts entry '127.0.0.1:99999': port must be 1-65535"]


def test_health_counts_jobs_and_lists_failures_with_reasons(store, queue, config):
    submit(store, queue, new_check(), config)
    other, _ = submit(store, queue, new_check(revision=2), config)
    job = Job.fetch(other.id, connection=queue.connection, serializer=queue.serializer)
    queue.remove(job)
    with queue.connection.pipeline() as pipeline:  # RQ's own path for a job failed outside a worker
        record_job_failure(job, "Traceback ...\nSourceFetchError: HTTP 500 fetching x\n", pipeline)
        pipeline.execute()
    health = queue_health(queue.connection, config)
    assert health["redis"]["ok"] and health["redis"]["aof"] is True
    assert health["jobs"]["queued"] == 1 and health["jobs"]["failed"] == 1
    assert health["failures"][0]["id"] == other.id
    assert health["failures"][0]["reason"] == "SourceFetchError: HTTP 500 fetching x"
    assert health["workers"] == []
    json.dumps(health)  # the API serves it as is


def test_health_reports_unreachable_redis_without_raising():
    config = ServiceConfig(redis_url="redis://127.0.0.1:1/0")
    health = queue_health(redis_connection(config.redis_url, check=False), config)
    assert health["redis"]["ok"] is False and "Connection refused" in health["redis"]["error"]


def test_submit_says_so_when_redis_goes_away(store, config, redis_db):
    queue = get_queue(redis_connection(config.redis_url), config)
    redis_db.stop()
    try:
        with pytest.raises(QueueUnavailableError):
            submit(store, queue, new_check(), config)
        assert store.checks() == []  # refused: nothing stored for a worker to run later
    finally:
        redis_db.start()


@pytest.fixture
def refusing_queue(queue):
    """Redis answers (the submit lock works) but refuses the job: RQ's queue set is a string."""
    queue.connection.set("rq:queues", "not a set")
    yield queue
    queue.connection.delete("rq:queues")


def test_a_new_check_whose_job_is_refused_is_not_stored(store, refusing_queue, config):
    with pytest.raises(QueueUnavailableError, match="WRONGTYPE"):
        submit(store, refusing_queue, new_check(), config)
    assert store.checks() == [] and job_status(refusing_queue, new_check().id) is None
    assert requeue_lost(store, refusing_queue, config, older_than_s=0) == []  # nothing left to run later


def test_an_acknowledged_check_is_kept_when_its_requeue_is_refused(store, queue, config):
    """Resubmitting work stored by an earlier, acknowledged request never deletes it."""
    record, enqueued = submit(store, queue, new_check(), config)
    assert enqueued
    Job.fetch(record.id, connection=queue.connection, serializer=queue.serializer).delete()  # Redis lost it
    store.fail(record.id, "worker lost")
    queue.connection.set("rq:queues", "not a set")
    try:
        with pytest.raises(QueueUnavailableError):
            submit(store, queue, new_check(), config)
    finally:
        queue.connection.delete("rq:queues")
    assert store.check(record.id).status == "failed"
    again, enqueued = submit(store, queue, new_check(), config)
    assert enqueued and again.status == "queued"


# -- fetch retries (the worker's source loader) ----------------------------------------------


@pytest.fixture
def local_server():
    with LocalServer() as server:
        yield server


def test_transient_fetch_errors_are_retried_with_backoff(local_server):
    url = local_server.add("/flaky", Response(status=503, body=b"busy", content_type="text/plain"))
    good = Response(body=b"<html><body><p>Foo was founded in 1990 in Paris.</p></body></html>")
    waits: list[float] = []

    def sleep(seconds: float) -> None:  # the server recovers while we back off
        waits.append(seconds)
        if len(waits) == 2:
            local_server.add("/flaky", good)

    fetch = retrying(lambda u: fetch_source(u, FetchConfig(allow_hosts=["127.0.0.1"])), attempts=3,
                     backoff_s=0.5, sleep=sleep)
    source = fetch(url)
    assert "founded in 1990" in " ".join(source.sentences)
    assert waits == [0.5, 1.0] and local_server.hits["/flaky"] == 3


def test_permanent_fetch_errors_are_not_retried(local_server):
    url = local_server.add("/gone", Response(status=404, body=b"no", content_type="text/plain"))
    waits: list[float] = []
    fetch = retrying(lambda u: fetch_source(u, FetchConfig(allow_hosts=["127.0.0.1"])), sleep=waits.append)
    with pytest.raises(SourceFetchError, match="HTTP 404"):
        fetch(url)
    assert waits == [] and local_server.hits["/gone"] == 1


def test_retries_give_up_after_the_last_attempt(local_server):
    url = local_server.add("/down", Response(status=502, body=b"", content_type="text/plain"))
    waits: list[float] = []
    fetch = retrying(lambda u: fetch_source(u, FetchConfig(allow_hosts=["127.0.0.1"])), attempts=3,
                     backoff_s=0.1, sleep=waits.append)
    with pytest.raises(SourceFetchError, match="HTTP 502"):
        fetch(url)
    assert waits == [0.1, 0.2] and local_server.hits["/down"] == 3


@pytest.mark.parametrize("transient", [True, False])
def test_retries_follow_the_error_s_transient_field_not_its_message(transient):
    """The same words either way: only the field decides."""
    calls: list[str] = []

    def fetch(url: str):
        calls.append(url)
        raise SourceFetchError("HTTP 503 fetching x timed out", status=503, transient=transient)

    with pytest.raises(SourceFetchError):
        retrying(fetch, attempts=3, sleep=lambda s: None)("https://example.org/x")
    assert len(calls) == (3 if transient else 1)


def test_retries_stop_at_the_source_s_deadline(local_server):
    """A transient failure is not tried again when its backoff would pass the deadline."""
    import time

    url = local_server.add("/busy", Response(status=503, body=b"busy", content_type="text/plain"))
    waits: list[float] = []
    fetch = retrying(lambda u, deadline=None: fetch_source(u, FetchConfig(allow_hosts=["127.0.0.1"]),
                                                           deadline=deadline),
                     attempts=3, backoff_s=1.0, sleep=waits.append)
    with pytest.raises(SourceFetchError, match="HTTP 503") as caught:
        fetch(url, deadline=time.monotonic() + 1.5)
    assert caught.value.transient and waits == [] and local_server.hits["/busy"] == 1


def test_redis_server_fixture_keeps_data_across_a_crash(redis_db):
    with redis_db.client() as client:
        client.set("k", "v")
    redis_db.restart(kill=True)
    with redis_db.client() as client:
        assert client.get("k") == b"v"
    with pytest.raises(redis.ConnectionError):
        redis_db.stop()
        redis.Redis.from_url(redis_db.url, socket_connect_timeout=0.5).ping()
    redis_db.start()


def test_checks_whose_jobs_redis_lost_are_queued_again(store, queue, config):
    waiting, _ = store.add_check(new_check(revision=1))  # row written, job never queued
    running, _ = submit(store, queue, new_check(revision=2), config)
    store.start(running.id)
    pending, _ = submit(store, queue, new_check(revision=3), config)
    queue.connection.delete(f"rq:job:{running.id}")  # lost from Redis mid-run
    assert requeue_lost(store, queue, config, older_than_s=60) == []  # too young: producer may be busy
    assert sorted(requeue_lost(store, queue, config, older_than_s=0)) == sorted([waiting.id, running.id])
    assert store.check(running.id).status == "queued"
    assert job_status(queue, waiting.id) == job_status(queue, pending.id) == "queued"
    assert requeue_lost(store, queue, config, older_than_s=0) == []


def test_a_dead_scheduler_s_lock_is_released_and_a_stalled_one_steps_aside(redis_db):
    """A running scheduler keeps its lock's TTL near interval + 60 s. A lock whose TTL fell
    ``STALE_SCHEDULER_LOCK_S`` below that was left by a killed worker: it is released, and a
    live worker's scheduler takes it at once instead of a minute later. A holder that was only
    stalled drops the lock at its next refresh (RQ's own rule), so one scheduler runs."""
    from rq.scheduler import RQScheduler

    from workers.worker import STALE_SCHEDULER_LOCK_S, release_stale_scheduler_locks

    conn = redis.Redis.from_url(redis_db.url)
    fresh, stale, absent = (RQScheduler.get_locking_key(q) for q in ("fresh", "stale", "absent"))
    conn.set(fresh, "host:1:live", ex=61)
    conn.set(stale, "host:2:killed", ex=61 - STALE_SCHEDULER_LOCK_S - 1)
    assert release_stale_scheduler_locks(conn, ["fresh", "stale", "absent"], interval=1) == ["stale"]
    assert conn.get(fresh) == b"host:1:live" and conn.get(stale) is None and conn.get(absent) is None
    conn.set(stale, "not rq's")  # a key without expiry is no scheduler's lock: never touched
    assert release_stale_scheduler_locks(conn, ["stale"], interval=1) == [] and conn.get(stale) == b"not rq's"
    conn.delete(stale)

    stalled, live = (RQScheduler(["stale"], connection=conn) for _ in range(2))
    stalled.acquire_locks()
    assert stalled.acquired_locks == {"stale"}
    live.acquire_locks()
    assert live.acquired_locks == set()  # a held lock is not taken
    conn.expire(stale, 61 - STALE_SCHEDULER_LOCK_S - 1)  # its holder stopped refreshing it
    assert release_stale_scheduler_locks(conn, ["stale"], interval=1) == ["stale"]
    live.acquire_locks()
    assert live.acquired_locks == {"stale"} and conn.get(stale).decode() == live.name
    stalled.heartbeat()  # the stalled holder wakes up and finds the lock taken
    assert stalled.acquired_locks == set() and conn.get(stale).decode() == live.name


def test_a_reader_takes_checks_only_while_a_scorer_beats(store, queue, config, monkeypatch, caplog):
    """A reader with no live scorer would hold checks that no one scores; it leaves them in the
    queue (for full workers) until a scorer beats, keeping its own heartbeat meanwhile."""
    import dataclasses
    import threading
    import time

    from service.stream import SCORER_MAX_AGE_S, beat_scorer, live_scorers, stream_key
    from side.config import load_config
    from workers import worker as worker_module

    monkeypatch.setattr(worker_module, "GATE_WAIT_S", 0.05)
    record, _ = submit(store, queue, new_check(), config)
    args = worker_module.build_parser().parse_args(["--role", "reader"])
    side_config = dataclasses.replace(load_config(), service=config)
    reader = worker_module.make_worker(side_config, args, queue.connection, store, "reader-1")
    key = stream_key(config)

    assert reader.work(burst=True) is False  # no scorer: nothing taken
    assert queue.job_ids == [record.id]
    beat_scorer(queue.connection, key, "gone", now=time.time() - SCORER_MAX_AGE_S - 1)
    assert live_scorers(queue.connection, key) == 0  # a beat older than the probe's limit is no scorer

    reader.register_birth()
    waiting = threading.Thread(target=reader._wait_for_gate, kwargs={"burst": False}, daemon=True)
    with caplog.at_level("INFO", logger="workers.worker"):
        waiting.start()
        time.sleep(0.5)
        assert waiting.is_alive() and queue.job_ids == [record.id]
        assert reader.last_heartbeat is not None  # the waiting reader stays alive for workers.probe
        beat_scorer(queue.connection, key, "gpu0")
        waiting.join(5)
    assert not waiting.is_alive()
    assert [r.message for r in caplog.records if "scorer" in r.message] == [
        "no live scorer: taking no check until one beats (the checks stay queued for full workers or a scorer)",
        "a scorer is alive: taking checks again"]
    job, _ = reader.dequeue_job_and_maintain_ttl(None)
    assert job.id == record.id

    full = worker_module.make_worker(side_config, worker_module.build_parser().parse_args([]), queue.connection,
                                     store, "full-1")
    assert full.gate is None  # a full worker takes checks whatever the scorers do
