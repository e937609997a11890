"""Read an article's wikitext from a wiki through the MediaWiki Action API.

``side`` is a library that must not depend on pywikibot (the bot's framework), so the one
thing the command line needs from a live wiki, the current wikitext of a page, is a single
``action=query&prop=revisions`` request with ``requests``. Wikis are named as in the store
(``enwiki``) or ``local`` for a development wiki whose API URL comes from configuration.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import requests

from side.errors import InputError, SideError

__all__ = [
    "KNOWN_WIKIS", "LOCAL_API_ENV", "PageNotFoundError", "WikiUnavailableError", "PageRevision",
    "api_url_for", "fetch_page",
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


def _get_json(api_url: str, params: dict[str, str], user_agent: str, timeout_s: float) -> dict:
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
