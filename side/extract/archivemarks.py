"""What a reference says about its source's archived copy, and whether its URL still serves it.

Editors record it in three ways, all read here for :mod:`side.extract.wikitext`:

* the citation template's own fields: ``archive-url``, ``archive-date``, ``access-date`` and
  ``url-status`` (``dead``, ``live``, ``usurped``, ``unfit``, ``deviated``; the older
  ``dead-url=yes|no``; de ``{{Internetquelle}}``'s ``offline=``);
* an archive template beside the link or cite in the same ref: ``{{webarchive|url=ARCHIVE
  URL|date=...}}``, ``{{wayback|url=ORIGINAL|date=TIMESTAMP}}``, de
  ``{{Webarchiv|url=ORIGINAL|wayback=TIMESTAMP}}``;
* a ``{{dead link}}`` tag, inside the ref or right after it.

The pipeline reads the archived copy of a source marked dead first (see
:class:`side.pipeline.CheckSources`). Template parameters are read through a :data:`Param`
the caller supplies, so this module knows the fields and templates, not the parser.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from side.extract.claims import Citation, UrlStatus

__all__ = [
    "Param", "ARCHIVE_URL_FIELDS", "ARCHIVE_DATE_FIELDS", "ACCESS_DATE_FIELDS", "URL_STATUS_FIELDS",
    "OFFLINE_FIELDS", "URL_STATUS_VALUES", "WEBARCHIVE_TEMPLATES", "WAYBACK_TEMPLATES", "DEAD_LINK_TEMPLATES",
    "ARCHIVE_TEMPLATES", "url_status", "template_marks", "archive_template_url", "with_marks", "mark_dead",
]

#: A template parameter's value under the first of ``names`` it has (None when none), as plain
#: text, or as written (``raw``, for URLs).
Param = Callable[[tuple[str, ...], bool], str | None]

ARCHIVE_URL_FIELDS = ("archive-url", "archiveurl", "archiv-url")
ARCHIVE_DATE_FIELDS = ("archive-date", "archivedate", "archiv-datum")
ACCESS_DATE_FIELDS = ("access-date", "accessdate", "abruf")
#: ``url-status`` and its older spellings (``dead-url=yes`` meant dead, ``no`` live).
URL_STATUS_FIELDS = ("url-status", "urlstatus", "dead-url", "deadurl")
#: {{Internetquelle}}'s ``offline=``: any value says the link is dead.
OFFLINE_FIELDS = ("offline",)
# fmt: off
URL_STATUS_VALUES = {
    "live": UrlStatus.LIVE, "alive": UrlStatus.LIVE, "no": UrlStatus.LIVE,
    "dead": UrlStatus.DEAD, "yes": UrlStatus.DEAD, "y": UrlStatus.DEAD, "true": UrlStatus.DEAD,
    "usurped": UrlStatus.USURPED, "unfit": UrlStatus.UNFIT, "deviated": UrlStatus.DEVIATED,
}
# fmt: on
#: ``{{webarchive|url=ARCHIVE URL|date=...}}`` next to a link or cite inside the ref.
WEBARCHIVE_TEMPLATES = frozenset({"webarchive", "web archive"})
#: Templates naming the *original* URL and a Wayback timestamp, by the timestamp's parameter:
#: ``{{wayback|url=|date=}}``, de ``{{Webarchiv|url=|wayback=}}`` (its ``archiv-url=`` names
#: an archive URL itself).
WAYBACK_TEMPLATES = {"wayback": "date", "webarchiv": "wayback"}
#: ``{{dead link}}`` and its redirects: the original URL no longer serves the source.
DEAD_LINK_TEMPLATES = frozenset({
    "dead link", "deadlink", "dead-link", "dead url", "deadurl", "broken link", "404", "toter link",
})
#: Every template read here; none of them is the citation itself (their ``url`` is not the source's).
ARCHIVE_TEMPLATES = WEBARCHIVE_TEMPLATES | frozenset(WAYBACK_TEMPLATES) | DEAD_LINK_TEMPLATES

_TIMESTAMP = re.compile(r"^[0-9]{4,14}$")


def url_status(param: Param) -> UrlStatus | None:
    """The template's ``url-status`` (or ``dead-url``, or a set ``offline``); None if unknown."""
    value = param(URL_STATUS_FIELDS, False)
    if value:
        return URL_STATUS_VALUES.get(value.strip().lower())
    return UrlStatus.DEAD if param(OFFLINE_FIELDS, False) else None


def template_marks(param: Param) -> dict[str, Any]:
    """The :class:`Citation` fields a citation template's own parameters give, archive-url aside."""
    return {"archive_date": param(ARCHIVE_DATE_FIELDS, False), "access_date": param(ACCESS_DATE_FIELDS, False),
            "url_status": url_status(param)}


def archive_template_url(name: str, param: Param) -> tuple[str | None, str | None]:
    """(archive URL, archive date) that the archive template ``name`` beside a citation gives."""
    if name in WEBARCHIVE_TEMPLATES:
        return param(("url", "url1"), True), param(("date", "date1"), False)
    own = param(ARCHIVE_URL_FIELDS, True)
    if own:
        return own, param(ARCHIVE_DATE_FIELDS, False)
    original = param(("url",), True)
    stamp = param((WAYBACK_TEMPLATES.get(name, "date"),), True)
    if original and stamp and _TIMESTAMP.match(stamp):
        return f"https://web.archive.org/web/{stamp}/{original}", stamp
    return None, None


def with_marks(citation: Citation, beside: Iterable[tuple[str, Param]]) -> Citation:
    """``citation`` with what the templates ``beside`` it in the ref, (name, parameters), say.

    The citation template's own ``archive-url`` wins over a ``{{webarchive}}`` beside it.
    """
    changes: dict[str, Any] = {}
    for name, param in beside:
        if name in DEAD_LINK_TEMPLATES:
            changes["dead_link"] = True
        elif name in WEBARCHIVE_TEMPLATES or name in WAYBACK_TEMPLATES:
            url, when = archive_template_url(name, param)
            if url and not citation.archive_url and "archive_url" not in changes:
                changes["archive_url"], changes["archive_date"] = url, when or citation.archive_date
    return replace(citation, **changes) if changes else citation


def mark_dead(citation: Citation) -> Citation:
    """``citation`` tagged by a ``{{dead link}}`` (outside its ref: the id stays the same)."""
    return citation if citation.dead_link else replace(citation, dead_link=True)
