"""Input validation for the API: every field's type and size, before anything is stored.

Hand-written rather than a schema library because the rules are few and the messages should
name the offending field (``claims[3].url: must be an http(s) URL``). The same limits are
published in the OpenAPI document (:mod:`gadget.server.api.openapi` reads them from here), so the
document and the code cannot drift apart. The claim fields are checked by :mod:`side.fields`, as the
Lift Wing server checks them. Every failure raises :class:`ApiError` or
:class:`~side.fields.FieldError` (400; 413 for a wikitext snippet over its cap), and validation
is complete before the store or the queue is touched: a bad request stores nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from flask import Request

from gadget.server.errors import ApiError, UnsupportedMediaError
from service.store import DismissReason, FeedbackAction
from side.fields import (  # noqa: F401 (the limits and classes are this module's too: OpenAPI reads them here)
    CONTROL,
    CONTROL_CC,
    CONTROL_CLASS,
    MAX_CITATION_TITLE,
    MAX_CLAIMS,
    MAX_CONTEXT,
    MAX_KEY,
    MAX_REVISION,
    MAX_SECTION,
    MAX_SECTIONS,
    MAX_TEXT,
    MAX_TITLE,
    MAX_URL,
    WHITESPACE,
    WHITESPACE_CHARS,
    reject_unknown,
    sections,
    text,
)

WIKI_PATTERN = r"^[a-z0-9_-]{1,64}$"
CHECK_ID_PATTERN = r"^chk_[0-9a-f]{32}$"
MAX_COMMENT = 2000
CLAIM_FIELDS = {"key", "text", "left_context", "section", "url", "citation_title"}
CHECK_FIELDS = {"wiki", "title", "revision", "parent_revision", "claims", "wikitext"}
#: No reviewer name: the reviewer is the logged-in wiki user (gadget.server.login), never a field.
FEEDBACK_FIELDS = {"result_id", "action", "reason", "suggestion_url", "comment"}

_WIKI = re.compile(WIKI_PATTERN)
_CHECK_ID = re.compile(CHECK_ID_PATTERN)
_SPACES = re.compile(f"[{WHITESPACE}_]+")
#: Characters MediaWiki refuses in titles, plus every line break and tab.
TITLE_ILLEGAL_ASCII = CONTROL_CC + r"\t\n\r#<>\[\]|{}"
TITLE_ILLEGAL_CLASS = TITLE_ILLEGAL_ASCII + r"\ud800-\udfff"
_TITLE_ILLEGAL = re.compile(f"[{TITLE_ILLEGAL_CLASS}]")
#: An http(s) URL with a host (no credentials), an optional port, and no white space or
#: control characters; the OpenAPI document publishes this same pattern.
URL_PATTERN = (f"^https?://[^{WHITESPACE}/?#@:\\[\\]\\\\{CONTROL_CC}]+(:[0-9]{{1,5}})?"
               f"([/?#][^{WHITESPACE}{CONTROL_CC}]*)?$")
_URL = re.compile(URL_PATTERN)


@dataclass(frozen=True)
class ClaimInput:
    """One claim as the client sent it (validated)."""

    key: str
    text: str
    left_context: str
    section: tuple[str, ...]
    url: str
    citation_title: str


@dataclass(frozen=True)
class CheckInput:
    """A validated ``POST /checks`` body: either ``claims`` or ``wikitext`` is set."""

    wiki: str
    title: str
    revision: int | None
    parent_revision: int | None
    claims: tuple[ClaimInput, ...] = ()
    wikitext: str | None = None


@dataclass(frozen=True)
class FeedbackInput:
    result_id: int
    action: FeedbackAction
    reason: str
    suggestion_url: str
    comment: str


def bad(field: str, message: str) -> ApiError:
    return ApiError(f"{field}: {message}" if field else message)


def read_json(request: Request) -> dict[str, Any]:
    """The body as a JSON object; 415 when it is not declared JSON, 400 when it does not parse."""
    if not request.is_json:
        raise UnsupportedMediaError("the body must be JSON (Content-Type: application/json)")
    try:
        data = request.get_json(silent=True)  # reading the body enforces MAX_CONTENT_LENGTH (413)
    except RecursionError:  # json.loads on arrays nested thousands deep; silent only covers ValueError
        raise ApiError("the body nests too deeply to be a request", code="malformed_json") from None
    if data is None:
        raise ApiError("the body is not valid JSON", code="malformed_json")
    if not isinstance(data, dict):
        raise ApiError("the body must be a JSON object")
    return data


def trim(value: str) -> str:
    """Strip the white space the OpenAPI patterns call white space (ECMA's ``\\s``)."""
    return value.strip(WHITESPACE_CHARS)


def integer(data: dict[str, Any], name: str, minimum: int = 0, required: bool = False) -> int | None:
    value = data.get(name)
    if value is None:
        if required:
            raise bad(name, "is required")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad(name, "must be an integer")
    if not minimum <= value <= MAX_REVISION:
        raise bad(name, f"must be between {minimum} and {MAX_REVISION}")
    return value


def is_http_url(value: str) -> bool:
    return bool(_URL.match(value))


def url(data: dict[str, Any], name: str, where: str = "") -> str:
    """An optional http(s) URL: absent or null is "", anything else (the empty string included,
    as the OpenAPI pattern says) must be one."""
    value = text(data, name, MAX_URL, where=where)
    if data.get(name) is not None and not is_http_url(value):
        raise bad(f"{where}{name}", "must be an http(s) URL")
    return value


def wiki_id(value: Any, field: str = "wiki") -> str:
    if not isinstance(value, str) or not _WIKI.match(value):
        raise bad(field, "must match " + WIKI_PATTERN)
    return value


def page_title(value: Any, field: str = "title") -> str:
    """A page title as MediaWiki allows it (no ``#<>[]|{}``), underscores read as spaces."""
    if not isinstance(value, str):
        raise bad(field, "must be a string")
    if len(value) > MAX_TITLE:
        raise bad(field, f"is longer than {MAX_TITLE} characters")
    if _TITLE_ILLEGAL.search(value):
        raise bad(field, "contains characters MediaWiki titles cannot have")
    title = _SPACES.sub(" ", value).strip(" ")
    if not title:
        raise bad(field, "must not be empty")
    return title


def is_check_id(value: str) -> bool:
    return bool(_CHECK_ID.match(value))


def claim_input(item: Any, index: int) -> ClaimInput:
    where = f"claims[{index}]."
    if not isinstance(item, dict):
        raise bad(f"claims[{index}]", "must be an object")
    reject_unknown(item, CLAIM_FIELDS, f"claims[{index}]")
    return ClaimInput(
        key=text(item, "key", MAX_KEY, where=where) or str(index),
        text=trim(text(item, "text", MAX_TEXT, required=True, where=where, multiline=True)),
        left_context=trim(text(item, "left_context", MAX_CONTEXT, where=where, multiline=True)),
        section=sections(item, where),
        url=url(item, "url", where=where),
        citation_title=trim(text(item, "citation_title", MAX_CITATION_TITLE, where=where)),
    )


def _claims(value: Any) -> tuple[ClaimInput, ...]:
    if not isinstance(value, list) or not value:
        raise bad("claims", "must be a non-empty list")
    if len(value) > MAX_CLAIMS:
        raise bad("claims", f"at most {MAX_CLAIMS} claims per check")
    return tuple(claim_input(item, n) for n, item in enumerate(value))


def check_input(data: dict[str, Any], max_body_bytes: int) -> CheckInput:
    """Validate a ``POST /checks`` body (already a JSON object)."""
    reject_unknown(data, CHECK_FIELDS)
    if ("claims" in data) == ("wikitext" in data):
        raise bad("", "send exactly one of 'claims' or 'wikitext'")
    common = {"wiki": wiki_id(data.get("wiki")), "title": page_title(data.get("title")),
              "revision": integer(data, "revision"), "parent_revision": integer(data, "parent_revision")}
    if "claims" in data:
        return CheckInput(**common, claims=_claims(data["claims"]))
    limit = max_wikitext(max_body_bytes)
    if isinstance(data.get("wikitext"), str) and len(data["wikitext"]) > limit:
        raise ApiError(f"wikitext: is longer than {limit} characters", code="wikitext_too_large", status=413)
    wikitext = text(data, "wikitext", limit, required=True, multiline=True)
    return CheckInput(**common, wikitext=wikitext)


def max_wikitext(max_body_bytes: int) -> int:
    """Characters of wikitext accepted: half the body limit, so a snippet one character too long
    (plus the other fields) still fits in the body and gets its own 413 ``wikitext_too_large``.

    This cap is also what bounds the CPU a request can cost: extraction is linear in the snippet
    (side.extract.parse bounds the parser's reads per text segment), so the largest snippet costs
    at most about 2.5 s of CPU, most well under one (benchmarks/parse.py)."""
    return max_body_bytes // 2


def feedback_input(data: dict[str, Any]) -> FeedbackInput:
    """Validate a ``POST /feedback`` body; a dismissal needs one of Edit Check's reasons."""
    reject_unknown(data, FEEDBACK_FIELDS)
    result_id = integer(data, "result_id", minimum=1, required=True)
    action = data.get("action")
    if action not in list(FeedbackAction):  # a list, not a set: the JSON value may be unhashable
        raise bad("action", f"must be one of {', '.join(FeedbackAction)}")
    reason = text(data, "reason", 64)
    if action == FeedbackAction.DISMISS and reason not in list(DismissReason):
        raise bad("reason", f"a dismissal needs one of {', '.join(DismissReason)}")
    return FeedbackInput(result_id=int(result_id), action=FeedbackAction(action), reason=reason,
                         suggestion_url=url(data, "suggestion_url"),
                         comment=trim(text(data, "comment", MAX_COMMENT, multiline=True)))
