"""``side-worker``: load the verifier and the evidence index once, then run Side's jobs.

    side-worker                       # the queue and Redis of side.toml / SIDE_SERVICE_*
    side-worker --burst               # run what is queued, then exit
    side-worker --name gpu1 --max-jobs 500
    side-worker --ingest              # the corpus ingestion queue (service.ingest_queue)
    side-worker --role reader         # prepare checks on CPUs for the scorers (no model)
    side-worker --role scorer         # score the readers' prepared checks, many at once

Why a non-forking worker: RQ's default worker forks a child per job, which would reload the
model per job (or fork a process that holds CUDA state, which CUDA does not survive). Side's
worker is an ``rq.SimpleWorker`` subclass that runs every job in the process that loaded the
model, and adds what SimpleWorker lacks:

- heartbeats *during* a job, from a thread, so a long job is not mistaken for an abandoned
  one, while a worker killed with ``kill -9`` stops heartbeating and its job is retried (or
  failed with ``AbandonedJobError``) by the next maintenance pass of any worker;
- RQ's scheduler (which moves retries whose backoff has elapsed back onto the queue) in a
  thread instead of a forked process;
- a maintenance pass that marks checks ``failed`` in the results store when RQ gave up on
  their job without running our code (abandoned by a dead worker), so no check stays
  ``running`` forever;
- a work loop that survives Redis restarts: the model stays loaded while Redis comes back.

``--ingest`` runs the ingest queue instead (:mod:`workers.ingest`): it loads only the passage
encoder, adds the sources that checks read to the evidence corpus, and its maintenance pass
queues again the spooled documents that have no job (:func:`service.ingest.requeue_spooled`).
A check worker hands its sources to that queue unless started with ``--no-ingest``.

``--role reader`` and ``--role scorer`` split a check's work between processes (the default
role, ``full``, does all of it). A reader takes check jobs from the same RQ queue while a
scorer is alive (so that a check it takes is scored; with none, the jobs stay for full workers), loads no
model, reads and prepares the check's citations (:class:`side.prepared.Preparer`) and adds the
prepared check to a Redis stream (:mod:`service.stream`); a scorer, one per GPU, loads the
models and scores the prepared checks of every reader, many checks per pass of the models
(:mod:`workers.scorer`), storing each check's Results before acknowledging its entry.
"""

from __future__ import annotations

import argparse
import dataclasses
import faulthandler
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis
from rq import SimpleWorker
from rq.job import Job
from rq.queue import Queue
from rq.scheduler import RQScheduler
from rq.serializers import JSONSerializer
from rq.worker import WorkerStatus

from service.health import failure_reason
from service.ingest import get_ingest_queue, requeue_spooled
from service.liveness import beating
from service.queue import REQUEUE_AFTER_S, QueueUnavailableError, get_queue, redis_connection, requeue_lost
from service.store import CheckStatus
from service.stream import DEFAULT_MAX_ENTRIES, DEFAULT_MIN_IDLE_MS, add_prepared, live_scorers, stream_key
from side.cli.checks import above, at_least, folder_to_write
from side.config import Config, ServiceConfig, load_config
from side.errors import SideError
from workers.jobs import WorkerContext, set_context
from workers.scorer import DEFAULT_BATCH_CHECKS, DEFAULT_BATCH_CITATIONS, Scorer

log = logging.getLogger(__name__)

