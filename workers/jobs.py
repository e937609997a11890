"""The job function: check every claim of one Check with the worker's loaded Pipeline.

A job carries nothing but the check id; the claims are in the results store (as Claims), and
the Results go back to it as they are. A check submitted with its article's lead and body
(:class:`side.extract.lead.ArticleLead`, kept in the store) also has its uncited lead
sentences checked against the body, stored with the results in one transaction. The verifier and
the evidence index are loaded once per worker process (:func:`set_context`, called by
``side-worker`` before it takes jobs), never per job.

Every readable source a check read is handed to the context's ``ingest`` (a
:class:`service.ingest.Ingestor`) before the results are stored: it spools each one and queues
an ingest job, so the evidence corpus grows from every check without the check waiting for
indexing (:mod:`workers.ingest`). Spooling before ``finish`` means a worker killed in between
has its check retried, and the sources read again, rather than lost to the corpus.

``run_check`` is idempotent: a check already done returns at once, and ``Store.finish``
replaces a check's results in one transaction, so a job that RQ runs twice (a retry after a
worker was killed, a duplicate delivery) never duplicates rows. On failure the store row is
marked ``failed`` with the reason only when RQ will not retry it; a retried check goes back to
``queued`` (its ``attempts`` tell it is a retry) and the exception is re-raised either way, so
RQ keeps the job in its failed-job registry with the traceback.

A reader (``side-worker --role reader``) runs the same jobs with a context that holds no model
but a :class:`side.prepared.Preparer` and a ``handoff``: it reads the check's sources, hands
them to the corpus, and hands the prepared check to the scorers' stream
(:mod:`service.stream`); the check stays ``running`` until a scorer (:mod:`workers.scorer`)
stores its Results. A reader killed after the handoff has its job run again, and the scorer
skips the second entry of a check that is done.

Cited sources are fetched with retries: a :class:`SourceFetchError` marked ``transient``
(timeouts, refused connections, HTTP 5xx/408/429) is tried again with exponential backoff
(:data:`DEFAULT_FETCH_ATTEMPTS`), since one slow web server should not make a whole revision's
check fail or retry; never past the deadline the check's fetch budget gave that source.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from rq import get_current_job
from rq.timeouts import JobTimeoutException

from service.store import CheckStatus, Store
from side.errors import SideError, SourceFetchError
from side.extract.claims import Claim
from side.pipeline import Pipeline, ReadSource, Result
from side.prepared import PreparedCheck, Preparer
from side.priority import Priority
from side.sources.batch import call_with_deadline
from side.verify.judge import Judge, JudgeError, JudgeRequest, JudgeUnavailable, JudgeVerdict
from side.verify.lead import LeadVerdict

log = logging.getLogger(__name__)

#: Attempts per cited URL before it is reported unavailable (1 = no retry).
DEFAULT_FETCH_ATTEMPTS = 3
#: Seconds before the second attempt; doubled for each further one.
DEFAULT_FETCH_BACKOFF_S = 1.0
#: No further attempt starts with less than this many seconds left before the source's deadline.
MIN_ATTEMPT_S = 1.0

T = TypeVar("T")


class WorkerNotReadyError(SideError):
    """A job ran in a process that has not loaded the model (not started by side-worker)."""

    code = "worker_not_ready"


class CheckNotFoundError(SideError):
    """The job's check id is not in the results store (another database, or deleted)."""

    code = "check_not_found"


@dataclass
class WorkerContext:
    """What a worker loads once and every job uses."""

    store: Store
    #: The models (None in a reader, which prepares checks for the scorers instead).
    pipeline: Pipeline | None
    #: Hands the readable sources of a check to the evidence corpus (None: the corpus does not grow).
    ingest: Callable[[Iterable[ReadSource]], object] | None = None
    #: The patrol queue's priority of each Result (wiki, title, revision, results), a
    #: :class:`side.priority.Prioritizer`; None: the store's default weights, no page history.
    prioritize: Callable[[str, str, int | None, list[Result]], list[Priority]] | None = None
    #: A reader's: prepares a check's citations without a model.
    preparer: Preparer | None = None
    #: A reader's: hands a prepared check (check id, PreparedCheck) on to the scorers.
    handoff: Callable[[str, PreparedCheck], object] | None = None
    #: The LLM judge for citations left to be judged later (None: the judge is off).
    judge: Judge | None = None
    #: Queues the job that judges a check's pending citations later: (check id, again).
    schedule_judgements: Callable[[str, bool], object] | None = None


