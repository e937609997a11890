"""The patrol dashboard: the queue of flagged citations, a detail view, feedback, and stats.

Besides the queue it has one page per article (its latest checked revision), which is where
the gadget's link lands: an editor asks about the article, not about one check of it.

Every page speaks in verdict levels (supported, partially supported, not supported, could not
be checked, see :class:`~side.verify.levels.VerdictLevel`), never in the model's labels. A
citation that could not be checked shows its reason and is never styled or counted as a
failure; a partially supported one has the claim's words its source does not back marked in
the claim and listed. Claims come from articles anyone can edit, so every bit of their text is
escaped before any mark is added (:func:`mark_words`).

Server-rendered (Jinja templates, one local stylesheet, one tiny local script for the copy
buttons), so it works without JavaScript and loads nothing from elsewhere. The queue is the
store's own ordering, highest priority first (failure likelihood with a generic URL, the cited
domain's WP:RSP status and the reference's age, :mod:`side.priority`), each row naming the
signals that raised it; accept and dismiss go through
the same store call as the API's ``POST /feedback``, with the same validation.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, Flask, Response, redirect, render_template, request, url_for
from markupsafe import Markup, escape

from gadget.server.dashboard import charts, messages
from gadget.server.errors import ApiError, ForbiddenOriginError, NotFoundError
from gadget.server.login import require_reviewer
from gadget.server.present import CANNOT_CHECK_TEXT
from gadget.server.services import request_origin, services
from gadget.server.validation import MAX_REVISION, feedback_input, page_title, wiki_id
from service.store import Check, CheckStatus, DismissReason, Origin, QueueView, ReviewStatus, StoredResult
from side.extract.claims import Claim
from side.messages import Messages
from side.pipeline import Suggestion
from side.ranking import failure_rank
from side.verify.levels import VerdictLevel
from side.verify.severity import MissingKind, Severity
from side.verify.verifier import Evidence

log = logging.getLogger(__name__)

bp = Blueprint("dashboard", __name__, url_prefix="/dashboard", template_folder="templates",
               static_folder="static", static_url_path="/static")

PAGE_SIZE = 25
#: The verdict levels, as the filters and the pages name them, best supported first.
LEVELS: dict[str, str] = {level.value: CANNOT_CHECK_TEXT if level is VerdictLevel.CANNOT_CHECK else level.text
                          for level in VerdictLevel}
#: Why a result could not be checked when its row kept no reason (a row stored before reasons were).
UNKNOWN_REASON = "the source could not be read"
REASON_TEXT: dict[str, str] = {DismissReason.NOT_RELEVANT: "The suggestion is not relevant",
                               DismissReason.SOURCE_IS_FINE: "The cited source is fine",
                               DismissReason.SUGGESTION_WRONG: "The suggested source is wrong",
                               DismissReason.OTHER: "Other"}
#: The queue's status filter: a review status, or every one.
ALL_STATUSES = "all"
STATS_DAYS = (7, 30, 90, 365)
#: Result ids the routes accept (the API's integer bound); a larger one is a 404, never a query
#: the database cannot bind.
MAX_RESULT_ID = MAX_REVISION
#: Dates the queue's filters accept: what every database stores, with a day to spare at the top
#: (``until`` is exclusive of the next midnight).
FIRST_DATE, LAST_DATE = date(1000, 1, 1), date(9999, 12, 30)


@dataclass(frozen=True)
class QueueFilters:
    """The queue's filters, parsed from the query string (bad values are a 400 page)."""

    wiki: str = ""
    level: VerdictLevel | None = None
    min_score: float | None = None
    max_score: float | None = None
    since: date | None = None
    until: date | None = None
    #: A :class:`ReviewStatus`, or :data:`ALL_STATUSES`.
    status: str = ReviewStatus.OPEN
    page: int = 1
    #: The flags (the default), the results Side is unsure of, or both (flags first).
    view: QueueView = QueueView.FLAGS
    #: Only the results of this severity (:mod:`side.verify.severity`): high or low; None: any.
    severity: Severity | None = None

    def store_kwargs(self) -> dict[str, Any]:
        return {"wiki": self.wiki or None, "level": self.level, "view": self.view, "severity": self.severity,
                "review_status": None if self.status == ALL_STATUSES else ReviewStatus(self.status),
                "min_score": self.min_score, "max_score": self.max_score,
                "since": _midnight(self.since), "until": _midnight(self.until, days=1)}

    def query(self, **changes: Any) -> dict[str, Any]:
        """Query-string values of these filters (for pagination links)."""
        values = {"wiki": self.wiki, "level": self.level, "min_score": self.min_score,
                  "max_score": self.max_score, "since": self.since, "until": self.until,
                  "status": self.status, "page": self.page,
                  "view": None if self.view is QueueView.FLAGS else self.view, "severity": self.severity,
                  **changes}
        return {k: v for k, v in values.items() if v not in (None, "")}


