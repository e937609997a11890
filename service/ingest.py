"""The ingest queue: one RQ job per source a check read, so the evidence corpus grows.

A check worker hands every readable source it read to :class:`Ingestor`, which keeps those
whose site's robots.txt lets Side's user agent fetch them (:class:`side.retrieval.ingest.RobotsGate`,
the rule of ``side index build --dump``; a check reads a cited page regardless, but only what a
crawler may fetch joins the corpus) and, per source:

- spools the document first (:class:`side.retrieval.ingest.IngestSpool`: an atomic, synced
  file under ``var/ingest``), so that from then on nothing can lose it: not Redis losing its
  jobs, not a worker killed before or during ingestion;
- then, under a per-document lock in Redis (as :func:`service.queue.submit` does), queues an
  ingest job whose id is ``ingest-<doc id>`` (deterministic: the doc id is the hash of the
  canonical URL), unless one is already pending; the job carries only the doc id (plain JSON).

A queue that cannot be reached never fails the check: the document stays spooled and
:func:`requeue_spooled` (run by the ingest worker's maintenance pass) queues it again. Why a
spool rather than the document inside the job: a job in Redis is only as durable as Redis
(the shared Redis may run without persistence, and a job a dead worker abandoned ends in the
failed registry); a spooled document leaves the spool only after the ingest job has written it
to the corpus and the index, so a job can be lost and queued again, never the document.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

import redis
from rq import Queue
from rq.defaults import RQ_KEY_PREFIX
from rq.exceptions import DuplicateJobError
from rq.serializers import JSONSerializer

from service.queue import FAILURE_TTL_S, PENDING_STATUSES, RESULT_TTL_S, delete_job, fetch_job, retry_policy
from side.config import ServiceConfig
from side.retrieval.ingest import IngestSpool, RobotsGate, document_of

if TYPE_CHECKING:
    from side.pipeline import ReadSource

__all__ = [
    "INGEST_JOB_FUNC", "REQUEUE_SPOOLED_AFTER_S", "ingest_job_id", "get_ingest_queue", "enqueue_ingest",
    "Ingestor", "requeue_spooled",
]

log = logging.getLogger(__name__)

#: Dotted path of the ingest job function (the ingest worker imports it; producers never do).
INGEST_JOB_FUNC = "workers.ingest.run_ingest"
#: Seconds a spooled document may lack a job before :func:`requeue_spooled` queues it (its
#: producer may be between spooling and queueing).
REQUEUE_SPOOLED_AFTER_S = 60
_INGEST_LOCK = RQ_KEY_PREFIX + ":side:ingest:{}"


def ingest_job_id(doc_id: str) -> str:
    return f"ingest-{doc_id}"


def get_ingest_queue(connection: redis.Redis, config: ServiceConfig) -> Queue:
    """The ingest queue on ``connection`` (``service.ingest_queue``), JSON serializer."""
    return Queue(config.ingest_queue, connection=connection, serializer=JSONSerializer,
                 default_timeout=config.job_timeout_s)


def enqueue_ingest(queue: Queue, doc_id: str, config: ServiceConfig) -> bool:
    """Queue the ingest job of a spooled document unless one is pending; True when queued.

    Takes the document's lock first; a finished or failed job of the same id is replaced.
    Raises ``redis.RedisError`` when Redis cannot be reached (the spool keeps the document).
    """
    job_id = ingest_job_id(doc_id)
    with queue.connection.lock(_INGEST_LOCK.format(doc_id), timeout=30, blocking_timeout=10):
        job = fetch_job(queue, job_id)
        if job is not None:
            if job.get_status(refresh=False) in PENDING_STATUSES:
                return False
            delete_job(job)
        job = queue.create_job(INGEST_JOB_FUNC, args=(doc_id,), job_id=job_id, timeout=config.job_timeout_s,
                               result_ttl=RESULT_TTL_S, failure_ttl=FAILURE_TTL_S, retry=retry_policy(config),
                               description=f"ingest {doc_id}")
        try:
            queue.enqueue_job(job, unique=True)
        except DuplicateJobError:
            return False
    return True


class Ingestor:
    """Hands the sources a check read to the corpus: robots.txt, spool, then queue (see the module).
    ``robots`` is required: without it a page robots.txt refuses would join the corpus."""

    def __init__(self, spool: IngestSpool, queue: Queue, config: ServiceConfig, robots: RobotsGate) -> None:
        self.spool = spool
        self.queue = queue
        self.config = config
        self.robots = robots

    def __call__(self, sources: Iterable[ReadSource]) -> list[str]:
        """Spool and queue each source robots.txt allows; returns the doc ids whose job this call queued."""
        queued = []
        for read in self.robots.admitted(sources):
            document = document_of(read)
            if not document.text.strip():
                continue
            self.spool.put(document)
            try:
                if enqueue_ingest(self.queue, document.doc_id, self.config):
                    queued.append(document.doc_id)
            except redis.RedisError as exc:
                log.warning("could not queue the ingestion of %s (%s); it stays spooled and is queued later",
                            document.url, exc)
        if queued:
            log.info("queued %d sources for the evidence corpus", len(queued))
        return queued


def requeue_spooled(spool: IngestSpool, queue: Queue, config: ServiceConfig,
                    older_than_s: float = REQUEUE_SPOOLED_AFTER_S) -> list[str]:
    """Queue again the spooled documents that Redis holds no pending job for (lost, failed,
    never queued), once older than ``older_than_s``. Returns their doc ids."""
    requeued = []
    for doc_id in spool.ids():
        if spool.age_s(doc_id) < older_than_s:
            continue
        job = fetch_job(queue, ingest_job_id(doc_id))
        if job is not None and job.get_status(refresh=False) in PENDING_STATUSES:
            continue
        if enqueue_ingest(queue, doc_id, config):
            log.warning("spooled document %s had no pending ingest job; queued it again", doc_id)
            requeued.append(doc_id)
    return requeued
