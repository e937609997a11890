"""The REST API the gadget (and anyone else) calls: ``/api/v1``, contract in docs/service.md.

A request is validated completely (:mod:`gadget.server.validation`) before anything is
written; then the claims become Claims (each with the client's key) and go through
``service.queue.submit``, the one place that stores a Check and queues its job. Known work is
answered from the store at once (200), new work with 202 and the check's URL to poll.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging

import redis
from flask import Blueprint, Response, jsonify, request, url_for
from flask_limiter.util import get_remote_address

from gadget.server.errors import ApiError, NotFoundError
from gadget.server.login import current_reviewer, require_reviewer
from gadget.server.services import request_origin, services
from gadget.server.validation import (
    MAX_CLAIMS,
    MAX_URL,
    CheckInput,
    ClaimInput,
    check_input,
    feedback_input,
    is_check_id,
    is_http_url,
    page_title,
    read_json,
    wiki_id,
)
from service.queue import QueueUnavailableError, submit
from service.store import CheckRequest, CheckStatus, Origin
from side.extract.claims import Citation, Claim
from side.extract.wikitext import ParseLevel, extract

log = logging.getLogger(__name__)

bp = Blueprint("api", __name__, url_prefix="/api/v1")

#: Check statuses that will not change without a new submission: answered with 200.
SETTLED = frozenset({CheckStatus.DONE, CheckStatus.FAILED})


def claim_of(given: ClaimInput, title: str) -> Claim:
    """A client's claim as a Claim (its own key goes beside it, as the check's client key)."""
    url = given.url or None
    body = url or given.citation_title or given.text
    citation = Citation(id=hashlib.sha1(body.encode("utf-8")).hexdigest()[:16],
                        kind="bare_url" if url and not given.citation_title else "template",
                        url=url, title=given.citation_title or None)
    return Claim(article_title=title, section=given.section, text=given.text,
                 left_context=given.left_context or given.text, citation=citation)


def http_citation(claim: Claim, number: int) -> Claim:
    """The claim with its citation's URL held to the rule ``claims[].url`` follows: http(s)
    only. A protocol-relative ``//host/path`` (valid wikitext) is read as https, as the gadget
    does; ``javascript:``, ``data:`` and the like are refused (400), naming the citation."""
    url = claim.citation.url
    if not url:
        return claim
    if url.startswith("//"):
        url = "https:" + url
    if len(url) > MAX_URL or not is_http_url(url):
        raise ApiError(f"wikitext: citation {number} has a URL that is not an http(s) URL: {url[:100]!r}")
    return claim if url == claim.citation.url else dataclasses.replace(
        claim, citation=dataclasses.replace(claim.citation, url=url))


def wikitext_claims(wikitext: str, title: str, context_words: int) -> list[Claim]:
    """Claims of a wikitext snippet, each keyed by its own stable claim key.

    The snippet's size is capped by validation and extraction is linear in it, and stops at the
    citation after MAX_CLAIMS, so this costs a bounded amount of CPU; a snippet so malformed that
    nothing in it could be parsed within the parser's work budget is refused rather than checked
    as plain text."""
    extraction = extract(wikitext, title, context_words, max_claims=MAX_CLAIMS)
    if extraction.parse.level is ParseLevel.TEXT:
        raise ApiError("wikitext: too malformed to parse within the work budget", code="wikitext_too_complex",
                       status=422)
    claims = extraction.claims
    if not claims:
        raise ApiError("wikitext: no citation found (nothing to check)", code="no_citations", status=422)
    if not extraction.complete:
        raise ApiError(f"wikitext: more than {MAX_CLAIMS} citations; at most {MAX_CLAIMS} per check",
                       code="too_many_citations", status=422)
    return [http_citation(c, n) for n, c in enumerate(claims, start=1)]


def new_check(given: CheckInput) -> CheckRequest:
    svc = services()
    if given.wikitext is not None:
        claims = wikitext_claims(given.wikitext, given.title, svc.config.context_words)
        keys = [c.key for c in claims]
    else:
        claims = [claim_of(c, given.title) for c in given.claims]
        keys = [c.key for c in given.claims]
    # A browser page on an allowed wiki is the gadget; everything else (bots, scripts) is "api".
    origin = Origin.GADGET if request_origin() in svc.cors_origins else Origin.API
    return CheckRequest(wiki=given.wiki, title=given.title, claims=claims, revision=given.revision,
                        parent_revision=given.parent_revision, origin=origin, client_keys=keys)


def within_fetch_budget(new: CheckRequest) -> CheckRequest:
    """``new`` with its claims as this client's fetch budgets let the worker read them
    (:meth:`service.fetchbudget.OutsideFetches.charge_claims`: every URL a citation may make Side
    fetch, its archive-url included, is charged; one over budget is read from the corpus or cache
    only, else "cannot check (fetch budget)"). Work already stored is not charged again: it is
    answered, left to run, or (failed) queued again as it was charged."""
    svc = services()
    if svc.store.check(new.id) is not None:
        return new
    reviewer = current_reviewer()
    client = f"reviewer:{reviewer}" if reviewer else f"address:{get_remote_address()}"
    try:
        claims = svc.fetches.charge_claims(client, new.claims, reviewer=bool(reviewer))
    except redis.RedisError as exc:
        raise QueueUnavailableError(f"cannot count this check's fetches: {exc}") from exc
    return dataclasses.replace(new, claims=claims)


def check_response(check_id: str, status: int | None = None) -> Response:
    svc = services()
    record = svc.store.check(check_id)
    if record is None:
        raise NotFoundError(f"no check {check_id}")
    results = svc.store.results(record.id) if record.status == CheckStatus.DONE else []
    response = jsonify({"check": svc.presenter.check(record, results)})
    response.status_code = status or 200
    return response


@bp.post("/checks")
def create_check() -> Response:
    """Submit claims (or a wikitext snippet); 200 with the verdicts if known, else 202."""
    svc = services()
    given = check_input(read_json(request), svc.config.service.max_body_bytes)
    record, enqueued = submit(svc.store, svc.queue, within_fetch_budget(new_check(given)), svc.config.service)
    log.info("check %s (%s:%s) status=%s enqueued=%s", record.id, record.wiki, record.title,
             record.status, enqueued)
    if record.status in SETTLED:
        return check_response(record.id, 200)
    response = check_response(record.id, 202)
    response.headers["Location"] = url_for("api.get_check", check_id=record.id)
    return response


@bp.get("/checks/<check_id>")
def get_check(check_id: str) -> Response:
    if not is_check_id(check_id):
        raise NotFoundError(f"no check {check_id[:80]}")
    return check_response(check_id)


@bp.get("/pages/<wiki>/<path:title>")
def get_page(wiki: str, title: str) -> Response:
    """All results of the latest checked revision of a page, and its uncited lead sentences checked
    against the body; 404 when it was never checked."""
    svc = services()
    wiki, title = wiki_id(wiki), page_title(title)
    record, results = svc.store.page_results(wiki, title)
    if record is None:
        raise NotFoundError(f"no finished check of {wiki}:{title}")
    return jsonify({"check": svc.presenter.check(record, results),
                    "lead_claims": [c.to_dict() for c in svc.store.lead_claims(record.id)]})


@bp.post("/feedback")
def post_feedback() -> tuple[Response, int]:
    """Accept or dismiss (with a reason) a flagged citation's suggestion, as the reviewer logged in
    with their wiki account (the dashboard's session cookie; 401 without one)."""
    svc = services()
    reviewer = require_reviewer()
    given = feedback_input(read_json(request))
    if svc.store.result(given.result_id) is None:
        raise NotFoundError(f"no result {given.result_id}")
    record = svc.store.add_feedback(given.result_id, given.action, reason=given.reason, reviewer=reviewer,
                                    suggestion_url=given.suggestion_url, comment=given.comment)
    result = svc.store.result(given.result_id)
    if result is None:  # deleted in between (the store cascades from its check)
        raise NotFoundError(f"no result {given.result_id}")
    return jsonify({"feedback": record.to_dict(), "result": svc.presenter.result(result)}), 201
