"""The stream of prepared checks: readers hand a check's prepared citations to the scorers.

A split deployment (``side-worker --role reader`` and ``--role scorer``) runs the CPU half of a
check (fetch, extract, split, shortlist: :class:`side.prepared.Preparer`) apart from the model
half (:meth:`side.pipeline.Pipeline.score_many`). Readers take check jobs from the RQ queue as
any worker does (:mod:`service.queue`: retries, heartbeats and abandoned-job recovery stay
RQ's) and add one entry per prepared check to a Redis stream; scorers read it through one
consumer group, so each entry goes to one scorer, and pool the entries of many checks into each
pass of the models.

The rules, all Redis's own stream commands (no broker of ours):

- an entry holds the check id and its :class:`~side.prepared.PreparedCheck` as zlib-compressed
  JSON (a typed record, never a pickle);
- a scorer acknowledges an entry (XACK, then XDEL) only once the check's Results are in the
  store, so an entry a scorer was killed holding stays pending in the group, and another scorer
  (or the same one restarted) claims it once it has been idle ``min_idle_ms`` (XAUTOCLAIM);
- writing Results is idempotent (``Store.finish`` replaces a check's rows, keyed by check id
  and citation position), and a scorer skips the entry of a check that is already done, so an
  entry added twice (a reader killed after adding it, its job run again) or delivered twice
  never duplicates a Result;
- a reader waits while the stream holds ``max_entries`` entries, so readers faster than the
  scorers fill Redis no further than that.

A scorer is no RQ worker, so it keeps a heartbeat of its own beside the stream: its name and
the time of its last beat in a sorted set (:func:`beat_scorer`), written between batches and
from a thread during one, and removed when it stops; beside it the time by which it must beat
again, :data:`MISSED_BEATS` of its own intervals on, so that a scorer killed counts as dead
within a few of its heartbeats. ``python -m workers.probe --role scorer``
reads it (:func:`scorer_beats`), and the web service's ``/healthz`` reports each scorer
(:func:`scorer_states`) and the stream's backlog (:func:`stream_backlog`).
"""

from __future__ import annotations

import json
import logging
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import redis
from rq.defaults import RQ_KEY_PREFIX

from side.config import ServiceConfig
from side.prepared import PreparedCheck, PreparedCheckError

__all__ = [
    "GROUP", "DEFAULT_MAX_ENTRIES", "DEFAULT_MIN_IDLE_MS", "PreparedEntry", "stream_key", "encode", "decode",
    "ensure_group", "add_prepared", "read_prepared", "claim_stale", "ack_prepared", "stream_summary",
    "scorers_key", "scorer_deadlines_key", "beat_scorer", "forget_scorer", "scorer_beats", "scorer_limits",
    "SCORER_MAX_AGE_S", "MISSED_BEATS", "ScorerState",
    "StreamBacklog", "scorer_states", "stream_backlog",
]

log = logging.getLogger(__name__)

#: The consumer group of the scorers.
GROUP = "scorers"
#: Entries a stream may hold before readers wait for the scorers.
DEFAULT_MAX_ENTRIES = 2000
#: Milliseconds an entry stays pending with one scorer before another may claim it: longer than
#: one pass of the models over a full batch, shorter than anyone should wait on a dead scorer.
DEFAULT_MIN_IDLE_MS = 120_000
#: Seconds a reader sleeps between two looks at a full stream.
FULL_WAIT_S = 0.5
#: Seconds after which a scorer's heartbeat is dropped from the set (a scorer killed under a
#: ``host.pid`` name never comes back to remove it).
SCORER_FORGET_S = 86_400.0
#: Seconds without a heartbeat after which a scorer is taken for hung (it beats every 30 s,
#: between batches and from a thread during one): ``workers.probe --role scorer``'s default
#: ``--max-age`` (a restart is costly: the probe is patient), and the age up to which /healthz
#: and the readers count live a scorer that did not say how often it beats.
SCORER_MAX_AGE_S = 180.0
#: Heartbeats a scorer may miss before /healthz and the readers count it dead: a scorer says how
#: often it beats (:func:`beat_scorer`'s ``every_s``), so one killed is dead 3 of its intervals
#: later (90 s at the default 30 s), not after :data:`SCORER_MAX_AGE_S`; as an RQ worker's job.
MISSED_BEATS = 3


