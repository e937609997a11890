"""Read an article's wikitext from a wiki through the MediaWiki Action API.

``side`` is a library that must not depend on pywikibot (the bot's framework), so the one
thing the command line needs from a live wiki, the current wikitext of a page, is a single
``action=query&prop=revisions`` request with ``requests``. Wikis are named as in the store
(``enwiki``) or ``local`` for a development wiki whose API URL comes from configuration.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

import requests

from side.config import warn_without_contact
from side.errors import InputError, SideError

__all__ = [
    "KNOWN_WIKIS", "LOCAL_API_ENV", "PageNotFoundError", "WikiUnavailableError", "PageRevision",
    "api_url_for", "fetch_page", "parse_wiki_urls", "api_url_of", "HistoryRevision", "fetch_history", "HISTORY_BATCH",
]

log = logging.getLogger(__name__)

#: API endpoints of the wikis known by name; ``local`` is configured (``SIDE_WIKI_LOCAL_API``).
KNOWN_WIKIS: dict[str, str] = {
    "enwiki": "https://en.wikipedia.org/w/api.php",
    "testwiki": "https://test.wikipedia.org/w/api.php",
}
#: Environment variable holding the API URL of ``--wiki local``.
LOCAL_API_ENV = "SIDE_WIKI_LOCAL_API"


class PageNotFoundError(InputError):
    """The wiki has no page (or no readable revision) under that title."""

    code = "page_not_found"


class WikiUnavailableError(SideError):
    """The wiki's API did not answer, or answered something that is not the Action API."""

    code = "wiki_unavailable"


@dataclass(frozen=True)
class PageRevision:
    """The text of one revision of a page, as the wiki returned it."""

    wiki: str
    title: str
    revision: int
    parent_revision: int
    text: str


@dataclass(frozen=True)
class HistoryRevision:
    """One revision of a page's history: its id, time (naive UTC) and text ("" when hidden)."""

    revision: int
    timestamp: datetime | None
    text: str


#: Revisions with content the Action API returns per request (its limit for rvprop=content).
HISTORY_BATCH = 50


def api_url_for(wiki: str, local_api: str | None = None) -> str:
    """The Action API URL of a wiki name; ``local`` needs ``local_api``."""
    if wiki == "local":
        if not local_api:
            raise InputError(f"--wiki local needs the API URL of the local wiki: pass --api URL or set "
                             f"{LOCAL_API_ENV} (e.g. http://127.0.0.1:8080/api.php)")
        return local_api
    if wiki in KNOWN_WIKIS:
        return KNOWN_WIKIS[wiki]
    raise InputError(f"unknown wiki {wiki!r}: use one of {', '.join(['local', *KNOWN_WIKIS])}")


def parse_wiki_urls(value: dict[str, str] | str | None) -> dict[str, str]:
    """``service.wiki_urls`` (wiki id -> script path, the folder of ``index.php``) from TOML (a
    table) or the environment (``id=url,id=url``)."""
    if not value:
        return {}
    if isinstance(value, dict):
        return {str(k): str(v).rstrip("/") for k, v in value.items()}
    pairs = (item.split("=", 1) for item in value.split(",") if "=" in item)
    return {k.strip(): v.strip().rstrip("/") for k, v in pairs}


def api_url_of(wiki: str, wiki_urls: dict[str, str] | str | None = None) -> str | None:
    """The Action API URL of a stored wiki id: a configured script path's ``api.php`` first, then
    the wikis known by name; None for a wiki Side cannot reach (never an error)."""
    configured = parse_wiki_urls(wiki_urls)
    if wiki in configured:
        return configured[wiki] + "/api.php"
    return KNOWN_WIKIS.get(wiki)


