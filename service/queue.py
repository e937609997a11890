"""The queue: one RQ job per Check, with the Check's id as the job id.

Every producer (the bot, the web API, benchmarks) goes through :func:`submit`, so the rules
live in one place:

- the Check row is written first (``Store.add_check`` is idempotent), then its job is queued,
  both under a per-check lock in Redis taken before anything is written: when Redis cannot be
  reached or refuses the job, a row this call created is deleted again, so a refused request
  stores nothing (a row stored by an earlier, acknowledged request is kept);
- the job id *is* the check id (``service.store.check_key``: wiki + revision + claims), and a job
  that is already queued, running or waiting for a retry is left alone, so submitting the same
  work twice runs it once;
- a Check that is done is never queued again; one that failed is queued afresh;
- jobs carry only the check id (plain JSON, RQ's JSON serializer), never pickled objects, so a
  worker on another host with another Python build can run them.

Retries back off exponentially (``retry_backoff_s``, doubled per attempt); a job longer than
``job_timeout_s`` is stopped and kept in RQ's failed-job registry with the reason.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import redis
from rq import Queue, Retry
from rq.defaults import RQ_KEY_PREFIX
from rq.exceptions import DuplicateJobError, NoSuchJobError
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from service.store import Check, CheckRequest, CheckStatus, Store, utcnow
from side.config import ServiceConfig
from side.errors import SideError

__all__ = [
    "JOB_FUNC", "PENDING_STATUSES", "RESULT_TTL_S", "FAILURE_TTL_S", "CONNECT_TIMEOUT_S",
    "REQUEUE_AFTER_S", "QueueUnavailableError", "redis_connection", "get_queue", "retry_policy",
    "fetch_job", "job_status", "delete_job", "enqueue_check", "submit", "requeue_lost", "queue_summary",
]

log = logging.getLogger(__name__)

#: Dotted path of the job function (workers import it; producers never do).
JOB_FUNC = "workers.jobs.run_check"
#: Job statuses meaning "this work is already on its way": submitting again does nothing.
PENDING_STATUSES = frozenset({JobStatus.QUEUED, JobStatus.STARTED, JobStatus.SCHEDULED, JobStatus.DEFERRED})
#: Seconds RQ keeps a finished job's return value (a small summary; the results are in the store).
RESULT_TTL_S = 24 * 3600
#: Seconds a failed job stays in the failed-job registry, with its reason.
FAILURE_TTL_S = 30 * 24 * 3600
#: Seconds to wait for a TCP connection to Redis before calling it unreachable.
CONNECT_TIMEOUT_S = 5.0
#: Seconds a queued/running check may lack a job in Redis before :func:`requeue_lost` queues it.
REQUEUE_AFTER_S = 300
#: Lock held while one process decides whether to enqueue a check (two API requests at once);
#: under RQ's key prefix (``RQ_KEY_PREFIX``), so tools sharing one Redis do not collide.
_SUBMIT_LOCK = RQ_KEY_PREFIX + ":side:submit:{}"


class QueueUnavailableError(SideError):
    """Redis, which holds the queue, cannot be reached or refused the command."""

    code = "queue_unavailable"


def _redacted(url: str) -> str:
    """The URL without its password, for error messages and logs."""
    if "@" not in url:
        return url
    scheme, _, rest = url.partition("://")
    return f"{scheme}://***@{rest.rsplit('@', 1)[1]}"


def redis_connection(url: str, check: bool = True) -> redis.Redis:
    """A Redis client for ``url``; with ``check``, ping it and fail with one clear line."""
    try:
        connection = redis.Redis.from_url(url, socket_connect_timeout=CONNECT_TIMEOUT_S,
                                          health_check_interval=30)
    except ValueError as exc:
        raise QueueUnavailableError(f"invalid Redis URL {_redacted(url)!r}: {exc}") from exc
    if check:
        try:
            connection.ping()
        except redis.RedisError as exc:
            raise QueueUnavailableError(f"cannot reach Redis at {_redacted(url)}: {exc}") from exc
    return connection


def get_queue(connection: redis.Redis, config: ServiceConfig) -> Queue:
    """The Side queue on ``connection``: JSON serializer, the configured name and job timeout."""
    return Queue(config.queue, connection=connection, serializer=JSONSerializer,
                 default_timeout=config.job_timeout_s)


def retry_policy(config: ServiceConfig) -> Retry | None:
    """``retries`` attempts after the first, waiting backoff, 2x backoff, 4x backoff, ..."""
    if config.retries <= 0:
        return None
    return Retry(max=config.retries, interval=[config.retry_backoff_s * 2**n for n in range(config.retries)])


def fetch_job(queue: Queue, check_id: str) -> Job | None:
    """The RQ job of a check, or None when Redis holds none (never queued, expired or lost)."""
    try:
        return Job.fetch(check_id, connection=queue.connection, serializer=queue.serializer)
    except NoSuchJobError:
        return None


def job_status(queue: Queue, check_id: str) -> str | None:
    """The RQ status of a check's job (``queued``, ``started``, ``failed``...), None if none."""
    job = fetch_job(queue, check_id)
    if job is None:
        return None
    status = job.get_status(refresh=False)
    return None if status is None else str(status.value if isinstance(status, JobStatus) else status)