@dataclass(frozen=True)
class PreparedEntry:
    """One stream entry as a scorer reads it: its id, the check id and the prepared check
    (None, with ``error`` saying why, when the entry cannot be decoded)."""

    entry_id: str
    check_id: str
    prepared: PreparedCheck | None
    error: str = ""


def stream_key(config: ServiceConfig) -> str:
    """The stream of ``config``'s queue, under RQ's key prefix beside the queue."""
    return f"{RQ_KEY_PREFIX}:side:prepared:{config.queue}"


def encode(prepared: PreparedCheck) -> bytes:
    return zlib.compress(json.dumps(prepared.to_dict(), ensure_ascii=False, separators=(",", ":")).encode(), 6)


def decode(data: bytes) -> PreparedCheck:
    """The inverse of :func:`encode`; anything malformed is a :class:`PreparedCheckError`."""
    try:
        raw = json.loads(zlib.decompress(data))
    except (zlib.error, ValueError) as exc:
        raise PreparedCheckError(f"unreadable prepared check: {exc}") from exc
    if not isinstance(raw, dict):
        raise PreparedCheckError("a prepared check is a JSON object")
    return PreparedCheck.from_dict(raw)


def ensure_group(connection: redis.Redis, key: str) -> None:
    """Create the stream and its scorers' group unless they exist (from the stream's start, so
    entries added before the first scorer came up are read too)."""
    try:
        connection.xgroup_create(key, GROUP, id="0", mkstream=True)
    except redis.ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise


def add_prepared(connection: redis.Redis, key: str, check_id: str, prepared: PreparedCheck,
                 max_entries: int = DEFAULT_MAX_ENTRIES, sleep: Callable[[float], None] = time.sleep) -> str:
    """Add a prepared check to the stream, first waiting while it is full; returns the entry id."""
    waited = False
    while max_entries > 0 and connection.xlen(key) >= max_entries:
        if not waited:
            log.info("stream %s holds %d entries or more; waiting for the scorers", key, max_entries)
            waited = True
        sleep(FULL_WAIT_S)
    entry = connection.xadd(key, {"check": check_id, "data": encode(prepared)})
    return _text(entry)


def _text(value: bytes | str) -> str:
    """A Redis reply (bytes, or str on a decoding connection) as text."""
    return value.decode() if isinstance(value, bytes) else str(value)


def _entries(raw: list) -> list[PreparedEntry]:
    out = []
    for entry_id, fields in raw:
        entry_id = _text(entry_id)
        if not fields:  # an entry deleted while it was pending: nothing left to score
            out.append(PreparedEntry(entry_id, "", None, "entry deleted"))
            continue
        check_id = fields.get(b"check", b"").decode()
        try:
            out.append(PreparedEntry(entry_id, check_id, decode(fields.get(b"data", b""))))
        except PreparedCheckError as exc:
            out.append(PreparedEntry(entry_id, check_id, None, str(exc)))
    return out


def read_prepared(connection: redis.Redis, key: str, consumer: str, count: int, block_ms: int | None = None,
                  pending: bool = False) -> list[PreparedEntry]:
    """Up to ``count`` entries for ``consumer``: new ones (waiting up to ``block_ms``), or with
    ``pending`` the ones already delivered to it and not acknowledged (after a restart)."""
    answer = connection.xreadgroup(GROUP, consumer, {key: "0" if pending else ">"}, count=count,
                                   block=None if pending else block_ms)
    return [entry for _, raw in answer or [] for entry in _entries(raw)]


