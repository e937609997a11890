"""The LLM judge in the service: its rate budget in Redis, and the job that judges citations later.

Every worker shares one budget per endpoint (:class:`RedisRateBudget`: Lift Wing allows an
anonymous caller 100 requests an hour), counted in Redis so that restarts and several workers
never overspend it. A check whose citations the judge could not answer for (down, slow, out of
budget) keeps them in the store's ``judge_pending``; :func:`schedule_judgements` queues a job
(``workers.jobs.run_judgements``) that asks again after ``judge.retry_later_s``, and that job
queues itself again while any is left. The job's id is derived from the check, so a check never
has two such jobs waiting.
"""

from __future__ import annotations

import hashlib
import logging
import time
from datetime import timedelta

import redis
from rq import Queue
from rq.job import JobStatus

from service.queue import fetch_job

__all__ = ["JUDGE_FUNC", "RedisRateBudget", "judge_job_id", "schedule_judgements"]

log = logging.getLogger(__name__)

#: The job that judges a check's pending citations.
JUDGE_FUNC = "workers.jobs.run_judgements"
#: Seconds a judgement job may run (each call has its own deadline, judge.timeout_s).
JUDGE_JOB_TIMEOUT_S = 900


class RedisRateBudget:
    """Requests per endpoint per clock hour, counted in Redis (:class:`side.verify.judge.RateBudget`)."""

    def __init__(self, connection: redis.Redis, per_hour: int, prefix: str = "side:judge:budget") -> None:
        self.connection = connection
        self.per_hour = per_hour
        self.prefix = prefix

    def key(self, endpoint: str, now: float | None = None) -> str:
        hour = int((time.time() if now is None else now) // 3600)
        return f"{self.prefix}:{hashlib.sha1(endpoint.encode()).hexdigest()[:16]}:{hour}"

    def take(self, endpoint: str) -> bool:
        if self.per_hour <= 0:
            return True
        key = self.key(endpoint)
        with self.connection.pipeline() as pipe:
            pipe.incr(key)
            pipe.expire(key, 7200)
            count, _ = pipe.execute()
        if int(count) > self.per_hour:
            self.connection.decr(key)
            return False
        return True

    def used(self, endpoint: str) -> int:
        """Requests counted this hour."""
        return int(self.connection.get(self.key(endpoint)) or 0)


def judge_job_id(check_id: str, again: bool = False) -> str:
    """The judgement job's id: one per check; a job queuing itself again adds the time."""
    return f"judge-{check_id}-{time.time_ns()}" if again else f"judge-{check_id}"


def schedule_judgements(queue: Queue, check_id: str, delay_s: float, again: bool = False) -> bool:
    """Queue the job that judges ``check_id``'s pending citations in ``delay_s`` seconds, unless
    one is already waiting; True when this call queued it. ``again``: the job itself asks for
    the next try (it is running, so the check's own id is taken)."""
    job_id = judge_job_id(check_id, again)
    job = None if again else fetch_job(queue, job_id)
    if job is not None:
        status = job.get_status(refresh=False)
        if status in (JobStatus.QUEUED, JobStatus.SCHEDULED, JobStatus.DEFERRED, JobStatus.STARTED):
            return False
        job.delete()
    queue.enqueue_in(timedelta(seconds=max(0.0, delay_s)), JUDGE_FUNC, check_id, job_id=job_id,
                     job_timeout=JUDGE_JOB_TIMEOUT_S, description=f"judge the pending citations of {check_id}")
    log.info("check %s: pending citations to be judged in %.0f s", check_id, delay_s)
    return True
