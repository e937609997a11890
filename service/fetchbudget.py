"""Budgets of outside fetches: how much the web API's callers may make Side fetch for them.

A check sent to the API names the URLs its citations cite, and the worker fetches them: without
a bound, one anonymous request of 50 citations is 50 fetches of URLs the caller chose, and a
changed query string makes them new. So the API charges every cited URL that Side would have to
fetch anew before it queues a check:

- the unit is a cited **page**: the URL without its query string and fragment (scheme, host,
  port, path). A page costs once per window, whatever its query strings; within the window it is
  fetched once for a client: another query string of a page already fetched for that client is
  not fetched again (a query string is the usual way to make one page look like many), nor is
  the same URL again when the first fetch left nothing in the cache (a failing page);
- each client (its address, or the wiki account of a logged-in reviewer, who gets a larger
  budget) may cause ``client_fetch_budget`` new pages per window;
- each cited host may be fetched for ``host_fetch_budget`` pages per window by all the API's
  clients together, as the crawler is polite to a host;
- a URL the worker's cache holds costs nothing, since reading it fetches nothing (the cache is
  keyed without fragments, which never reach the server).

A URL over budget is not dropped: its claims are marked :attr:`~side.extract.claims.Claim.no_fetch`
with the reason, and the worker reads it from the corpus or the cache only, else answers
"cannot check (fetch budget): <reason>" for it. The counters are Redis hashes (page -> the URL
first fetched) under RQ's key prefix, one per client and per host and window, charged by one Lua
script so that concurrent requests cannot overspend.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

import redis
from rq.defaults import RQ_KEY_PREFIX

from side.config import ServiceConfig

__all__ = ["FetchBudgetPolicy", "OutsideFetches", "page_key", "host_of"]

log = logging.getLogger(__name__)

#: Charges one URL: KEYS client hash, host hash; ARGV page, URL, client budget, host budget, TTL.
#: Returns "same" (this URL was charged to this client already), "variant" (another query string
#: of the page was), "client" or "host" (that budget is spent), or "charged".
_CHARGE = """
local seen = redis.call('HGET', KEYS[1], ARGV[1])
if seen then
  if seen == ARGV[2] then return 'same' end
  return 'variant'
end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 'client' end
local on_host = redis.call('HEXISTS', KEYS[2], ARGV[1])
if on_host == 0 and redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[4]) then return 'host' end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[5])
if on_host == 0 then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
  redis.call('EXPIRE', KEYS[2], ARGV[5])
end
return 'charged'
"""


def _without_fragment(url: str) -> str:
    return url.split("#", 1)[0]


def host_of(url: str) -> str:
    """The host a URL is fetched from, lower case (any port: one machine, one politeness budget)."""
    return (urlsplit(url).hostname or "").lower()


def page_key(url: str) -> str:
    """The page a URL names: scheme, host, port and path, without query string or fragment."""
    parts = urlsplit(url)
    try:
        number = parts.port
    except ValueError:  # a port out of range or not a number: the fetch refuses it; the page still counts
        number = parts.netloc.rpartition(":")[2] or None
    port = f":{number}" if number else ""
    return f"{parts.scheme.lower()}://{host_of(url)}{port}{parts.path or '/'}"


@dataclass(frozen=True)
class FetchBudgetPolicy:
    """The budgets, in pages per window (``service.*_fetch_budget``, ``service.fetch_budget_window_s``)."""

    client: int = 200
    reviewer: int = 2000
    host: int = 600
    window_s: int = 3600

    @classmethod
    def from_config(cls, config: ServiceConfig) -> FetchBudgetPolicy:
        return cls(config.client_fetch_budget, config.reviewer_fetch_budget, config.host_fetch_budget,
                   max(1, config.fetch_budget_window_s))

    @property
    def window(self) -> str:
        """The window in words: "hour", "10 minutes"."""
        if self.window_s % 3600 == 0:
            hours = self.window_s // 3600
            return "hour" if hours == 1 else f"{hours} hours"
        if self.window_s % 60 == 0:
            return f"{self.window_s // 60} minutes"
        return f"{self.window_s} s"


class OutsideFetches:
    """The API's fetch budgets in Redis (see the module's docstring)."""

    def __init__(self, connection: redis.Redis, policy: FetchBudgetPolicy, namespace: str = "side",
                 is_cached: Callable[[str], bool] | None = None, clock: Callable[[], float] = time.time) -> None:
        self.connection = connection
        self.policy = policy
        self.namespace = namespace
        self.is_cached = is_cached or (lambda url: False)
        self.clock = clock
        self._charge = connection.register_script(_CHARGE)

    def _key(self, kind: str, name: str) -> str:
        window = int(self.clock() // self.policy.window_s)
        return f"{RQ_KEY_PREFIX}:side:fetches:{self.namespace}:{kind}:{window}:{name}"

    def spent(self, client: str) -> int:
        """Pages charged to ``client`` in the current window."""
        return int(self.connection.hlen(self._key("client", client)))

    def host_spent(self, host: str) -> int:
        """Pages charged to ``host`` in the current window, by all clients."""
        return int(self.connection.hlen(self._key("host", host)))

    def charge(self, client: str, urls: Iterable[str], reviewer: bool = False) -> dict[str, str]:
        """Charge each URL that would be fetched anew to ``client``'s and its host's budgets;
        returns ``{url: reason}`` for those that may not be fetched. Raises ``redis.RedisError``."""
        budget = self.policy.reviewer if reviewer else self.policy.client
        window = self.policy.window
        denied: dict[str, str] = {}
        for url in dict.fromkeys(urls):
            if self.is_cached(url):
                continue
            page, host = page_key(url), host_of(url)
            outcome = self._charge(keys=[self._key("client", client), self._key("host", host)],
                                   args=[page, _without_fragment(url), budget, self.policy.host,
                                         self.policy.window_s])
            outcome = outcome.decode() if isinstance(outcome, bytes) else str(outcome)
            if outcome == "same":  # fetched for this client before, yet not in the cache: it did not read
                denied[url] = (f"{_without_fragment(url)} was fetched for this client within the {window} "
                               "and Side kept no readable copy of it")
            elif outcome == "variant":
                denied[url] = (f"{page} was fetched for this client with another query string within the {window}; "
                               f"a page is fetched once per {window}, whatever its query string")
            elif outcome == "client":
                denied[url] = (f"this client's budget of {budget} cited pages fetched per {window} is spent; "
                               "pages Side has read before are still checked")
            elif outcome == "host":
                denied[url] = f"the budget of {self.policy.host} pages per {window} fetched from {host} is spent"
        if denied:
            log.info("fetch budget: %d of %d URLs not fetched for %s", len(denied), len(set(urls)), client)
        return denied