def delete_job(job: Job) -> None:
    """Delete a finished or failed job with its results and registry entries.

    RQ 3.0's ``Job.delete`` raises ValueError when the job's execution list names an execution
    whose hash already expired (a job abandoned by a killed worker); the list is dropped then.
    """
    try:
        job.delete()
    except ValueError:
        job.connection.delete(job.execution_registry.key)
        job.delete()


def enqueue_check(queue: Queue, record: Check, config: ServiceConfig) -> bool:
    """Put a check's job on the queue unless one is pending; True when this call queued it.

    A finished or failed job left in Redis is deleted first (its registries included), so the
    new job starts clean; RQ's atomic unique enqueue guards against a concurrent producer.
    """
    job = fetch_job(queue, record.id)
    if job is not None:
        if job.get_status(refresh=False) in PENDING_STATUSES:
            return False
        delete_job(job)
    job = queue.create_job(JOB_FUNC, args=(record.id,), job_id=record.id, timeout=config.job_timeout_s,
                           result_ttl=RESULT_TTL_S, failure_ttl=FAILURE_TTL_S, retry=retry_policy(config),
                           description=f"check {record.wiki}:{record.title}@{record.revision} "
                                       f"({record.citations} citations)")
    try:
        queue.enqueue_job(job, unique=True)
    except DuplicateJobError:
        return False
    log.info("queued %s (%s %s@%s, %d citations)", record.id, record.wiki, record.title, record.revision,
             record.citations)
    return True


def submit(store: Store, queue: Queue, new: CheckRequest, config: ServiceConfig) -> tuple[Check, bool]:
    """Store the Check (idempotent) and queue its job unless it is done or already pending.

    Returns ``(record, enqueued)``. Submitting a failed check queues it again (status back to
    ``queued``); submitting a done check returns it as it is, with ``enqueued`` False (from
    the store alone, so known results are answered while Redis is down). Raises
    :class:`QueueUnavailableError` when the job cannot be queued, having stored nothing new.
    """
    known = store.check(new.id)
    if known is not None and known.status == CheckStatus.DONE:
        return known, False
    lock = queue.connection.lock(_SUBMIT_LOCK.format(new.id), timeout=30, blocking_timeout=10)
    try:
        if not lock.acquire():
            raise QueueUnavailableError(f"could not lock check {new.id} for queueing within 10 s")
    except redis.RedisError as exc:
        raise QueueUnavailableError(f"cannot queue check {new.id}: {exc}") from exc
    try:
        record, enqueued = _store_and_enqueue(store, queue, new, config)
    finally:
        try:
            lock.release()
        except redis.RedisError as exc:  # LockError included; the lock expires on its own
            log.warning("could not release the submit lock of %s: %s", new.id, exc)
    if enqueued and record.status != CheckStatus.QUEUED:
        store.requeue(record.id)
        record = store.check(record.id) or record
    return record, enqueued


def _store_and_enqueue(store: Store, queue: Queue, new: CheckRequest, config: ServiceConfig,
                       ) -> tuple[Check, bool]:
    """The part of :func:`submit` under its lock: no other submitter of this check runs it
    meanwhile, so a row this call created and then deletes was never handed to anyone."""
    record, created = store.add_check(new)
    if record.status == CheckStatus.DONE:
        return record, False
    try:
        return record, enqueue_check(queue, record, config)
    except redis.RedisError as exc:
        if created:
            _discard(store, record.id, exc)
        raise QueueUnavailableError(f"cannot queue check {record.id}: {exc}") from exc


def _discard(store: Store, check_id: str, why: Exception) -> None:
    """Delete the row of a check that could not be queued; if even that fails, the row stays
    and ``requeue_lost`` queues it later (work is never lost, only possibly done unasked)."""
    try:
        if store.discard_check(check_id):
            log.warning("could not queue new check %s, so it is not stored: %s", check_id, why)
    except Exception:  # the store's own failure must not hide the queue's
        log.exception("could not delete check %s after failing to queue it", check_id)


def requeue_lost(store: Store, queue: Queue, config: ServiceConfig, older_than_s: float = REQUEUE_AFTER_S,
                 limit: int = 200) -> list[str]:
    """Queue again the checks the store calls queued or running but Redis holds no job for.

    The store is the durable record; Redis may lose jobs (a shared Redis without persistence,
    a flushed or replaced instance). Checks younger than ``older_than_s`` are left alone: their
    producer may be between writing the row and queueing the job. Returns the check ids.
    """
    cutoff = utcnow() - timedelta(seconds=older_than_s)
    lost = []
    for status in (CheckStatus.QUEUED, CheckStatus.RUNNING):
        for record in store.checks(status=status, limit=limit):
            if record.created_at > cutoff or fetch_job(queue, record.id) is not None:
                continue
            with queue.connection.lock(_SUBMIT_LOCK.format(record.id), timeout=30, blocking_timeout=10):
                if not enqueue_check(queue, record, config):
                    continue
            if record.status != CheckStatus.QUEUED:
                store.requeue(record.id)
            log.warning("check %s was %s with no job in Redis; queued it again", record.id, record.status)
            lost.append(record.id)
    return lost


def queue_summary(queue: Queue) -> dict[str, Any]:
    """Counts per registry, cheap enough for every /healthz call."""
    return {"queued": queue.count, "started": queue.started_job_registry.count,
            "scheduled": queue.scheduled_job_registry.count, "failed": queue.failed_job_registry.count,
            "deferred": queue.deferred_job_registry.count, "finished": queue.finished_job_registry.count}