#: Seconds between heartbeats while a job runs; a worker silent for 3x this is presumed dead.
DEFAULT_HEARTBEAT_S = 30
#: Seconds between maintenance passes (abandoned jobs, expired registries, store reconciliation).
DEFAULT_MAINTENANCE_S = 60
#: Most recent failed jobs compared with the store on each maintenance pass.
RECONCILE_LIMIT = 100
#: Seconds between reconnection attempts after Redis went away.
RECONNECT_S = 2.0
#: Seconds a scheduler lock may go unrefreshed before its holder is taken for dead. A running
#: scheduler sets its lock's TTL to its interval + 60 s (RQ's constant) every interval (1 s), so
#: the lock of one that has not refreshed it for this long belongs to a killed worker; RQ would
#: keep it for up to a minute, and the retries due would wait that long.
STALE_SCHEDULER_LOCK_S = 15
#: Deletes the lock (KEYS[1]) if its TTL has fallen below ARGV[1] seconds and returns its holder
#: (else nil), atomically, so a lock refreshed between the test and the delete is kept.
_RELEASE_STALE_LOCK = """
local ttl = redis.call('ttl', KEYS[1])
if ttl >= 0 and ttl < tonumber(ARGV[1]) then
  local holder = redis.call('get', KEYS[1])
  redis.call('del', KEYS[1])
  return holder
end
return false
"""
#: Seconds a reader waits between two looks for a live scorer while none is there.
GATE_WAIT_S = 5.0
#: Most of a job's timeout a check may spend fetching its sources (the rest is for verifying).
JOB_FETCH_SHARE = 0.5


class ThreadScheduler(RQScheduler):
    """RQ's scheduler run in a thread of the worker: RQ forks a process for it otherwise."""

    def _install_signal_handlers(self) -> None:
        """Signals belong to the worker's main thread; the worker stops this scheduler."""

    def start(self) -> threading.Thread:  # type: ignore[override]
        self._status = self.Status.STARTED
        self._stop_requested = False
        thread = threading.Thread(target=self._run, name="rq-scheduler", daemon=True)
        self._process = thread  # type: ignore[assignment]
        thread.start()
        return thread

    def _run(self) -> None:
        while not self._stop_requested:
            try:
                self.work()
            except redis.RedisError as exc:
                log.warning("scheduler: Redis unavailable (%s); retrying in %.0f s", exc, RECONNECT_S)
                time.sleep(RECONNECT_S)


def release_stale_scheduler_locks(connection: redis.Redis, queue_names: list[str], interval: float) -> list[str]:
    """The queues whose scheduler lock was left by a dead scheduler, released so that a live
    worker's scheduler can take it now (RQ's maintenance asks for it right after).

    A holder that was only stalled steps aside: RQ's scheduler drops a lock it finds another
    scheduler holding at its next refresh, so one scheduler runs a queue at a time.
    """
    release = connection.register_script(_RELEASE_STALE_LOCK)
    below = int(interval + 60 - STALE_SCHEDULER_LOCK_S)
    released = []
    for name in queue_names:
        holder = release(keys=[RQScheduler.get_locking_key(name)], args=[below])
        if holder is not None:
            log.info("scheduler lock of queue %r released: its holder %s stopped refreshing it",
                     name, holder.decode(errors="replace") if isinstance(holder, bytes) else holder)
            released.append(name)
    return released


