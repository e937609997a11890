"""Short citations (``{{sfn}}``, ``{{harvnb}}`` ...) linked to the full citation they point to.

A short citation names a work only as "Smith & Jones 2001, p. 5"; its URL and title are on the
full citation elsewhere in the article, usually in a "Sources" list outside any ``<ref>``.
Wikipedia links the two by an anchor id, and this module computes that id on both sides the
way Module:Footnotes and CS1 do, so the short use can be checked against the work it cites:

* a short citation ``{{sfn|Smith|Jones|2001|p=5}}`` points to ``CITEREFSmithJones2001``: the
  positional parameters are up to four surnames and, last, the year (``2001a`` included);
  ``{{sfnm}}`` cites several works and is linked to its first one (``1a1``... ``1y``);
* a full citation template gets ``CITEREF`` + up to four author surnames (``last``/``author``,
  numbered or not, or ``vauthors``; editors when there is no author) + the year of ``year`` or,
  failing that, of ``date``; ``|ref={{sfnref|...}}`` (or ``{{harvid}}``, or a literal id) sets
  the anchor instead and ``|ref=none`` gives it none.

Whitespace and underscores are dropped from anchors on both sides, since MediaWiki treats them
alike in ids. A short citation whose exact anchor matches nothing is linked case-insensitively
when exactly one full citation matches that way: editors write ``{{harvnb|sabra|1989}}`` for
``|last=Sabra``, which Wikipedia shows as a broken link but which names one work unambiguously.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import replace

from mwparserfromhell.nodes import Template
from mwparserfromhell.wikicode import Wikicode

from side.extract.claims import Citation

__all__ = ["ANCHOR_PREFIX", "MAX_NAMES", "Targets", "full_anchor", "link", "short_anchor"]

ANCHOR_PREFIX = "CITEREF"
#: Module:Footnotes and CS1 build anchors from at most four names.
MAX_NAMES = 4
#: Templates that expand to an anchor id, used in a full citation's ``|ref=``.
_ID_TEMPLATES = frozenset({"sfnref", "harvid"})
#: Fields a linked short citation takes from its full citation.
_LINKED_FIELDS = (
    "url", "title", "website", "date", "archive_url", "archive_date", "access_date", "url_status", "dead_link",
)

_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_SPACE = re.compile(r"[\s_]+")
#: The year part of a CS1 date: ``2001``, ``2001a``, ``May 2001``, ``2001-05-01``, ``2001–2002``.
_YEAR = re.compile(r"(?<!\d)(\d{4}(?:–\d{4})?[a-z]?)(?![\d])")
_UNDATED = re.compile(r"^n\.?d\.?[a-z]?$", re.IGNORECASE)


def _name(template: Template) -> str:
    name = _SPACE.sub(" ", _COMMENT.sub("", str(template.name))).strip().lower()
    return name[9:].strip() if name.startswith("template:") else name


def _text(value: Wikicode) -> str:
    """A parameter's plain text: markup, comments and whitespace dropped, as in an anchor."""
    return _SPACE.sub("", value.strip_code(normalize=True, collapse=True))


def _params(template: Template) -> dict[str, Wikicode]:
    """Parameters by stripped, lower-cased name; the last one wins as in MediaWiki."""
    return {str(p.name).strip().lower(): p.value for p in template.params}


def _first(params: dict[str, Wikicode], names: Iterable[str]) -> str:
    for name in names:
        if name in params:
            text = _text(params[name])
            if text:
                return text
    return ""


def _anchor(names: Iterable[str], year: str) -> str | None:
    """``CITEREF`` + names + year; None when there is nothing to build it from."""
    joined = "".join(n for n in names if n)[: 10_000]
    return f"{ANCHOR_PREFIX}{joined}{year}" if joined or year else None


def _positional_anchor(template: Template) -> str | None:
    """``{{sfn|Smith|Jones|2001}}`` or ``{{sfnref|Smith|2001}}``: names, then the year last."""
    params = _params(template)
    values = [_text(params[key]) for key in sorted((k for k in params if k.isdigit()), key=int)]
    values = [v for v in values if v]
    if not values:
        return None
    return _anchor(values[:-1][:MAX_NAMES], values[-1])


def short_anchor(template: Template) -> str | None:
    """The anchor a short citation template links to, or None when it names nothing."""
    params = _params(template)
    explicit = _text(params["ref"]) if "ref" in params else ""
    if explicit:
        return explicit
    if _name(template) == "sfnm":
        names = [_text(params[f"1a{i}"]) for i in range(1, MAX_NAMES + 1) if f"1a{i}" in params]
        return _anchor(names, _text(params["1y"]) if "1y" in params else "")
    return _positional_anchor(template)


