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
from harness.stack import TEST_ENV, pid_alive

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


def wait_for_json(url: str, ready, timeout: float = 180.0) -> dict:
    """GET ``url`` until ``ready(body)`` holds; fail with the last body."""
    import requests

    deadline, body = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        try:
            body = requests.get(url, timeout=10).json()
        except (requests.RequestException, ValueError):
            body = None
        if body is not None and ready(body):
            return body
        time.sleep(0.5)
    pytest.fail(f"{url} never got ready: {body}")


def first_slot(health: dict) -> dict:
    """The first supervised worker slot /healthz reports, or {} while there is none."""
    slots = health.get("components", {}).get("workers", {}).get("supervised", [])
    return slots[0] if slots else {}


def test_a_killed_worker_is_restarted_while_redis_and_the_api_keep_serving(tmp_path):
    """kill -9 the only worker: the stack stays up, the API still takes a check, a new worker
    comes up after the backoff (/healthz shows the restart and the exit) and runs the check."""
    import requests

    process, redis_port = start_stack(tmp_path, "--port", str(free_port()))
    try:
        output = read_until(process, "Ctrl-C stops everything.")
        web = re.search(r"Web       (http://\S+)/ ", output).group(1)
        worker_pid = int(re.search(r"Worker    pid (\d+)", output).group(1))
        wait_for_json(f"{web}/healthz", lambda b: first_slot(b).get("state") == "running", timeout=30)
        os.kill(worker_pid, signal.SIGKILL)
        wait_for_json(f"{web}/healthz", lambda b: first_slot(b).get("last_exit_status") == -signal.SIGKILL,
                      timeout=30)

        body = {"wiki": "enwiki", "title": "Foo", "claims": [{"key": "c1", "text": "Foo was founded in 1990."}]}
        response = requests.post(f"{web}/api/v1/checks", json=body, timeout=10)
        assert response.status_code == 202, response.text
        check_id = response.json()["check"]["id"]
        assert redis.Redis(port=redis_port).ping()
        assert process.poll() is None

        health = wait_for_json(f"{web}/healthz",
                               lambda b: first_slot(b).get("state") == "running" and first_slot(b)["restarts"] == 1)
        [slot] = health["components"]["workers"]["supervised"]
        assert slot["pid"] not in (None, worker_pid) and pid_alive(slot["pid"])
        assert slot["last_exit_at"] and slot["name"].endswith("-r1")
        check = wait_for_json(f"{web}/api/v1/checks/{check_id}",
                              lambda b: b["check"]["status"] in ("done", "failed"), timeout=240)["check"]
        assert check["status"] == "done", check
        assert len(check["results"]) == 1

        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0
        assert not pid_alive(slot["pid"])
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        process.stdout.close()
