"""trafilatura's copies of a page's tree that nothing reads again, not made.

A copy of a real page's parsed tree costs about 1.8 ms (lxml copies every node and its text),
a twentieth of what a reader spends on a page, and trafilatura makes up to five per page. Two of
them protect a tree that is never read again in the way Side extracts a page:

- ``bare_extraction`` copies the tree it is given, so that the caller's tree stays as it was.
  Side's extraction (:func:`side.sources.fetch.read_html`, :func:`side.sources.fetch.extract_html`)
  parses each page for itself, reads its signals, title and date first, and reads nothing of
  the tree afterwards: :func:`owned` tells the copy to hand that one tree over instead;
- before its comparison with readability (``_extract_and_compare``), trafilatura copies the
  raw tree, which the comparison prunes and readability reads, because its later stages (the
  baseline rescue, the recall retry) read the raw tree again. In precision mode neither runs,
  nor does anything else read the raw tree after the comparison, so it is handed over there.

A copy also cuts an element loose from its document, and readability reads an element's parent
(it scores a paragraph's parent, and drops an element from it). trafilatura's parser gives an
element with a parent for some markup (a fragment without ``<html>``: the body's only child, or
the body itself renamed ``div``), so only a tree without a parent is handed over, in both places.

Every page's text is the same (``tests/test_copies.py``: trafilatura's 110 test pages and the
extraction benchmark's 181). :func:`install` puts both in place only over the code this was
argued from (trafilatura 2.3.1's ``trafilatura.core``, checked by a digest of its source); with
any other version trafilatura copies as it does.
"""

from __future__ import annotations

import copy as _copy_module
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from side.sources.patches import Once, source_digest, swapped

__all__ = ["install", "installed", "owned", "library_copies"]

log = logging.getLogger(__name__)

#: SHA-256 of the source of trafilatura 2.3.1's ``trafilatura.core``.
KNOWN_SOURCE = "a123aa052752d3dd1d5a1177ad37f03574456d08df1bcd2ec87971cf3f077825"

_local = threading.local()
_originals: dict[str, Any] = {}


@contextmanager
def owned(tree: Any) -> Iterator[None]:
    """Within the block, trafilatura's first copy of ``tree`` (``bare_extraction``'s) is
    ``tree`` itself, if it has no parent: the caller reads nothing of it afterwards."""
    outer = getattr(_local, "owned", None)
    _local.owned = tree if tree is not None and tree.getparent() is None else None
    try:
        yield
    finally:
        _local.owned = outer


def _copy(obj: Any) -> Any:
    """``copy.copy`` as trafilatura's ``core`` calls it, except for the tree handed over."""
    if obj is not None and obj is getattr(_local, "owned", None):
        _local.owned = None  # once: later copies of it are trafilatura's own and needed
        return obj
    return _copy_module.copy(obj)


def _extract_and_compare(cleaned_tree: Any, cleaned_tree_backup: Any, tree: Any, options: Any) -> tuple[Any, str]:
    """trafilatura's ``_extract_and_compare``, handing the raw tree to the comparison uncopied
    in precision mode (nothing reads it afterwards there) where it has no parent."""
    core = _core()
    postbody, temp_text = core.extract_content(cleaned_tree, options)
    if not options.fast:
        uncopied = options.focus == "precision" and tree.getparent() is None
        raw = tree if uncopied else _copy_module.copy(tree)
        postbody, temp_text = core.compare_extraction(cleaned_tree_backup, raw, postbody, temp_text, options)
    return postbody, temp_text


def _core() -> Any:
    import trafilatura.core as core

    return core


def install() -> bool:
    """Put both in trafilatura's places (once per process); says whether they are in."""
    _once()
    return installed()


def _install() -> None:
    core = _core()
    try:
        digest = source_digest(core)
    except (OSError, TypeError) as exc:  # no source to read: a frozen install
        log.info("trafilatura's source cannot be read (%s); it copies trees as it does", exc)
        return
    if digest != KNOWN_SOURCE:
        log.info("trafilatura's core is not the known code; it copies trees as it does")
        return
    _originals["copy"] = core.copy
    _originals["_extract_and_compare"] = core._extract_and_compare
    core.copy = _copy
    core._extract_and_compare = _extract_and_compare


_once = Once(_install)


def installed() -> bool:
    """Whether both are in trafilatura's places."""
    return bool(_originals)


@contextmanager
def library_copies() -> Iterator[None]:
    """trafilatura's own copies for the duration (to time or compare against them); ours come
    back afterwards (installed first, so that an extraction inside the block does not install
    them). Not for concurrent use."""
    install()
    core = _core()
    places = [(core, "copy", _originals["copy"]),
              (core, "_extract_and_compare", _originals["_extract_and_compare"])] if _originals else []
    with swapped(_once, places):
        yield
