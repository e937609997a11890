"""Budgets of outside fetches: how much the web API's callers may make Side fetch for them.

A check sent to the API names the URLs its citations cite, and the worker fetches them: without
a bound, one anonymous request of 50 citations is 50 fetches of URLs the caller chose (twice
that with an ``archive-url`` on each). So the API charges every outside fetch a check would
cause before it queues it, in one place (:meth:`OutsideFetches.charge_claims`):

- what a citation may make a worker fetch is :func:`planned_fetches`: the cited URL (unless the
  citation marks it unfit, when only the archive is read) and the citation's own ``archive-url``
  (in the raw form the archive reader asks for), each a URL the caller chose. A resolver added
  later (DOIs, ISBNs) adds its URLs there, and they are charged like any other;
- the unit is a **page**: :func:`page_key`, the URL without its fragment and without known
  tracking parameters (:data:`TRACKING_PARAMS`, :data:`TRACKING_PREFIXES`), the other query
  parameters kept, sorted. ``watch?v=a`` and ``watch?v=b`` are two pages; ``page?utm_source=x``
  and ``page?utm_source=y`` are one, fetched once for a client within the window (the second
  URL would be another fetch of the same page), as is the same URL again when its first fetch
  left nothing in the cache (a failing page);
- each client (its address, or the wiki account of a logged-in reviewer, who gets a larger
  budget) may cause ``client_fetch_budget`` fetches of new pages per window;
- each host may be fetched ``host_fetch_budget`` times per window by all the API's clients
  together, as the crawler is polite to a host: the bound on one host whatever the query
  strings, every client's fetch of a page counted;
- a URL the worker's cache holds costs nothing, since reading it fetches nothing (the cache is
  keyed without fragments, which never reach the server).

The window **slides**: a fetch counts for ``fetch_budget_window_s`` seconds after it was charged,
so no clock boundary lets a client spend its budget twice in a row. Each counter is a Redis
sorted set (page -> when charged) trimmed on every charge, with a hash of the URL charged per
page; one Lua script trims, checks and charges, so concurrent requests cannot overspend.

A cited URL over budget is not dropped: its claims are marked
:attr:`~side.extract.claims.Claim.no_fetch` with the reason, and the worker reads it from the
corpus or the cache only, else answers "cannot check (fetch budget): <reason>" for it. An
archived copy over budget is dropped from the citation: the worker reads the cited page alone.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import redis
from rq.defaults import RQ_KEY_PREFIX

from side.config import ServiceConfig
from side.extract.claims import Citation, Claim
from side.sources.archive import raw_snapshot_url

__all__ = ["FetchBudgetPolicy", "FetchRole", "OutsideFetches", "PlannedFetch", "TRACKING_PARAMS",
           "TRACKING_PREFIXES", "host_of", "page_key", "planned_fetches"]

log = logging.getLogger(__name__)

#: Query parameters that only tell a site who sent the reader (ad and mail campaigns, social
#: shares), never which document it serves: dropped from a page's key. Compared in lower case.
#: Sources: the parameters Firefox's query stripping and the ClearURLs rules remove everywhere.
#: Broader lists (courlan's drops ``id``-like and ``source`` parameters) would merge real pages.
TRACKING_PARAMS = frozenset({
    "fbclid", "gclid", "dclid", "gbraid", "wbraid", "msclkid", "yclid", "twclid", "ttclid",
    "mc_cid", "mc_eid", "igshid", "igsh", "ref_src", "ref_url", "_ga", "_gl", "mkt_tok",
    "_hsenc", "_hsmi", "__hssc", "__hstc", "__hsfp", "hsctatracking", "oly_anon_id", "oly_enc_id",
    "vero_id", "vero_conv", "wickedid", "rb_clickid", "s_kwcid", "ef_id",
})
#: Prefixes of tracking parameters (Google Analytics' ``utm_source``, ``utm_medium``, ...).
TRACKING_PREFIXES = ("utm_",)

#: Charges one fetch. KEYS: the client's sorted set (page -> when charged), the client's hash
#: (page -> URL charged), the host's sorted set (client + page -> when charged). ARGV: page,
#: URL, client budget, host budget, now, window (s), host member. Trims what left the window,
#: then returns "same" (this URL was charged to this client within the window), "variant"
#: (another URL of the page was), "client" or "host" (that budget is spent), or "charged".
_CHARGE = """
local cutoff = tonumber(ARGV[5]) - tonumber(ARGV[6])
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', cutoff)
for i = 1, #expired, 1000 do
  redis.call('HDEL', KEYS[2], unpack(expired, i, math.min(i + 999, #expired)))
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', cutoff)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', cutoff)
local seen = redis.call('HGET', KEYS[2], ARGV[1])
if seen then
  if seen == ARGV[2] then return 'same' end
  return 'variant'
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 'client' end
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[4]) then return 'host' end
local ttl = math.ceil(tonumber(ARGV[6])) + 1
redis.call('ZADD', KEYS[1], ARGV[5], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[7])
for i = 1, 3 do redis.call('EXPIRE', KEYS[i], ttl) end
return 'charged'
"""


def _without_fragment(url: str) -> str:
    return url.split("#", 1)[0]


def host_of(url: str) -> str:
    """The host a URL is fetched from, lower case (any port: one machine, one politeness budget)."""
    return (urlsplit(url).hostname or "").lower()


def is_tracking(name: str) -> bool:
    """Whether query parameter ``name`` is a known tracking parameter (see :data:`TRACKING_PARAMS`)."""
    lowered = name.lower()
    return lowered in TRACKING_PARAMS or lowered.startswith(TRACKING_PREFIXES)


def canonical_query(query: str) -> str:
    """``query`` without tracking parameters, the rest sorted and encoded one way, so that two
    spellings of one page's query string give one key (``b=2&a=1`` and ``a=1&b=2``)."""
    kept = sorted((name, value) for name, value in parse_qsl(query, keep_blank_values=True)
                  if not is_tracking(name))
    return urlencode(kept, quote_via=quote)


def page_key(url: str) -> str:
    """The page a URL names: scheme, host, port, path and its query string without tracking
    parameters (:func:`canonical_query`); the fragment, which never reaches the server, dropped."""
    parts = urlsplit(url)
    try:
        number = parts.port
    except ValueError:  # a port out of range or not a number: the fetch refuses it; the page still counts
        number = parts.netloc.rpartition(":")[2] or None
    port = f":{number}" if number else ""
    query = canonical_query(parts.query)
    return f"{parts.scheme.lower()}://{host_of(url)}{port}{parts.path or '/'}{'?' + query if query else ''}"


class FetchRole(enum.Enum):
    """Which copy of a cited source a fetch reads."""

    CITED = "cited page"
    ARCHIVE = "archived copy"


@dataclass(frozen=True)
class PlannedFetch:
    """One outside fetch a citation may make a worker do: the URL as the worker requests it."""

    url: str
    role: FetchRole


def _is_http(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def planned_fetches(citation: Citation, archive: bool = True) -> list[PlannedFetch]:
    """Every URL of ``citation`` a worker may fetch (see the module doc): the cited URL unless the
    citation marks it unfit, and with ``archive`` (``fetch.archive``) its own archive-url in the
    raw form :class:`~side.sources.archive.ArchiveReader` reads. A URL that is not http(s) is
    refused by the fetch guard before any request, so it costs nothing."""
    if not citation.url:  # a source is read by its cited URL: without one nothing is fetched
        return []
    planned = []
    if citation.live_usable and _is_http(citation.url):
        planned.append(PlannedFetch(_without_fragment(citation.url), FetchRole.CITED))
    archived = (citation.archive_url or "").strip()
    if archive and archived and _is_http(archived):
        planned.append(PlannedFetch(_without_fragment(raw_snapshot_url(archived)), FetchRole.ARCHIVE))
    return planned


@dataclass(frozen=True)
class FetchBudgetPolicy:
    """The budgets, in fetches per window (``service.*_fetch_budget``, ``service.fetch_budget_window_s``)."""

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
    """The API's fetch budgets in Redis (see the module's docstring).

    ``clock`` gives the time a fetch is charged at (Unix seconds; every web process's clock, so
    keep them synchronised, as NTP does); ``archive`` is ``fetch.archive``: whether workers read
    a citation's archive-url at all."""

    def __init__(self, connection: redis.Redis, policy: FetchBudgetPolicy, namespace: str = "side",
                 is_cached: Callable[[str], bool] | None = None, clock: Callable[[], float] = time.time,
                 archive: bool = True) -> None:
        self.connection = connection
        self.policy = policy
        self.namespace = namespace
        self.is_cached = is_cached or (lambda url: False)
        self.clock = clock
        self.archive = archive
        self._charge = connection.register_script(_CHARGE)

    def _key(self, kind: str, name: str) -> str:
        return f"{RQ_KEY_PREFIX}:side:fetches:{self.namespace}:{kind}:{name}"

    def _live(self, key: str) -> int:
        """Members of sorted set ``key`` charged within the window that ends now."""
        return int(self.connection.zcount(key, f"({self.clock() - self.policy.window_s}", "+inf"))

    def spent(self, client: str) -> int:
        """Fetches charged to ``client`` within the last window."""
        return self._live(self._key("client", client))

    def host_spent(self, host: str) -> int:
        """Fetches charged to ``host`` within the last window, by all clients."""
        return self._live(self._key("host", host))

    def _reason(self, outcome: str, url: str, budget: int) -> str | None:
        """Why ``url`` may not be fetched, from the script's ``outcome``; None when it was charged."""
        window, page = self.policy.window, page_key(url)
        if outcome == "same":  # fetched for this client before, yet not in the cache: it did not read
            return (f"{url} was fetched for this client within the last {window} "
                    "and Side kept no readable copy of it")
        if outcome == "variant":
            return (f"{page} was fetched for this client under another URL within the last {window} (the two "
                    f"differ only in tracking parameters or their order); a page is fetched once per {window}")
        if outcome == "client":
            return (f"this client's budget of {budget} cited pages fetched per {window} is spent; "
                    "pages Side has read before are still checked")
        if outcome == "host":
            return f"the budget of {self.policy.host} pages per {window} fetched from {host_of(url)} is spent"
        return None

    def charge(self, client: str, urls: Iterable[str], reviewer: bool = False) -> dict[str, str]:
        """Charge each URL that would be fetched anew to ``client``'s and its host's budgets;
        returns ``{url: reason}`` for those that may not be fetched. Raises ``redis.RedisError``."""
        budget = self.policy.reviewer if reviewer else self.policy.client
        denied: dict[str, str] = {}
        wanted = list(dict.fromkeys(urls))
        for url in wanted:
            if self.is_cached(url):
                continue
            fetched, page = _without_fragment(url), page_key(url)
            outcome = self._charge(
                keys=[self._key("client", client), self._key("client-urls", client),
                      self._key("host", host_of(url))],
                args=[page, fetched, budget, self.policy.host, repr(self.clock()), self.policy.window_s,
                      f"{client}\x1f{page}"])
            reason = self._reason(outcome.decode() if isinstance(outcome, bytes) else str(outcome), fetched, budget)
            if reason is not None:
                denied[url] = reason
        if denied:
            log.info("fetch budget: %d of %d URLs not fetched for %s", len(denied), len(wanted), client)
        return denied

    def charge_claims(self, client: str, claims: Sequence[Claim], reviewer: bool = False) -> list[Claim]:
        """``claims`` as they may be read within ``client``'s budgets: the one place where what a
        check will fetch is charged (every URL of :func:`planned_fetches`).

        Cited pages are charged first, then the archived copies of those that may be fetched (an
        archive is read only for a page the worker reads). A claim whose cited page is over budget
        gets ``no_fetch`` (nothing is fetched for it); one whose archived copy is over budget
        loses its ``archive_url``, or gets ``no_fetch`` when the archive was all it could read.
        Raises ``redis.RedisError``."""
        plans = [planned_fetches(claim.citation, self.archive) for claim in claims]
        cited = self.charge(client, [f.url for plan in plans for f in plan if f.role is FetchRole.CITED], reviewer)
        archives = [f.url for plan in plans if not any(f.url in cited for f in plan)
                    for f in plan if f.role is FetchRole.ARCHIVE]
        archived = self.charge(client, archives, reviewer) if archives else {}
        return [self._within(claim, plan, cited, archived) for claim, plan in zip(claims, plans, strict=True)]

    @staticmethod
    def _within(claim: Claim, plan: list[PlannedFetch], cited: dict[str, str], archived: dict[str, str]) -> Claim:
        """``claim`` with what its denied fetches leave it (see :meth:`charge_claims`)."""
        page = next((f for f in plan if f.role is FetchRole.CITED), None)
        if page is not None and page.url in cited:
            return dataclasses.replace(claim, extra={**claim.extra, "no_fetch": cited[page.url]})
        archive = next((f for f in plan if f.role is FetchRole.ARCHIVE and f.url in archived), None)
        if archive is None:
            return claim
        if page is None:  # the citation marks its URL unfit: the archive was the only copy to read
            return dataclasses.replace(claim, extra={**claim.extra, "no_fetch": archived[archive.url]})
        log.info("fetch budget: archived copy %s of %s not read: %s", archive.url, page.url, archived[archive.url])
        return dataclasses.replace(claim, citation=dataclasses.replace(claim.citation, archive_url=None))
