"""``side-stack`` as the README runs it: starts Redis (AOF) and a worker, stops both on SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest
import redis

from harness.redis import free_port, require_redis_server
from harness.stack import TEST_ENV, pid_alive, web_available

pytestmark = pytest.mark.slow


def read_until(process: subprocess.Popen, marker: str, timeout: float = 120.0) -> str:
    """Output of ``process`` up to the line containing ``marker``."""
    lines = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line and process.poll() is not None:
            break
        lines.append(line)
        if marker in line:
            return "".join(lines)
    process.kill()
    pytest.fail(f"{marker!r} not printed:\n{''.join(lines)}")


def start_stack(tmp_path, *args: str) -> tuple[subprocess.Popen, int]:
    require_redis_server()
    port = free_port()
    env = {**os.environ, **TEST_ENV, "SIDE_VAR_DIR": str(tmp_path), "SIDE_SERVICE_REDIS_URL": f"redis://127.0.0.1:{port}/0"}
    process = subprocess.Popen([sys.executable, "-m", "workers.stack", "--no-index", *args], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    return process, port


def test_side_stack_starts_redis_and_a_worker_and_stops_them(tmp_path):
    process, port = start_stack(tmp_path, "--no-web")
    try:
        output = read_until(process, "Ctrl-C stops everything.")
        assert f"Redis     redis://127.0.0.1:{port}/0\n" in output
        worker_pid = int(re.search(r"Worker    pid (\d+)", output).group(1))
        client = redis.Redis(port=port)
        assert client.config_get("appendonly") == {"appendonly": "yes"}
        assert (tmp_path / "redis" / "appendonlydir").is_dir()
        assert any(key.startswith(b"rq:worker:") for key in client.keys("rq:worker:*"))

        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0
        assert not pid_alive(worker_pid)
        with pytest.raises(redis.ConnectionError):
            redis.Redis(port=port, socket_connect_timeout=1).ping()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        process.stdout.close()


@pytest.mark.skipif(not web_available(), reason="the web service (gadget.server.serve) is not written yet")
def test_side_stack_serves_the_api(tmp_path):
    import requests

    process, _ = start_stack(tmp_path, "--port", str(free_port()))
    try:
        output = read_until(process, "Ctrl-C stops everything.")
        web = re.search(r"Web       (http://\S+)/ ", output).group(1)
        assert requests.get(f"{web}/healthz", timeout=10).status_code == 200
        process.send_signal(signal.SIGINT)
        assert process.wait(60) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        process.stdout.close()