def _midnight(day: date | None, days: int = 0) -> datetime | None:
    return None if day is None else datetime.combine(day + timedelta(days=days), datetime.min.time())


def _arg_float(name: str) -> float | None:
    raw = request.args.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ApiError(f"{name}: not a number") from None
    if not 0.0 <= value <= 1.0:
        raise ApiError(f"{name}: must be between 0 and 1")
    return value


def _arg_date(name: str) -> date | None:
    raw = request.args.get(name, "").strip()
    if not raw:
        return None
    try:
        value = date.fromisoformat(raw)
    except ValueError:
        raise ApiError(f"{name}: not a date (YYYY-MM-DD)") from None
    if not FIRST_DATE <= value <= LAST_DATE:
        raise ApiError(f"{name}: must be between {FIRST_DATE.isoformat()} and {LAST_DATE.isoformat()}")
    return value


def _arg_int(name: str, default: int, allowed: range) -> int:
    raw = request.args.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) not in allowed:
        raise ApiError(f"{name}: must be a whole number in {allowed.start}..{allowed.stop - 1}")
    return int(raw)


def _arg_level() -> VerdictLevel | None:
    level = request.args.get("level", "").strip()
    if level and level not in LEVELS:
        raise ApiError(f"level: one of {', '.join(LEVELS)}")
    return VerdictLevel(level) if level else None


def _arg_view() -> QueueView:
    view = request.args.get("view", "").strip() or QueueView.FLAGS
    if view not in {v.value for v in QueueView}:
        raise ApiError(f"view: one of {', '.join(QueueView)}")
    return QueueView(view)


def _arg_severity() -> Severity | None:
    severity = request.args.get("severity", "").strip()
    if severity and severity not in Severity._value2member_map_:
        raise ApiError(f"severity: one of {', '.join(Severity)}")
    return Severity(severity) if severity else None


def missing_key(result: StoredResult) -> str:
    """The message key of what a result's source does not back ("" when nothing is missing): a
    high gap of wording only is one in an article about a living person."""
    if result.missing is None:
        return ""
    living = result.missing is MissingKind.WORDING and result.severity is Severity.HIGH
    return f"side-dashboard-missing-{result.missing.value}{'-living' if living else ''}"


def parse_filters() -> QueueFilters:
    wiki = request.args.get("wiki", "").strip()
    status = request.args.get("status", ReviewStatus.OPEN).strip() or ReviewStatus.OPEN
    level = _arg_level()
    if status not in {*ReviewStatus, ALL_STATUSES}:
        raise ApiError(f"status: one of {', '.join(ReviewStatus)}, {ALL_STATUSES}")
    return QueueFilters(wiki=wiki_id(wiki) if wiki else "", level=level,
                        min_score=_arg_float("min_score"), max_score=_arg_float("max_score"),
                        since=_arg_date("since"), until=_arg_date("until"),
                        status=status, page=_arg_int("page", 1, range(1, 10_001)), view=_arg_view(),
                        severity=_arg_severity())


def level_reason(result: StoredResult) -> str:
    """Why a result could not be checked ("" for one that could): shown wherever its level is."""
    if result.level is not VerdictLevel.CANNOT_CHECK:
        return ""
    return result.level_reason or result.source_error or UNKNOWN_REASON


def is_flagged(result: StoredResult) -> bool:
    """Worth a patroller's look: a flag the pipeline set, never on a result that could not be
    checked (an unread source is not a failure, whatever an old row says)."""
    return result.flagged and result.level is not VerdictLevel.CANNOT_CHECK


def in_queue(result: StoredResult, view: QueueView) -> bool:
    """Shown in the queue's ``view``: a flag, or (unsure, all) a level Side is unsure of; never a
    result that could not be checked."""
    if result.level is VerdictLevel.CANNOT_CHECK:
        return False
    if view is QueueView.FLAGS:
        return result.flagged
    if view is QueueView.UNSURE:
        return result.unsure and not result.flagged
    return result.flagged or result.unsure


def unsupported_words(result: StoredResult) -> tuple[str, ...]:
    """The claim's words its source does not back (partially or not supported verdicts), once each."""
    if result.verdict is None or not result.level.needs_review:
        return ()
    return tuple(dict.fromkeys(w.strip() for w in result.verdict.unsupported if w.strip()))