def claim_stale(connection: redis.Redis, key: str, consumer: str, count: int,
                min_idle_ms: int = DEFAULT_MIN_IDLE_MS) -> list[PreparedEntry]:
    """Up to ``count`` entries pending with any scorer for ``min_idle_ms`` or more, now ``consumer``'s."""
    answer = connection.xautoclaim(key, GROUP, consumer, min_idle_ms, start_id="0-0", count=count)
    claimed = _entries(answer[1])
    if claimed:
        log.warning("claimed %d prepared checks a scorer left pending for %.0f s or more", len(claimed),
                    min_idle_ms / 1000)
    return claimed


def ack_prepared(connection: redis.Redis, key: str, entry_ids: list[str]) -> None:
    """Acknowledge entries whose checks are stored, and delete them from the stream."""
    if not entry_ids:
        return
    with connection.pipeline(transaction=True) as pipe:
        pipe.xack(key, GROUP, *entry_ids)
        pipe.xdel(key, *entry_ids)
        pipe.execute()


def stream_summary(connection: redis.Redis, key: str) -> dict[str, int]:
    """Entries in the stream and entries delivered to a scorer and not yet acknowledged."""
    try:
        pending = int(connection.xpending(key, GROUP)["pending"])
    except redis.ResponseError:  # no group yet
        pending = 0
    return {"entries": int(connection.xlen(key)), "pending": pending}


def scorers_key(key: str) -> str:
    """The sorted set of the scorers of stream ``key``: name -> Unix time of the last heartbeat."""
    return f"{key}:scorers"


def scorer_deadlines_key(key: str) -> str:
    """The sorted set of the scorers of stream ``key``: name -> Unix time by which it must beat
    again to count as live (its last beat + :data:`MISSED_BEATS` of its intervals)."""
    return f"{key}:scorers:due"


def beat_scorer(connection: redis.Redis, key: str, consumer: str, now: float | None = None,
                every_s: float | None = None) -> None:
    """Record that scorer ``consumer`` of stream ``key`` is alive now, beating each ``every_s``
    seconds (None: unsaid, it then counts live for :data:`SCORER_MAX_AGE_S`); drop day-old beats."""
    now = time.time() if now is None else now
    with connection.pipeline(transaction=True) as pipe:
        pipe.zadd(scorers_key(key), {consumer: now})
        if every_s is not None and every_s > 0:
            pipe.zadd(scorer_deadlines_key(key), {consumer: now + MISSED_BEATS * every_s})
        else:
            pipe.zrem(scorer_deadlines_key(key), consumer)
        pipe.zremrangebyscore(scorers_key(key), "-inf", now - SCORER_FORGET_S)
        pipe.zremrangebyscore(scorer_deadlines_key(key), "-inf", now - SCORER_FORGET_S)
        pipe.execute()


def forget_scorer(connection: redis.Redis, key: str, consumer: str) -> None:
    """Remove the heartbeat of a scorer that stops on purpose."""
    with connection.pipeline(transaction=True) as pipe:
        pipe.zrem(scorers_key(key), consumer)
        pipe.zrem(scorer_deadlines_key(key), consumer)
        pipe.execute()


def scorer_beats(connection: redis.Redis, key: str) -> dict[str, float]:
    """Each scorer of stream ``key`` with the Unix time of its last heartbeat."""
    return {_text(name): float(when)
            for name, when in connection.zrange(scorers_key(key), 0, -1, withscores=True)}


def scorer_limits(connection: redis.Redis, key: str) -> dict[str, float]:
    """Each scorer of stream ``key`` that said how often it beats, with the age its heartbeat may
    reach before it counts as dead (:data:`MISSED_BEATS` of its intervals)."""
    beats = scorer_beats(connection, key)
    due = {_text(name): float(when)
           for name, when in connection.zrange(scorer_deadlines_key(key), 0, -1, withscores=True)}
    return {name: max(0.0, due[name] - when) for name, when in beats.items() if name in due}


