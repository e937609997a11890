"""How stored checks and results look to clients: the CHECK JSON and its verdict levels.

Every result speaks the four verdict levels of :class:`side.verify.levels.VerdictLevel`,
stored with it by the worker: ``supported``, ``partially_supported`` (with the claim's words
the source does not back, ``unsupported``), ``not_supported`` (``reportable`` when it is so at
the talk-page report's operating point) and ``cannot_check`` (with ``level_reason``: the gadget
says "could not be checked" and why, never a warning). People read them as "supported",
"partially supported", "not supported" and "could not be checked: <reason>" (:func:`level_text`).
The model's own FEVER label (SUPPORTS / REFUTES / NOT ENOUGH INFO) is never shown. A result
is ``flagged`` when it likely fails review (it needs review and Side is sure) and ``unsure`` when
Side's score lies between the sure flag cut and the supported cut: its level is then Side's guess,
read as "probably partially supported; Side is unsure" (:func:`guess_text`), never a flag.

The shipped verifier's flag threshold (``/healthz``, the dashboard's score chart) is read from
the model's ``combiner.json`` through ``side.verify.verifier.Combiner.load`` (a few bytes of
JSON; neither ``side.verify.verifier`` nor ``side.verify.crossencoder`` imports torch at module
level), so the web service never loads the model.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any
from urllib.parse import quote

from service.store import Check, StoredResult, iso
from side.config import Config
from side.results import unsure_text
from side.verify.crossencoder import DEFAULT_MODEL_DIR, META_FILE, WEIGHTS_FILE
from side.verify.levels import VerdictLevel
from side.verify.verifier import COMBINER_FILE, Combiner

log = logging.getLogger(__name__)

#: Files a worker needs to load the verifier; /healthz reports them missing.
MODEL_FILES = (WEIGHTS_FILE, META_FILE, COMBINER_FILE)
#: How a citation at level ``cannot_check`` is named where people read it (its reason follows).
CANNOT_CHECK_TEXT = "could not be checked"
#: Characters a URL path keeps unescaped: werkzeug's own set, so the API's ``page_url`` is
#: character for character the URL the dashboard's ``url_for`` builds for the same page.
PATH_SAFE = "!$&'()*+,/:;=@"


def model_dir(config: Config) -> Path:
    return Path(config.verifier.model_dir) if config.verifier.model_dir else DEFAULT_MODEL_DIR


def load_flag_threshold(config: Config) -> float:
    """The combiner's fitted flag threshold; the configured one when no combiner is shipped."""
    path = model_dir(config) / COMBINER_FILE
    try:
        combiner = Combiner.load(path)
    except (OSError, ValueError, TypeError) as exc:
        log.warning("no flag threshold in %s (%s); using verifier.flag_threshold", path, exc)
        combiner = None
    return float(combiner.flag_threshold if combiner else config.verifier.flag_threshold)


def page_path(wiki: str, title: str) -> str:
    """The dashboard path of an article, its title underscored the way MediaWiki writes URLs."""
    return f"/dashboard/pages/{wiki}/{quote(title.replace(' ', '_'), safe=PATH_SAFE)}"


def level_text(level: VerdictLevel, reason: str = "") -> str:
    """A level as people read it: "supported", "partially supported", "not supported", or
    "could not be checked: <reason>" (the reason is what makes that level useful)."""
    if level is VerdictLevel.CANNOT_CHECK:
        return f"{CANNOT_CHECK_TEXT}: {reason}" if reason else CANNOT_CHECK_TEXT
    return level.text


def guess_text(level: VerdictLevel, unsure: bool, reason: str = "") -> str:
    """A level as people read it, worded as Side's guess when Side is unsure of it."""
    if unsure and level not in (VerdictLevel.CANNOT_CHECK, VerdictLevel.SUPPORTED):
        return unsure_text(level)
    return level_text(level, reason)


