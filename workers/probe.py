"""``python -m workers.probe``: is this container's queue worker alive? (Toolforge health check)

    python -m workers.probe [--config FILE] [--max-age S] [--grace S] [--name NAME] [--role scorer]

Exit 0 when it is, 1 when it is not, 2 when the configuration cannot be read; one line on
stdout says why. ``deploy/toolforge/jobs.yaml`` runs it as the ``side-worker`` job's
``health-check-script``; Toolforge restarts the container after three failures in a row.

The signal is the worker's own heartbeat in Redis. RQ keeps a hash per registered worker with
``last_heartbeat``; Side's worker writes it while idle (each dequeue timeout, about
``--maintenance`` seconds) and from a thread during a job (each ``--heartbeat`` seconds), so a
worker that hangs (a wedged job, a deadlocked thread) stops beating and its heartbeat ages.
The worker of *this* container is found by name: ``side-worker``'s default name is
``host.pid`` and a container has its own host name, so each replica probes its own worker.

Two states are alive although no fresh heartbeat is found:

- Redis cannot be reached: the worker is waiting for Redis with its model loaded, and a
  restart would only make it load the model again;
- the container is younger than ``--grace``: the worker registers only once the verifier and
  the index are loaded.

``--role scorer`` probes a scorer (``side-worker --role scorer``) instead. A scorer is no RQ
worker: it writes its own heartbeat beside the prepared-check stream
(:func:`service.stream.beat_scorer`), every ``--heartbeat`` seconds (30 by default) between
batches and from a thread during one, with the same two allowances.
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import redis
from rq import Queue, Worker

from service.liveness import EXIT_USAGE, Liveness, container_age_s, exit_status, starting
from service.stream import SCORER_MAX_AGE_S, scorer_beats, stream_key
from side.cli.checks import above, at_least
from side.config import load_config
from side.errors import SideError

#: A heartbeat older than this means the worker is stuck: idle workers beat about every 60 s
#: (the dequeue timeout of the default --maintenance 60), busy ones and scorers every 30 s.
#: (/healthz and the readers are quicker: a scorer is dead for them after three of its intervals.)
DEFAULT_MAX_AGE_S = SCORER_MAX_AGE_S
#: Start-up allowance for loading the verifier and the evidence index on a shared CPU.
DEFAULT_GRACE_S = 600.0
#: Seconds for each Redis call: the probe has 5 s in all.
REDIS_TIMEOUT_S = 2.0


def probe_worker(connection: redis.Redis, queue_name: str, name_prefix: str, max_age_s: float,
                 age_s: float | None, grace_s: float, now: datetime | None = None) -> Liveness:
    """The verdict for the workers on ``queue_name`` whose names start with ``name_prefix``."""
    now = now or datetime.now(UTC)
    try:
        workers = Worker.all(queue=Queue(queue_name, connection=connection))
    except redis.RedisError as exc:
        return Liveness(True, f"Redis unreachable ({type(exc).__name__}); the worker waits for it")
    beats = sorted(((now - w.last_heartbeat.astimezone(UTC)).total_seconds(), w.name)
                   for w in workers if w.name.startswith(name_prefix) and w.last_heartbeat is not None)
    if beats and beats[0][0] <= max_age_s:
        age, name = beats[0]
        return Liveness(True, f"worker {name} on queue {queue_name!r}: last heartbeat {age:.0f} s ago")
    if starting(age_s, grace_s):
        return Liveness(True, f"starting ({age_s:.0f} s of {grace_s:.0f} s grace): "
                              f"no live worker {name_prefix}* yet")
    if beats:
        age, name = beats[0]
        return Liveness(False, f"worker {name} on queue {queue_name!r}: last heartbeat {age:.0f} s ago "
                               f"(more than {max_age_s:.0f} s)")
    return Liveness(False, f"no worker {name_prefix}* registered on queue {queue_name!r}")


def probe_scorer(connection: redis.Redis, key: str, name_prefix: str, max_age_s: float, age_s: float | None,
                 grace_s: float, now: float | None = None) -> Liveness:
    """The verdict for the scorers of stream ``key`` whose names start with ``name_prefix``."""
    now = time.time() if now is None else now
    try:
        beats = sorted((now - when, name) for name, when in scorer_beats(connection, key).items()
                       if name.startswith(name_prefix))
    except redis.RedisError as exc:
        return Liveness(True, f"Redis unreachable ({type(exc).__name__}); the scorer waits for it")
    if beats and beats[0][0] <= max_age_s:
        return Liveness(True, f"scorer {beats[0][1]} of {key}: last heartbeat {beats[0][0]:.0f} s ago")
    if starting(age_s, grace_s):
        return Liveness(True, f"starting ({age_s:.0f} s of {grace_s:.0f} s grace): no live scorer {name_prefix}* yet")
    if beats:
        return Liveness(False, f"scorer {beats[0][1]} of {key}: last heartbeat {beats[0][0]:.0f} s ago "
                               f"(more than {max_age_s:.0f} s)")
    return Liveness(False, f"no scorer {name_prefix}* heartbeats on {key}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m workers.probe",
        description="Exit 0 when this container's side-worker heartbeats in Redis, 1 if not.")
    p.add_argument("--role", choices=("worker", "scorer"), default="worker",
                   help="worker: an RQ worker (side-worker, --role reader, --ingest; default); "
                        "scorer: side-worker --role scorer")
    p.add_argument("--config", type=Path,
                   help="TOML configuration file (default: $SIDE_CONFIG or ./side.toml)")
    p.add_argument("--name", help="the worker's name or how it starts (default: this host's name and a dot, "
                                  "as side-worker's default name host.pid)")
    p.add_argument("--max-age", type=float, default=DEFAULT_MAX_AGE_S, metavar="S",
                   help=f"oldest heartbeat taken for alive (default {DEFAULT_MAX_AGE_S:.0f})")
    p.add_argument("--grace", type=float, default=DEFAULT_GRACE_S, metavar="S",
                   help=f"seconds after the container started during which no worker is fine "
                        f"(default {DEFAULT_GRACE_S:.0f})")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        above(0, max_age=args.max_age)  # 0 or less: never alive, so restarted forever
        at_least(0, grace=args.grace)
        config = load_config(args.config)
        connection = redis.Redis.from_url(config.service.redis_url, socket_connect_timeout=REDIS_TIMEOUT_S,
                                          socket_timeout=REDIS_TIMEOUT_S)
    except (SideError, ValueError) as exc:
        print(f"workers.probe: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    prefix = args.name or f"{socket.gethostname()}."
    with connection:
        if args.role == "scorer":
            result = probe_scorer(connection, stream_key(config.service), prefix, args.max_age, container_age_s(),
                                  args.grace)
        else:
            result = probe_worker(connection, config.service.queue, prefix, args.max_age, container_age_s(),
                                  args.grace)
    return exit_status(result)


if __name__ == "__main__":
    sys.exit(main())