class SideWorker(SimpleWorker):
    """A SimpleWorker with heartbeats during jobs, a threaded scheduler and store reconciliation."""

    def __init__(self, *args: Any, store: Any = None, service: ServiceConfig | None = None,
                 requeue_after_s: float = REQUEUE_AFTER_S, spool: Any = None,
                 gate: Callable[[], bool] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.store = store
        #: Whether this worker may take a job now (None: always). A reader's gate is "a scorer is
        #: alive": a check it took with none there would stay running until one came.
        self.gate = gate
        self._gate_shut = False
        #: The ingest spool, on an ingest worker: maintenance queues again what lost its job.
        self.spool = spool
        self.service = service
        self.requeue_after_s = requeue_after_s
        self.jobs_done = 0
        #: Set by SIGTERM/SIGINT: the work loop ended on purpose and is not to be restarted.
        self.stop_asked = False
        self._beating: threading.Event | None = None
        self._beat_thread: threading.Thread | None = None

    def request_stop(self, signum: int, frame: Any) -> None:
        self.stop_asked = True
        super().request_stop(signum, frame)

    # -- heartbeats during a job ------------------------------------------------------------

    def get_heartbeat_ttl(self, job: Job, working_time: float = 0.0) -> int:
        """Short TTLs renewed by the heartbeat thread: a killed worker's job expires in ~3 beats."""
        interval = self.job_monitoring_interval
        if job.timeout and job.timeout > 0:
            interval = min(interval, max(1, int(job.timeout - working_time)))
        return int(interval + 2 * self.job_monitoring_interval)

    def execute_job(self, job: Job, queue: Queue) -> None:
        execution = self.prepare_execution(job)
        with self._heartbeats(job, execution):
            self.perform_job(job, queue, execution)
        self.set_state(WorkerStatus.IDLE)
        self.jobs_done += 1

    @contextmanager
    def _heartbeats(self, job: Job, execution: Any) -> Iterator[None]:
        """The job's heartbeats from a thread while it runs (RQ keeps it alive only between jobs)."""
        with beating(self.job_monitoring_interval, lambda: self.maintain_heartbeats(job, execution),
                     f"heartbeat-{job.id}") as stop:
            self._beating = stop
            yield

    def handle_execution_ended(self, job: Job, queue: Queue, heartbeat_ttl: int) -> None:
        """Stop heartbeating before RQ records the outcome, so no beat lands after it."""
        if self._beating is not None:
            self._beating.set()
        super().handle_execution_ended(job, queue, heartbeat_ttl)

    # -- taking jobs only while the gate is open ---------------------------------------------

    def dequeue_job_and_maintain_ttl(self, timeout: int | None,
                                     max_idle_time: int | None = None) -> tuple[Job, Queue] | None:
        """RQ's dequeue, once the gate is open; in burst mode (``timeout`` None) a shut gate
        means nothing to do."""
        if self.gate is not None and not self._wait_for_gate(burst=timeout is None):
            return None
        return super().dequeue_job_and_maintain_ttl(timeout, max_idle_time)

    def _wait_for_gate(self, burst: bool) -> bool:
        """Wait, beating and running maintenance as an idle worker does, until the gate opens
        (True); False at once in burst mode. A SIGTERM meanwhile stops the worker as when idle."""
        assert self.gate is not None
        while not self.gate():
            if burst:
                return False
            if not self._gate_shut:
                log.warning("no live scorer: taking no check until one beats (the checks stay queued for "
                            "full workers or a scorer)")
                self._gate_shut = True
            self.set_state(WorkerStatus.IDLE)
            self.heartbeat()
            if self.should_run_maintenance_tasks:
                self.run_maintenance_tasks()
            time.sleep(GATE_WAIT_S)
        if self._gate_shut:
            log.info("a scorer is alive: taking checks again")
            self._gate_shut = False
        return True

    # -- scheduler in a thread --------------------------------------------------------------

    def _start_scheduler(self, burst: bool = False, logging_level: str | None = "INFO",
                         date_format: str = "", log_format: str = "") -> None:
        self.scheduler = ThreadScheduler(self.queues, connection=self.connection, serializer=self.serializer,
                                         logging_level=logging_level or "INFO")
        self.scheduler.acquire_locks()
        if not self.scheduler.acquired_locks:
            return
        if burst:
            try:
                self.scheduler.register_birth()
                self.scheduler.enqueue_scheduled_jobs()
            finally:
                self.scheduler.release_locks()
                self.scheduler.register_death()
        else:
            self.scheduler.start()

    def stop_scheduler(self) -> None:
        if self.scheduler is None:
            return
        self.scheduler.request_stop()
        thread = self.scheduler._process
        if isinstance(thread, threading.Thread) and thread is not threading.current_thread():
            thread.join(timeout=self.scheduler.interval + 5)

    # -- maintenance ------------------------------------------------------------------------

    def run_maintenance_tasks(self) -> None:
        """A dead scheduler's lock released, RQ's cleanup (which starts this worker's scheduler
        when it holds no lock), then the store brought in line with what Redis knows (and lost)."""
        scheduler = self.scheduler
        running = scheduler is not None and scheduler._process is not None and scheduler._process.is_alive()
        if scheduler is not None and self.last_cleaned_at and not running:
            try:
                release_stale_scheduler_locks(self.connection, self.queue_names(), scheduler.interval)
            except redis.RedisError as exc:
                log.warning("scheduler locks not checked: %s", exc)
        super().run_maintenance_tasks()
        if (self.store is None and self.spool is None) or self.service is None:
            return
        for queue in self.queues:
            if not queue.acquire_maintenance_lock():  # one worker at a time reconciles
                continue
            try:
                if self.spool is not None:
                    requeue_spooled(self.spool, queue, self.service, self.requeue_after_s)
                if self.store is not None:
                    mark_failed_checks(self.store, queue)
                    requeue_lost(self.store, queue, self.service, self.requeue_after_s)
            except Exception as exc:  # noqa: BLE001 - the store may be down; the next pass retries
                log.warning("store reconciliation skipped: %s", exc)
            finally:
                queue.release_maintenance_lock()


def mark_failed_checks(store: Any, queue: Queue, limit: int = RECONCILE_LIMIT) -> int:
    """Mark ``failed`` (with RQ's reason) the checks whose job RQ failed without running our code.

    That is a job abandoned by a worker that died (``kill -9``, OOM) and had no retries left:
    RQ moves it to the failed registry from its maintenance, and the store row would otherwise
    stay ``running``. Returns how many rows changed.
    """
    ids = queue.failed_job_registry.get_job_ids(0, limit - 1, desc=True, cleanup=False)
    changed = 0
    for job_id in ids:
        record = store.check(job_id)
        if record is None or record.status not in (CheckStatus.QUEUED, CheckStatus.RUNNING):
            continue
        job = Job.fetch_many([job_id], connection=queue.connection, serializer=queue.serializer)[0]
        reason = (failure_reason(job) if job else "") or "job failed in the queue (no reason recorded)"
        log.warning("check %s: its job failed outside the worker: %s", job_id, reason)
        store.fail(job_id, reason)
        changed += 1
    return changed


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="side-worker",
        description="Run Side's check jobs from the Redis queue. The verifier model and the "
        "evidence index are loaded once, before the first job; jobs run in this process "
        "(no fork), on CUDA when available, else CPU.",
        epilog="Redis, the queue, the database and timeouts come from the [service] section of "
        "side.toml or SIDE_SERVICE_* variables (e.g. SIDE_SERVICE_REDIS_URL).",
    )
    p.add_argument("--config", type=Path, help="TOML configuration file (default: $SIDE_CONFIG or ./side.toml)")
    p.add_argument("--queue", help="queue name (default: service.queue, 'side')")
    p.add_argument("--burst", action="store_true", help="run the jobs already queued, then exit")
    p.add_argument("--name", help="worker name shown in health checks (default: host.pid, unique per "
                   "process; a fixed name lets only one worker of that name run at a time)")
    p.add_argument("--max-jobs", type=int, metavar="N", help="exit after N jobs (let a supervisor restart)")
    p.add_argument("--index", type=Path, help="evidence index directory (default: var/index when built)")
    p.add_argument("--no-index", action="store_true", help="no corpus suggestions (score cited sources only)")
    p.add_argument("--ingest", action="store_true", help="run the corpus ingestion queue (service.ingest_queue): "
                   "add the sources checks read to the evidence index (--index, default var/index)")
    p.add_argument("--no-ingest", action="store_true", help="do not hand the sources a check reads to the "
                   "evidence corpus")
    p.add_argument("--heartbeat", type=int, default=DEFAULT_HEARTBEAT_S, metavar="S",
                   help=f"seconds between heartbeats during a job (default {DEFAULT_HEARTBEAT_S}); "
                   "a worker silent for 3x this is taken for dead and its job retried; scorer: between "
                   "the heartbeats workers.probe --role scorer reads")
    p.add_argument("--maintenance", type=int, default=DEFAULT_MAINTENANCE_S, metavar="S",
                   help=f"seconds between maintenance passes that recover abandoned jobs "
                   f"(default {DEFAULT_MAINTENANCE_S})")
    p.add_argument("--requeue-after", type=int, default=REQUEUE_AFTER_S, metavar="S",
                   help=f"queue again checks the store has waited on for S seconds with no job in Redis, "
                   f"e.g. after Redis lost its data (default {REQUEUE_AFTER_S})")
    p.add_argument("--role", choices=("full", "reader", "scorer"), default="full",
                   help="full: read and score each check (default); reader: read and prepare checks for the "
                   "scorers, no model; scorer: score the readers' prepared checks, many at once")
    p.add_argument("--batch-checks", type=int, default=DEFAULT_BATCH_CHECKS, metavar="N",
                   help=f"scorer: checks scored together at most (default {DEFAULT_BATCH_CHECKS})")
    p.add_argument("--batch-citations", type=int, default=DEFAULT_BATCH_CITATIONS, metavar="N",
                   help=f"scorer: a batch takes further checks while under N citations "
                   f"(default {DEFAULT_BATCH_CITATIONS})")
    p.add_argument("--claim-after", type=float, default=DEFAULT_MIN_IDLE_MS / 1000, metavar="S",
                   help="scorer: take over prepared checks another scorer has held for S seconds without "
                   f"storing them (a dead scorer's; default {DEFAULT_MIN_IDLE_MS / 1000:g})")
    p.add_argument("--max-prepared", type=int, default=DEFAULT_MAX_ENTRIES, metavar="N",
                   help=f"reader: wait while N prepared checks wait for a scorer (default {DEFAULT_MAX_ENTRIES})")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    return p


