"""Citations and the claims they support, read from raw wikitext.

Side checks one *use* of a citation at a time: the sentence just before a ``<ref>`` (or a
``{{sfn}}``) is the claim, the ~100 words before it are the context the dense retriever and
the verifier read, and the section path tells them where in the article they are. This module
turns an article's wikitext into those :class:`~side.extract.claims.Claim` objects.

Design choices, each made for a reason:

* The page is parsed once with mwparserfromhell and walked once, in document order, while a
  plain-text buffer per section is filled; a claim is read from that buffer at the ref. Both
  stay linear in the page's length whatever it holds: :mod:`side.extract.parse` keeps
  mwparserfromhell from rescanning the page for each unclosed ``<ref>`` or ``{{``, and
  :mod:`side.extract.sentences` cleans each character of a paragraph once, however many refs
  it has (``benchmarks/parse.py`` prints the times from 10 KB to 5 MB).
* Template parameters (infobox values, ``{{efn}}`` notes, ``{{#tag:ref}}`` bodies) are walked
  in a separate buffer, so their refs get the parameter's own text as claim and do not pollute
  the prose context.
* A named ref is one :class:`Citation` however often it is used; a reuse may come before its
  definition, and list-defined refs (``{{reflist|refs=}}``, ``<references>...</references>``)
  define citations without being uses.
* Citation ids hash the whitespace-normalised ref body, never its position, so that
  :func:`added_citations` can compare revisions as multisets of (citation, claim text) keys.
* Sentence boundaries are found with a cheap regex, not the sentence splitter of
  :mod:`side.text`: only the last boundary before each ref matters, and splitting a long
  article whole would cost far more than that one search per ref.
* Nothing here raises on odd wikitext: vandalised or truncated pages are ordinary input. A page
  too malformed to parse exactly within a linear work budget is read more plainly instead, and
  :func:`extract` reports how it was read.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import mwparserfromhell
from mwparserfromhell.nodes import ExternalLink, Heading, HTMLEntity, Tag, Template, Text, Wikilink
from mwparserfromhell.wikicode import Wikicode

from side.errors import InputError, TooManyClaimsError
from side.extract import archivemarks, shortcites
from side.extract.claims import Citation, Claim
from side.extract.parse import ParseLevel, ParseReport, parse_wikitext
from side.extract.sentences import Flow as _Flow
from side.extract.sentences import clean_text, last_sentence, without_tag_remnants

__all__ = [
    "ARCHIVE_FIELDS", "AUTHOR_FIELDS", "DATE_FIELDS", "LIST_TEMPLATES", "SHORT_TEMPLATES", "TITLE_FIELDS", "URL_FIELDS",
    "WEBSITE_FIELDS", "added_citations", "citation_from_body", "citation_id", "clean_text", "count_claim_marks",
    "extract", "is_living_person",
    "extract_citations", "extract_claims", "Extraction", "last_sentence", "ParseLevel",
]


logger = logging.getLogger(__name__)

#: Harvard-style short citations: each occurrence in prose is one use of a "short" citation.
SHORT_TEMPLATES = frozenset({"sfn", "sfnp", "sfnm", "harvnb", "harv", "harvp", "harvcol", "harvcolnb"})
#: Templates whose ``refs=`` parameter holds list-defined references (definitions, not uses).
LIST_TEMPLATES = frozenset({"reflist", "references", "notelist", "notes", "refbegin"})
#: Parameters of a citation template read into the Citation, first present one wins.
#: German aliases (Internetquelle, Literatur) are included: de.wikipedia pages are in the fixtures.
URL_FIELDS = ("url", "chapter-url", "chapterurl")
TITLE_FIELDS = ("title", "script-title", "chapter", "trans-title", "titel")
# fmt: off
WEBSITE_FIELDS = (
    "website", "work", "newspaper", "journal", "magazine", "periodical", "publisher",
    "werk", "sammelwerk", "hrsg", "verlag",
)
# fmt: on
DATE_FIELDS = ("date", "year", "publication-date", "datum", "jahr")
AUTHOR_FIELDS = ("last", "last1", "author", "author1", "surname", "surname1", "authors", "vauthors", "autor")
ARCHIVE_FIELDS = ("archive-url", "archiveurl", "archiv-url")

_TAG_REF = "#tag:ref"
# fmt: off
#: Tags whose content MediaWiki shows verbatim or not as prose: never a claim nor a ref.
_OPAQUE_TAGS = frozenset({
    "math", "pre", "source", "syntaxhighlight", "score", "timeline", "graph", "imagemap",
    "templatedata", "ce", "chem", "hiero", "inputbox", "categorytree", "section",
    "templatestyles", "mapframe", "maplink", "references",
})
#: Tags that start a new block of text: a claim never runs across them.
_BLOCK_TAGS = frozenset({
    "table", "tr", "td", "th", "caption", "p", "div", "blockquote", "hr", "ul", "ol", "center",
    "h1", "h2", "h3", "h4", "h5", "h6",
})
# fmt: on
#: List markers: mwparserfromhell gives them no content, the item runs to the end of the line.
_LINE_TAGS = frozenset({"li", "dt", "dd"})
_FILE_NAMESPACES = frozenset({"file", "image", "media", "datei", "bild"})
_SKIP_NAMESPACES = frozenset({"category", "kategorie"})
_INTERWIKI = re.compile(r"^:?[a-z]{2,3}(?:-[a-z]{2,8})?:")

_WS = re.compile(r"\s+")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_HASH_PUNCT = re.compile(r"\s*(\||=|\{\{|\}\})\s*")
#: The magic words ``{{!}}`` and ``{{=}}``: MediaWiki expands them to ``|`` and ``=`` before it
#: reads a template's parameters or a link, so a citation's url or title may hold a pipe only
#: written this way. mwparserfromhell sees a template, which stripping code would delete.
_MAGIC_CHAR = re.compile(r"\{\{\s*([!=])\s*\}\}")
#: ... each as an HTML entity, which stripping code turns into the character itself.
_MAGIC_ENTITY = {"!": "&#124;", "=": "&#61;"}
#: Everything that can make a claim, however it is spelled: a ``<ref`` tag (a definition, a
#: reuse, or one inside a comment that is no use at all), ``{{#tag:ref}}`` and the short
#: citation templates. Counting these over-counts claims, never under-counts them.
_CLAIM_MARK = re.compile(
    r"<ref(?![a-z0-9_-])|\{\{\s*(?:#tag\s*:\s*ref\b|(?:template\s*:\s*)?(?:sfnp?|sfnm|harv(?:nb|p|col|colnb)?)"
    r"\s*(?:\||\}\}))", re.IGNORECASE)


@dataclass
class _Use:
    """One citation use seen during the walk; the citation may be a name resolved later."""

    marker: str  # "ref" (a <ref> tag), "tag" ({{#tag:ref}}), "short" ({{sfn}} and kin)
    citation: Citation | None
    name: str | None
    section: tuple[str, ...]
    text: str
    left_context: str
    extra: dict[str, Any]


def citation_id(body: str) -> str:
    """Stable id of a reference body: whitespace and comments do not change it."""
    normal = _WS.sub(" ", _COMMENT.sub("", body)).strip()
    normal = _HASH_PUNCT.sub(r"\1", normal)
    return hashlib.sha1(normal.encode("utf-8", "replace")).hexdigest()[:16]


def _template_name(template: Template) -> str:
    name = _COMMENT.sub("", str(template.name)).strip().replace("_", " ")
    name = _WS.sub(" ", name).lower()
    return name[9:].strip() if name.startswith("template:") else name


def _is_cite(name: str) -> bool:
    return name.startswith("cite") or name == "citation"


def _plain(code: Wikicode | str) -> str:
    """``code`` as plain text: markup stripped, ``{{!}}`` and ``{{=}}`` read as ``|`` and ``=``."""
    if isinstance(code, str):
        code = mwparserfromhell.parse(code)
    if "{{" in (written := str(code)) and _MAGIC_CHAR.search(written):
        # Re-read with the magic words as entities (linear parse: the value may be anyone's).
        code = parse_wikitext(_MAGIC_CHAR.sub(lambda m: _MAGIC_ENTITY[m.group(1)], written))[0]
    return clean_text(without_tag_remnants(code.strip_code(normalize=True, collapse=True)))


def _url(written: str) -> str:
    """A URL as MediaWiki links it: ``{{!}}`` (the only way to write a pipe in a template
    parameter or a link) is the character ``|``, percent-encoded as ``%7C``; ``{{=}}`` is ``=``."""
    expanded = _MAGIC_CHAR.sub(lambda m: "|" if m.group(1) == "!" else "=", written)
    return expanded.replace("|", "%7C")


def _params(template: Template) -> dict[str, Wikicode]:
    """Parameters by lower-cased name, the last one winning as in MediaWiki."""
    return {str(p.name).strip().lower(): p.value for p in template.params}


def _param(params: dict[str, Wikicode], names: tuple[str, ...], raw: bool = False) -> str | None:
    for name in names:
        value = params.get(name)
        if value is None:
            continue
        text = _url(_COMMENT.sub("", str(value)).strip()) if raw else _plain(value)
        if raw and "{{" in text:
            text = _url(_plain(value))
        if text:
            return text
    return None


def _attr(tag: Tag, name: str) -> str | None:
    for attribute in tag.attributes:
        if str(attribute.name).strip().lower() == name:
            value = _WS.sub(" ", str(attribute.value or "")).strip().strip("\"'").strip()
            return value or None
    return None


def _getter(params: dict[str, Wikicode]) -> archivemarks.Param:
    """``params`` as :mod:`side.extract.archivemarks` reads a template's parameters."""
    return lambda names, raw: _param(params, names, raw=raw)