def level_reason(result: StoredResult) -> str:
    """Why the citation could not be checked; "" at every other level (rows stored before
    levels kept the reason in ``source_error`` only)."""
    if result.level is not VerdictLevel.CANNOT_CHECK:
        return ""
    return result.level_reason or result.source_error or "the source could not be read"


def unsupported_words(result: StoredResult) -> list[str]:
    """The claim's words the source does not back: named for a partially supported claim only
    (for the others the whole claim is backed, or not, or could not be read)."""
    if result.level is not VerdictLevel.PARTIALLY_SUPPORTED or result.verdict is None:
        return []
    return list(result.verdict.unsupported)


def source_note(result: StoredResult) -> str:
    """The cited source's trouble in words, or "": "could not be checked: <reason>" for a
    citation at level ``cannot_check``, "<status>: <error>" for another whose source had an error."""
    if result.level is VerdictLevel.CANNOT_CHECK:
        return level_text(result.level, level_reason(result))
    return f"{result.source_status}: {result.source_error}" if result.source_error else ""


class Presenter:
    """Turns store records into API JSON; holds what every response needs (URLs, threshold)."""

    def __init__(self, public_url: str, flag_threshold: float) -> None:
        self.public_url = public_url.rstrip("/")
        self.flag_threshold = flag_threshold

    def check_url(self, check_id: str) -> str:
        return f"{self.public_url}/dashboard/checks/{check_id}"

    def page_url(self, wiki: str, title: str) -> str:
        """The article's page (its latest checked revision), which outlives any one check."""
        return f"{self.public_url}{page_path(wiki, title)}"

    def result_url(self, result_id: int) -> str:
        return f"{self.public_url}/dashboard/results/{result_id}"

    def result(self, result: StoredResult) -> dict[str, Any]:
        return {
            "id": result.id, "position": result.position, "client_key": result.client_key,
            "claim_key": result.claim_key, "claim": result.claim_text,
            "section": list(result.claim.section),
            "url": result.citation_url, "citation_title": result.citation_title,
            "source_status": result.source_status, "source_error": result.source_error,
            "source_copy": result.source_copy, "source_url": result.source_url,
            "source_fallback": result.source_fallback,
            "level": result.level.value, "level_reason": level_reason(result),
            "unsupported": unsupported_words(result), "reportable": result.reportable,
            "score": result.score, "flagged": result.flagged, "unsure": result.unsure,
            "missing": result.missing.value if result.missing else None,
            "severity": result.severity.value if result.severity else None,
            "reasons": result.reasons, "evidence": [e.to_dict() for e in result.evidence],
            "suggestions": [s.to_dict() for s in result.suggestions],
            "review_status": result.review_status, "dashboard_url": self.result_url(result.id),
            "decided_by": result.decided_by, "judge_note": result.judge_note, "judge_pending": result.judge_pending,
            "judge": _judge(result), "source_instructions": list(result.source_instructions),
        }

    def check(self, check: Check, results: list[StoredResult]) -> dict[str, Any]:
        return {
            "id": check.id, "status": check.status, "wiki": check.wiki, "title": check.title,
            "revision": check.revision, "parent_revision": check.parent_revision, "origin": check.origin,
            "error": check.error, "citations": check.citations, "flagged": check.flagged,
            "created_at": iso(check.created_at), "finished_at": iso(check.finished_at),
            "dashboard_url": self.check_url(check.id), "page_url": self.page_url(check.wiki, check.title),
            "results": [self.result(r) for r in results],
        }


def _judge(result: StoredResult) -> dict[str, Any] | None:
    """What the LLM judge answered, when it was asked: its level, quotes, whether they were found
    and what Side's verifier made of them."""
    judge = result.judge
    if judge is None:
        return None
    return {"model": judge.model, "level": judge.level.value, "quotes": list(judge.quotes),
            "quote_found": judge.quote_found, "accepted": judge.accepted, "unsupported": judge.unsupported,
            "confidence": judge.confidence, "prompt_version": judge.prompt_version,
            "quote_check": judge.quote_check.value, "quote_support": judge.quote_support}