def with_fetch_budget(config: Config) -> Config:
    """``config`` with a check's fetch budget of at most half the job timeout, so that a check
    whose sources are all slow still has time to verify the ones that arrived."""
    limit = config.service.job_timeout_s * JOB_FETCH_SHARE
    if config.fetch.check_budget_s <= limit:
        return config
    log.info("fetch budget per check: %g s (half the job timeout), not %g s", limit, config.fetch.check_budget_s)
    return dataclasses.replace(config, fetch=dataclasses.replace(config.fetch, check_budget_s=limit))


def load_pipeline(config: Config, args: argparse.Namespace, cascade: Any = None):
    """The Pipeline with the model and index loaded, warmed up by one tiny verification; ``cascade``
    sends uncertain citations to the LLM judge (None: the judge is off)."""
    from side.pipeline import Pipeline
    from side.sources.fetch import fetch_source
    from side.verify.verifier import Query
    from workers.jobs import retrying

    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # a log file is no place for progress bars
    except ImportError:
        pass
    started = time.monotonic()
    config = with_fetch_budget(config)
    fetch = retrying(lambda url, deadline=None: fetch_source(url, config.fetch, config.cache_dir, deadline))
    pipeline = Pipeline.from_config(config, index_dir=args.index, use_index=not args.no_index, fetch=fetch,
                                    cascade=cascade)
    pipeline.verifier.verify_many([(Query("Side checks citations."), ["Side checks citations."])])
    log.info("loaded the verifier on %s (%s)%s in %.1f s", pipeline.verifier.cross_encoder.device,
             pipeline.verifier.cross_encoder.precision,
             "" if pipeline.retriever is None else f" and an index of {len(pipeline.retriever.corpus.documents)} "
             "documents", time.monotonic() - started)
    return pipeline


