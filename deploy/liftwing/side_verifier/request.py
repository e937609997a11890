"""What the side-verifier inference service accepts, read and bounded before any work is done.

A request is one of two shapes (exactly one of ``rev_id`` or ``claims``)::

    {"lang": "en", "rev_id": 1234, "ref": "smith2001"}     # a ref of a revision, by name ...
    {"lang": "en", "rev_id": 1234, "ref": 3}               # ... or by its number in the reference list
    {"lang": "en", "rev_id": 1234}                         # every ref (at most MAX_CLAIMS uses)
    {"title": "Eiffel Tower", "claims": [                  # claims the caller extracted itself
        {"text": "The tower is 330 metres tall.", "left_context": "...", "section": ["Design"],
         "url": "https://example.org/eiffel", "source_text": "optional: the source's own text"}]}

The limits are the gadget API's (``gadget/server/validation.py``): a request costs a bounded
amount of work, so one caller cannot hold the verifier for minutes. Every refusal is a
:class:`kserve.errors.InvalidInput` naming the field (``claims[2].url: must be an http(s) URL``),
which the model server answers with HTTP 400 and ``{"error": message}``. A ``lang`` the model does
not read (the shipped verifier is English: ``en``, ``simple`` and ``test``) is refused the same way.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from kserve.errors import InvalidInput

from side import fields
from side.fields import (
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
    FieldError,
)

__all__ = [
    "MAX_CLAIMS", "MAX_TEXT", "MAX_CONTEXT", "MAX_SECTIONS", "MAX_SECTION", "MAX_URL", "MAX_TITLE", "MAX_KEY",
    "MAX_CITATION_TITLE", "MAX_REF_NAME", "MAX_SOURCE_TEXT", "MAX_SOURCE_TEXT_TOTAL", "MAX_REVISION",
    "LANG_PATTERN", "DEFAULT_LANGUAGES", "ClaimInput", "ClaimsRequest", "RevisionRequest", "parse_request", "read_json",
]

#: A ``<ref name=...>`` as MediaWiki allows it fits well within this.
MAX_REF_NAME = 255
#: Characters of one source's text sent with a claim (about 30 pages of prose) ...
MAX_SOURCE_TEXT = 100_000
#: ... and of all of a request's source texts together.
MAX_SOURCE_TEXT_TOTAL = 400_000
#: A Wikipedia language code as Lift Wing's services take it: ``en``, ``simple``, ``zh-min-nan``
#: (not ``enwiki``).
LANG_PATTERN = r"^[a-z][a-z0-9]{1,11}(-[a-z0-9]{1,8}){0,2}$"
#: The Wikipedias whose claims the shipped verifier reads: it is an English model (its model card),
#: so English, Simple English and the English-language Test Wikipedia (``testwiki``, where
#: gadgets are tried). A server with another model names its own (``LANGUAGES``).
DEFAULT_LANGUAGES = frozenset({"en", "simple", "test"})

REVISION_FIELDS = {"lang", "rev_id", "ref"}
CLAIMS_FIELDS = {"lang", "title", "claims"}
CLAIM_FIELDS = {"key", "text", "left_context", "section", "url", "citation_title", "source_text"}

_LANG = re.compile(LANG_PATTERN)
_URL = re.compile(r"^https?://[^\s/?#@:\[\]\\]+(:[0-9]{1,5})?([/?#]\S*)?$")


@dataclass(frozen=True)
class RevisionRequest:
    """Check the refs of one revision: all of them, or the one named or numbered by ``ref``."""

    lang: str
    rev_id: int
    #: A ref's name (``<ref name="...">``), its number in the reference list (1 = the first), or
    #: None for every ref.
    ref: str | int | None = None

    @property
    def wiki_db(self) -> str:
        """The wiki's database name, as Lift Wing's responses give it (``enwiki``)."""
        return f"{self.lang.replace('-', '_')}wiki"


@dataclass(frozen=True)
class ClaimInput:
    """One claim as the caller sent it, with its cited source's URL and/or text."""

    key: str
    text: str
    left_context: str
    section: tuple[str, ...]
    url: str
    citation_title: str
    #: The source's own text; when given, the service reads it instead of fetching ``url``.
    source_text: str | None


@dataclass(frozen=True)
class ClaimsRequest:
    """Check claims the caller extracted itself (an editor's draft, another tool's output)."""

    lang: str
    title: str
    claims: tuple[ClaimInput, ...]


def read_json(inputs: dict[str, Any] | bytes | str) -> dict[str, Any]:
    """The body as a JSON object. KServe hands over a dict for ``application/json`` and the raw
    bytes for any other content type (as Lift Wing's ``validate_json_input`` expects)."""
    if isinstance(inputs, bytes | bytearray | str):
        try:
            inputs = json.loads(inputs)
        except (UnicodeDecodeError, RecursionError, json.JSONDecodeError):
            raise InvalidInput("the body must be a JSON object") from None
    if not isinstance(inputs, dict):
        raise InvalidInput("the body must be a JSON object")
    return inputs