def _word_spans(text: str, words: tuple[str, ...] | list[str]) -> list[tuple[int, int]]:
    """Where ``words`` occur in ``text`` as whole words, any case, overlaps merged, in order."""
    spans = sorted(m.span() for word in words if word
                   for m in re.finditer(rf"(?<!\w){re.escape(word)}(?!\w)", text, flags=re.IGNORECASE))
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def mark_words(text: str, words: tuple[str, ...] | list[str] = ()) -> Markup:
    """``text`` escaped, with each of ``words`` wrapped in ``<mark class="unsupported">``.

    The text is split on the raw string and every piece escaped on its own, so neither the text
    nor a word (both from an editable article) can open a tag or break out of the mark.
    """
    out, at = [], 0
    for start, end in _word_spans(text, words):
        out += [escape(text[at:start]), Markup('<mark class="unsupported">'), escape(text[start:end]),
                Markup("</mark>")]
        at = end
    out.append(escape(text[at:]))
    return Markup("").join(out)


def highlight_claim(context: str, claim: str, words: tuple[str, ...] = ()) -> Markup:
    """The context with the claim sentence marked (it normally ends the context), and in the
    claim the words its source does not back."""
    context, claim = context.strip(), claim.strip()
    marked = Markup("<mark>") + mark_words(claim, words) + Markup("</mark>")
    at = context.rfind(claim) if claim else -1
    if at < 0:
        return Markup(f"{escape(context)} {marked}") if context else marked
    return Markup(f"{escape(context[:at])}{marked}{escape(context[at + len(claim):])}")


def source_note(result: StoredResult) -> str:
    """A problem met reading a source that was checked all the same ("<status>: <error>"), or "";
    a result that could not be checked gives its reason with its level instead."""
    if result.level is VerdictLevel.CANNOT_CHECK or not result.source_error:
        return ""
    return f"{result.source_status}: {result.source_error}"


def level_counts(results: list[StoredResult]) -> list[tuple[str, str, int]]:
    """(level, its text, how many) for each level among ``results``, in the levels' order."""
    counts = Counter(r.level.value for r in results)
    return [(value, text, counts[value]) for value, text in LEVELS.items() if counts[value]]


def best_passage(result: StoredResult) -> list[tuple[Evidence, bool]]:
    """The cited source's evidence sentences in source order, each with whether it is the strongest."""
    evidence = [e for e in result.evidence if e.text]
    if not evidence:
        return []
    best = max(range(len(evidence)), key=lambda n: evidence[n].score)
    order = sorted(range(len(evidence)), key=lambda n: evidence[n].sentence_index)
    return [(evidence[n], n == best) for n in order]


def domain(url: str) -> str:
    try:
        return (urlsplit(url).hostname or url).removeprefix("www.")
    except ValueError:
        return url


def page_order(result: StoredResult) -> tuple[int, float, float, int, int]:
    """Flags first, then the levels Side is unsure of, each in the queue's order (the band of
    :func:`side.ranking.failure_rank`, then priority, then severity), so the citations to fix
    lead; the others follow in article order, where an editor finds them."""
    group = 0 if is_flagged(result) else 1 if in_queue(result, QueueView.UNSURE) else 2
    if group == 2:
        return group, 0.0, 0.0, 0, result.position
    likelihood = result.failure_likelihood or 0.0
    rank = result.priority.score if result.priority and result.priority.score is not None else None
    _, band, key, severity = failure_rank(result.level, likelihood, result.unsure,
                                          extra=0.0 if rank is None else rank - likelihood,
                                          severity=result.severity)
    return group, band, key, severity, result.position


def page_link(wiki: str, title: str) -> str:
    """The dashboard's page of an article, its title underscored as MediaWiki writes URLs."""
    return url_for("dashboard.page_detail", wiki=wiki, title=title.replace(" ", "_"))


def check_links(check: Check) -> dict[str, str | None]:
    """The checked revision and its diff on the wiki, for a page about one check."""
    links = services().links
    return {"article_url": links.revision(check.wiki, check.title, check.revision),
            "diff_url": links.diff(check.wiki, check.revision, check.parent_revision)}


@bp.before_request
def guard_form_origin() -> None:
    """The dashboard's forms change the store: accept them only from the dashboard's own pages."""
    if request.method != "POST":
        return
    origin = request_origin()
    own = {request.host_url.rstrip("/"), services().public_origin}
    if origin is not None and origin not in own:
        raise ForbiddenOriginError(f"origin {origin[:200]} may not post to the dashboard")


