"""A real HTTP server on 127.0.0.1 for tests that fetch URLs.

Tests must not reach the internet, yet mocking ``requests`` would hide exactly the bugs a
fetcher has (redirect handling, timeouts, streaming caps). So the tests talk to a threaded
``http.server`` bound to 127.0.0.1 on a random port, configured with canned responses::

    with LocalServer() as server:
        server.add("/page", Response(body=b"<html>...</html>"))
        server.add("/old", redirect("/page"))
        fetch_source(server.url("/old"), FetchConfig(allow_hosts=["127.0.0.1"]))
        assert server.hits["/page"] == 1

A route may also be a function of the request's path and query (``/api?url=...``) that returns
the Response, for servers that answer by query (tests/wayback.py's stand-in for the Wayback
Machine). ``requests`` lists every request's path with its query, in order.

A pytest fixture ``local_server`` in a test module can simply ``yield`` one of these.
:class:`SilentServer` accepts TCP connections and never says a word (for http or https URLs).
"""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


@dataclass
class Response:
    """One canned response. ``delay_s`` waits before the headers; ``header_drip_s`` sends the
    status line and headers one byte at a time, this many seconds apart; ``chunk_delay_s`` drips
    the body in ``chunk_size`` pieces; ``content_length=False`` omits the header (chunked-less
    stream ended by closing the connection)."""

    body: bytes = b""
    status: int = 200
    content_type: str | None = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    header_drip_s: float = 0.0
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
        owner = self.server.owner
        owner.hits[path] += 1
        owner.requests.append(self.path)
        route = owner.routes.get(path)
        response = route(self.path) if callable(route) else route
        if response is None:
            response = Response(status=404, body=b"not found", content_type="text/plain")
        owner.enter()
        try:
            self._send(response)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout, size cap): expected in tests
        finally:
            owner.leave()

    def _drip_head(self, response: Response) -> None:
        """Status line and headers, one byte at a time (a server no per-read timeout catches)."""
        lines = [f"{self.protocol_version} {response.status} {self.responses.get(response.status, ('',))[0]}"]
        if response.content_type:
            lines.append(f"Content-Type: {response.content_type}")
        if response.content_length:
            lines.append(f"Content-Length: {len(response.body)}")
        lines += [f"{k}: {v}" for k, v in response.headers.items()]
        for byte in ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"):
            self.wfile.write(bytes([byte]))
            self.wfile.flush()
            time.sleep(response.header_drip_s)
        self.wfile.write(response.body)

    def _send(self, response: Response) -> None:
        if response.delay_s:
            time.sleep(response.delay_s)
        if response.header_drip_s:
            self._drip_head(response)
            return
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
        self.routes: dict[str, Response | Callable[[str], Response]] = {}
        self.hits: Counter[str] = Counter()
        self.requests: list[str] = []
        #: Requests being answered now, and the most at any one time.
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
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

    def enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def add(self, path: str, response: Response | Callable[[str], Response]) -> str:
        """Serve ``response`` at ``path`` (or what it returns for the request); returns the full URL."""
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


class SilentServer:
    """Accepts TCP connections on 127.0.0.1 and never sends a byte: a site that never answers
    (not even a TLS handshake). Connections are held open until :meth:`stop`."""

    host = "127.0.0.1"

    def __init__(self) -> None:
        self._listener = socket.create_server((self.host, 0))
        self._listener.settimeout(0.05)
        self._held: list[socket.socket] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self.connections = 0

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    def url(self, path: str = "/", scheme: str = "http") -> str:
        return f"{scheme}://{self.host}:{self.port}{path}"

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            self._held.append(conn)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._thread.join()
        for conn in self._held:
            conn.close()
        self._listener.close()
