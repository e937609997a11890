"""What a supervisor (``side-stack``) knows about its workers, published in Redis for /healthz.

RQ's worker registry says which workers are alive; it cannot say that one was killed a minute
ago and is being restarted, or that the supervisor gave up on one that kept dying. The
supervisor writes one :class:`SupervisedWorker` per worker slot into a Redis hash next to the
queue, refreshed every few seconds with a short expiry, so a supervisor that is gone stops
being reported; the web service reads it back without importing the workers.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from enum import StrEnum

import redis

__all__ = ["SUPERVISOR_KEY", "STATE_TTL_S", "SlotState", "SupervisedWorker", "publish_workers",
           "supervised_workers", "unpublish_workers"]

log = logging.getLogger(__name__)

#: Redis hash (one field per supervisor and slot) holding the supervised workers of a queue.
SUPERVISOR_KEY = "side:supervisor:{queue}"
#: Seconds a published state lives unless the supervisor refreshes it.
STATE_TTL_S = 30


class SlotState(StrEnum):
    """Where a worker slot stands in its supervisor's restart cycle."""

    STARTING = "starting"  # the process runs but has not registered with RQ yet
    RUNNING = "running"
    BACKOFF = "backoff"  # it exited; a new one starts at ``next_start_at``
    GAVE_UP = "gave_up"  # it died too often in a short time; nothing restarts it


@dataclass(frozen=True)
class SupervisedWorker:
    """One worker slot of a supervisor: the current process and its restart history."""

    supervisor: str
    slot: int
    state: SlotState
    name: str
    pid: int | None
    restarts: int
    started_at: str | None
    last_exit_status: int | None = None
    last_exit_at: str | None = None
    next_start_at: str | None = None

    @property
    def field(self) -> str:
        return f"{self.supervisor}:{self.slot}"

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> SupervisedWorker:
        data = json.loads(text)
        return cls(**{**data, "state": SlotState(data["state"])})


def publish_workers(connection: redis.Redis, queue: str, workers: list[SupervisedWorker]) -> None:
    """Write the slots' states (replacing this supervisor's earlier ones) with a short expiry."""
    key = SUPERVISOR_KEY.format(queue=queue)
    with connection.pipeline() as pipe:
        for worker in workers:
            pipe.hset(key, worker.field, worker.to_json())
        pipe.expire(key, STATE_TTL_S)
        pipe.execute()


def unpublish_workers(connection: redis.Redis, queue: str, workers: list[SupervisedWorker]) -> None:
    """Remove the slots of a supervisor that stops (so /healthz does not report them for a while)."""
    if workers:
        connection.hdel(SUPERVISOR_KEY.format(queue=queue), *(w.field for w in workers))


def supervised_workers(connection: redis.Redis, queue: str) -> list[SupervisedWorker]:
    """The published states of ``queue``'s supervised workers (empty without a supervisor)."""
    raw = connection.hgetall(SUPERVISOR_KEY.format(queue=queue))
    out = []
    for field, value in sorted(raw.items()):
        try:
            out.append(SupervisedWorker.from_json(value))
        except (ValueError, TypeError, KeyError) as exc:
            log.warning("ignoring an unreadable supervisor state %r: %s", field, exc)
    return out
