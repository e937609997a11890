"""A real ``redis-server`` per test module, on a free 127.0.0.1 port, with AOF on.

The shared Redis on 6379 has no persistence and belongs to everyone; tests that restart or
kill Redis, or count keys, start their own here::

    def test_something(redis_server, redis_db):
        conn = redis.Redis.from_url(redis_server.url)   # redis_db flushed it for this test
        redis_server.restart()                          # same port, same AOF: data survives

AOF with ``appendfsync always`` makes a restart (even ``kill -9``) keep every acknowledged
write, like the project's deployed Redis. Outside CI the fixture skips when ``redis-server``
is not installed; in CI (``CI=true``) that is a failure.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from harness import free_port

REDIS_SERVER = os.environ.get("SIDE_REDIS_SERVER", shutil.which("redis-server") or "/usr/bin/redis-server")


class RedisServerError(RuntimeError):
    """The test Redis could not be started."""


class RedisServer:
    """One ``redis-server`` process with its own port and data folder."""

    def __init__(self, folder: Path, port: int | None = None) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.log_path = self.folder / "redis.log"
        self._process: subprocess.Popen | None = None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def command(self) -> list[str]:
        return [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
                "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no",
                "--logfile", str(self.log_path), "--protected-mode", "yes"]

    def start(self, timeout_s: float = 10.0) -> RedisServer:
        """Start on the same port and folder (AOF replayed) and wait until it answers PING."""
        if self._process is not None and self._process.poll() is None:
            return self
        self._process = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        client = redis.Redis(port=self.port, socket_connect_timeout=0.5)
        try:
            while time.monotonic() < deadline:
                if self._process.poll() is not None:
                    raise RedisServerError(f"redis-server exited: {self.log_tail()}")
                try:
                    if client.ping():
                        return self
                except redis.exceptions.BusyLoadingError:
                    pass  # replaying the AOF
                except redis.ConnectionError:
                    pass
                time.sleep(0.05)
        finally:
            client.close()
        self.kill()
        raise RedisServerError(f"redis-server did not answer within {timeout_s} s: {self.log_tail()}")

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM (Redis flushes the AOF and exits), SIGKILL if it hangs."""
        if self._process is None:
            return
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None

    def kill(self) -> None:
        """SIGKILL, as a crash: only what the AOF already holds survives."""
        if self._process is None:
            return
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        self._process = None

    def restart(self, kill: bool = False) -> None:
        """Stop (or kill) and start again on the same port and data folder."""
        if kill:
            self.kill()
        else:
            self.stop()
        self.start()

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)

    def flush(self) -> None:
        with self.client() as client:
            client.flushall()

    def log_tail(self, lines: int = 20) -> str:
        if not self.log_path.is_file():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def require_redis_server() -> None:
    if Path(REDIS_SERVER).is_file():
        return
    message = f"redis-server not found at {REDIS_SERVER} (apt-get install redis-server)"
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """Own ``redis-server`` for the module (AOF on); stopped at teardown."""
    require_redis_server()
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def redis_db(redis_server: RedisServer) -> Iterator[RedisServer]:
    """The module's Redis, running and flushed before each test."""
    redis_server.start()
    redis_server.flush()
    yield redis_server