def parse_request(inputs: dict[str, Any] | bytes | str,
                  languages: frozenset[str] = DEFAULT_LANGUAGES) -> RevisionRequest | ClaimsRequest:
    """The validated request; :class:`InvalidInput` saying what is wrong otherwise. A ``lang``
    outside ``languages`` is refused here, before the wiki is asked or a source fetched: the
    verifier would score claims in a language it cannot read, or ask a wiki that does not exist."""
    try:
        return _parse(read_json(inputs), languages)
    except FieldError as exc:  # the shared field checks (side.fields), in KServe's error shape
        raise InvalidInput(str(exc)) from None


def _parse(data: dict[str, Any], languages: frozenset[str]) -> RevisionRequest | ClaimsRequest:
    if ("rev_id" in data) == ("claims" in data):
        raise InvalidInput("send exactly one of 'rev_id' (with 'lang') or 'claims'")
    if "rev_id" in data:
        fields.reject_unknown(data, REVISION_FIELDS)
        return RevisionRequest(lang=_lang(data, True, languages), rev_id=_rev_id(data.get("rev_id")),
                               ref=_ref(data.get("ref")))
    fields.reject_unknown(data, CLAIMS_FIELDS)
    claims = _claims(data.get("claims"))
    total = sum(len(c.source_text or "") for c in claims)
    if total > MAX_SOURCE_TEXT_TOTAL:
        raise InvalidInput(f"claims: the source texts together are longer than {MAX_SOURCE_TEXT_TOTAL} characters")
    return ClaimsRequest(lang=_lang(data, False, languages) or "en",
                         title=fields.text(data, "title", MAX_TITLE).strip(), claims=claims)


def _bad(field: str, message: str) -> InvalidInput:
    return InvalidInput(f"{field}: {message}" if field else message)


def _lang(data: dict[str, Any], required: bool, languages: frozenset[str]) -> str:
    value = data.get("lang")
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise _bad("lang", "is required: the wiki's language code, e.g. 'en'" if value is None else "must be a string")
    if value.endswith("wiki"):
        raise _bad("lang", "give the language code without the 'wiki' suffix, i.e. 'en', not 'enwiki'")
    if not _LANG.match(value):
        raise _bad("lang", "must be a Wikipedia language code such as 'en' or 'zh-min-nan'")
    if value not in languages:
        raise _bad("lang", f"{value!r} is not supported: this model verifies claims of these Wikipedias only: "
                           f"{', '.join(sorted(languages))}")
    return value


def _rev_id(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad("rev_id", "must be an integer")
    if not 1 <= value <= MAX_REVISION:
        raise _bad("rev_id", f"must be between 1 and {MAX_REVISION}")
    return value


def _ref(value: Any) -> str | int | None:
    """A ref's name, or its 1-based number in the reference list."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise _bad("ref", "must be a ref's name (a string) or its number in the reference list (1, 2, ...)")
    if isinstance(value, int):
        if not 1 <= value <= MAX_REVISION:
            raise _bad("ref", "numbers start at 1 (the first entry of the reference list)")
        return value
    name = fields.text({"ref": value}, "ref", MAX_REF_NAME, required=True).strip()
    return name


def _url(data: dict[str, Any], where: str) -> str:
    value = fields.text(data, "url", MAX_URL, where=where).strip()
    if value.startswith("//"):  # protocol-relative, valid in wikitext: read as https, as the gadget does
        value = "https:" + value
    if value and not _URL.match(value):
        raise _bad(f"{where}url", "must be an http(s) URL")
    return value


def _source_text(item: dict[str, Any], where: str) -> str | None:
    if item.get("source_text") is None:
        return None
    text = fields.text(item, "source_text", MAX_SOURCE_TEXT, where=where, multiline=True)
    if not text.strip():
        raise _bad(f"{where}source_text", "must not be empty (leave it out to read the source at 'url')")
    return text


def _claim(item: Any, index: int) -> ClaimInput:
    where = f"claims[{index}]."
    if not isinstance(item, dict):
        raise _bad(f"claims[{index}]", "must be an object")
    fields.reject_unknown(item, CLAIM_FIELDS, f"claims[{index}]")
    text = fields.text(item, "text", MAX_TEXT, required=True, where=where, multiline=True).strip()
    return ClaimInput(
        key=fields.text(item, "key", MAX_KEY, where=where) or str(index),
        text=text,
        left_context=fields.text(item, "left_context", MAX_CONTEXT, where=where, multiline=True).strip() or text,
        section=fields.sections(item, where, one_heading_as_string=True),
        url=_url(item, where),
        citation_title=fields.text(item, "citation_title", MAX_CITATION_TITLE, where=where).strip(),
        source_text=_source_text(item, where),
    )


def _claims(value: Any) -> tuple[ClaimInput, ...]:
    if not isinstance(value, list) or not value:
        raise _bad("claims", "must be a non-empty list")
    if len(value) > MAX_CLAIMS:
        raise _bad("claims", f"at most {MAX_CLAIMS} claims per request")
    claims = tuple(_claim(item, n) for n, item in enumerate(value))
    texts: dict[str, tuple[int, str]] = {}
    for n, claim in enumerate(claims):
        if claim.url and claim.source_text is not None:
            first = texts.setdefault(claim.url, (n, claim.source_text))
            if first[1] != claim.source_text:
                raise _bad(f"claims[{n}].source_text", f"differs from claims[{first[0]}]'s text for the same url")
    return claims
