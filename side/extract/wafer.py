"""Read WAFER, the JSONL dataset published with Side, into :class:`~side.extract.claims.Claim` objects.

WAFER (Petroni et al. 2022, ``facebookresearch/side``) pairs a Wikipedia claim in context with
the URL that cites it. Reading it into the same Claim objects the wikitext extractor produces
lets every later stage (retrieval, verification, evaluation) run on either source unchanged.

The schema followed here is the one documented in ``datasets/WAFER.md`` of
``facebookresearch/side``, cross-checked against the repository's readers
(``evaluation/dataset.py`` validates records, ``dpr/dataset/input_transform.py`` splits the
input string)::

    {"id": str,
     "input": "<title> [SEP] Section::::<section>. [SEP] <text before the citation> [CIT] ...",
     "output": [{"answer": "<url>" | "{Failed verification}",
                 "provenance": [{"url": str (mandatory), "chunk_id": str,
                                 "title": str (optional), "text": str (optional)}]}],
     "meta": {"wikipedia_id", "wikipedia_title", "wikipedia_section", "cit_paragraph_id",
              "cit_offset", "sentences": [..., "<sentence with [CIT]>"], "featured": bool}}

How a record becomes a Claim:

* ``article_title``: ``meta.wikipedia_title``, else the part of ``input`` before the first
  ``[SEP]``. ``section``: ``meta.wikipedia_section`` (else the middle ``input`` part) without
  KILT's ``Section::::`` prefix and trailing full stop; ``()`` when empty.
* ``left_context``: the ``input`` text before ``[CIT]``, whitespace collapsed, last
  ``context_words`` words. ``text``: the sentence before ``[CIT]`` taken from
  ``meta.sentences`` (the last one holds the marker), else the last sentence of the context.
* ``citation``: the first ``answer`` that is a URL, else the first provenance URL; its title is
  the provenance title when present. Only the URL is known, so the kind is ``"bare_url"``
  (``"external_link"`` when a title was given) and the id hashes the URL, as
  :func:`side.extract.wikitext.citation_id` would for the same reference body.
* ``extra`` keeps the WAFER id, whether the record says ``{Failed verification}``, every
  provenance URL and chunk id, and the meta fields, so nothing the file says is lost.

A record that breaks the documented schema raises :class:`~side.errors.InputError` naming the
file and line: a silently skipped line would bias an evaluation without anyone noticing.
"""

from __future__ import annotations

import gzip
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from side.errors import InputError
from side.extract.claims import Citation, Claim
from side.extract.wikitext import citation_id, last_sentence

__all__ = [
    "CIT_MARKER", "SEP_MARKER", "FAILED_VERIFICATION", "SECTION_PREFIX", "clean_section", "split_input",
    "WaferRecordError", "parse_record", "read_wafer",
]

logger = logging.getLogger(__name__)

CIT_MARKER = "[CIT]"
SEP_MARKER = "[SEP]"
FAILED_VERIFICATION = "{Failed verification}"
SECTION_PREFIX = "Section::::"

_WS = re.compile(r"\s+")


def _collapse(text: str) -> str:
    return _WS.sub(" ", text).strip()


def clean_section(value: str) -> tuple[str, ...]:
    """``"Section::::Early life."`` -> ``("Early life",)``; the lead (empty) -> ``()``."""
    text = _collapse(value)
    text = text.removeprefix(SECTION_PREFIX)
    text = text.rstrip(".").strip()
    return (text,) if text else ()


def split_input(value: str) -> tuple[str, str, str]:
    """Split ``input`` into (title, section, text), tolerating fewer ``[SEP]`` parts as Side does."""
    parts = value.split(SEP_MARKER)
    if len(parts) >= 3:
        return parts[0].strip(), parts[1].strip(), SEP_MARKER.join(parts[2:])
    if len(parts) == 2:
        return parts[0].strip(), "", parts[1]
    return "", "", value


def _claim_sentence(sentences: list[str], before_cit: str) -> str:
    """The sentence the citation follows: WAFER's last sentence carries the [CIT] marker."""
    for index in range(len(sentences) - 1, -1, -1):
        if CIT_MARKER in sentences[index]:
            head = _collapse(sentences[index].split(CIT_MARKER, 1)[0])
            if head:
                return head
            # The marker opens the sentence: the claim is the sentence before it.
            return _collapse(sentences[index - 1]) if index > 0 else ""
    return last_sentence(before_cit)


class WaferRecordError(InputError):
    """A record breaks the WAFER schema; :func:`read_wafer` adds the file and line."""


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise WaferRecordError(message)