def _template_citation(template: Template, kind: str, raw: str, name: str | None) -> Citation:
    params = _params(template)
    return Citation(
        id=citation_id(raw),
        kind=kind,
        raw=raw,
        name=name,
        template=_template_name(template),
        url=_param(params, URL_FIELDS, raw=True),
        title=_param(params, TITLE_FIELDS),
        website=_param(params, WEBSITE_FIELDS),
        date=_param(params, DATE_FIELDS),
        author=_param(params, AUTHOR_FIELDS),
        archive_url=_param(params, ARCHIVE_FIELDS, raw=True),
        **archivemarks.template_marks(_getter(params)),
    )


def _with_archive_marks(citation: Citation, templates: list[Template], names: list[str]) -> Citation:
    """Add what ``{{webarchive}}``-like and ``{{dead link}}`` templates in the ref say."""
    beside = [(tname, _getter(_params(t))) for t, tname in zip(templates, names, strict=False)
              if tname in archivemarks.ARCHIVE_TEMPLATES]
    return archivemarks.with_marks(citation, beside) if beside else citation


def citation_from_body(body: Wikicode, name: str | None = None) -> Citation:
    """Classify one reference body: citation template, short cite, link, bare URL or text;
    with the archive copy and dead-link marks that templates beside it in the ref give."""
    templates = body.filter_templates(recursive=False)
    names = [_template_name(t) for t in templates]
    citation = _classify_body(body, name, templates, names)
    return _with_archive_marks(citation, templates, names)


