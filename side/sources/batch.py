"""Fetch a check's sources at once: a bounded pool, a bound per host, one budget shared fairly.

Fetching one source after another let three slow pages hold a worker for 70 s, and one
request could use a job's whole timeout. :func:`fetch_all` runs up to ``concurrency`` fetches
at a time (at most ``per_host`` to one host, to stay polite), all within one wall-clock budget
for the check. Each fetch is given a deadline when it starts: its fair share of the time left,

    share = time left x parallel slots / sources not yet finished,

where the slots are what the pool and the per-host bound allow for the sources still
outstanding. A fast source leaves its unused time to the others; a hostile one (never
answers, dribbles, a PDF bomb) costs at most its share and fails on its own. When the budget
ends, sources still out are reported as not fetched in time, and their threads are left to
end at their own deadlines: the check goes on with every source that did arrive.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import urlsplit

from side.config import FetchConfig
from side.errors import SourceFetchError

__all__ = ["FetchBudget", "Fetched", "call_with_deadline", "fair_share", "fetch_all", "host_of", "takes_deadline"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Fetches still running when the budget ends get this long to report their own timeout (their
#: deadlines end with the budget), which says more than "not fetched within the budget".
GRACE_S = 0.5


@dataclass(frozen=True)
class FetchBudget:
    """How one check's sources share time and connections (see the module doc)."""

    seconds: float = FetchConfig.check_budget_s
    concurrency: int = FetchConfig.concurrency
    per_host: int = FetchConfig.per_host

    @classmethod
    def from_config(cls, config: FetchConfig) -> FetchBudget:
        return cls(float(config.check_budget_s), max(1, int(config.concurrency)), max(1, int(config.per_host)))


@dataclass(frozen=True)
class Fetched(Generic[T]):
    """What became of one URL: its value, or the error that is its citation's reason."""

    url: str
    value: T | None = None
    error: SourceFetchError | None = None
    seconds: float = 0.0


def host_of(url: str) -> str:
    """The host a URL's fetch is counted against (a URL that will not parse counts as its own)."""
    try:
        return (urlsplit(url).hostname or url).lower()
    except ValueError:
        return url


def fair_share(remaining: float, outstanding: Counter[str], concurrency: int, per_host: int) -> float:
    """Seconds a source starting now may use: ``remaining`` x slots / outstanding sources."""
    total = sum(n for n in outstanding.values() if n > 0)
    if total <= 0:
        return max(0.0, remaining)
    slots = min(concurrency, sum(min(per_host, n) for n in outstanding.values() if n > 0))
    return max(0.0, remaining) * max(1, slots) / total


def takes_deadline(fetch: Callable[..., Any]) -> bool:
    """Whether ``fetch`` accepts a ``deadline`` keyword (or any keyword)."""
    try:
        parameters = inspect.signature(fetch).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "deadline" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def call_with_deadline(fetch: Callable[..., T], url: str, deadline: float | None) -> T:
    """``fetch(url, deadline=...)``, or ``fetch(url)`` for a fetch that takes no deadline (it is
    then still waited for only until its deadline, but runs on in the background after it)."""
    if deadline is not None and takes_deadline(fetch):
        return fetch(url, deadline=deadline)
    return fetch(url)


def _attempt(fetch: Callable[..., T], url: str, deadline: float) -> Fetched[T]:
    """One URL in a pool thread; every failure becomes that URL's outcome, never the check's."""
    started = time.monotonic()
    try:
        value = call_with_deadline(fetch, url, deadline)
    except SourceFetchError as exc:
        return Fetched(url, error=exc, seconds=time.monotonic() - started)
    except Exception as exc:  # a bug or an unforeseen library error: this source's failure only
        log.exception("fetching %s failed unexpectedly", url)
        error = SourceFetchError(f"could not fetch {url}: {type(exc).__name__}: {exc}")
        return Fetched(url, error=error, seconds=time.monotonic() - started)
    return Fetched(url, value=value, seconds=time.monotonic() - started)


def _out_of_time(url: str, budget: FetchBudget, count: int) -> Fetched[Any]:
    error = SourceFetchError(f"not fetched within the check's time budget ({budget.seconds:g} s for "
                             f"{count} sources)", transient=True)
    return Fetched(url, error=error, seconds=budget.seconds)


def fetch_all(urls: Iterable[str], fetch: Callable[..., T], budget: FetchBudget) -> dict[str, Fetched[T]]:
    """Every distinct URL's outcome, in first-seen order, within ``budget.seconds`` (+ :data:`GRACE_S`)."""
    order = list(dict.fromkeys(urls))
    if not order:
        return {}
    end = time.monotonic() + budget.seconds
    pending = list(order)
    outstanding: Counter[str] = Counter(host_of(u) for u in order)
    busy: Counter[str] = Counter()
    running: dict[Future[Fetched[T]], str] = {}
    outcomes: dict[str, Fetched[T]] = {}
    pool = ThreadPoolExecutor(max_workers=min(budget.concurrency, len(order)), thread_name_prefix="side-fetch")
    try:
        while pending or running:
            now = time.monotonic()
            if now >= end + GRACE_S or (now >= end and not running):
                break
            for url in list(pending) if now < end else ():
                if len(running) >= budget.concurrency:
                    break
                host = host_of(url)
                if busy[host] >= budget.per_host:
                    continue
                share = fair_share(end - now, outstanding, budget.concurrency, budget.per_host)
                pending.remove(url)
                busy[host] += 1
                running[pool.submit(_attempt, fetch, url, min(end, now + share))] = url
            done, _ = wait(running, timeout=max(0.0, end + GRACE_S - time.monotonic()),
                           return_when=FIRST_COMPLETED)
            for future in done:
                url = running.pop(future)
                busy[host_of(url)] -= 1
                outstanding[host_of(url)] -= 1
                outcomes[url] = future.result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    late = [u for u in order if u not in outcomes]
    if late:
        log.warning("%d of %d sources not fetched within the check's %g s budget: %s", len(late), len(order),
                    budget.seconds, ", ".join(late[:5]))
    return {u: outcomes.get(u) or _out_of_time(u, budget, len(order)) for u in order}