def _citation(outputs: list[Any], record_id: str) -> tuple[Citation, dict[str, Any]]:
    """The cited source and what WAFER says about it (answers, provenance, failure flag)."""
    answers: list[str] = []
    provenance: list[dict[str, Any]] = []
    for number, output in enumerate(outputs):
        _expect(isinstance(output, dict), f"output[{number}] is not an object")
        answer = output.get("answer")
        _expect(answer is None or isinstance(answer, str), f"output[{number}].answer is not a string")
        if answer:
            answers.append(answer)
        items = output.get("provenance", [])
        _expect(isinstance(items, list), f"output[{number}].provenance is not a list")
        for item in items:
            _expect(
                isinstance(item, dict) and isinstance(item.get("url"), str) and item["url"].strip(),
                f"output[{number}].provenance has an entry without a url string",
            )
            provenance.append(item)
    url_answers = [a.strip() for a in answers if a.strip() != FAILED_VERIFICATION]
    url = url_answers[0] if url_answers else (provenance[0]["url"].strip() if provenance else None)
    title = next(
        (p["title"] for p in provenance if p["url"].strip() == url and isinstance(p.get("title"), str)),
        None,
    )
    details = {
        "failed_verification": FAILED_VERIFICATION in answers,
        "answers": answers,
        "provenance": [
            {"url": p["url"], "chunk_id": p.get("chunk_id"), "title": p.get("title")} for p in provenance
        ],
    }
    if url is None:
        citation = Citation(id=citation_id(f"wafer:{record_id}"), kind="text")
    else:
        kind = "external_link" if title else "bare_url"
        citation = Citation(id=citation_id(url), kind=kind, raw=url, url=url, title=title or None)
    return citation, details


def parse_record(record: Any, context_words: int = 100) -> Claim:
    """One WAFER record (already JSON-decoded) as a Claim; WaferRecordError on a bad schema."""
    _expect(isinstance(record, dict), "record is not a JSON object")
    value = record.get("input")
    _expect(isinstance(value, str), "input is missing or not a string")
    meta = record.get("meta", {}) or {}
    _expect(isinstance(meta, dict), "meta is not an object")
    outputs = record.get("output", [])
    _expect(isinstance(outputs, list), "output is not a list")
    sentences = meta.get("sentences", []) or []
    _expect(
        isinstance(sentences, list) and all(isinstance(s, str) for s in sentences),
        "meta.sentences is not a list of strings",
    )
    record_id = str(record.get("id", ""))
    title, section, text = split_input(value)
    title = str(meta.get("wikipedia_title") or title).strip()
    section_path = clean_section(str(meta.get("wikipedia_section") or section))
    if CIT_MARKER not in text:
        logger.warning("WAFER record %s has no %s marker; using its whole text", record_id, CIT_MARKER)
    before_cit = _collapse(text.split(CIT_MARKER, 1)[0])
    words = before_cit.split(" ")
    left_context = " ".join(words[-context_words:]) if before_cit and context_words > 0 else ""
    citation, details = _citation(outputs, record_id)
    extra: dict[str, Any] = {"source": "wafer", "wafer_id": record_id, **details}
    for key in ("wikipedia_id", "cit_paragraph_id", "cit_offset"):
        if key in meta:
            extra[key] = meta[key]
    extra["featured"] = bool(meta.get("featured", False))
    return Claim(
        article_title=title,
        section=section_path,
        text=_claim_sentence(sentences, before_cit),
        left_context=left_context,
        citation=citation,
        use_index=0,
        extra=extra,
    )


def _open(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


def read_wafer(path: str | Path, context_words: int = 100) -> Iterator[Claim]:
    """Yield one Claim per record of a WAFER ``.jsonl`` (or ``.jsonl.gz``) file, lazily.

    Blank lines are skipped; anything else that is not a valid record raises InputError
    with ``file:line`` so the bad record can be found at once in a multi-million-line file.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"WAFER file not found: {path}")
    try:
        with _open(path) as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    yield parse_record(json.loads(line), context_words)
                except json.JSONDecodeError as error:
                    raise InputError(f"{path}:{number}: not valid JSON ({error.msg})") from error
                except WaferRecordError as error:
                    raise InputError(f"{path}:{number}: bad WAFER record: {error}") from error
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: not UTF-8 text ({error.reason})") from error
    except (OSError, EOFError) as error:
        raise InputError(f"{path}: cannot read WAFER file ({error})") from error