def _classify_body(body: Wikicode, name: str | None, templates: list[Template], names: list[str]) -> Citation:
    raw = str(body).strip()
    for template, tname in zip(templates, names, strict=False):
        if _is_cite(tname):
            return _template_citation(template, "template", raw, name)
    for template, tname in zip(templates, names, strict=False):
        if tname in SHORT_TEMPLATES:
            return _short_citation(template, tname, raw, name)
    links = body.filter_external_links(recursive=False)
    if links:
        link = links[0]
        url = _url(str(link.url).strip())
        if link.brackets:
            title = _plain(link.title) if link.title else None
            return Citation(citation_id(raw), "external_link", raw, name, url=url, title=title or None)
        return Citation(citation_id(raw), "bare_url", raw, name, url=url)
    for template, tname in zip(templates, names, strict=False):
        # Other citation templates ({{Internetquelle}}, {{London Gazette}}) name a url or title;
        # helpers such as {{ISBN}} inside a hand-written reference do not, and the url of a
        # {{webarchive}} is the archived copy's, not the source's.
        if tname not in archivemarks.ARCHIVE_TEMPLATES and set(_params(template)) & {*URL_FIELDS, *TITLE_FIELDS}:
            return _template_citation(template, "template", raw, name)
    text = _plain(body)[:300]
    return Citation(citation_id(raw), "text", raw, name, title=text or None)


