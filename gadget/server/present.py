"""How stored checks and results look to clients: the CHECK JSON and the verdict.

The gadget shows editors one word per citation, not a probability, so the API adds
``verdict`` (supported / unclear / fails) to each result, read from the stored score and flag
with the shipped verifier's own flag threshold, or ``cannot_check`` when there was no source
text to score (so the gadget says "could not be checked" and why, never a warning). That
threshold is read from the model's ``combiner.json`` through
``side.verify.verifier.Combiner.load`` (a few bytes of JSON; neither ``side.verify.verifier``
nor ``side.verify.crossencoder`` imports torch at module level), so the web service never
loads the model.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any
from urllib.parse import quote

from service.store import Check, StoredResult, iso
from side.config import Config
from side.pipeline import SourceStatus
from side.verify.crossencoder import DEFAULT_MODEL_DIR, META_FILE, WEIGHTS_FILE
from side.verify.verifier import COMBINER_FILE, Combiner

log = logging.getLogger(__name__)

#: Files a worker needs to load the verifier; /healthz reports them missing.
MODEL_FILES = (WEIGHTS_FILE, META_FILE, COMBINER_FILE)
#: A score this far above the flag threshold reads as "supported" (the same margin by which a
#: better source must win to flag a citation, ``side.pipeline.BETTER_MARGIN``).
SUPPORTED_MARGIN = 0.15
VERDICTS = ("supported", "unclear", "fails", "cannot_check")
#: Source states with no text of the cited source to score: the page was not the source
#: (``cannot_check``) or could not be fetched (``unavailable``). ``no_url`` is not one: such a
#: citation has nothing to check, and stays ``unclear``.
UNCHECKABLE = frozenset({SourceStatus.CANNOT_CHECK, SourceStatus.UNAVAILABLE})
#: How a citation whose page was fetched but is not the source (``cannot_check``: a paywall,
#: a wall, a soft 404, a foreign page...) is named where people read it.
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


def source_note(result: StoredResult) -> str:
    """The cited source's trouble in words, or "": "could not be checked: <reason>" for a page
    that is not the source, "<status>: <error>" for one that could not be read."""
    if result.source_status == SourceStatus.CANNOT_CHECK:
        return f"{CANNOT_CHECK_TEXT}: {result.source_error}" if result.source_error else CANNOT_CHECK_TEXT
    return f"{result.source_status}: {result.source_error}" if result.source_error else ""


def verdict_of(result: StoredResult, flag_threshold: float) -> str:
    """``cannot_check`` when the source had no text to score (checked first: an unread source
    never reads as a failure, whatever the row's flag says), ``fails`` when flagged,
    ``supported`` when clearly above the threshold, else ``unclear``."""
    if result.source_status in UNCHECKABLE:
        return "cannot_check"
    if result.flagged:
        return "fails"
    if result.score is not None and result.score >= flag_threshold + SUPPORTED_MARGIN:
        return "supported"
    return "unclear"


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
            "label": result.label, "score": result.score,
            "verdict": verdict_of(result, self.flag_threshold), "flagged": result.flagged,
            "reasons": result.reasons, "evidence": [e.to_dict() for e in result.evidence],
            "suggestions": [s.to_dict() for s in result.suggestions],
            "review_status": result.review_status, "dashboard_url": self.result_url(result.id),
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
