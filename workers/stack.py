"""``side-stack``: Redis, workers and the web service on 127.0.0.1 in one command.

    side-stack                      # Redis (AOF, var/redis/), 1 worker, web on service.port
    side-stack --workers 2 --port 8800
    side-stack --no-web             # queue + workers only (the bot submits to it)

Each part runs in its own process group with its log under ``var/log/``; the command waits
until each answers (Redis PING, the worker registered with RQ after loading the model, the web
service's ``/healthz``), prints the URLs, and on Ctrl-C or SIGTERM stops them all. A Redis
already answering at ``service.redis_url`` is reused (and left running).

A worker that dies is restarted after a backoff (1 s, doubling up to 5 minutes; after more
than ``--max-restarts`` exits within 30 minutes its slot is given up on), while Redis and the
web service keep running: the queue holds the work meanwhile. Each slot's state (restarts,
last exit) is published in Redis for ``/healthz`` (:mod:`service.supervision`). Only Redis or
the web service dying stops the whole stack.

The same :class:`Stack` class starts the stack of the integration tests
(``tests/harness/stack.py``), so what the README shows is what the tests run.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Self
from urllib.parse import urlsplit

import redis
import requests
from rq import Worker

from service.health import aof_enabled
from service.supervision import SlotState, publish_workers, unpublish_workers
from side.cli.checks import at_least, at_most
from side.config import REPO_ROOT, load_config
from side.errors import SideError
from workers.supervise import RestartPolicy, WorkerSlot, exit_description

log = logging.getLogger(__name__)

#: Seconds a part gets to answer after it was started (the worker loads the model first).
DEFAULT_START_TIMEOUT_S = 120.0
#: Seconds between SIGTERM and SIGKILL when stopping a part.
DEFAULT_STOP_GRACE_S = 10.0
#: The web service's entry point (gadget/server), started by module name.
WEB_MODULE = "gadget.server.serve"
REDIS_SERVER = os.environ.get("SIDE_REDIS_SERVER", "redis-server")
#: Seconds between two rounds of supervision (dead workers, registrations, published state).
SUPERVISE_INTERVAL_S = 1.0


class StackError(SideError):
    """A part of the local stack did not start or died."""

    code = "stack_failed"


@dataclass
class Part:
    """One child process of the stack."""

    name: str
    process: subprocess.Popen
    log_path: Path
    _log: IO[bytes] | None = None

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def signal(self, sig: int) -> None:
        """Signal the whole process group (the part and anything it started)."""
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self, grace_s: float = DEFAULT_STOP_GRACE_S) -> None:
        if self.alive:
            self.signal(signal.SIGTERM)
            try:
                self.process.wait(grace_s)
            except subprocess.TimeoutExpired:
                log.warning("%s did not stop within %.0f s; killing it", self.name, grace_s)
        self.signal(signal.SIGKILL)  # stragglers in the group, if any
        if self.alive:
            self.process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None


@dataclass
class Stack:
    """Redis, N workers and the web service as child processes of this one."""

    redis_url: str
    database_url: str
    log_dir: Path
    redis_dir: Path
    host: str = "127.0.0.1"
    web_port: int = 8765
    workers: int = 1
    with_web: bool = True
    env: dict[str, str] = field(default_factory=dict)
    worker_args: list[str] = field(default_factory=list)
    start_timeout_s: float = DEFAULT_START_TIMEOUT_S
    parts: list[Part] = field(default_factory=list)
    started_redis: bool = False
    #: The RQ queue the workers serve (default: SIDE_SERVICE_QUEUE of ``env``, else the config's).
    queue: str = ""
    restart: RestartPolicy = field(default_factory=RestartPolicy)
    slots: dict[int, WorkerSlot] = field(default_factory=dict)
    _slot_parts: dict[int, Part] = field(default_factory=dict)
    _worker_count: int = 0
    _supervision_client: redis.Redis | None = None

    @property
    def web_url(self) -> str:
        return f"http://{self.host}:{self.web_port}"

    @property
    def api_url(self) -> str:
        return f"{self.web_url}/api/v1"

    @property
    def queue_name(self) -> str:
        if not self.queue:
            self.queue = self.child_env().get("SIDE_SERVICE_QUEUE") or load_config().service.queue
        return self.queue

    @property
    def supervisor_id(self) -> str:
        """This stack in the published worker states (several stacks may share one Redis)."""
        return f"{socket.gethostname()}:{os.getpid()}"

    def child_env(self) -> dict[str, str]:
        """The environment of every part: one Redis, one database, the caller's overrides."""
        env = {**os.environ, "SIDE_SERVICE_REDIS_URL": self.redis_url, "SIDE_SERVICE_DATABASE_URL": self.database_url,
               "SIDE_SERVICE_HOST": self.host, "SIDE_SERVICE_PORT": str(self.web_port),
               "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false"}
        env.setdefault("SIDE_SERVICE_PUBLIC_URL", self.web_url)
        env.update(self.env)
        return env

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> Part:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.log_dir / f"{name}.log"
        handle = log_path.open("ab")
        process = subprocess.Popen(argv, cwd=REPO_ROOT, env=env or self.child_env(), stdin=subprocess.DEVNULL,
                                   stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
        part = Part(name, process, log_path, handle)
        self.parts.append(part)
        log.info("started %s (pid %d), log %s", name, process.pid, log_path)
        return part

    def _wait(self, part: Part | None, what: str, ready) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if part is not None and not part.alive:
                raise StackError(f"{what} exited with status {part.process.returncode}:\n{part.log_tail()}")
            try:
                if ready():
                    return
            except (redis.RedisError, requests.RequestException):
                pass
            time.sleep(0.2)
        tail = f":\n{part.log_tail()}" if part is not None else ""
        raise StackError(f"{what} did not become ready within {self.start_timeout_s:.0f} s{tail}")

    # -- the parts --------------------------------------------------------------------------

    def redis_client(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis_url, socket_connect_timeout=2)

    def _redis_answers(self) -> bool:
        try:
            with self.redis_client() as client:
                return bool(client.ping())
        except redis.RedisError:
            return False

    def start_redis(self) -> None:
        """Start Redis with AOF at ``redis_url`` unless one already answers there."""
        if self._redis_answers():
            log.info("reusing the Redis answering at %s", self.redis_url)
            self._warn_without_aof()
            return
        parts = urlsplit(self.redis_url)
        if parts.hostname not in ("127.0.0.1", "localhost"):
            raise StackError(f"no Redis answers at {self.redis_url}, and side-stack only starts one on 127.0.0.1")
        self.redis_dir.mkdir(parents=True, exist_ok=True)
        argv = [REDIS_SERVER, "--port", str(parts.port or 6379), "--bind", "127.0.0.1", "--dir", str(self.redis_dir),
                "--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--daemonize", "no"]
        part = self._spawn("redis", argv)
        self.started_redis = True
        self._wait(part, "Redis", self._redis_answers)

    def _warn_without_aof(self) -> None:
        """A reused Redis may keep nothing on disk; say so rather than promise what it cannot."""
        try:
            with self.redis_client() as client:
                aof = aof_enabled(client)
        except redis.RedisError:
            return
        if not aof:
            log.warning("the Redis at %s keeps no AOF: queued checks survive its restart only through the "
                        "workers' store reconciliation (requeue_lost)", self.redis_url)

    def _registered(self, name: str) -> bool:
        """Whether the worker ``name`` has registered with RQ on our queue (model loaded)."""
        with self.redis_client() as client:
            return any(w.name == name for w in Worker.all(connection=client) if self.queue_name in w.queue_names())

    def _spawn_worker(self, slot: WorkerSlot) -> Part:
        """Start a process for ``slot`` without waiting; a restart gets a new RQ name, because
        the killed one stays registered until its key expires."""
        name = f"stack-{os.getpid()}-{slot.slot}" + (f"-r{slot.restarts}" if slot.restarts else "")
        argv = [sys.executable, "-m", "workers", "--name", name, *self.worker_args, *slot.extra_args]
        part = self._spawn(f"worker-{slot.slot}", argv)
        self._slot_parts[slot.slot] = part
        slot.started(name, part.process.pid, registered=False)
        return part

    def start_worker(self, extra_args: Sequence[str] = ()) -> Part:
        """One more ``side-worker``; returns once it has loaded the model and registered."""
        self._worker_count += 1
        slot = self.slots[self._worker_count] = WorkerSlot(self._worker_count, extra_args=tuple(extra_args))
        part = self._spawn_worker(slot)
        self._wait(part, f"worker {slot.name}", lambda: self._registered(slot.name))
        slot.state = SlotState.RUNNING
        return part

    def start_scorer(self, extra_args: Sequence[str] = ()) -> Part:
        """A ``side-worker --role scorer``; returns once it has loaded the model and reads the
        prepared-check stream (its consumer is in the scorers' group)."""
        from service.stream import GROUP, stream_key
        from side.config import ServiceConfig

        self._worker_count += 1
        name = f"stack-{os.getpid()}-scorer-{self._worker_count}"
        argv = [sys.executable, "-m", "workers", "--role", "scorer", "--name", name, *extra_args]
        part = self._spawn(f"scorer-{self._worker_count}", argv)
        key = stream_key(ServiceConfig(queue=self.queue_name))

        def reading() -> bool:
            with self.redis_client() as client:
                return client.exists(key) and any(c["name"].decode() == name for c in
                                                  client.xinfo_consumers(key, GROUP))

        self._wait(part, f"scorer {name}", reading)
        return part

    def judge_parts(self) -> list[Part]:
        return [p for p in self.parts if p.name.startswith("scorer-")]

    def start_web(self) -> Part:
        argv = [sys.executable, "-m", WEB_MODULE, "--host", self.host, "--port", str(self.web_port)]
        part = self._spawn("web", argv)
        self._wait(part, "web service", lambda: requests.get(f"{self.web_url}/healthz", timeout=2).status_code < 600)
        return part

    def start(self) -> Stack:
        try:
            self.start_redis()
            for _ in range(self.workers):
                self.start_worker()
            if self.with_web:
                self.start_web()
        except BaseException:
            self.stop()
            raise
        return self

    def worker_parts(self) -> list[Part]:
        return [p for p in self.parts if p.name.startswith("worker-")]

    def dead_parts(self) -> list[Part]:
        return [p for p in self.parts if not p.alive]

    # -- supervision ------------------------------------------------------------------------

    def _forget(self, part: Part) -> None:
        part.stop()  # reaps it, kills stragglers in its group, closes its log
        if part in self.parts:
            self.parts.remove(part)

    def _supervise_slot(self, slot: WorkerSlot) -> None:
        part = self._slot_parts.get(slot.slot)
        if part is not None and part not in self.parts:  # taken out by the caller (tests kill workers so)
            del self.slots[slot.slot]
            return
        if part is not None and slot.state in (SlotState.STARTING, SlotState.RUNNING):
            if not part.alive:
                status = part.process.returncode
                log.error("%s (%s) exited with %s; its log ends:\n%s", part.name, slot.name,
                          exit_description(status), part.log_tail())
                self._forget(part)
                del self._slot_parts[slot.slot]
                slot.exited(status, self.restart)
            elif slot.state == SlotState.STARTING:
                if self._registered(slot.name):
                    slot.state = SlotState.RUNNING
                    log.info("%s (%s, pid %d) is back and serving the queue", part.name, slot.name,
                             part.process.pid)
                elif time.monotonic() - slot.started_mono > self.start_timeout_s:
                    log.error("%s (%s) did not register within %.0f s; stopping it", part.name, slot.name,
                              self.start_timeout_s)
                    part.stop()
        elif slot.due():
            slot.restarts += 1
            part = self._spawn_worker(slot)
            log.info("restarted %s as %s (pid %d), restart %d", part.name, slot.name, part.process.pid,
                     slot.restarts)

    def supervise(self) -> list[Part]:
        """One round: restart dead workers as :attr:`restart` allows, publish the slots' state.

        Returns the parts other than workers that died (Redis, the web service): those stop
        the stack. Redis being briefly unreachable only skips this round's publishing.
        """
        fatal = [p for p in self.parts if not p.alive and not p.name.startswith("worker-")]
        if fatal:
            return fatal
        for slot in list(self.slots.values()):
            try:
                self._supervise_slot(slot)
            except redis.RedisError as exc:
                log.warning("supervising worker slot %d: Redis unavailable (%s)", slot.slot, exc)
        self.publish_slots()
        return []

    def _client(self) -> redis.Redis:
        if self._supervision_client is None:
            self._supervision_client = redis.Redis.from_url(self.redis_url, socket_connect_timeout=2,
                                                            socket_timeout=2)
        return self._supervision_client

    def publish_slots(self) -> None:
        """Write each worker slot's state to Redis for /healthz (best effort)."""
        try:
            publish_workers(self._client(), self.queue_name,
                            [slot.record(self.supervisor_id) for slot in self.slots.values()])
        except redis.RedisError as exc:
            log.debug("could not publish the workers' state: %s", exc)

    def _unpublish_slots(self) -> None:
        if not self.slots:
            return
        try:
            unpublish_workers(self._client(), self.queue_name,
                              [slot.record(self.supervisor_id) for slot in self.slots.values()])
        except redis.RedisError as exc:
            log.debug("could not remove the workers' state: %s", exc)

    def stop(self) -> None:
        """Web first, then workers (warm shutdown), then the Redis this stack started."""
        for part in sorted(self.parts, key=lambda p: (p.name == "redis", p.name.startswith("worker-"))):
            if part.name == "redis":
                self._unpublish_slots()
            part.stop()
            log.info("stopped %s", part.name)
        if not self.started_redis:
            self._unpublish_slots()
        self.parts.clear()
        self.slots.clear()
        self._slot_parts.clear()
        if self._supervision_client is not None:
            self._supervision_client.close()
            self._supervision_client = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="side-stack",
        description="Start Redis (AOF on, data in var/redis/), side-worker(s) and the web service "
        "on 127.0.0.1, wait until each answers, print the URLs, and stop them all on Ctrl-C.",
        epilog="Redis URL, database and web port come from side.toml / SIDE_SERVICE_* variables; "
        "logs go to var/log/stack/.")
    p.add_argument("--config", type=Path, help="TOML configuration file (default: $SIDE_CONFIG or ./side.toml)")
    p.add_argument("--port", type=int, help="web service port (default: service.port, 8765)")
    p.add_argument("--workers", type=int, default=1, metavar="N", help="number of workers (default 1)")
    p.add_argument("--no-web", action="store_true", help="start Redis and workers only")
    p.add_argument("--no-index", action="store_true", help="workers suggest no sources from an index")
    p.add_argument("--max-restarts", type=int, default=RestartPolicy.max_restarts, metavar="N",
                   help="a dead worker is restarted after a growing wait (1 s doubling to 5 min); after more "
                   f"than N exits within {RestartPolicy.window_s / 60:.0f} minutes it is given up on "
                   f"(default {RestartPolicy.max_restarts}; 0 never restarts)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        at_least(1, port=args.port, workers=args.workers)
        at_most(65535, port=args.port)
        at_least(0, max_restarts=args.max_restarts)
        config = load_config(args.config)
    except SideError as exc:
        print(f"side-stack: error: {exc}", file=sys.stderr)
        return 2
    var = Path(config.var_dir)
    env = {"SIDE_CONFIG": str(args.config.resolve())} if args.config else {}
    stack = Stack(redis_url=config.service.redis_url, database_url=config.database_url, log_dir=var / "log" / "stack",
                  redis_dir=var / "redis", host="127.0.0.1", web_port=args.port or config.service.port,
                  workers=args.workers, with_web=not args.no_web, env=env,
                  worker_args=["--no-index"] if args.no_index else [], queue=config.service.queue,
                  restart=RestartPolicy(max_restarts=args.max_restarts))

    def on_signal(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    # Explicitly, because a shell that starts us in the background hands SIGINT down as ignored.
    signal.signal(signal.SIGINT, on_signal)
    try:
        stack.start()
        print(f"Redis     {stack.redis_url}{'' if stack.started_redis else ' (already running, reused)'}")
        print(f"Database  {stack.database_url}")
        for part in stack.worker_parts():
            print(f"Worker    pid {part.process.pid}, log {part.log_path}")
        if stack.with_web:
            print(f"Web       {stack.web_url}/  API {stack.api_url}/checks  health {stack.web_url}/healthz")
        print("Ctrl-C stops everything.", flush=True)
        while not (dead := stack.supervise()):
            time.sleep(SUPERVISE_INTERVAL_S)
        for part in dead:
            log.error("%s exited with %s; stopping the stack:\n%s", part.name,
                      exit_description(part.process.returncode), part.log_tail())
        return 1
    except StackError as exc:
        print(f"side-stack: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        log.info("stopping")
        return 0
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        stack.stop()


if __name__ == "__main__":
    sys.exit(main())
