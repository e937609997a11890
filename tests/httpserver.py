"""A real HTTP server on 127.0.0.1 for tests that fetch URLs.

Tests must not reach the internet, yet mocking ``requests`` would hide exactly the bugs a
fetcher has (redirect handling, timeouts, streaming caps). So the tests talk to a threaded
``http.server`` bound to 127.0.0.1 on a random port, configured with canned responses::

    with LocalServer() as server:
        server.add("/page", Response(body=b"<html>...</html>"))
        server.add("/old", redirect("/page"))
        fetch_source(server.url("/old"), FetchConfig(allow_hosts=["127.0.0.1"]))
        assert server.hits["/page"] == 1

A pytest fixture ``local_server`` in a test module can simply ``yield`` one of these.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


@dataclass
class Response:
    """One canned response. ``delay_s`` waits before the headers; ``chunk_delay_s`` drips the
    body in ``chunk_size`` pieces; ``content_length=False`` omits the header (chunked-less stream
    ended by closing the connection)."""

    body: bytes = b""
    status: int = 200
    content_type: str | None = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    chunk_delay_s: float = 0.0
    chunk_size: int = 1024
    content_length: bool = True


def redirect(location: str, status: int = 302) -> Response:
    return Response(status=status, content_type=None, headers={"Location": location})


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: object) -> None:
        return None

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        self.server.owner.hits[path] += 1
        response = self.server.owner.routes.get(path)
        if response is None:
            response = Response(status=404, body=b"not found", content_type="text/plain")
        try:
            self._send(response)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout, size cap): expected in tests

    def _send(self, response: Response) -> None:
        if response.delay_s:
            time.sleep(response.delay_s)
        self.send_response(response.status)
        if response.content_type:
            self.send_header("Content-Type", response.content_type)
        if response.content_length:
            self.send_header("Content-Length", str(len(response.body)))
        for key, value in response.headers.items():
            self.send_header(key, value)
        self.end_headers()
        if not response.chunk_delay_s:
            self.wfile.write(response.body)
            return
        for start in range(0, len(response.body), response.chunk_size):
            self.wfile.write(response.body[start : start + response.chunk_size])
            self.wfile.flush()
            time.sleep(response.chunk_delay_s)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: LocalServer


class LocalServer:
    """Threaded HTTP server on 127.0.0.1, random port; use as a context manager."""

    host = "127.0.0.1"

    def __init__(self) -> None:
        self.routes: dict[str, Response] = {}
        self.hits: Counter[str] = Counter()
        self._server = _Server((self.host, 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def url(self, path: str = "/") -> str:
        return f"http://{self.host}:{self.port}{path}"

    def add(self, path: str, response: Response) -> str:
        """Serve ``response`` at ``path``; returns the full URL."""
        self.routes[path] = response
        return self.url(path)

    def start(self) -> LocalServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