@bp.get("/")
def queue() -> str:
    svc = services()
    filters = parse_filters()
    rows = svc.store.flagged(**filters.store_kwargs(), limit=PAGE_SIZE + 1, offset=(filters.page - 1) * PAGE_SIZE)
    # a row flagged although its source could not be checked (stored before levels) is no failure
    shown = [r for r in rows[:PAGE_SIZE] if in_queue(r, filters.view)]
    flags, unsure = svc.store.count_flagged(QueueView.FLAGS), svc.store.count_flagged(QueueView.UNSURE)
    return render_template("queue.html", filters=filters, results=shown, more=len(rows) > PAGE_SIZE,
                           wikis=svc.store.wikis(), counts=unsure if filters.view is QueueView.UNSURE else flags,
                           views={QueueView.FLAGS: flags[ReviewStatus.OPEN],
                                  QueueView.UNSURE: unsure[ReviewStatus.OPEN]},
                           levels=LEVELS, statuses=list(ReviewStatus))


def _result_or_404(result_id: int) -> StoredResult:
    result = services().store.result(result_id)
    if result is None:
        raise NotFoundError(f"no result {result_id}")
    return result


@bp.get(f"/results/<int(max={MAX_RESULT_ID}):result_id>")
def result_detail(result_id: int) -> str:
    svc = services()
    result = _result_or_404(result_id)
    check = svc.store.check(result.check_id)
    words = unsupported_words(result)
    return render_template(
        "result.html", result=result, check=check, unsupported=words,
        context=highlight_claim(result.claim.left_context, result.claim_text, words),
        passage=best_passage(result), feedback=svc.store.feedback_for(result.id), reasons=REASON_TEXT,
        article_url=svc.links.revision(result.wiki, result.title, result.revision),
        diff_url=svc.links.diff(result.wiki, result.revision, result.parent_revision),
        saved=request.args.get("saved", ""), levels=LEVELS)


@bp.post(f"/results/<int(max={MAX_RESULT_ID}):result_id>/feedback")
def result_feedback(result_id: int) -> Response:
    """Accept (optionally one suggestion) or dismiss with a reason, as the logged-in reviewer
    (401 for an anonymous visitor, 403 for a form without this login's CSRF token); back to
    the detail page."""
    svc = services()
    _result_or_404(result_id)
    reviewer = require_reviewer(request.form.get("csrf_token", ""))
    form = {k: v for k, v in request.form.items() if k in {"action", "reason", "suggestion_url", "comment"}}
    if not form.get("suggestion_url"):  # a suggestion without a URL has an empty field: no URL
        form.pop("suggestion_url", None)
    given = feedback_input({**form, "result_id": result_id})
    svc.store.add_feedback(given.result_id, given.action, reason=given.reason, reviewer=reviewer,
                           suggestion_url=given.suggestion_url, comment=given.comment)
    log.info("dashboard feedback on result %d by %s: %s %s", result_id, reviewer, given.action, given.reason)
    return redirect(url_for(".result_detail", result_id=result_id, saved=given.action), code=303)


@bp.get("/checks/<check_id>")
def check_detail(check_id: str) -> str:
    svc = services()
    check = svc.store.check(check_id)
    if check is None:
        raise NotFoundError(f"no check {check_id[:80]}")
    results = svc.store.results(check.id)
    level = _arg_level()
    return render_template("check.html", check=check, counts=level_counts(results), level=level,
                           results=[r for r in results if level is None or r.level is level], **check_links(check))


@bp.get("/pages/<wiki>/<path:title>")
def page_detail(wiki: str, title: str) -> str | tuple[str, int]:
    """An article's latest checked revision, every citation with its level (``?level=`` keeps
    one), then the uncited lead sentences its body does not fully back, each with the nearest
    body sentence; 404 (with a page saying so) when the article was never checked, so a link to it is
    never dead."""
    svc = services()
    wiki, title = wiki_id(wiki), page_title(title)
    level = _arg_level()
    check, results = svc.store.page_results(wiki, title)
    if check is None:
        return render_template("page.html", wiki=wiki, title=title, check=None,
                               article_url=svc.links.article(wiki, title)), 404
    shown = [r for r in results if level is None or r.level is level]
    lead = svc.store.lead_claims(check.id)
    return render_template("page.html", wiki=wiki, title=title, check=check, counts=level_counts(results),
                           level=level, results=sorted(shown, key=page_order),
                           lead_unsupported=[c for c in lead if c.verdict.level.needs_review],
                           lead_checked=len(lead), **check_links(check))


