"""``side-worker --role scorer``: the models, fed by readers through the prepared-check stream.

One scorer per GPU (or one on a CPU host) loads the verifier once and loops:

1. take entries of the stream (:mod:`service.stream`): first those a scorer left pending for
   ``min_idle_ms`` (a scorer killed mid-batch, XAUTOCLAIM), then those already delivered to this
   consumer name (a scorer restarted under its fixed ``--name``), then new ones, up to
   ``batch_checks`` checks and ``batch_citations`` citations;
2. score all their citations together (:meth:`side.pipeline.Pipeline.score_many`: one pass of
   each model over every check of the batch, batched by length);
3. per check, its lead claims (when it came with its article) and the patrol priorities, then
   ``Store.finish``, and only then acknowledge its entry.

An entry whose check is already done (an entry added twice, or delivered again after a scorer
died between storing and acknowledging) is acknowledged without scoring. A check that fails
here (a malformed entry, an error of the models on it) is marked failed with the reason and
its entry acknowledged: an entry that would fail again is not retried for ever. When a whole
batch fails, its checks are scored one by one, so one bad check fails alone.

The scorer heartbeats in Redis beside the stream (:func:`service.stream.beat_scorer`) every
``heartbeat_s`` seconds: from its loop between batches and from a thread while the models score
one; ``python -m workers.probe --role scorer`` reads it. Each beat also pings systemd's watchdog
when the unit asked for one (``side-scorer@.service``), after telling systemd it is ready.
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

import redis

from service.liveness import beating, notify_systemd
from service.store import Check, CheckStatus, Store
from service.stream import (
    DEFAULT_MIN_IDLE_MS,
    PreparedEntry,
    ack_prepared,
    beat_scorer,
    claim_stale,
    ensure_group,
    forget_scorer,
    read_prepared,
)
from side.pipeline import Result
from workers.jobs import WorkerContext, check_lead

__all__ = ["DEFAULT_BATCH_CHECKS", "DEFAULT_BATCH_CITATIONS", "DEFAULT_SCORER_HEARTBEAT_S", "Scorer"]

log = logging.getLogger(__name__)

#: Checks scored together at most.
DEFAULT_BATCH_CHECKS = 32
#: Citations scored together at most (a batch takes further checks only while under this).
DEFAULT_BATCH_CITATIONS = 256
#: Milliseconds a read waits for a first entry.
BLOCK_MS = 1000
#: Seconds between two looks for entries other scorers left pending.
CLAIM_EVERY_S = 10.0
#: Seconds between reconnection attempts after Redis went away.
RECONNECT_S = 2.0
#: Seconds between two heartbeats (``workers.probe`` takes 180 s of silence for a hang).
DEFAULT_SCORER_HEARTBEAT_S = 30.0


@dataclass
class Scorer:
    """The scoring loop of one process (see the module docstring)."""

    connection: redis.Redis
    key: str
    consumer: str
    context: WorkerContext
    batch_checks: int = DEFAULT_BATCH_CHECKS
    batch_citations: int = DEFAULT_BATCH_CITATIONS
    min_idle_ms: int = DEFAULT_MIN_IDLE_MS
    heartbeat_s: float = DEFAULT_SCORER_HEARTBEAT_S
    #: Checks stored so far.
    checks_done: int = 0
    stop: threading.Event = field(default_factory=threading.Event)
    _last_claim: float = 0.0
    _last_beat: float = float("-inf")
    _own_pending: bool = True

    @property
    def store(self) -> Store:
        return self.context.store

    def run(self, burst: bool = False) -> int:
        """Score until stopped (``burst``: until the stream has nothing for this scorer)."""
        ensure_group(self.connection, self.key)
        log.info("scorer %s reading %s", self.consumer, self.key)
        notify_systemd("READY=1")
        try:
            while not self.stop.is_set():
                try:
                    self.beat()
                    entries = self.take()
                    if entries:
                        with self._beating():
                            self.score(entries)
                    elif burst:
                        return 0
                except redis.RedisError as exc:
                    log.warning("Redis unavailable (%s); retrying in %.0f s", exc, RECONNECT_S)
                    self._own_pending = True
                    self.stop.wait(RECONNECT_S)
                except Exception:  # noqa: BLE001 - e.g. the store is down: the entries stay pending
                    log.exception("could not store a batch; its entries stay pending, retrying in %.0f s",
                                  RECONNECT_S)
                    self._own_pending = True
                    self.stop.wait(RECONNECT_S)
            return 0
        finally:
            self._forget()

    def beat(self, force: bool = False) -> None:
        """Heartbeat (Redis, and systemd's watchdog) when ``heartbeat_s`` passed since the last one."""
        if not force and time.monotonic() - self._last_beat < self.heartbeat_s:
            return
        notify_systemd("WATCHDOG=1")
        beat_scorer(self.connection, self.key, self.consumer, every_s=self.heartbeat_s)
        self._last_beat = time.monotonic()

    def _beating(self) -> AbstractContextManager[threading.Event]:
        """Heartbeats from a thread while a batch is scored and stored."""
        return beating(self.heartbeat_s, lambda: self.beat(force=True), f"heartbeat-{self.consumer}")

    def _forget(self) -> None:
        notify_systemd("STOPPING=1")
        try:
            forget_scorer(self.connection, self.key, self.consumer)
        except redis.RedisError as exc:
            log.warning("could not remove the scorer's heartbeat: %s", exc)

    def take(self) -> list[PreparedEntry]:
        """The next batch: stale entries of dead scorers, this consumer's own pending ones, new ones."""
        entries: list[PreparedEntry] = []
        if time.monotonic() - self._last_claim >= CLAIM_EVERY_S:
            self._last_claim = time.monotonic()
            entries = claim_stale(self.connection, self.key, self.consumer, self.batch_checks, self.min_idle_ms)
        if not entries and self._own_pending:
            entries = read_prepared(self.connection, self.key, self.consumer, self.batch_checks, pending=True)
            self._own_pending = bool(entries)
        if entries:
            return entries
        entries = read_prepared(self.connection, self.key, self.consumer, self.batch_checks, BLOCK_MS)
        while entries and len(entries) < self.batch_checks and _citations(entries) < self.batch_citations:
            more = read_prepared(self.connection, self.key, self.consumer, self.batch_checks - len(entries))
            if not more:
                break
            entries += more
        return entries

    def score(self, entries: list[PreparedEntry]) -> None:
        """Score a batch and store each check before acknowledging its entry."""
        todo, done = self._triage(entries)
        ack_prepared(self.connection, self.key, done)
        if not todo:
            return
        started = time.monotonic()
        try:
            outcomes = self.context.pipeline.score_many(  # type: ignore[union-attr]
                [(record.claims, entry.prepared) for entry, record in todo])
        except Exception as exc:  # noqa: BLE001 - one bad check must not fail the batch: score them alone
            if len(todo) == 1:
                log.exception("check %s could not be scored", todo[0][0].check_id)
                self._fail(todo[0][0], f"{type(exc).__name__}: {exc}")
                return
            log.exception("a batch of %d checks failed; scoring them one by one", len(todo))
            for entry, _ in todo:
                self.score([entry])
            return
        seconds = (time.monotonic() - started) / len(todo)
        for (entry, record), results in zip(todo, outcomes, strict=True):
            self._store(entry, record, results, seconds)
        log.info("scored %d checks (%d citations) in %.1f s", len(todo), sum(len(r) for r in outcomes),
                 time.monotonic() - started)

    def _triage(self, entries: list[PreparedEntry]) -> tuple[list[tuple[PreparedEntry, Check]], list[str]]:
        """The entries to score (with their store records), and the ids to acknowledge as they are."""
        todo: list[tuple[PreparedEntry, Check]] = []
        ack: list[str] = []
        seen: set[str] = set()
        for entry in entries:
            if entry.prepared is None:
                if entry.check_id:
                    self._fail(entry, entry.error)
                else:
                    ack.append(entry.entry_id)
                continue
            record = self.store.check(entry.check_id)
            if record is None or record.status == CheckStatus.DONE or entry.check_id in seen:
                log.info("check %s: %s; acknowledging its entry", entry.check_id,
                         "unknown" if record is None else "already scored")
                ack.append(entry.entry_id)
                continue
            seen.add(entry.check_id)
            todo.append((entry, record))
        return todo, ack

    def _store(self, entry: PreparedEntry, record: Check, results: list[Result], seconds: float) -> None:
        context = self.context
        lead = check_lead(context, record.id)
        priorities = context.prioritize(record.wiki, record.title, record.revision, results) \
            if context.prioritize else None
        done = self.store.finish(record.id, results, seconds, lead=lead, priorities=priorities)
        ack_prepared(self.connection, self.key, [entry.entry_id])
        self.checks_done += 1
        log.info("check %s done: %d citations, %d flagged", record.id, done.citations, done.flagged)

    def _fail(self, entry: PreparedEntry, reason: str) -> None:
        log.error("check %s failed for good: %s", entry.check_id, reason)
        try:
            self.store.fail(entry.check_id, reason)
        except Exception:  # noqa: BLE001 - an unknown check: nothing to mark
            log.exception("could not mark check %s failed", entry.check_id)
        ack_prepared(self.connection, self.key, [entry.entry_id])


def _citations(entries: list[PreparedEntry]) -> int:
    return sum(len(e.prepared.citations) for e in entries if e.prepared is not None)
