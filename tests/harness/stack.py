"""The whole service on 127.0.0.1 for integration tests: Redis, real workers, the web service.

``service_stack`` is a factory (module scope: the workers load the real model, ~10 s each, so
a test module shares one stack). It starts its own ``redis-server`` (AOF on, free port), one
``side-worker`` subprocess and the web service subprocess (``python -m gadget.server.serve``)
on free ports, with a SQLite results store in a temporary folder; everything is stopped, by
process group, at the end of the module::

    @pytest.fixture(scope="module")
    def stack(service_stack):
        return service_stack(env={"SIDE_FETCH_ALLOW_HOSTS": "127.0.0.1"})

    def test_flow(stack):
        requests.post(f"{stack.api_url}/checks", json={...})
        record = stack.wait_for(check_id, timeout=120)

``env`` reaches every part (``SIDE_*`` settings, e.g. ``SIDE_SERVICE_CORS_ORIGINS``);
``var_dir`` points the parts at a folder holding an evidence index (``var_dir/index``);
``with_web=False`` starts Redis and workers only. Torch runs on 2 threads per worker, so tests
share the machine.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from service.store import Check, CheckRequest, Store
from side.config import ServiceConfig
from workers.stack import Part, Stack

from harness.redis import RedisServer, free_port, require_redis_server

#: Worker options for tests: quick heartbeats and maintenance, so a killed worker's job (or
#: one Redis lost) is recovered within seconds instead of minutes.
TEST_WORKER_ARGS = ["--heartbeat", "2", "--maintenance", "3", "--requeue-after", "3"]
TEST_ENV = {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false"}


@dataclass
class ServiceStack:
    """A running stack and helpers to use it from tests."""

    stack: Stack
    redis: RedisServer
    folder: Path
    config: ServiceConfig
    _store: Store | None = field(default=None, repr=False)

    @property
    def redis_url(self) -> str:
        return self.stack.redis_url

    @property
    def database_url(self) -> str:
        return self.stack.database_url

    @property
    def web_url(self) -> str | None:
        return self.stack.web_url if self.stack.with_web else None

    @property
    def api_url(self) -> str | None:
        return self.stack.api_url if self.stack.with_web else None

    @property
    def env(self) -> dict[str, str]:
        """The environment the parts run with (e.g. for a bot subprocess using this stack)."""
        return self.stack.child_env()

    @property
    def workers(self) -> list[Part]:
        return self.stack.worker_parts()

    @property
    def worker_log(self) -> Path:
        return self.workers[0].log_path

    def store(self) -> Store:
        if self._store is None:
            self._store = Store.open(self.database_url)
        return self._store

    def queue(self):
        from service.queue import get_queue, redis_connection

        return get_queue(redis_connection(self.redis_url), self.config)

    def submit(self, new: CheckRequest) -> tuple[Check, bool]:
        """Submit a check as the bot and the API do (store row + job)."""
        from service.queue import submit

        return submit(self.store(), self.queue(), new, self.config)

    def wait_for(self, check_id: str, timeout: float = 120.0, statuses: tuple[str, ...] = ("done", "failed"),
                 ) -> Check:
        """Poll the store until the check reaches one of ``statuses``; fail with the worker log."""
        deadline = time.monotonic() + timeout
        record = None
        while time.monotonic() < deadline:
            record = self.store().check(check_id)
            if record is not None and record.status in statuses:
                return record
            time.sleep(0.2)
        logs = "\n".join(f"--- {p.name}\n{p.log_tail(40)}" for p in self.stack.parts)
        pytest.fail(f"check {check_id} not {'/'.join(statuses)} after {timeout:.0f} s "
                    f"(status {record.status if record else 'unknown'})\n{logs}")

    def start_worker(self, *extra_args: str) -> Part:
        return self.stack.start_worker(extra_args)

    def kill_worker(self, part: Part | None = None, sig: int = signal.SIGKILL) -> None:
        """Kill a worker (the first by default) without letting it clean up."""
        part = part or self.workers[0]
        part.signal(sig)
        part.process.wait(30)
        part.stop()
        self.stack.parts.remove(part)

    def stop(self) -> None:
        self.stack.stop()
        if self._store is not None:
            self._store.close()
            self._store = None
        self.redis.kill()


def start_service_stack(folder: Path, env: dict[str, str] | None = None, with_web: bool = True, workers: int = 1,
                        var_dir: Path | None = None, worker_args: list[str] | None = None,
                        config: dict[str, Any] | None = None) -> ServiceStack:
    """Start Redis, ``workers`` workers and (``with_web``) the web service; see the module doc.

    ``config`` holds ServiceConfig overrides (e.g. ``{"retries": 0, "job_timeout_s": 5}``); they
    reach both this process's :meth:`ServiceStack.submit` and the parts (as ``SIDE_SERVICE_*``).
    """
    require_redis_server()
    folder.mkdir(parents=True, exist_ok=True)
    server = RedisServer(folder / "redis").start()
    overrides = dict(config or {})
    service = ServiceConfig(redis_url=server.url, database_url=f"sqlite:///{folder / 'side.sqlite3'}",
                            **overrides)
    child_env = {**TEST_ENV, "SIDE_VAR_DIR": str(var_dir or folder / "var")}
    child_env.update({f"SIDE_SERVICE_{k.upper()}": ",".join(v) if isinstance(v, list) else str(v)
                      for k, v in overrides.items()})
    child_env.update(env or {})
    stack = Stack(redis_url=server.url, database_url=service.database_url, log_dir=folder / "log",
                  redis_dir=folder / "redis", web_port=free_port(), workers=workers, with_web=with_web,
                  env=child_env, worker_args=list(TEST_WORKER_ARGS if worker_args is None else worker_args))
    try:
        stack.start()
    except BaseException:
        server.kill()
        raise
    return ServiceStack(stack, server, folder, service)


@pytest.fixture(scope="module")
def service_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., ServiceStack]]:
    """Factory: ``service_stack(env=..., with_web=..., workers=..., var_dir=..., config=...)``."""
    started: list[ServiceStack] = []

    def start(**kwargs: Any) -> ServiceStack:
        stack = start_service_stack(tmp_path_factory.mktemp("stack"), **kwargs)
        started.append(stack)
        return stack

    yield start
    for stack in started:
        stack.stop()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