def load_reader_context(config: Config, args: argparse.Namespace, connection: redis.Redis, store: Any,
                        ) -> WorkerContext:
    """A reader's context: the preparer (fetching with retries, no model) and the stream."""
    from side.prepared import Preparer
    from side.sources.fetch import fetch_source
    from workers.jobs import retrying

    config = with_fetch_budget(config)
    fetch = retrying(lambda url, deadline=None: fetch_source(url, config.fetch, config.cache_dir, deadline))
    key = stream_key(config.service)
    return WorkerContext(store=store, pipeline=None,
                         ingest=None if args.no_ingest else make_ingestor(config, connection),
                         preparer=Preparer.from_config(config, fetch=fetch),
                         handoff=lambda check_id, prepared: add_prepared(connection, key, check_id, prepared,
                                                                        args.max_prepared))


def load_ingest_context(config: Config, args: argparse.Namespace):
    """What an ingest worker keeps loaded: the passage encoder, the index and spool folders."""
    from side.retrieval.encoder import shared_encoder
    from side.retrieval.ingest import IngestSpool
    from side.threads import apply_inference_threads
    from workers.ingest import IngestContext

    milvus = None
    if config.retrieval.backend == "milvus":
        from side.retrieval.milvus import MilvusSettings

        milvus = MilvusSettings.from_config(config)
    started = time.monotonic()
    apply_inference_threads(config.verifier.threads)
    encoder = shared_encoder(config.verifier.device, model=config.encoder.model)
    log.info("loaded the passage encoder in %.1f s", time.monotonic() - started)
    return IngestContext(Path(args.index or config.index_dir), IngestSpool(config.ingest_spool_dir), encoder,
                         config.retrieval.backend, milvus, config.retrieval.passage_words,
                         config.retrieval.passage_stride, config.retrieval.faiss_index)


