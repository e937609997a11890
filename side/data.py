"""Readers for the shared real datasets under ``SIDE_DATA_DIR``.

The data is never copied into the repository; every reader takes the data directory (or a file
path in the same schema, so other splits can be evaluated unchanged) and raises
:class:`DataNotFoundError` with the path it looked at.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from side.errors import DataNotFoundError, InputError

T = TypeVar("T")

__all__ = [
    "require_file", "read_text_file", "read_json_object", "read_jsonl", "read_jsonl_lines", "WICE_LABELS",
    "WICE_META_PREFIX",
    "WiceClaim", "load_wice", "SciFactDoc", "SciFactClaim", "load_scifact_corpus", "load_scifact_claims",
]


def require_file(path: str | Path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise DataNotFoundError(f"data file not found: {path} (set SIDE_DATA_DIR to the shared data folder)")
    return path


def read_text_file(path: str | Path) -> str:
    """A text file the user named (an article's wikitext), which must exist and be UTF-8."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such file: {path}")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path} is not UTF-8 text: {exc.reason}") from exc


def read_json_object(path: str | Path, what: str) -> dict[str, Any]:
    """The JSON object in ``path``, ``what`` (e.g. "the index's index.json") naming it in the one
    line that says why it cannot be read: not UTF-8, not JSON, or not an object. A file written
    by Side and damaged since (a full disk, a hand edit) is reported, not a traceback."""
    path = Path(path)
    try:
        value = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {path} is not UTF-8 text") from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} {path} is not valid JSON ({exc.msg}, line {exc.lineno})") from exc
    if not isinstance(value, dict):
        raise InputError(f"{what} {path} is not a JSON object")
    return value


def read_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield the JSON objects of a JSONL file, naming the line of any malformed record."""
    for _, record in read_jsonl_lines(path):
        yield record


def read_jsonl_lines(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each JSON object of a JSONL file with its line number, for readers that check fields."""
    path = require_file(path)
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError as exc:
                raise InputError(f"{path}:{number}: not UTF-8 text") from exc
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{number}: invalid JSON ({exc.msg})") from exc
            if not isinstance(record, dict):
                raise InputError(f"{path}:{number}: expected a JSON object")
            yield number, record


def _records(path: str | Path, kind: str, parse: Callable[[dict[str, Any]], T]) -> list[T]:
    """``parse`` applied to each record; a record of the wrong shape is one line naming the file,
    the line and what is wrong, and a file without records is refused (every metric over no items
    is empty)."""
    out = []
    for number, record in read_jsonl_lines(path):
        try:
            out.append(parse(record))
        except (KeyError, TypeError, ValueError) as exc:
            reason = f"no {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
            raise InputError(f"{path}:{number}: not a {kind}: {reason}") from exc
    if not out:
        raise InputError(f"{path}: no {kind}s in it")
    return out


def _text(record: dict[str, Any], key: str, default: str | None = None) -> str:
    value = record.get(key, default) if default is not None else record[key]
    if value is None and default is not None:
        return default
    if not isinstance(value, str):
        raise TypeError(f"{key} is not text")
    return value


def _texts(record: dict[str, Any], key: str) -> tuple[str, ...]:
    value = record.get(key) or []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise TypeError(f"{key} is not a list of sentences")
    return tuple(value)


def _object(record: dict[str, Any], key: str) -> dict[str, Any]:
    value = record.get(key) or {}
    if not isinstance(value, dict):
        raise TypeError(f"{key} is not an object")
    return value


@dataclass(frozen=True)
class WiceClaim:
    """One WiCE claim with the sentences of the page it cites."""

    id: str
    claim: str
    label: str
    evidence: tuple[str, ...]
    supporting_sentences: tuple[tuple[int, ...], ...]
    title: str = ""
    section: str = ""
    context: str = ""

    @property
    def gold_sentences(self) -> set[int]:
        return {i for group in self.supporting_sentences for i in group}


#: WiCE's labels: whether the cited page backs the whole claim, part of it, or none of it.
WICE_LABELS = ("supported", "partially_supported", "not_supported")

#: How WiCE marks the pseudo-sentences it adds to a cited page's sentences (``(meta data) TITLE:
#: ...``, the publisher, the date): page metadata, not text of the page.
WICE_META_PREFIX = "(meta data) "


def load_wice(path: str | Path) -> list[WiceClaim]:
    """WiCE claims (or any file in its schema), each field checked: a wrong one is one line."""
    claims = _records(path, "WiCE claim", _wice_claim)
    return [claim if claim.id else replace(claim, id=str(n)) for n, claim in enumerate(claims)]


def _wice_claim(rec: dict[str, Any]) -> WiceClaim:
    meta = _object(rec, "meta")
    label = _text(rec, "label")
    if label not in WICE_LABELS:
        raise ValueError(f"label {label!r} is none of {', '.join(WICE_LABELS)}")
    evidence = _texts(rec, "evidence")
    groups = rec.get("supporting_sentences") or []
    if not isinstance(groups, list) or not all(
            isinstance(g, list) and all(type(i) is int and 0 <= i < len(evidence) for i in g) for g in groups):
        raise ValueError("supporting_sentences is not a list of lists of its evidence's sentence numbers")
    return WiceClaim(
        id=str(meta["id"]) if meta.get("id") is not None else "",  # else its position
        claim=_text(rec, "claim"),
        label=label,
        evidence=evidence,
        supporting_sentences=tuple(tuple(g) for g in groups),
        title=_text(meta, "claim_title", ""),
        section=_text(meta, "claim_section", "").rstrip("."),
        context=_text(meta, "claim_context", ""),
    )


@dataclass(frozen=True)
class SciFactDoc:
    doc_id: str
    title: str
    sentences: tuple[str, ...]


@dataclass(frozen=True)
class SciFactClaim:
    id: int
    claim: str
    #: doc id -> list of evidence sets {"sentences": [...], "label": "SUPPORT"|"REFUTE"}
    evidence: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    cited_doc_ids: tuple[str, ...] = ()


def load_scifact_corpus(path: str | Path) -> dict[str, SciFactDoc]:
    """SciFact's abstracts by document id, each field checked."""
    return {doc.doc_id: doc for doc in _records(path, "SciFact abstract", _scifact_doc)}


def _scifact_doc(r: dict[str, Any]) -> SciFactDoc:
    if type(r["doc_id"]) not in (int, str):
        raise TypeError("doc_id is neither a number nor text")
    return SciFactDoc(str(r["doc_id"]), _text(r, "title", ""), _texts(r, "abstract"))


def load_scifact_claims(path: str | Path) -> list[SciFactClaim]:
    """SciFact's claims, each field checked."""
    return _records(path, "SciFact claim", _scifact_claim)


def _scifact_claim(r: dict[str, Any]) -> SciFactClaim:
    if type(r["id"]) not in (int, str):
        raise TypeError("id is neither a number nor text")
    evidence = _object(r, "evidence")
    if not all(isinstance(sets, list) and all(isinstance(s, dict) for s in sets) for sets in evidence.values()):
        raise TypeError("evidence is not an object of lists of evidence sets")
    cited = r.get("cited_doc_ids") or []
    if not isinstance(cited, list) or not all(type(d) in (int, str) for d in cited):
        raise TypeError("cited_doc_ids is not a list of document ids")
    return SciFactClaim(id=int(r["id"]), claim=_text(r, "claim"), evidence={str(k): v for k, v in evidence.items()},
                        cited_doc_ids=tuple(str(d) for d in cited))