def _short_citation(template: Template, tname: str, raw: str, name: str | None = None) -> Citation:
    """A short citation, with the anchor of the full citation it points to (linked later)."""
    anchor = shortcites.short_anchor(template)
    return Citation(id=citation_id(raw), kind="short", raw=raw, name=name, template=tname, anchor=anchor)


def _dangling(name: str | None) -> Citation:
    """A reuse whose definition is nowhere on the page: still one citation, just empty."""
    key = f"name:{name or ''}"
    return Citation(id=citation_id(key), kind="text", raw="", name=name)


class _Enough(Exception):
    """The walk has seen one claim more than it was asked for."""


class _Walker:
    """One pass over the parse tree, in document order, collecting uses and definitions."""

    def __init__(self, context_words: int, max_claims: int | None = None) -> None:
        self.context_words = context_words
        #: The last <ref> use and the text stream it is in: what a {{dead link}} after it marks.
        self.last_ref: tuple[_Flow, _Use] | None = None
        #: Citations (by id, or by name for a reuse) a {{dead link}} after their ref marks dead.
        self.dead_ids: set[str] = set()
        self.dead_names: set[str] = set()
        self.max_claims = max_claims
        self.claims_seen = 0
        self.complete = True
        self.headings: list[tuple[int, str]] = []
        self.section: tuple[str, ...] = ()
        self.main = _Flow()
        self.uses: list[_Use] = []
        self.definitions: dict[str, Citation] = {}
        self.report: ParseReport | None = None
        #: The page's full citations by anchor, read when it has short citations to link.
        self.targets: shortcites.Targets | None = None

    # -- recording -------------------------------------------------------------------------
    def record(self, marker: str, flow: _Flow, citation: Citation | None, name: str | None) -> None:
        if citation is not None or name:  # a use that becomes a claim
            self.claims_seen += 1
            if self.max_claims is not None and self.claims_seen > self.max_claims:
                raise _Enough
        text = flow.sentence()
        left = flow.left_context(self.context_words)
        self.uses.append(_Use(marker, citation, name, self.section, text, left, dict(flow.extra)))

    def define(self, citation: Citation) -> None:
        if citation.name and citation.name not in self.definitions:
            self.definitions[citation.name] = citation

    def define_all_in(self, code: Wikicode) -> None:
        """Register the refs of a list-defined block (definitions only, not uses)."""
        for tag in code.filter_tags(recursive=True, matches=_is_ref_tag):
            name = _attr(tag, "name")
            if name and tag.contents is not None and str(tag.contents).strip():
                self.define(citation_from_body(tag.contents, name))

    # -- walking ---------------------------------------------------------------------------
    def walk(self, code: Wikicode, flow: _Flow) -> None:
        for node in code.nodes:
            if isinstance(node, Text):
                self.text(str(node.value), flow)
            elif isinstance(node, Tag):
                self.tag(node, flow)
            elif isinstance(node, Template):
                self.template(node, flow)
            elif isinstance(node, Wikilink):
                self.wikilink(node, flow)
            elif isinstance(node, ExternalLink):
                if node.brackets and node.title is not None:
                    self.walk(node.title, flow)
            elif isinstance(node, HTMLEntity):
                flow.add(node.normalize())
            elif isinstance(node, Heading):
                self.heading(node, flow)
            # Comments and template arguments ({{{x}}}) carry no prose.

    def text(self, value: str, flow: _Flow) -> None:
        value = without_tag_remnants(value)
        if flow.pipe_resets and "|" in value:
            *_, value = value.split("|")
            flow.reset()
        if flow.line_block and "\n" in value:
            head, value = value.split("\n", 1)
            flow.add(head)
            flow.paragraph_break()
        pieces = _PARAGRAPH_BREAK.split(value)
        flow.add(pieces[0])
        for piece in pieces[1:]:
            flow.paragraph_break()
            flow.add(piece)

    def heading(self, node: Heading, flow: _Flow) -> None:
        title_flow = _Flow(extra=dict(flow.extra))
        self.walk(node.title, title_flow)
        title = clean_text("".join(title_flow.parts))
        if flow is not self.main:
            flow.paragraph_break()
            return
        while self.headings and self.headings[-1][0] >= node.level:
            self.headings.pop()
        self.headings.append((node.level, title))
        self.section = tuple(t for _, t in self.headings)
        flow.reset()

    def tag(self, node: Tag, flow: _Flow) -> None:
        name = _COMMENT.sub("", str(node.tag)).strip().lower()
        if name == "ref":
            self.ref(node, flow)
        elif name == "references":
            if node.contents is not None:
                self.define_all_in(node.contents)
        elif name == "nowiki":
            flow.add(str(node.contents or ""))
        elif name == "br":
            flow.add(" ")
        elif name == "gallery":
            self.gallery(str(node.contents or ""), flow)
        elif name in _OPAQUE_TAGS:
            return
        elif name in _LINE_TAGS:
            flow.paragraph_break()
            flow.line_block = True
            if node.contents is not None:
                self.walk(node.contents, flow)
        elif name in _BLOCK_TAGS:
            flow.paragraph_break()
            if node.contents is not None:
                self.walk(node.contents, flow)
            flow.paragraph_break()
        elif node.contents is not None:
            self.walk(node.contents, flow)

    def ref(self, node: Tag, flow: _Flow) -> None:
        name = _attr(node, "name")
        body = None if node.self_closing else node.contents
        citation = None
        if body is not None and str(body).strip():
            citation = citation_from_body(body, name)
            self.define(citation)
        elif not name:
            logger.debug("empty <ref> without a name ignored")
        self.record("ref", flow, citation, name)
        self.last_ref = (flow, self.uses[-1])

    def template(self, node: Template, flow: _Flow) -> None:
        name = _template_name(node)
        if name in SHORT_TEMPLATES:
            raw = str(node).strip()
            citation = _short_citation(node, name, raw)
            self.record("short", flow, citation, None)
        elif name in LIST_TEMPLATES:
            for param in node.params:
                self.define_all_in(param.value)
        elif name == _TAG_REF:
            self.tag_ref(node, flow)
        elif name in archivemarks.DEAD_LINK_TEMPLATES:
            self.dead_link(flow)
        elif name in ("nowrap", "nobr", "lang", "small", "transl", "nowrap begin"):
            positional = [p for p in node.params if not p.showkey]
            if positional:
                self.walk(positional[-1].value, flow)
        elif name == "convert":
            positional = [p for p in node.params if not p.showkey]
            flow.add(" ".join(_plain(p.value) for p in positional[:2]))
        else:
            self.template_params(node, name, flow)

    def dead_link(self, flow: _Flow) -> None:
        """``<ref>...</ref>{{dead link}}``: the tag is about the ref just before it in the same
        text (one inside the ref is read with the citation, see :func:`citation_from_body`)."""
        if self.last_ref is None or self.last_ref[0] is not flow:
            return
        use = self.last_ref[1]
        if use.citation is not None:
            self.dead_ids.add(use.citation.id)
        elif use.name:
            self.dead_names.add(use.name)

    def tag_ref(self, node: Template, flow: _Flow) -> None:
        """``{{#tag:ref|body|name=x}}``: a ref built by a parser function (notes with refs)."""
        name = _param(_params(node), ("name",))
        body = node.get("1").value if node.has("1") else None
        citation = None
        if body is not None and str(body).strip():
            citation = citation_from_body(body, name)
            self.define(citation)
        self.record("tag", flow, citation, name)
        self.template_params(node, _TAG_REF, flow)

    def template_params(self, node: Template, name: str, flow: _Flow) -> None:
        """Walk each parameter that may hold a citation in its own flow (e.g. infobox values)."""
        for param in node.params:
            lowered = str(param.value).lower()
            if "<ref" not in lowered and "{{" not in lowered:
                continue
            extra = {"template": name, "param": str(param.name).strip()}
            self.walk(param.value, _Flow(extra=extra))

    def wikilink(self, node: Wikilink, flow: _Flow) -> None:
        title = str(node.title).strip()
        namespace = title.lstrip(":").split(":", 1)[0].strip().lower() if ":" in title else ""
        if namespace in _FILE_NAMESPACES and not title.startswith(":"):
            if node.text is not None:
                self.walk(node.text, _Flow(pipe_resets=True, extra={"file": title}))
        elif namespace in _SKIP_NAMESPACES and not title.startswith(":"):
            return
        elif node.text is not None:
            self.walk(node.text, flow)
        elif not _INTERWIKI.match(title):
            flow.add(_plain(node.title))

    def gallery(self, contents: str, flow: _Flow) -> None:
        """Gallery lines are ``File:x.jpg|caption``; MediaWiki parses the caption as wikitext."""
        for line in contents.splitlines():
            if "|" in line:
                file_name, caption = line.split("|", 1)
                self.walk(
                    parse_wikitext(caption)[0],
                    _Flow(pipe_resets=True, extra={"file": file_name.strip()}),
                )