@bp.get("/stats")
def stats() -> str:
    svc = services()
    wiki = request.args.get("wiki", "").strip()
    days = _arg_int("days", 30, range(1, 3661))
    numbers = svc.store.stats(days=days, wiki=wiki_id(wiki) if wiki else None)
    threshold = svc.presenter.flag_threshold
    text = messages.current_messages()
    plots = {
        "levels": charts.level_bars(text("side-dashboard-chart-levels"),
                                    [(value, name, numbers.levels.get(value, 0))
                                     for value, name in messages.LevelText().items()], text=text),
        "scores": charts.score_histogram(numbers.score_bins, _by_level(numbers.level_histogram), threshold, text),
        "daily": charts.daily_bars(numbers.flagged_per_day, _by_level(numbers.flagged_per_day_by_level), text),
        "acceptance": charts.ring(text("side-dashboard-chart-acceptance"), numbers.accepted,
                                  numbers.accepted + numbers.dismissed, text("side-dashboard-chart-accepted"), text),
        "reasons": charts.horizontal_bars(text("side-dashboard-chart-reasons"),
                                          [(_reason_text(text, k), n) for k, n in numbers.dismiss_reasons.items()],
                                          text=text),
    }
    return render_template("stats.html", stats=numbers, plots=plots, wiki=wiki, days=days, wikis=svc.store.wikis(),
                           day_choices=STATS_DAYS, threshold=threshold)


@dataclass(frozen=True)
class BacklogRow:
    """One tagged claim of a backlog check, with its result once the check is done."""

    check: Check
    claim: Claim
    tag: dict[str, Any]
    result: StoredResult | None
    #: The wiki's editor at the claim's section ("Fix it"); None for a wiki without a known URL.
    edit_url: str | None

    @property
    def suggestion(self) -> Suggestion | None:
        return self.result.suggestions[0] if self.result is not None and self.result.suggestions else None


#: Backlog checks read for one view (newest first); the filters apply to their claims.
BACKLOG_CHECKS = 500


def backlog_rows(wiki: str | None) -> list[BacklogRow]:
    """The tagged claims of the newest backlog checks, in check order."""
    svc = services()
    rows = []
    for check in svc.store.checks(origin=Origin.BACKLOG, wiki=wiki, limit=BACKLOG_CHECKS):
        results = {r.claim_key: r for r in svc.store.results(check.id)} if check.status == CheckStatus.DONE else {}
        for claim in check.claims:
            tag = claim.extra.get("tag") or {}
            rows.append(BacklogRow(check, claim, tag, results.get(claim.key),
                                   svc.links.edit_section(check.wiki, check.title, int(tag.get("section_index", 0)))))
    return rows


@bp.get("/backlog")
def backlog() -> str:
    """Claims editors tagged ({{failed verification}}, {{citation needed}}...), with Side's
    result and a "Fix it" link to the section, like Citation Hunt's queue. Side edits nothing."""
    svc = services()
    wiki = request.args.get("wiki") or None
    category = (request.args.get("category") or "")[:255]
    template = (request.args.get("template") or "")[:255]
    everything = backlog_rows(wiki)
    rows = [r for r in everything if (not category or r.tag.get("category") == category)
            and (not template or r.tag.get("template") == template)]
    return render_template("backlog.html", rows=rows, wiki=wiki or "", category=category, template=template,
                           wikis=svc.store.wikis(),
                           categories=sorted({str(r.tag.get("category", "")) for r in everything} - {""}),
                           templates=sorted({str(r.tag.get("template", "")) for r in everything} - {""}))


def _reason_text(text: Messages, reason: str) -> str:
    """A dismissal reason in the page's language; a reason this version does not know, as stored."""
    return text(f"side-dashboard-reason-{reason}") if reason in set(DismissReason) else reason


def _by_level(values: dict[str, list[int]]) -> list[tuple[str, str, list[int]]]:
    """(level, its text, values) for the scored levels, in the levels' order (chart layers)."""
    return [(value, messages.LevelText()[value], values[value]) for value in LEVELS if value in values]


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
    messages.init_app(app)  # msg(), level_text and ui_lang() in the request's language
    app.jinja_env.filters["domain"] = domain
    app.jinja_env.globals["dismiss_reasons"] = list(DismissReason)
    app.jinja_env.globals["page_link"] = page_link
    app.jinja_env.globals["source_note"] = source_note
    app.jinja_env.globals["cannot_check_text"] = CANNOT_CHECK_TEXT
    app.jinja_env.globals["level_reason"] = level_reason
    app.jinja_env.globals["is_flagged"] = is_flagged
    app.jinja_env.globals["unsupported_words"] = unsupported_words
    app.jinja_env.globals["missing_key"] = missing_key
    app.jinja_env.globals["severities"] = [s.value for s in Severity]
    app.jinja_env.globals["mark_words"] = mark_words