def make_ingestor(config: Config, connection: redis.Redis):
    """The check worker's hand-over of the sources it reads to the ingest queue."""
    from service.ingest import Ingestor, get_ingest_queue
    from side.retrieval.ingest import IngestSpool, RobotsGate

    return Ingestor(IngestSpool(config.ingest_spool_dir), get_ingest_queue(connection, config.service),
                    config.service, RobotsGate(config.fetch))


def make_judge(config: Config, connection: redis.Redis, store: Any):
    """The LLM judge with its budget in Redis and its cache in the store (None when it is off)."""
    if config.judge.active_mode == "off":
        return None
    from service.judging import RedisRateBudget
    from service.store.judging import StoreJudgeCache
    from side.verify.judge import Judge

    judge = Judge.from_config(config, RedisRateBudget(connection, config.judge.rate_per_hour),
                              StoreJudgeCache(store.engine))
    log.info("LLM judge: %s (%s), mode %s, band [%g, %g)", config.judge.endpoint, config.judge.model or "its model",
             config.judge.mode, config.judge.band_low, config.judge.band_high)
    return judge


def make_judgement_scheduler(config: Config, connection: redis.Redis):
    """Queues a check's later judgement on the check queue, ``judge.retry_later_s`` from now."""
    from service.judging import schedule_judgements

    queue = get_queue(connection, config.service)
    return lambda check_id, again=False: schedule_judgements(queue, check_id, config.judge.retry_later_s, again)


def make_prioritizer(config: Config):
    """The patrol queue's priorities with ``[priority]``'s weights; page histories are read from
    the wikis ``service.wiki_urls`` names or Side knows (a wiki it cannot reach: no history)."""
    from side.extract.wikiapi import api_url_of
    from side.priority import Prioritizer

    return Prioritizer(config.priority, api_url=lambda wiki: api_url_of(wiki, config.service.wiki_urls))


