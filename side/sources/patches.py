"""What Side's replacements of trafilatura's code (:mod:`side.sources.discard`,
:mod:`side.sources.comparison`, :mod:`side.sources.copies`, :mod:`side.sources.xmlchars`) share:
each goes in once per process, from whichever extraction asks first, and only over the code it
was argued from; trafilatura's own code can be put back for a while, to time or compare against."""

from __future__ import annotations

import hashlib
import inspect
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

__all__ = ["Once", "source_digest", "swapped"]


class Once:
    """Runs ``setup`` the first time it is called, in any thread; every page's extraction calls
    it, so once it has run no lock is taken. ``lock`` also guards putting things back."""

    def __init__(self, setup: Callable[[], None]) -> None:
        self._setup = setup
        self.lock = threading.Lock()
        self.tried = False

    def __call__(self) -> None:
        if self.tried:
            return
        with self.lock:
            if not self.tried:
                self.tried = True
                self._setup()


def source_digest(module: Any) -> str:
    """SHA-256 of a module's source, to tell the code a replacement was argued from."""
    return hashlib.sha256(inspect.getsource(module).encode()).hexdigest()


@contextmanager
def swapped(once: Once, places: Sequence[tuple[Any, str, Any]]) -> Iterator[None]:
    """Each ``(owner, name, value)`` of ``places`` set for the duration, under ``once.lock``,
    and what was there put back afterwards. Not for concurrent use."""
    with once.lock:
        before = [(owner, name, getattr(owner, name)) for owner, name, _value in places]
        for owner, name, value in places:
            setattr(owner, name, value)
    try:
        yield
    finally:
        with once.lock:
            for owner, name, value in before:
                setattr(owner, name, value)