def _is_ref_tag(node: Tag) -> bool:
    return str(node.tag).strip().lower() == "ref"


def _walk_page(wikitext: str, context_words: int, max_claims: int | None = None,
               walker: _Walker | None = None) -> _Walker:
    if not isinstance(wikitext, str):
        raise InputError(f"wikitext must be a str, not {type(wikitext).__name__}")
    if not isinstance(context_words, int) or context_words < 0:
        raise InputError(f"context_words must be a non-negative int, not {context_words!r}")
    # Lone surrogates cannot be hashed or written out; they are never meaningful text.
    wikitext = wikitext.encode("utf-8", "replace").decode("utf-8")
    walker = walker if walker is not None else _Walker(context_words, max_claims)
    code, walker.report = parse_wikitext(wikitext)
    try:
        walker.walk(code, walker.main)
    except _Enough:
        walker.complete = False
    except Exception as error:  # noqa: BLE001 - the contract is "never raise on a str"
        # mwparserfromhell is very tolerant; should anything still fail, keep what was found.
        logger.warning("wikitext walk stopped early (%r); keeping %d uses", error, len(walker.uses))
    if any(use.citation is not None and use.citation.anchor for use in walker.uses) or any(
        c.anchor for c in walker.definitions.values()
    ):
        walker.targets = _targets(code)
    return walker


