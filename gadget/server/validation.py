"""Input validation for the API: every field's type and size, before anything is stored.

Hand-written rather than a schema library because the rules are few and the messages should
name the offending field (``claims[3].url: must be an http(s) URL``). The same limits are
published in the OpenAPI document (:mod:`gadget.server.api.openapi` reads them from here), so the
document and the code cannot drift apart. Every failure raises :class:`ApiError` (400; 413 for
a wikitext snippet over its cap), and validation is complete before the store or the queue is
touched: a bad request stores nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from flask import Request

from gadget.server.errors import ApiError, UnsupportedMediaError
from service.store import DismissReason, FeedbackAction

WIKI_PATTERN = r"^[a-z0-9_-]{1,64}$"
CHECK_ID_PATTERN = r"^chk_[0-9a-f]{32}$"
MAX_TITLE = 255
MAX_CLAIMS = 50
MAX_KEY = 64
MAX_TEXT = 2000
MAX_CONTEXT = 5000
MAX_SECTIONS = 10
MAX_SECTION = 255
MAX_URL = 2000
MAX_CITATION_TITLE = 500
MAX_USER = 255
MAX_COMMENT = 2000
MAX_REVISION = 2**53 - 1
CLAIM_FIELDS = {"key", "text", "left_context", "section", "url", "citation_title"}
CHECK_FIELDS = {"wiki", "title", "revision", "parent_revision", "claims", "wikitext"}
FEEDBACK_FIELDS = {"result_id", "action", "reason", "suggestion_url", "user", "comment"}

_WIKI = re.compile(WIKI_PATTERN)
_CHECK_ID = re.compile(CHECK_ID_PATTERN)
# Character classes are written once and shared with the OpenAPI document, whose patterns are
# ECMA-262 regexes: so ``\s`` (which means different sets in Python and ECMA) is never used.
#: Control characters, Unicode category Cc: C0, DEL and C1 (U+0080-U+009F, e.g. U+0085 NEXT
#: LINE, which Python's str.splitlines breaks on); tab, newline and carriage return aside.
CONTROL_CC = r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
#: ... and lone surrogates, which ``json.loads`` lets through and no database can store.
CONTROL_CLASS = CONTROL_CC + r"\ud800-\udfff"
_CONTROL = re.compile(f"[{CONTROL_CLASS}]")
#: White space as ECMA-262 defines ``\s``.
WHITESPACE = r"\t\n\x0b\x0c\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
WHITESPACE_CHARS = "".join(chr(c) for c in (9, 10, 11, 12, 13, 32, 0xA0, 0x1680, *range(0x2000, 0x200B),
                                            0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF))
_VISIBLE = re.compile(f"[^{WHITESPACE}{CONTROL_CLASS}]")
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
    user: str
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


def reject_unknown(data: dict[str, Any], allowed: set[str], where: str = "") -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise bad(where, f"unknown field(s) {', '.join(map(repr, unknown))}")


def text(data: dict[str, Any], name: str, limit: int, required: bool = False, where: str = "",
         multiline: bool = False) -> str:
    """A string field of at most ``limit`` characters, without control characters."""
    field = f"{where}{name}"
    value = data.get(name)
    if value is None:
        if required:
            raise bad(field, "is required")
        return ""
    if not isinstance(value, str):
        raise bad(field, "must be a string")
    if len(value) > limit:
        raise bad(field, f"is longer than {limit} characters")
    if required and not _VISIBLE.search(value):
        raise bad(field, "must not be empty")
    if _CONTROL.search(value) or (not multiline and ("\n" in value or "\r" in value)):
        raise bad(field, "contains control characters" + ("" if multiline else " or line breaks"))
    return value


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
    value = text(data, name, MAX_URL, where=where)
    if value and not is_http_url(value):
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


def _sections(item: dict[str, Any], where: str) -> tuple[str, ...]:
    value = item.get("section", [])
    if not isinstance(value, list) or len(value) > MAX_SECTIONS:
        raise bad(f"{where}section", f"must be a list of at most {MAX_SECTIONS} headings")
    for heading in value:
        if not isinstance(heading, str) or len(heading) > MAX_SECTION or _CONTROL.search(heading):
            raise bad(f"{where}section", f"headings must be strings of at most {MAX_SECTION} characters")
    return tuple(value)


def claim_input(item: Any, index: int) -> ClaimInput:
    where = f"claims[{index}]."
    if not isinstance(item, dict):
        raise bad(f"claims[{index}]", "must be an object")
    reject_unknown(item, CLAIM_FIELDS, f"claims[{index}]")
    return ClaimInput(
        key=text(item, "key", MAX_KEY, where=where) or str(index),
        text=trim(text(item, "text", MAX_TEXT, required=True, where=where, multiline=True)),
        left_context=trim(text(item, "left_context", MAX_CONTEXT, where=where, multiline=True)),
        section=_sections(item, where),
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
                         suggestion_url=url(data, "suggestion_url"), user=trim(text(data, "user", MAX_USER)),
                         comment=trim(text(data, "comment", MAX_COMMENT, multiline=True)))
