"""``rq info`` for the API: is Redis up, how much work waits, which jobs failed and why.

The web service's ``/healthz`` and ``/metrics`` call :func:`queue_health` on every request, so
it only reads: registries are counted without RQ's cleanup (which would retry or fail
abandoned jobs from inside a web request; the workers' maintenance does that).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

import redis
from rq import Queue, Worker
from rq.job import Job
from rq.results import Result

from service.queue import _redacted, get_queue
from side.config import ServiceConfig

__all__ = [
    "RECENT_FAILURES", "failure_reason", "registry_counts", "recent_failures", "worker_states",
    "aof_enabled", "queue_health",
]

log = logging.getLogger(__name__)

#: How many of the most recent failed jobs /healthz lists with their reason.
RECENT_FAILURES = 10


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


def failure_reason(job: Job) -> str:
    """The last line of the job's latest traceback (``ExceptionClass: message``), or ``""``."""
    result = job.latest_result()
    if result is not None and result.type == Result.Type.SUCCESSFUL:
        return ""
    # A job put in the failed registry directly (not by a worker) has its reason on the job only.
    text = (result.exc_string if result is not None else None) or getattr(job, "_exc_info", None) or ""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines and result is not None and result.type == Result.Type.MAX_RETRIES_EXCEEDED:
        return "maximum retries exceeded"
    return lines[-1] if lines else ""


def registry_counts(queue: Queue) -> dict[str, int]:
    """Jobs per state, read without side effects."""
    return {"queued": queue.count,
            "started": queue.started_job_registry.get_job_count(cleanup=False),
            "scheduled": queue.scheduled_job_registry.get_job_count(cleanup=False),
            "failed": queue.failed_job_registry.get_job_count(cleanup=False),
            "deferred": queue.deferred_job_registry.get_job_count(cleanup=False),
            "finished": queue.finished_job_registry.get_job_count(cleanup=False)}


def recent_failures(queue: Queue, limit: int = RECENT_FAILURES) -> list[dict[str, Any]]:
    """The newest failed jobs (check id, when, reason), newest first."""
    ids = queue.failed_job_registry.get_job_ids(0, limit - 1, desc=True, cleanup=False)
    jobs = Job.fetch_many(ids, connection=queue.connection, serializer=queue.serializer)
    out = []
    for job_id, job in zip(ids, jobs, strict=False):
        if job is None:
            out.append({"id": job_id, "reason": "job data expired", "ended_at": None, "description": ""})
            continue
        out.append({"id": job.id, "reason": failure_reason(job), "ended_at": _iso(job.ended_at),
                    "description": job.description or ""})
    return out


def worker_states(queue: Queue) -> list[dict[str, Any]]:
    """Each worker on the queue with its state, last heartbeat and current job."""
    workers = Worker.all(queue=queue, serializer=queue.serializer)
    return [{"name": w.name, "hostname": w.hostname, "pid": w.pid, "state": w.get_state(),
             "last_heartbeat": _iso(w.last_heartbeat), "birth": _iso(w.birth_date),
             "current_job": w.get_current_job_id(), "successful_jobs": w.successful_job_count,
             "failed_jobs": w.failed_job_count, "working_seconds": round(w.total_working_time, 1)}
            for w in sorted(workers, key=lambda w: w.name)]


def aof_enabled(connection: redis.Redis) -> bool:
    """Whether this Redis appends every write to disk (INFO works where CONFIG is disabled)."""
    return bool(connection.info(section="persistence").get("aof_enabled"))


def queue_health(connection: redis.Redis, config: ServiceConfig) -> dict[str, Any]:
    """Redis reachability, counts per state, recent failures with reasons, and the workers.

    Never raises for an unreachable Redis: ``{"redis": {"ok": False, "error": ...}}`` is the
    answer, so /healthz can report it with a 503.
    """
    health: dict[str, Any] = {"redis": {"ok": False, "url": _redacted(config.redis_url)},
                              "queue": config.queue}
    try:
        info = connection.info(section="server")
        queue = get_queue(connection, config)
        health["redis"].update(ok=True, version=info.get("redis_version"))
        health["redis"]["aof"] = aof_enabled(connection)
        health["jobs"] = registry_counts(queue)
        health["failures"] = recent_failures(queue)
        health["workers"] = worker_states(queue)
    except redis.RedisError as exc:
        log.warning("queue health: Redis unreachable: %s", exc)
        health["redis"]["error"] = str(exc)
    return health