def _targets(code: Wikicode) -> shortcites.Targets:
    """Every citation template of the page, inside refs or not, by the anchor it makes."""
    named = ((t, _template_name(t)) for t in code.filter_templates(recursive=True))
    return shortcites.Targets(
        ((t, name) for t, name in named if name not in SHORT_TEMPLATES),
        lambda t: _template_citation(t, "template", str(t).strip(), None),
    )


def _dead_marked(walker: _Walker, citation: Citation) -> Citation:
    """``citation`` with ``dead_link`` set when a {{dead link}} followed any of its refs."""
    if citation.id in walker.dead_ids or (citation.name and citation.name in walker.dead_names):
        return archivemarks.mark_dead(citation)
    return citation


#: ``[[Category:Living people]]`` (any case of the first letters, spaces or underscores, a sort key).
_LIVING_PEOPLE = re.compile(r"\[\[\s*category\s*:\s*living[ _]+people\s*(?:\|[^\]]*)?\]\]", re.IGNORECASE)


def is_living_person(wikitext: str) -> bool:
    """Whether the page puts itself in the "Living people" category (an article about a living
    person, WP:BLP). Only the category as written is read, not one a template adds."""
    return bool(_LIVING_PEOPLE.search(wikitext))


def _resolve(walker: _Walker, title: str, living_person: bool = False) -> list[Claim]:
    claims: list[Claim] = []
    uses_so_far: Counter[str] = Counter()
    for use in walker.uses:
        citation = use.citation
        if citation is None:
            if not use.name:
                continue
            citation = walker.definitions.get(use.name) or _dangling(use.name)
        if walker.targets is not None:
            citation = walker.targets.resolve(citation)
        citation = _dead_marked(walker, citation)
        index = uses_so_far[citation.id]
        uses_so_far[citation.id] += 1
        extra = {"marker": use.marker, **use.extra}
        claims.append(Claim(title, use.section, use.text, use.left_context, citation, index, extra=extra,
                            living_person=living_person))
    return claims


@dataclass(frozen=True)
class Extraction:
    """The claims of a page, and how its wikitext was parsed.

    ``parse.level`` is :attr:`ParseLevel.EXACT` for any real article; a lower level says the
    page was too malformed to read exactly within the parse budget (see :mod:`side.extract.parse`),
    and :attr:`ParseLevel.TEXT` that nothing in it could be read as markup at all.
    """

    claims: tuple[Claim, ...]
    parse: ParseReport
    #: False when the page has more than the ``max_claims`` asked for: ``claims`` are the first.
    complete: bool = True