def _names(params: dict[str, Wikicode], role: str) -> list[str]:
    """Up to four surnames of ``role`` ("author" or "editor") in CS1's parameter spellings."""
    names: list[str] = []
    for i in range(1, MAX_NAMES + 1):
        n = str(i)
        if role == "author":
            keys = [f"last{n}", f"surname{n}", f"author-last{n}", f"author{n}-last", f"author{n}"]
            if i == 1:
                keys = ["last", "surname", "author-last", "author", *keys]
        else:
            keys = [f"editor{n}-last", f"editor-last{n}", f"editor{n}-surname", f"editor-surname{n}", f"editor{n}"]
            if i == 1:
                keys = ["editor-last", "editor-surname", "editor", *keys]
        name = _first(params, keys)
        if not name:
            break
        names.append(name)
    if not names:
        names = _vancouver(params, "vauthors" if role == "author" else "veditors")
    return names


def _vancouver(params: dict[str, Wikicode], key: str) -> list[str]:
    """Surnames of a Vancouver list (``Smith AB, Jones C``): each name less its initials."""
    if key not in params:
        return []
    plain = _COMMENT.sub("", params[key].strip_code(normalize=True, collapse=True))
    names = []
    for person in plain.split(",")[:MAX_NAMES]:
        words = person.split()
        if len(words) > 1 and words[-1].isupper() and len(words[-1]) <= 3:
            words = words[:-1]
        names.append("".join(words))
    return [n for n in names if n]


def _year(params: dict[str, Wikicode]) -> str:
    """``|year=`` as written, else the year part of ``|date=`` (with a ``2001a`` suffix)."""
    for key in ("year", "date", "publication-date"):
        if key not in params:
            continue
        text = _text(params[key])
        match = _YEAR.search(text)
        if match:
            return match.group(1)
        if _UNDATED.match(text):
            return text
    return ""


def _explicit_id(ref: Wikicode) -> str | None:
    """The id a ``|ref={{sfnref|...}}`` (or ``{{harvid}}``) names, if that is what ``ref`` holds."""
    for inner in ref.filter_templates(recursive=False):
        if _name(inner) in _ID_TEMPLATES:
            return _positional_anchor(inner)
    return None


def full_anchor(template: Template) -> str | None:
    """The anchor id a full citation template gives itself, or None (``|ref=none``, no names)."""
    params = _params(template)
    if "ref" in params:
        ref = params["ref"]
        named = _explicit_id(ref)
        if named:
            return named
        explicit = _text(ref)
        if explicit.lower() == "none":
            return None
        if explicit and explicit.lower() != "harv":
            return explicit
    names = _names(params, "author") or _names(params, "editor")
    return _anchor(names, _year(params)) if names else None


def _target_anchor(template: Template, name: str) -> str | None:
    """The anchor of a template that may be a link target; None for any other template."""
    if name.startswith("cite") or name == "citation":
        return full_anchor(template)
    if name in _ID_TEMPLATES or not template.has("ref"):
        return None
    return _explicit_id(template.get("ref").value)


def link(short: Citation, target: Citation) -> Citation:
    """``short`` with what its full citation says of the work: URL, title, dates, archive."""
    values = {field: getattr(target, field) for field in _LINKED_FIELDS}
    return replace(short, resolved=True, **values)


class Targets:
    """The full citations of one page by anchor, for linking its short citations."""

    def __init__(self, templates: Iterable[tuple[Template, str]], build: Callable[[Template], Citation]) -> None:
        """``templates``: (template, normalised name) pairs of the page's templates; citation
        templates (``cite ...``, ``citation``) anchor themselves, any other template only by a
        ``|ref={{sfnref|...}}``. ``build`` reads one into a Citation, when a short one links to it."""
        self._build = build
        self._exact: dict[str, Template] = {}
        folded: dict[str, list[Template]] = {}
        for template, name in templates:
            anchor = _target_anchor(template, name)
            if anchor is None:
                continue
            self._exact.setdefault(anchor, template)  # CS1 flags duplicates; the first one wins
            folded.setdefault(anchor.casefold(), []).append(template)
        self._folded = {key: found[0] for key, found in folded.items() if len(found) == 1}
        self._built: dict[int, Citation] = {}

    def __len__(self) -> int:
        return len(self._exact)

    def find(self, anchor: str) -> Template | None:
        """The full citation template with this anchor (or the one matching it but for case)."""
        return self._exact.get(anchor) or self._folded.get(anchor.casefold())

    def resolve(self, short: Citation) -> Citation:
        """``short`` linked to its full citation, or unchanged (anchor kept) when none matches."""
        if short.kind != "short" or not short.anchor or short.resolved:
            return short
        template = self.find(short.anchor)
        if template is None:
            return short
        key = id(template)
        if key not in self._built:
            self._built[key] = self._build(template)
        return link(short, self._built[key])
