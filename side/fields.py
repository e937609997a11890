"""Checks of the fields a caller sends Side, shared by its two HTTP front ends.

The Flask API (:mod:`gadget.server.validation`) and the Lift Wing model server
(``deploy/liftwing/side_verifier/request.py``) take the same claims, so they check them with the
same code and limits: each field's type, size and characters, with messages that name the
offending field (``claims[3].text: is longer than 2000 characters``). A failure is a
:class:`FieldError`, an :class:`~side.errors.InputError`; each server turns it into its own
error shape (the API's 400 JSON, KServe's ``InvalidInput``).
"""

from __future__ import annotations

import re
from typing import Any

from side.errors import InputError

__all__ = [
    "MAX_TITLE", "MAX_CLAIMS", "MAX_KEY", "MAX_TEXT", "MAX_CONTEXT", "MAX_SECTIONS", "MAX_SECTION", "MAX_URL",
    "MAX_CITATION_TITLE", "MAX_REVISION", "CONTROL_CC", "CONTROL_CLASS", "CONTROL", "WHITESPACE",
    "WHITESPACE_CHARS", "VISIBLE", "FieldError", "reject_unknown", "text", "sections",
]

MAX_TITLE = 255
#: Claims (uses of a citation) in one request: one batch of the verifier.
MAX_CLAIMS = 50
MAX_KEY = 64
MAX_TEXT = 2000
MAX_CONTEXT = 5000
MAX_SECTIONS = 10
MAX_SECTION = 255
MAX_URL = 2000
MAX_CITATION_TITLE = 500
#: MediaWiki revision ids are unsigned integers; JSON numbers are exact up to 2**53.
MAX_REVISION = 2**53 - 1

# Character classes are written once and shared with the OpenAPI document, whose patterns are
# ECMA-262 regexes: so ``\s`` (which means different sets in Python and ECMA) is never used.
#: Control characters, Unicode category Cc: C0, DEL and C1 (U+0080-U+009F, e.g. U+0085 NEXT
#: LINE, which Python's str.splitlines breaks on); tab, newline and carriage return aside.
CONTROL_CC = r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
#: ... and lone surrogates, which ``json.loads`` lets through and no database can store.
CONTROL_CLASS = CONTROL_CC + r"\ud800-\udfff"
CONTROL = re.compile(f"[{CONTROL_CLASS}]")
#: White space as ECMA-262 defines ``\s``.
WHITESPACE = r"\t\n\x0b\x0c\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
WHITESPACE_CHARS = "".join(chr(c) for c in (9, 10, 11, 12, 13, 32, 0xA0, 0x1680, *range(0x2000, 0x200B),
                                            0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF))
VISIBLE = re.compile(f"[^{WHITESPACE}{CONTROL_CLASS}]")


class FieldError(InputError):
    """One field of a request is wrong; the message names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field


def reject_unknown(data: dict[str, Any], allowed: set[str], where: str = "") -> None:
    """Refuse fields the request format does not have (a typo must not be silently ignored)."""
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise FieldError(where, f"unknown field(s) {', '.join(map(repr, unknown))}")


def text(data: dict[str, Any], name: str, limit: int, required: bool = False, where: str = "",
         multiline: bool = False) -> str:
    """A string field of at most ``limit`` characters, without control characters (null is absent)."""
    field = f"{where}{name}"
    value = data.get(name)
    if value is None:
        if required:
            raise FieldError(field, "is required")
        return ""
    if not isinstance(value, str):
        raise FieldError(field, "must be a string")
    if len(value) > limit:
        raise FieldError(field, f"is longer than {limit} characters")
    if required and not VISIBLE.search(value):
        raise FieldError(field, "must not be empty")
    if CONTROL.search(value) or (not multiline and ("\n" in value or "\r" in value)):
        raise FieldError(field, "contains control characters" + ("" if multiline else " or line breaks"))
    return value


def sections(item: dict[str, Any], where: str, one_heading_as_string: bool = False) -> tuple[str, ...]:
    """A claim's section headings, top down; ``one_heading_as_string`` also takes a lone heading."""
    value = item.get("section", [])
    if one_heading_as_string and isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or len(value) > MAX_SECTIONS:
        raise FieldError(f"{where}section", f"must be a list of at most {MAX_SECTIONS} headings")
    for heading in value:
        if not isinstance(heading, str) or len(heading) > MAX_SECTION or CONTROL.search(heading):
            raise FieldError(f"{where}section", f"headings must be strings of at most {MAX_SECTION} characters")
    return tuple(value)
