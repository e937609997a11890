"""A ready-to-paste ``{{cite web}}`` for a suggested Source, safe whatever its title and URL say.

The citation is built as a mwparserfromhell Template node, and every value is escaped first,
because titles and URLs come from the web and the text is pasted inside ``<ref>...</ref>``:

* URLs are percent-encoded where CS1 asks it (Help:CS1: space, ``"``, ``'``, ``<``, ``>``,
  ``[``, ``]``, ``{``, ``|``, ``}``; and ``~~~``, a signature on save), so the link still works
  and ends nowhere early;
* other values (title, website) have ``|`` as ``{{!}}``, braces, brackets, ``<`` and ``>`` as
  HTML entities (``{{``/``}}`` start or end templates, ``[[...]]`` is a link, ``<ref>`` or
  ``</ref>`` would nest or close the reference), and runs of three or more ``~`` as entities
  (a signature on save);
* whitespace, line breaks included, becomes one space, and other control characters go.

``=`` needs no escape in a named parameter (only the first one separates the name), and
``{{=}}`` is a template some wikis lack, so it is left as it is.
"""

from __future__ import annotations

import re
from datetime import date
from urllib.parse import urlsplit

from mwparserfromhell.nodes import Template

__all__ = ["TEMPLATE", "cite_web", "escape_value", "escape_url"]

#: The template's name as written (the space keeps the `` |param=`` layout editors are used to).
TEMPLATE = "cite web"

_URL_ESCAPES = {" ": "%20", '"': "%22", "'": "%27", "<": "%3C", ">": "%3E", "[": "%5B", "]": "%5D", "{": "%7B",
                "|": "%7C", "}": "%7D"}
_VALUE_ESCAPES = {"|": "{{!}}", "{": "&#123;", "}": "&#125;", "[": "&#91;", "]": "&#93;", "<": "&lt;", ">": "&gt;"}
_SPACE = re.compile(r"\s+")
#: Control characters other than whitespace: not text, and wikitext drops or refuses them.
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1b\x7f]")
_TILDES = re.compile(r"~{3,}")


def escape_url(url: str) -> str:
    """``url`` as a template parameter value: trimmed, and the characters CS1 wants percent-encoded."""
    url = _SPACE.sub(" ", _CONTROL.sub("", url)).strip()
    escaped = "".join(_URL_ESCAPES.get(char, char) for char in url)
    return _TILDES.sub(lambda run: "%7E" * len(run.group()), escaped)


def escape_value(text: str) -> str:
    """Plain text as a template parameter value that wikitext reads back as that text."""
    text = _SPACE.sub(" ", _CONTROL.sub("", text)).strip()
    escaped = "".join(_VALUE_ESCAPES.get(char, char) for char in text)
    return _TILDES.sub(lambda run: "&#126;" * len(run.group()), escaped)


def _host(url: str) -> str:
    try:
        return urlsplit(url.strip()).netloc.removeprefix("www.")
    except ValueError:  # an unparseable URL (a bad IPv6 literal) has no host to name
        return ""


def cite_web(url: str, title: str, website: str = "", today: date | None = None) -> str:
    """A ready-to-paste ``{{cite web}}`` for a suggested source: ``url``, ``title`` (the website's name
    when there is none), ``website`` (the URL's host by default) and today's ``access-date``."""
    website = escape_value(website or _host(url))
    values = [("url", escape_url(url)), ("title", escape_value(title) or website)]
    if website:
        values.append(("website", website))
    values.append(("access-date", (today or date.today()).isoformat()))
    template = Template(f"{TEMPLATE} ")
    for n, (name, value) in enumerate(values):
        template.add(name, value if n == len(values) - 1 else f"{value} ", preserve_spacing=False)
    return str(template)
