"""A real nginx reverse proxy on 127.0.0.1, in front of a web service the test started.

Debian's ``nginx`` runs as one unprivileged-port process with a configuration, pid, logs and
temporary folders of its own in a test folder (``daemon off``, ``master_process off``: the
process started is the server, and stopping it stops everything). It forwards every request to
the upstream with ``X-Forwarded-For: $proxy_add_x_forwarded_for``, as Toolforge's front proxy
does: whatever the client sent, then the address the client connected from::

    with ReverseProxy(tmp_path / "nginx", upstream_port) as proxy:
        requests.get(proxy.url + "/healthz")

Clients told apart by address connect from different loopback addresses (127.0.0.2,
127.0.0.3: all of 127/8 is the loopback interface on Linux). Outside CI the tests skip when
nginx is not installed (``scripts/install.sh`` installs it); in CI (``CI=true``) that is a failure.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Self

import pytest

from harness import free_port

NGINX = os.environ.get("SIDE_NGINX", shutil.which("nginx") or "/usr/sbin/nginx")

CONFIG = """\
daemon off;
master_process off;
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log info;
events {{ worker_connections 64; }}
http {{
    access_log {folder}/access.log;
    client_body_temp_path {folder}/client_body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://127.0.0.1:{upstream};
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
        }}
    }}
}}
"""


def need_nginx() -> None:
    if not Path(NGINX).is_file():
        message = f"nginx not installed ({NGINX}); scripts/install.sh installs it"
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(message)
        pytest.skip(message)


class ReverseProxy:
    """One nginx process proxying 127.0.0.1:``port`` to 127.0.0.1:``upstream``."""

    def __init__(self, folder: Path, upstream: int) -> None:
        self.folder = Path(folder)
        self.port = free_port()
        self.upstream = upstream
        self.url = f"http://127.0.0.1:{self.port}"
        self._process: subprocess.Popen | None = None

    def start(self, timeout_s: float = 10.0) -> Self:
        need_nginx()
        self.folder.mkdir(parents=True, exist_ok=True)
        conf = self.folder / "nginx.conf"
        conf.write_text(CONFIG.format(folder=self.folder, port=self.port, upstream=self.upstream))
        self._process = subprocess.Popen([NGINX, "-p", str(self.folder), "-e", str(self.folder / "error.log"),
                                          "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                log = self.folder / "error.log"
                raise RuntimeError(f"nginx exited: {log.read_text()[-2000:] if log.is_file() else ''}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"nginx did not listen on {self.port} within {timeout_s} s")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(10)
        self._process = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