def make_worker(config: Config, args: argparse.Namespace, connection: redis.Redis, store: Any,
                name: str) -> SideWorker:
    spool = None
    if getattr(args, "ingest", False):
        from side.retrieval.ingest import IngestSpool

        queue, spool = get_ingest_queue(connection, config.service), IngestSpool(config.ingest_spool_dir)
    else:
        queue = get_queue(connection, config.service)
    gate = None
    if getattr(args, "role", "full") == "reader":
        key = stream_key(config.service)
        gate = lambda: live_scorers(connection, key) > 0  # noqa: E731
    return SideWorker([queue], connection=connection, name=name, serializer=JSONSerializer, store=store,
                      service=config.service, requeue_after_s=args.requeue_after, spool=spool, gate=gate,
                      job_monitoring_interval=args.heartbeat, maintenance_interval=args.maintenance,
                      worker_ttl=max(20, args.maintenance + 15))


def wait_for_redis(connection: redis.Redis) -> None:
    """Block until Redis answers again (it restarts; our model stays loaded meanwhile)."""
    while True:
        try:
            connection.ping()
            return
        except redis.RedisError as exc:
            log.warning("Redis unavailable (%s); retrying in %.0f s", exc, RECONNECT_S)
            time.sleep(RECONNECT_S)


def default_worker_name() -> str:
    """``host.pid``: unique per live process, so replicas (one pod each) can all register.

    RQ refuses a second live worker under a name already registered, so a fixed name would
    let only one replica start. ``workers.probe`` finds this container's worker by the host
    part.
    """
    return f"{socket.gethostname()}.{os.getpid()}"


def serve(config: Config, args: argparse.Namespace, connection: redis.Redis, store: Any) -> int:
    """Run work loops until stopped; a loop ended by a Redis outage is started again."""
    name = args.name or default_worker_name()
    remaining = args.max_jobs
    while True:
        worker = make_worker(config, args, connection, store, name)
        try:
            worker.work(burst=args.burst, max_jobs=remaining, with_scheduler=True,
                        logging_level="DEBUG" if args.verbose else "INFO")
        except redis.RedisError as exc:
            log.warning("work loop stopped: Redis unavailable (%s)", exc)
        if remaining is not None:
            remaining -= worker.jobs_done
        if worker.stop_asked or worker._stop_requested or args.burst or (remaining is not None and remaining <= 0):
            return 0
        wait_for_redis(connection)
        try:
            worker.register_death()  # lets the next loop register under the same name
        except redis.RedisError:
            pass
        log.info("restarting the work loop")


def check_numbers(args: argparse.Namespace) -> None:
    """The options' bounds, before Redis or a model is touched: a zero batch spun without
    scoring, a negative --claim-after was sent to XAUTOCLAIM and logged as "Redis unavailable"
    each loop, and the other counts were taken as they came."""
    at_least(1, heartbeat=args.heartbeat, maintenance=args.maintenance, requeue_after=args.requeue_after,
             max_jobs=args.max_jobs, batch_checks=args.batch_checks, batch_citations=args.batch_citations)
    above(0, claim_after=args.claim_after)
    at_least(0, max_prepared=args.max_prepared)  # 0: readers never wait