def live_scorers(connection: redis.Redis, key: str, now: float | None = None) -> int:
    """How many scorers of stream ``key`` count as live (:attr:`ScorerState.is_live`): readers
    take checks only while this is above 0, so that no check waits on a scorer that is not there."""
    return sum(state.is_live for state in scorer_states(connection, key, now, pending=False))


@dataclass(frozen=True)
class ScorerState:
    """A scorer of the stream as its heartbeat and the group's pending entries show it.

    ``last_heartbeat`` (ISO 8601, UTC) and ``heartbeat_age_s`` are None for a consumer that holds
    entries but has no heartbeat (gone for a day, or stopped while holding them)."""

    name: str
    last_heartbeat: str | None
    heartbeat_age_s: float | None
    #: Entries delivered to this scorer and not acknowledged yet.
    pending: int
    #: The heartbeat age past which it counts as dead: :data:`MISSED_BEATS` of the intervals it
    #: beats at, or :data:`SCORER_MAX_AGE_S` for a scorer that did not say.
    max_age_s: float = SCORER_MAX_AGE_S

    @property
    def is_live(self) -> bool:
        """Whether its last heartbeat is at most :attr:`max_age_s` old."""
        return self.heartbeat_age_s is not None and self.heartbeat_age_s <= self.max_age_s


@dataclass(frozen=True)
class StreamBacklog:
    """The prepared checks in the stream: ``waiting`` for a scorer to read them (the group's
    lag), ``pending`` with a scorer that has not acknowledged them, and the seconds since the
    oldest pending entry was delivered (None when none is pending)."""

    entries: int
    waiting: int
    pending: int
    oldest_pending_idle_s: float | None

    @property
    def is_empty(self) -> bool:
        return self.entries == 0 and self.pending == 0


def _pending_by_consumer(connection: redis.Redis, key: str) -> dict[str, int]:
    try:
        summary = connection.xpending(key, GROUP)
    except redis.ResponseError:  # no stream or no group yet
        return {}
    return {_text(c["name"]): int(c["pending"]) for c in summary.get("consumers") or []}


def scorer_states(connection: redis.Redis, key: str, now: float | None = None,
                  pending: bool = True) -> list[ScorerState]:
    """Every scorer of stream ``key`` that has a heartbeat or holds entries (``pending``: else
    those with a heartbeat only, without reading the group), by name."""
    now = time.time() if now is None else now
    beats, limits = scorer_beats(connection, key), scorer_limits(connection, key)
    held = _pending_by_consumer(connection, key) if pending else {}
    states = []
    for name in sorted(set(beats) | {n for n, count in held.items() if count}):
        when = beats.get(name)
        stamp = None if when is None else datetime.fromtimestamp(when, UTC).replace(tzinfo=None)
        states.append(ScorerState(name, None if stamp is None else stamp.isoformat(timespec="seconds") + "Z",
                                  None if when is None else round(now - when, 1), held.get(name, 0),
                                  round(limits.get(name, SCORER_MAX_AGE_S), 1)))
    return states


def stream_backlog(connection: redis.Redis, key: str) -> StreamBacklog:
    """How much prepared work the stream holds, read from XINFO GROUPS and XPENDING."""
    try:
        groups = connection.xinfo_groups(key)
    except redis.ResponseError:  # no stream: nothing was ever prepared here
        return StreamBacklog(0, 0, 0, None)
    entries = int(connection.xlen(key))
    group = next((g for g in groups if _text(g["name"]) == GROUP), None)
    if group is None:  # readers added entries before any scorer created the group
        return StreamBacklog(entries, entries, 0, None)
    pending = int(group["pending"])
    # Acknowledged entries are deleted, so what is not pending waits, should Redis not know the lag.
    waiting = int(group["lag"]) if group.get("lag") is not None else max(0, entries - pending)
    oldest = connection.xpending_range(key, GROUP, min="-", max="+", count=1) if pending else []
    idle = round(oldest[0]["time_since_delivered"] / 1000, 1) if oldest else None
    return StreamBacklog(entries, waiting, pending, idle)
