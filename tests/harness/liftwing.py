"""Side's Lift Wing model server (deploy/liftwing) on 127.0.0.1, as Lift Wing runs it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from harness import free_port

REPO = Path(__file__).resolve().parents[2]
MODEL = "side-verifier"


@contextmanager
def start_model_server(folder: Path, env: dict[str, str], startup_s: float) -> Iterator[int]:
    """Start the server with ``env`` (over this process's environment, MODEL_NAME set), wait until
    it says the model is ready, and yield its port; the log goes to ``folder``/model-server.log and
    is quoted when the server exits or is not ready within ``startup_s``."""
    port = free_port()
    full = {**os.environ, "PYTHONPATH": str(REPO), "MODEL_NAME": MODEL, "HF_HUB_OFFLINE": "1", **env}
    for name in ("MODEL_PATH", "INDEX_PATH"):
        if name not in env:
            full.pop(name, None)
    log_path = folder / "model-server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "deploy.liftwing.side_verifier.model", "--http_port", str(port),
             "--grpc_port", str(free_port()), "--enable_grpc", "false"],
            cwd=REPO, env=full, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_ready(process, port, log_path, startup_s)
        yield port
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def _wait_ready(process: subprocess.Popen, port: int, log_path: Path, startup_s: float) -> None:
    deadline = time.monotonic() + startup_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the model server exited ({process.returncode}):\n{log_path.read_text()[-3000:]}")
        try:
            response = requests.get(f"http://127.0.0.1:{port}/v1/models/{MODEL}", timeout=2)
            if response.status_code == 200 and response.json().get("ready") is True:
                return
        except (requests.RequestException, ValueError):
            pass
        time.sleep(0.5)
    pytest.fail(f"the model server was not ready within {startup_s} s:\n{log_path.read_text()[-3000:]}")