def trace_native_crashes() -> None:
    """On a crash in a library's C code (a segfault, glibc's abort on a bad ``free``), print every
    thread's Python stack to stderr, the worker's log: otherwise the worker ends with one line
    from libc and nothing says which job or library was running. A stderr with no file
    descriptor (``main`` called in-process under a test's capture) has nowhere for the C handler
    to write, and is left as it is."""
    try:
        faulthandler.enable(all_threads=True)
    except (OSError, RuntimeError, ValueError):  # io.UnsupportedOperation: no fileno; None: no stderr
        log.debug("stderr has no file descriptor; native crashes will not print Python stacks")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    trace_native_crashes()
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("alembic", "httpx", "urllib3", "filelock", "transformers", "sentence_transformers"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        check_numbers(args)
        config = load_config(args.config)
        from side.sources.netguard import AllowList

        AllowList.parse(config.fetch.allow_hosts)  # a malformed entry stops the worker here, not each fetch
        if args.ingest and args.no_ingest:
            raise SideError("--ingest and --no-ingest exclude each other")
        if args.queue and args.ingest:
            config.service.ingest_queue = args.queue
        elif args.queue:
            config.service.queue = args.queue
        if args.role != "full" and args.ingest:
            raise SideError(f"--role {args.role} and --ingest exclude each other")
        if args.ingest:  # else every ingest job would fail on it
            folder_to_write(args.index or config.index_dir, "index")
        connection = redis_connection(config.service.redis_url)
        if args.ingest:
            return _serve_ingest(config, args, connection)
        from service.store import Store

        store = Store.open(config.database_url)
    except (SideError, QueueUnavailableError) as exc:
        print(f"side-worker: error: {exc}", file=sys.stderr)
        return 2
    if args.role == "reader":
        set_context(load_reader_context(config, args, connection, store))
        log.info("reader: results store %s; queue %r; prepared checks to %s",
                 store.engine.url.render_as_string(hide_password=True), config.service.queue,
                 stream_key(config.service))
        try:
            return serve(config, args, connection, store)
        except KeyboardInterrupt:
            return 130
        finally:
            store.close()
    try:
        from side.verify.cascade import Cascade

        judge = make_judge(config, connection, store)
        cascade = Cascade.from_config(config, judge) if judge is not None else None
        context = WorkerContext(store=store, pipeline=load_pipeline(config, args, cascade),
                                ingest=None if args.no_ingest else make_ingestor(config, connection),
                                prioritize=make_prioritizer(config), judge=judge,
                                schedule_judgements=make_judgement_scheduler(config, connection))
        set_context(context)
    except SideError as exc:  # a damaged model or index folder: the message names the file
        print(f"side-worker: error: {exc}", file=sys.stderr)
        store.close()
        return 2
    except Exception as exc:  # e.g. device "cuda" where torch has no usable GPU
        log.debug("model load failed", exc_info=True)
        print(f"side-worker: error: cannot load the verifier on {config.verifier.device!r}: "
              f"{type(exc).__name__}: {exc}", file=sys.stderr)
        store.close()
        return 2
    log.info("results store: %s; queue %r on %s", store.engine.url.render_as_string(hide_password=True),
             config.service.queue, connection.connection_pool.connection_kwargs.get("host", "?"))
    try:
        if args.role == "scorer":
            return _serve_scorer(config, args, connection, context)
        return serve(config, args, connection, store)
    except KeyboardInterrupt:
        return 130
    finally:
        store.close()


def _serve_scorer(config: Config, args: argparse.Namespace, connection: redis.Redis, context: WorkerContext) -> int:
    """``side-worker --role scorer``: score the stream's prepared checks until SIGTERM/SIGINT."""
    scorer = Scorer(connection, stream_key(config.service), args.name or default_worker_name(), context,
                  batch_checks=args.batch_checks, batch_citations=args.batch_citations,
                  min_idle_ms=int(args.claim_after * 1000), heartbeat_s=args.heartbeat)

    def stop(signum: int, frame: Any) -> None:
        log.info("scorer: stopping after this batch (signal %d)", signum)
        scorer.stop.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    return scorer.run(burst=args.burst)


def _serve_ingest(config: Config, args: argparse.Namespace, connection: redis.Redis) -> int:
    """``side-worker --ingest``: load the encoder, then run ingest jobs (no store, no verifier)."""
    from workers.ingest import set_ingest_context

    try:
        set_ingest_context(load_ingest_context(config, args))
    except SideError as exc:
        print(f"side-worker: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - one line, as for the verifier
        log.debug("encoder load failed", exc_info=True)
        print(f"side-worker: error: cannot load the passage encoder: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    log.info("ingest queue %r into %s; spool %s", config.service.ingest_queue, args.index or config.index_dir,
             config.ingest_spool_dir)
    try:
        return serve(config, args, connection, None)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
