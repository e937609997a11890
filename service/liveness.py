"""Liveness verdicts for container health checks (Toolforge's ``health-check-script``).

Toolforge runs a continuous job's health-check script inside the job's container, with the
container's environment: first as a startup probe (every second, up to 120 tries), then as a
liveness probe (every 10 s; three failures in a row restart the container; 5 s per run).
``workers.probe`` (the worker's heartbeat in Redis) and ``bot.probe`` (the bot's checkpoint)
share what is here: the verdict, the age of the container, so that a process still loading
its model is not killed for lacking a heartbeat it cannot have yet, and the exit status.

Under systemd, a process in a ``Type=notify`` unit with ``WatchdogSec=`` tells systemd itself
that it is ready and alive (:func:`notify_systemd`); systemd restarts it when the pings stop.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis

__all__ = ["Liveness", "container_age_s", "starting", "exit_status", "notify_systemd", "beating"]

log = logging.getLogger(__name__)

#: Exit statuses of a probe: alive, not alive, the probe itself is misconfigured.
EXIT_ALIVE, EXIT_DEAD, EXIT_USAGE = 0, 1, 2


@dataclass(frozen=True)
class Liveness:
    """A probe's answer, with the reason Kubernetes records in the pod's events."""

    alive: bool
    reason: str


def container_age_s(proc: Path = Path("/proc")) -> float | None:
    """Seconds since this PID namespace's first process (the container's) started.

    None where ``/proc`` does not say (not Linux): callers then grant no start-up grace.
    """
    try:
        stat = (proc / "1" / "stat").read_text()
        uptime_s = float((proc / "uptime").read_text().split()[0])
        # Fields after the command name (which may hold spaces) start at field 3 (state);
        # field 22, starttime in clock ticks since boot, is index 19 of them.
        start_ticks = int(stat.rpartition(")")[2].split()[19])
    except (OSError, ValueError, IndexError):
        return None
    return max(0.0, uptime_s - start_ticks / os.sysconf("SC_CLK_TCK"))


def starting(age_s: float | None, grace_s: float) -> bool:
    """True while the container is younger than the start-up grace."""
    return age_s is not None and age_s <= grace_s


def exit_status(result: Liveness) -> int:
    """Log the verdict as one line on stdout (probe output) and return the exit status."""
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    log.info("%s: %s", "alive" if result.alive else "NOT alive", result.reason)
    return EXIT_ALIVE if result.alive else EXIT_DEAD


def notify_systemd(state: str, environ: Mapping[str, str] | None = None) -> bool:
    """Send ``state`` (``READY=1``, ``WATCHDOG=1``, ``STOPPING=1``) to systemd when the unit asked
    for it (systemd sets ``NOTIFY_SOCKET``); False when it did not or the socket is gone."""
    path = (os.environ if environ is None else environ).get("NOTIFY_SOCKET", "")
    if not path:
        return False
    address = "\0" + path[1:] if path.startswith("@") else path  # "@": the abstract namespace
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.sendto(state.encode(), address)
    except OSError as exc:
        log.warning("could not notify systemd at %s: %s", path, exc)
        return False
    return True


@contextmanager
def beating(interval_s: float, beat: Callable[[], None], name: str) -> Iterator[threading.Event]:
    """Call ``beat`` every ``interval_s`` from a thread while the block runs (a long job or
    batch must not look dead to its probe); a Redis error is logged and the beats go on. Yields
    the event that stops them (set on leaving the block)."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(interval_s):
            try:
                beat()
            except redis.RedisError as exc:
                log.warning("%s failed: %s", name, exc)

    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()
    try:
        yield stop
    finally:
        stop.set()
        thread.join()
