"""An independent count of ``<ref>`` uses, with regexes alone, to cross-check the wikitext parser.

It shares nothing with :mod:`side.extract.wikitext` but the comment pattern, so a bug in the
parser's tree walk shows up as a disagreement on real articles.
"""

from __future__ import annotations

import re

from side.errors import InputError

_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_OPAQUE_BLOCK = re.compile(
    r"<(nowiki|pre|math|syntaxhighlight|source|score|timeline|references)\b[^>]*?(?<!/)>.*?</\1\s*>",
    re.DOTALL | re.IGNORECASE,
)
_REF_TOKEN = re.compile(r"<ref(?:\s[^>]*?)?(/?)>|</ref\s*>", re.IGNORECASE)
_LIST_TEMPLATE_START = re.compile(r"\{\{\s*(?:reflist|references|notelist)\s*[|}]", re.IGNORECASE)


def _drop_list_templates(text: str) -> str:
    """Cut ``{{reflist|refs=...}}`` blocks out, matching braces by counting them."""
    out, position = [], 0
    while (match := _LIST_TEMPLATE_START.search(text, position)) is not None:
        out.append(text[position : match.start()])
        depth, index = 0, match.start()
        while index < len(text):
            if text.startswith("{{", index):
                depth, index = depth + 1, index + 2
            elif text.startswith("}}", index):
                depth, index = depth - 1, index + 2
                if depth == 0:
                    break
            else:
                index += 1
        position = index
    out.append(text[position:])
    return "".join(out)


def _count_ref_tokens(text: str) -> int:
    """Self-closing refs plus openings that a later ``</ref>`` closes, in one linear scan.

    Equivalent to matching ``<ref ...>.*?</ref>`` repeatedly, without that regex's quadratic
    cost on pages with many unclosed tags.
    """
    count, open_at = 0, -1
    for match in _REF_TOKEN.finditer(text):
        closing = match.group().startswith("</")
        if open_at >= 0:
            if closing:
                count, open_at = count + 1, -1
        elif not closing:
            if match.group(1):
                count += 1
            else:
                open_at = match.end()
    if open_at >= 0:
        # The last opening never closes: only self-closing refs after it still count.
        count += sum(1 for m in _REF_TOKEN.finditer(text, open_at) if m.group(1))
    return count


def count_ref_uses(wikitext: str) -> int:
    """Count ``<ref>`` uses with regexes alone, independent of mwparserfromhell.

    Comments, nowiki/pre/math blocks and list-defined references are dropped first; an
    opening tag counts only with its closing tag (or when self-closing), as MediaWiki does.
    """
    if not isinstance(wikitext, str):
        raise InputError(f"wikitext must be a str, not {type(wikitext).__name__}")
    text = _COMMENT.sub("", wikitext)
    text = _OPAQUE_BLOCK.sub("", text)
    text = _drop_list_templates(text)
    return _count_ref_tokens(text)
