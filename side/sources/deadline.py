"""One clock for a whole fetch, from the first connection to the last byte.

Per-read socket timeouts do not bound a fetch: a server that sends one byte of its status line
or headers every few seconds never trips them, and each redirect hop used to start a fresh
clock. A :class:`Deadline` is set once per fetch; every connect, TLS handshake and read is
given only the time left, and a watchdog timer shuts down every socket the fetch opened when
the time is up, so even a read blocked on a dribbling server returns at once.

Sockets are shut down through a duplicate descriptor: ``shutdown(2)`` acts on the connection,
not on one descriptor, so it also reaches a socket that TLS has since wrapped (the SSL socket
takes over the original descriptor, whose Python object is then detached).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from types import TracebackType

from side.errors import SourceFetchError

__all__ = ["Deadline"]

log = logging.getLogger(__name__)


class Deadline:
    """``seconds`` from now (or until ``until``, a :func:`time.monotonic` instant, if sooner).

    Use as a context manager around the fetch: entering starts the watchdog, leaving stops it
    and closes the duplicate descriptors. ``seconds`` is what error messages quote.
    """

    def __init__(self, seconds: float, until: float | None = None) -> None:
        now = time.monotonic()
        self.expires_at = now + max(0.0, seconds)
        if until is not None:
            self.expires_at = min(self.expires_at, until)
        self.seconds = max(0.0, self.expires_at - now)
        self._lock = threading.Lock()
        self._expired = False
        self._watched: list[socket.socket] = []
        self._timer: threading.Timer | None = None

    def remaining(self) -> float:
        """Seconds left; never negative."""
        return max(0.0, self.expires_at - time.monotonic())

    @property
    def expired(self) -> bool:
        """Whether the time is up (the watchdog fired or the clock says so)."""
        return self._expired or time.monotonic() >= self.expires_at

    def timed_out(self, url: str) -> SourceFetchError:
        """The error a fetch that ran out of time raises (transient: a later try may be faster)."""
        return SourceFetchError(f"fetching {url} timed out after {self.seconds:g} s", transient=True)

    def watch(self, sock: socket.socket) -> None:
        """Shut ``sock``'s connection down when the time is up (at once if it already is)."""
        try:
            duplicate = sock.dup()
        except OSError as exc:  # out of descriptors: the per-read timeouts still apply
            log.debug("cannot watch socket: %s", exc)
            return
        with self._lock:
            self._watched.append(duplicate)
            if self._expired:
                _shutdown(duplicate)

    def _expire(self) -> None:
        with self._lock:  # held while shutting down, so __exit__ cannot close a socket meanwhile
            self._expired = True
            for sock in self._watched:
                _shutdown(sock)

    def __enter__(self) -> Deadline:
        self._timer = threading.Timer(self.remaining(), self._expire)
        self._timer.daemon = True
        self._timer.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            for sock in self._watched:
                sock.close()
            self._watched = []


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed by the other side or by the fetch