def extract(wikitext: str, title: str, context_words: int = 100, max_claims: int | None = None) -> Extraction:
    """:func:`extract_claims` with the parse report, for callers that must refuse a degraded read.

    With ``max_claims``, the walk stops at the claim after that many (``complete`` is then
    False), so that a caller with a limit does not pay for claims it will refuse.
    """
    if not isinstance(title, str):
        raise InputError(f"title must be a str, not {type(title).__name__}")
    walker = _walk_page(wikitext, context_words, max_claims)
    assert walker.report is not None
    return Extraction(tuple(_resolve(walker, title, is_living_person(wikitext))), walker.report, walker.complete)


def extract_claims(wikitext: str, title: str, context_words: int = 100) -> list[Claim]:
    """Every use of every citation in the page, in document order.

    ``claim.extra["marker"]`` says what made the use: ``"ref"`` for a ``<ref>`` tag, ``"tag"``
    for ``{{#tag:ref}}``, ``"short"`` for ``{{sfn}}``-style short citations; template
    parameter uses also carry ``extra["template"]`` and ``extra["param"]``.
    """
    return list(extract(wikitext, title, context_words).claims)


def extract_citations(wikitext: str) -> list[Citation]:
    """Distinct citations of the page: in order of first use, then defined-but-unused ones."""
    walker = _walk_page(wikitext, 0)
    seen: dict[str, Citation] = {}
    for claim in _resolve(walker, ""):
        seen.setdefault(claim.citation.id, claim.citation)
    for citation in walker.definitions.values():
        if walker.targets is not None:
            citation = walker.targets.resolve(citation)
        seen.setdefault(citation.id, citation)
    return list(seen.values())


def count_claim_marks(wikitext: str, limit: int | None = None) -> int:
    """How many claims the page can give at most: its ``<ref`` tags, ``{{#tag:ref}}`` and short
    citations, found by one regex pass without parsing (milliseconds for megabytes). With
    ``limit``, counting stops at ``limit + 1``."""
    if not isinstance(wikitext, str):
        raise InputError(f"wikitext must be a str, not {type(wikitext).__name__}")
    count = 0
    for _ in _CLAIM_MARK.finditer(wikitext):
        count += 1
        if limit is not None and count > limit:
            break
    return count


def _refuse_marked(wikitext: str, max_claims: int | None, which: str) -> None:
    """Refuse a revision whose marks alone exceed the cap, before it is parsed: the parse tree,
    not the claims, is what a page of 150,000 refs fills memory with."""
    if max_claims is not None and count_claim_marks(wikitext, max_claims) > max_claims:
        raise TooManyClaimsError(f"the {which} revision has more than {max_claims} citation marks "
                                 "(<ref> tags and short citations)", max_claims)


def _capped_claims(wikitext: str, title: str, context_words: int, max_claims: int | None,
                   which: str) -> tuple[Claim, ...]:
    """The claims of one revision, held to ``max_claims`` claim by claim while it is walked."""
    extraction = extract(wikitext, title, context_words, max_claims=max_claims)
    if max_claims is not None and not extraction.complete:
        raise TooManyClaimsError(f"the {which} revision has more than {max_claims} citations", max_claims)
    return extraction.claims


def added_citations(old_wikitext: str, new_wikitext: str, title: str, max_claims: int | None = None) -> list[Claim]:
    """Claims of the new revision whose (citation, claim text) use the old one did not have.

    Uses are compared as multisets of :attr:`Claim.key`, so moving paragraphs, reflowing
    whitespace or reordering refs adds nothing, while a second use of an existing named ref
    after a new sentence is reported.

    With ``max_claims``, a revision (new or old) with more citations than that raises
    :class:`~side.errors.TooManyClaimsError`, as early as a regex count can tell, so time and
    memory stay bounded by the cap rather than by the page.
    """
    _refuse_marked(new_wikitext, max_claims, "new")
    _refuse_marked(old_wikitext, max_claims, "old")
    new_claims = _capped_claims(new_wikitext, title, 100, max_claims, "new")
    old = Counter(claim.key for claim in _capped_claims(old_wikitext, title, 0, max_claims, "old"))
    added: list[Claim] = []
    for claim in new_claims:
        if old[claim.key] > 0:
            old[claim.key] -= 1
        else:
            added.append(claim)
    return added