_context: WorkerContext | None = None


def set_context(context: WorkerContext | None) -> None:
    """Install the loaded Pipeline and Store for the jobs of this process."""
    global _context
    _context = context


def get_context() -> WorkerContext:
    if _context is None:
        raise WorkerNotReadyError("run_check needs a worker that loaded the model first (side-worker)")
    return _context


def retrying(fetch: Callable[..., T], attempts: int = DEFAULT_FETCH_ATTEMPTS,
             backoff_s: float = DEFAULT_FETCH_BACKOFF_S,
             sleep: Callable[[float], None] = time.sleep) -> Callable[..., T]:
    """``fetch`` tried up to ``attempts`` times on transient errors, waiting backoff, 2x, 4x...

    The result takes an optional ``deadline`` (a :func:`time.monotonic` instant, the source's
    share of the check's budget): passed on to ``fetch`` when it takes one, and no attempt
    starts that could not have :data:`MIN_ATTEMPT_S` before it.
    """

    def fetch_with_retries(url: str, deadline: float | None = None) -> T:
        for attempt in range(1, attempts + 1):
            try:
                return call_with_deadline(fetch, url, deadline)
            except SourceFetchError as exc:
                if attempt == attempts or not exc.transient:
                    raise
                delay = backoff_s * 2 ** (attempt - 1)
                if deadline is not None and time.monotonic() + delay + MIN_ATTEMPT_S > deadline:
                    log.info("fetch attempt %d/%d failed (%s); no time left for another", attempt, attempts, exc)
                    raise
                log.info("fetch attempt %d/%d failed (%s); retrying in %.1f s", attempt, attempts, exc, delay)
                sleep(delay)
        raise AssertionError("unreachable")

    return fetch_with_retries


def _will_retry(exc: BaseException) -> bool:
    """Whether RQ will run this job again; a timeout is not retried (the same work would time out)."""
    job = get_current_job()
    if job is None:
        return False
    if isinstance(exc, JobTimeoutException):
        job.retries_left = 0
        return False
    return job.should_retry


def _hand_to_corpus(context: WorkerContext, check_id: str, read: list[ReadSource]) -> None:
    """Spool and queue the sources read for the corpus; a failure there never fails the check."""
    if context.ingest is None or not read:
        return
    try:
        context.ingest(read)
    except Exception:  # noqa: BLE001 - e.g. a full disk: the check's results still count
        log.exception("check %s: could not hand %d sources to the evidence corpus", check_id, len(read))


def check_lead(context: WorkerContext, check_id: str) -> list[LeadVerdict] | None:
    """The check's lead claims against the article's body (None: it came without its article).

    A failure here is logged and leaves the lead unchecked (None, so the rows a previous run
    stored stay) rather than failing the check: the citations' results count on their own. A
    job timeout still ends the job.
    """
    lead = context.store.article_lead(check_id)
    if lead is None or context.pipeline is None:
        return None
    try:
        return context.pipeline.verify_lead(lead)
    except JobTimeoutException:
        raise
    except Exception:  # noqa: BLE001 - e.g. a body the model cannot take: the citations still count
        log.exception("check %s: could not check the lead of %s against its body", check_id, lead.title)
        return None


