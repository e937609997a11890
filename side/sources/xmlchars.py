"""trafilatura's removal of the characters XML cannot hold, skipped on markup that holds none.

Before parsing a page, trafilatura's ``load_html`` removes every C0 control character but tab,
line feed and carriage return, and U+FFFE and U+FFFF, with one regular expression over the whole
markup (``trafilatura.utils.INVALID_XML_CHARS``, in ``repair_faulty_html``). On a real page of
170 KB that scan is half a millisecond, a thirtieth of a reader's preparation, and real pages
hardly ever hold one of those characters. Asking ``in`` for each of the 31 characters is a
memchr-like pass each, about a third of that in all.

:func:`install` puts a stand-in for the expression in trafilatura's place: its ``sub`` answers
with the markup itself where it holds none of :data:`CHARACTERS` (what the expression's ``sub``
gives there) and runs the expression otherwise. It goes in only where trafilatura's expression
is the one these characters were read from (:data:`KNOWN_PATTERN`); the module uses it nowhere
else.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from side.sources.patches import Once, swapped

__all__ = ["CHARACTERS", "KNOWN_PATTERN", "install", "installed", "library_removal", "load_html"]

log = logging.getLogger(__name__)

#: trafilatura 2.3's ``INVALID_XML_CHARS``, as written.
KNOWN_PATTERN = r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]"
#: Every character the expression matches.
CHARACTERS = tuple(chr(c) for c in [*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0xFFFE, 0xFFFF])

_original: list[Any] = []


class _Removal:
    """``INVALID_XML_CHARS`` whose ``sub`` first asks whether there is anything to remove."""

    def __init__(self, expression: re.Pattern[str]) -> None:
        self.expression = expression

    def sub(self, repl: Any, string: Any, count: int = 0) -> Any:
        # a plain str only: the expression's sub gives a plain str for a subclass (Markup ...) too
        if type(string) is str and not any(char in string for char in CHARACTERS):
            return string
        return self.expression.sub(repl, string, count)

    def __getattr__(self, name: str) -> Any:  # pattern, flags, search ...: the expression's
        return getattr(self.expression, name)


def install() -> bool:
    """Put the stand-in in trafilatura's place (once per process); says whether it is in."""
    _once()
    return installed()


def _install() -> None:
    import trafilatura.utils as utils

    expression = getattr(utils, "INVALID_XML_CHARS", None)
    if not isinstance(expression, re.Pattern) or expression.pattern != KNOWN_PATTERN or \
            expression.flags != re.UNICODE:
        log.info("trafilatura's INVALID_XML_CHARS is not the known expression; it runs as it is")
        return
    _original.append(expression)
    setattr(utils, "INVALID_XML_CHARS", _Removal(expression))  # noqa: B010 - not the declared type


_once = Once(_install)


def installed() -> bool:
    """Whether the stand-in is in trafilatura's place."""
    return bool(_original)


def load_html(html: Any) -> Any:
    """trafilatura's ``load_html`` of ``html``, with the stand-in in place."""
    from trafilatura.utils import load_html as trafilatura_load_html

    install()
    return trafilatura_load_html(html)


@contextmanager
def library_removal() -> Iterator[None]:
    """trafilatura's own expression for the duration (to time against it); the stand-in comes
    back afterwards. Not for concurrent use."""
    import trafilatura.utils as utils

    install()
    with swapped(_once, [(utils, "INVALID_XML_CHARS", _original[0])] if _original else []):
        yield
