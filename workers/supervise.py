"""Restarting dead workers: the backoff and the bound of ``side-stack``'s supervision.

A worker can die for reasons of its own (killed by the kernel for memory, a crash in native
code, an operator's ``kill -9``) while Redis and the web service are fine; the queue keeps
the work (the killed job is retried by the workers' maintenance), so what is needed is a new
worker, not a stopped stack. A worker that dies again and again (a bad configuration, a
database that is gone) must not be restarted in a tight loop either, so restarts wait longer
each time, and after ``max_restarts`` exits within ``window_s`` the slot is given up on:
logged as an error and shown by /healthz, the rest of the stack still serving.
"""

from __future__ import annotations

import logging
import signal
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime

from service.supervision import SlotState, SupervisedWorker

__all__ = ["RestartPolicy", "WorkerSlot", "exit_description"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RestartPolicy:
    """Exponential backoff between restarts, and how many exits in a window are tolerated."""

    #: Seconds before the first restart; doubled for each further exit within the window.
    initial_delay_s: float = 1.0
    max_delay_s: float = 300.0
    #: More exits than this within ``window_s`` and the slot is given up on (0: never restart).
    max_restarts: int = 10
    window_s: float = 1800.0

    def delay_s(self, recent_exits: int) -> float:
        """The wait before the restart after the ``recent_exits``-th exit in the window."""
        return min(self.max_delay_s, self.initial_delay_s * 2 ** max(0, recent_exits - 1))


def _iso(when: datetime | None) -> str | None:
    return None if when is None else when.replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


def exit_description(status: int | None) -> str:
    """``status 2`` or ``signal SIGKILL`` (Popen reports a signal as its negative number)."""
    if status is None:
        return "no status"
    if status < 0:
        try:
            return f"signal {signal.Signals(-status).name}"
        except ValueError:
            return f"signal {-status}"
    return f"status {status}"


@dataclass
class WorkerSlot:
    """One worker position of the stack: whichever process fills it now, and its history."""

    slot: int
    #: Worker options of this slot beyond the stack's own (kept for its restarts).
    extra_args: tuple[str, ...] = ()
    name: str = ""
    pid: int | None = None
    state: SlotState = SlotState.STARTING
    restarts: int = 0
    started_at: datetime | None = None
    started_mono: float = 0.0
    last_exit_status: int | None = None
    last_exit_at: datetime | None = None
    next_start_mono: float | None = None
    exits: deque[float] = field(default_factory=deque)

    def started(self, name: str, pid: int, registered: bool) -> None:
        """A process now fills the slot (``registered``: it already answers the queue)."""
        self.name, self.pid = name, pid
        self.state = SlotState.RUNNING if registered else SlotState.STARTING
        self.started_at, self.started_mono = datetime.now(UTC), time.monotonic()
        self.next_start_mono = None

    def exited(self, status: int | None, policy: RestartPolicy, now: float | None = None) -> None:
        """Record an exit and decide: restart after a backoff, or give up."""
        now = time.monotonic() if now is None else now
        self.last_exit_status, self.last_exit_at = status, datetime.now(UTC)
        self.pid = None
        self.exits.append(now)
        while self.exits and self.exits[0] < now - policy.window_s:
            self.exits.popleft()
        how = exit_description(status)
        if len(self.exits) > policy.max_restarts:
            self.state, self.next_start_mono = SlotState.GAVE_UP, None
            log.error("worker slot %d (%s) exited with %s, its %d. exit within %.0f min; not restarting it",
                      self.slot, self.name, how, len(self.exits), policy.window_s / 60)
            return
        delay = policy.delay_s(len(self.exits))
        self.state, self.next_start_mono = SlotState.BACKOFF, now + delay
        log.warning("worker slot %d (%s) exited with %s; restarting it in %.0f s (exit %d of at most %d "
                    "within %.0f min)", self.slot, self.name, how, delay, len(self.exits), policy.max_restarts,
                    policy.window_s / 60)

    def due(self, now: float | None = None) -> bool:
        """Whether the backoff is over and a new process should be started."""
        now = time.monotonic() if now is None else now
        return self.state == SlotState.BACKOFF and self.next_start_mono is not None and now >= self.next_start_mono

    def record(self, supervisor: str) -> SupervisedWorker:
        """The slot as published for /healthz."""
        next_start = None
        if self.state == SlotState.BACKOFF and self.next_start_mono is not None:
            wait = max(0.0, self.next_start_mono - time.monotonic())
            next_start = _iso(datetime.fromtimestamp(time.time() + wait, UTC))
        return SupervisedWorker(supervisor=supervisor, slot=self.slot, state=self.state, name=self.name,
                                pid=self.pid, restarts=self.restarts, started_at=_iso(self.started_at),
                                last_exit_status=self.last_exit_status, last_exit_at=_iso(self.last_exit_at),
                                next_start_at=next_start)