def fetch_page(api_url: str, title: str, wiki: str = "", revision: int | None = None,
               user_agent: str = "Side/0.1", timeout_s: float = 20.0) -> PageRevision:
    """The current (or the given) revision of ``title``; follows redirects.

    Raises :class:`PageNotFoundError` for a missing page or revision and
    :class:`WikiUnavailableError` when the API cannot be reached or returns an error.
    """
    params = {"action": "query", "prop": "revisions", "rvprop": "content|ids", "rvslots": "main",
              "format": "json", "formatversion": "2", "redirects": "1"}
    if revision is not None:
        params["revids"] = str(revision)
    else:
        params["titles"] = title
    data = _get_json(api_url, params, user_agent, timeout_s)
    query = data.get("query") or {}
    if query.get("badrevids"):
        raise PageNotFoundError(f"{wiki or api_url} has no revision {revision}")
    pages = query.get("pages") or []
    if not pages or pages[0].get("missing") or pages[0].get("invalid") or not pages[0].get("revisions"):
        why = pages[0].get("invalidreason", "") if pages and pages[0].get("invalid") else ""
        raise PageNotFoundError(f"{wiki or api_url} has no page {title!r}" + (f" ({why})" if why else ""))
    page, rev = pages[0], pages[0]["revisions"][0]
    slot = rev.get("slots", {}).get("main", {})
    if slot.get("texthidden") or "content" not in slot:
        raise PageNotFoundError(f"the text of revision {rev.get('revid')} of {page['title']!r} is hidden")
    return PageRevision(wiki=wiki, title=page["title"], revision=int(rev["revid"]),
                        parent_revision=int(rev.get("parentid") or 0), text=slot["content"])


def fetch_history(api_url: str, title: str, limit: int = HISTORY_BATCH, until_revision: int | None = None,
                  user_agent: str = "Side/0.1", timeout_s: float = 20.0) -> tuple[list[HistoryRevision], bool]:
    """The newest ``limit`` revisions of ``title`` up to ``until_revision`` (default: the current
    one), oldest first, and whether that is the page's whole history (its creation was read).

    One ``prop=revisions`` request per :data:`HISTORY_BATCH` revisions, following ``continue``;
    what is read is bounded by ``limit`` however long the history is. Raises
    :class:`PageNotFoundError` for a missing page and :class:`WikiUnavailableError` as
    :func:`fetch_page` does.
    """
    params = {"action": "query", "prop": "revisions", "titles": title, "rvprop": "ids|timestamp|content",
              "rvslots": "main", "rvdir": "older", "format": "json", "formatversion": "2", "redirects": "1"}
    if until_revision is not None:
        params["rvstartid"] = str(until_revision)
    newest_first: list[HistoryRevision] = []
    complete = False
    while len(newest_first) < limit:
        params["rvlimit"] = str(min(HISTORY_BATCH, limit - len(newest_first)))
        data = _get_json(api_url, params, user_agent, timeout_s)
        pages = (data.get("query") or {}).get("pages") or []
        if not pages or pages[0].get("missing") or pages[0].get("invalid"):
            raise PageNotFoundError(f"{api_url} has no page {title!r}")
        for rev in pages[0].get("revisions") or []:
            newest_first.append(_history_revision(rev))
            complete = not rev.get("parentid")
        more = data.get("continue")
        if not more or complete:
            break
        params.update({k: str(v) for k, v in more.items()})
    return newest_first[::-1], complete


def _history_revision(rev: dict) -> HistoryRevision:
    slot = (rev.get("slots") or {}).get("main") or {}
    stamp = rev.get("timestamp")
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00")).replace(tzinfo=None) if stamp else None
    except (AttributeError, ValueError):
        when = None
    content = slot.get("content")
    text = content if isinstance(content, str) and not slot.get("texthidden") else ""
    return HistoryRevision(revision=int(rev.get("revid") or 0), timestamp=when, text=text)


def _get_json(api_url: str, params: dict[str, str], user_agent: str, timeout_s: float) -> dict:
    warn_without_contact(user_agent, api_url)
    try:
        response = requests.get(api_url, params=params, timeout=timeout_s, headers={"User-Agent": user_agent})
    except requests.RequestException as exc:
        raise WikiUnavailableError(f"cannot reach the wiki at {api_url}: {type(exc).__name__}") from exc
    if response.status_code != 200:
        raise WikiUnavailableError(f"{api_url} answered HTTP {response.status_code}")
    try:
        data = response.json()
    except ValueError as exc:
        raise WikiUnavailableError(f"{api_url} did not answer JSON: is it a MediaWiki api.php?") from exc
    if not isinstance(data, dict):
        raise WikiUnavailableError(f"{api_url} did not answer an Action API object")
    if "error" in data:
        error = data["error"]
        raise WikiUnavailableError(f"{api_url}: {error.get('code')}: {error.get('info')}")
    return data