def run_check(check_id: str) -> dict[str, Any]:
    """Check all claims of ``check_id`` and store the results; returns a small summary."""
    context = get_context()
    store = context.store
    record = store.check(check_id)
    if record is None:
        raise CheckNotFoundError(f"unknown check {check_id}")
    if record.status == CheckStatus.DONE:
        log.info("check %s is already done; nothing to do", check_id)
        return {"id": check_id, "status": "done", "skipped": True}
    record = store.start(check_id)
    started = time.monotonic()
    try:
        read: list[ReadSource] = []
        if context.preparer is not None and context.handoff is not None:
            return _prepare_check(context, check_id, record.claims, started)
        if context.pipeline is None:
            raise WorkerNotReadyError("this worker has neither the models nor a scorers' stream to hand checks to")
        outcomes = context.pipeline.verify_claims(record.claims, on_read=read.append)
        lead_verdicts = check_lead(context, check_id)
        _hand_to_corpus(context, check_id, read)
        priorities = (context.prioritize(record.wiki, record.title, record.revision, outcomes)
                      if context.prioritize else None)
        done = store.finish(check_id, outcomes, time.monotonic() - started, lead=lead_verdicts,
                            priorities=priorities)
    except BaseException as exc:
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if _will_retry(exc):
            log.warning("check %s failed (attempt %d), will be retried: %s", check_id, record.attempts, reason)
            store.requeue(check_id, f"retrying after: {reason}")
        else:
            log.error("check %s failed for good: %s", check_id, reason)
            store.fail(check_id, reason)
        raise
    pending = sum(r.judge_pending for r in outcomes)
    if pending:
        _schedule_judgements(context, check_id, pending)
    lead_unsupported = sum(v.level.needs_review for v in lead_verdicts or [])
    log.info("check %s done: %d citations, %d flagged, %d lead claims (%d not fully supported by the body), %.1f s",
             check_id, done.citations, done.flagged, len(lead_verdicts or []), lead_unsupported, done.seconds or 0.0)
    return {"id": check_id, "status": "done", "citations": done.citations, "flagged": done.flagged,
            "lead_claims": len(lead_verdicts or []), "lead_unsupported": lead_unsupported, "seconds": done.seconds}


def _prepare_check(context: WorkerContext, check_id: str, claims: list[Claim], started: float) -> dict[str, Any]:
    """A reader's job: read and prepare the check's citations, hand the sources to the corpus
    and the prepared check to the scorers. The check stays running until a scorer stores it."""
    assert context.preparer is not None and context.handoff is not None
    read: list[ReadSource] = []
    prepared = context.preparer.prepare(claims, on_read=read.append)
    _hand_to_corpus(context, check_id, read)
    context.handoff(check_id, prepared)
    seconds = time.monotonic() - started
    log.info("check %s prepared: %d citations, %d sources read, %.1f s", check_id, len(claims),
             len(prepared.sources), seconds)
    return {"id": check_id, "status": "prepared", "citations": len(claims), "seconds": round(seconds, 3)}

def _schedule_judgements(context: WorkerContext, check_id: str, pending: int, again: bool = False) -> None:
    """Queue the later judgement of a check's pending citations; they stay in the store either way."""
    if context.schedule_judgements is None:
        log.warning("check %s: %d citations wait for the judge, and this worker cannot queue their job",
                    check_id, pending)
        return
    context.schedule_judgements(check_id, again)


def review_judgement(context: WorkerContext, request: JudgeRequest, verdict: JudgeVerdict) -> JudgeVerdict:
    """``verdict`` with Side's check of its quotes, by the cascade of this worker's Pipeline (its
    verifier is loaded already). A worker without one leaves it unchecked, so a supported verdict
    is not taken (the store keeps it with the reason): the quote check is never skipped."""
    cascade = getattr(context.pipeline, "cascade", None)
    if cascade is None:
        log.warning("this worker has no verifier to score the judge's quotes: a supported verdict is not taken")
        return verdict.unchecked()
    return cascade.review(request, verdict)


def run_judgements(check_id: str) -> dict[str, Any]:
    """Ask the judge about ``check_id``'s citations left to be judged later.

    Each verdict is stored on its result as it comes (:meth:`Store.record_judgement`), after Side's
    verifier has scored its quotes (:func:`review_judgement`, as the cascade does); one the
    endpoint still cannot give stays pending, and this job is queued again for those. An answer
    that is no verdict at all (malformed) ends the wait: Side's verdict stands, with the reason.
    """
    context = get_context()
    store = context.store
    pending = store.pending_judgements(check_id)
    if context.judge is None:
        log.warning("check %s: %d citations wait for the judge, which is off in this worker", check_id, len(pending))
        return {"id": check_id, "judged": 0, "pending": len(pending)}
    judged = left = 0
    for item in pending:
        try:
            verdict = context.judge.judge(item.request)
        except JudgeUnavailable as exc:
            store.postpone_judgement(item.id, f"{exc.reason}: {exc}")
            left += 1
            continue
        except JudgeError as exc:
            store.drop_judgement(item.id, f"the LLM gave no usable verdict ({exc}); Side's verdict stands")
            continue
        store.record_judgement(item.id, review_judgement(context, item.request, verdict))
        judged += 1
    if left:
        _schedule_judgements(context, check_id, left, again=True)
    log.info("check %s: %d citations judged, %d still to be judged", check_id, judged, left)
    return {"id": check_id, "judged": judged, "pending": left}
