"""Readers for the shared real datasets under ``SIDE_DATA_DIR``.

The data is never copied into the repository; every reader takes the data directory (or a file
path in the same schema, so other splits can be evaluated unchanged) and raises
:class:`DataNotFoundError` with the path it looked at.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from side.errors import DataNotFoundError, InputError

__all__ = [
    "require_file", "read_jsonl", "WiceClaim", "load_wice", "SciFactDoc", "SciFactClaim",
    "load_scifact_corpus", "load_scifact_claims",
]


def require_file(path: str | Path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise DataNotFoundError(f"data file not found: {path} (set SIDE_DATA_DIR to the shared data folder)")
    return path


def read_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield the JSON objects of a JSONL file, naming the line of any malformed record."""
    path = require_file(path)
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{number}: invalid JSON ({exc.msg})") from exc
            if not isinstance(record, dict):
                raise InputError(f"{path}:{number}: expected a JSON object")
            yield record


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


def load_wice(path: str | Path) -> list[WiceClaim]:
    out: list[WiceClaim] = []
    for rec in read_jsonl(path):
        meta = rec.get("meta", {})
        out.append(
            WiceClaim(
                id=str(meta.get("id", len(out))),
                claim=rec["claim"],
                label=rec["label"],
                evidence=tuple(rec.get("evidence", [])),
                supporting_sentences=tuple(tuple(g) for g in rec.get("supporting_sentences", [])),
                title=meta.get("claim_title", "") or "",
                section=(meta.get("claim_section", "") or "").rstrip("."),
                context=meta.get("claim_context", "") or "",
            )
        )
    return out


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
    return {
        str(r["doc_id"]): SciFactDoc(str(r["doc_id"]), r.get("title", ""), tuple(r.get("abstract", [])))
        for r in read_jsonl(path)
    }


def load_scifact_claims(path: str | Path) -> list[SciFactClaim]:
    return [
        SciFactClaim(
            id=int(r["id"]),
            claim=r["claim"],
            evidence={str(k): v for k, v in (r.get("evidence") or {}).items()},
            cited_doc_ids=tuple(str(d) for d in r.get("cited_doc_ids", [])),
        )
        for r in read_jsonl(path)
    ]
