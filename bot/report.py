"""The talk-page section: what the bot tells editors about citations that look unsupported.

One section per article and report, written for an editor who has never heard of Side: it
says first that it is an automated suggestion, then for each citation the Claim, Side's
verdict level (only *not supported* citations are reported, :mod:`bot.policy`) with the words
of the claim the source does not back where the verifier named them, why the current Source
looks weak (its best passage and score), the Suggestion with its evidence sentence and a
ready-to-paste citation, and finally how to give feedback or opt out. Nothing an
editor or a source controls becomes markup: text is quoted with :func:`bot.markup.nowiki`,
URLs go through :func:`bot.markup.external_link` and page titles through
:func:`bot.markup.page_link` (no templates, signatures, comments, behaviour switches, headings,
categories or links injected by a cited URL, a title or a source page).

The section is written in the wiki's content language (``bot/i18n/``, translatewiki.net JSON,
``side-report-*`` keys; English where Side has no messages in it): a German wiki gets a German
report. Only the messages' own text is markup; every parameter that quotes someone else's text
is already quoted as above.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from bot.markup import external_link, nowiki, page_link
from service.store import StoredResult
from side.messages import Catalog, Messages
from side.pipeline import Suggestion
from side.verify.severity import MissingKind, Severity

#: The report's messages (translatewiki.net JSON, ``side-report-*``), one file per language.
MESSAGES = Catalog(Path(__file__).resolve().parent / "i18n")
#: At most this many unsupported words are quoted per citation, each at most WORD_CHARS long.
MAX_WORDS, WORD_CHARS = 12, 80
#: The wiki's largest page (MediaWiki's $wgMaxArticleSize: 2 MiB on Wikimedia's wikis), the
#: default of ``bot.max_page_bytes``.
DEFAULT_MAX_PAGE_BYTES = 2 * 1024 * 1024
#: Bytes kept free beside a section: the signature ``~~~~`` expands on save, and the heading's
#: ``== ==`` and blank lines.
HEADROOM_BYTES = 2048


@dataclass(frozen=True)
class ReportItem:
    """One citation in a report, with the key that keeps it from being reported twice."""

    result: StoredResult
    suggestion_key: str

    @property
    def claim_text(self) -> str:
        return self.result.claim_text

    @property
    def citation_url(self) -> str:
        return self.result.citation_url

    @property
    def citation_title(self) -> str:
        return self.result.citation_title

    @property
    def unsupported(self) -> tuple[str, ...]:
        """The claim's words the cited source does not back (may be empty), once each."""
        verdict = self.result.verdict
        words = verdict.unsupported if verdict is not None else ()
        return tuple(dict.fromkeys(w.strip() for w in words if w.strip()))


@dataclass(frozen=True)
class TalkReport:
    """A section ready to post: where, its heading, its body and the edit summary."""

    wiki: str
    title: str
    talk_title: str
    check_id: str
    revision: int | None
    heading: str
    body: str
    summary: str
    items: tuple[ReportItem, ...] = field(default_factory=tuple)

    def preview(self) -> str:
        """What a dry run prints: the page, the summary and the section as it would be saved."""
        return (f"--- would post to [[{self.talk_title}]] (edit summary: {self.summary})\n"
                f"== {self.heading} ==\n{self.body}\n--- end of report")


def _score(msg: Messages, score: float | None) -> str:
    return msg.number(score) if score is not None else msg("side-report-no-score")


def severity_text(msg: Messages, result: StoredResult) -> str:
    """How much a citation's gap matters, in the report's language ("high: a date is not backed";
    a high gap of wording only is one in an article about a living person); "" when it has none."""
    if result.severity is None:
        return ""
    level = msg(f"side-report-severity-{result.severity.value}")
    if result.missing is None:
        return level
    living = result.missing is MissingKind.WORDING and result.severity is Severity.HIGH
    missing = msg(f"side-report-missing-{result.missing.value}{'-living' if living else ''}")
    return msg("side-report-severity", level, missing)


def _item_text(msg: Messages, n: int, item: ReportItem, brief: bool = False) -> str:
    """One citation's part of the section; ``brief``: only the claim, the verdict, the cited source
    and the suggested one (the details stay on the dashboard)."""
    result = item.result
    lines = [msg("side-report-citation", n), f"; {msg('side-report-claim')}", f": {nowiki(item.claim_text)}",
             f"; {msg('side-report-verdict')}", f": {msg('side-report-level-' + result.level.value.replace('_', '-'))}",
             ": " + msg("side-report-decided-by", nowiki(result.decided_by or "Side"))]
    severity = severity_text(msg, result)
    if severity:
        lines.append(": " + msg("side-report-severity-line", severity))
    words = item.unsupported
    if words and not brief:
        quoted = ", ".join(nowiki(w, WORD_CHARS) for w in words[:MAX_WORDS])
        lines.append(": " + (msg("side-report-unsupported-more", quoted, len(words) - MAX_WORDS)
                             if len(words) > MAX_WORDS else msg("side-report-unsupported", quoted)))
    lines += [f"; {msg('side-report-cited-source')}", f": {external_link(item.citation_url, item.citation_title)}"]
    if not brief:
        lines += _source_details(msg, result)
    lines.append(f"; {msg('side-report-suggested-source')}")
    if result.suggestions:
        best = result.suggestions[0]
        lines.append(": " + msg("side-report-suggestion", external_link(best.url, best.title), msg.number(best.score)))
        if not brief:
            lines += _suggestion_details(msg, best)
    else:
        lines.append(": " + msg("side-report-no-suggestion"))
    return "\n".join(lines)


def _source_details(msg: Messages, result: StoredResult) -> list[str]:
    lines = []
    score = _score(msg, result.score)
    evidence = result.evidence
    if evidence:
        lines.append(": " + msg("side-report-passage", score, nowiki(evidence[0].text)))
    else:
        lines.append(": " + msg("side-report-no-passage", score))
    if result.reasons:
        lines.append(": " + msg("side-report-reasons", nowiki("; ".join(result.reasons), 300)))
    return lines


def _suggestion_details(msg: Messages, best: Suggestion) -> list[str]:
    lines = []
    if best.evidence and best.evidence.text:
        lines.append(": " + msg("side-report-evidence", nowiki(best.evidence.text)))
    if best.message:  # one of the article's own sources: reuse its ref
        lines.append(": " + msg("side-report-reuse"))
    if best.cite:
        lines.append(": " + msg("side-report-cite", f"<code>{nowiki(best.cite, 1000)}</code>"))
    if best.name_ref:
        lines.append(": " + msg("side-report-name-ref", f"<code>{nowiki(best.name_ref, 1000)}</code>"))
    return lines


def size_of(text: str) -> int:
    """Bytes of ``text`` as the wiki counts a page: UTF-8."""
    return len(text.encode("utf-8"))


def _total(parts: list[str]) -> int:
    return sum(size_of(part) + 2 for part in parts)  # each joined by a blank line


def fit_items(msg: Messages, items: list[ReportItem], budget: int, dashboard_url: str) -> list[str]:
    """The citations' parts of a section within ``budget`` bytes: all in full when they fit, else
    all in brief with a pointer to the dashboard, else as many in brief as fit and a line saying
    how many more the dashboard lists. Every field is capped, so a part is a few kilobytes at most."""
    full = [_item_text(msg, n, item) for n, item in enumerate(items, 1)]
    if _total(full) <= budget:
        return full
    note = msg("side-report-brief", dashboard_url)
    brief = [_item_text(msg, n, item, brief=True) for n, item in enumerate(items, 1)]
    if _total([*brief, note]) <= budget:
        return [*brief, note]
    parts: list[str] = []
    for n, part in enumerate(brief):
        rest = msg("side-report-more", len(items) - n, dashboard_url)
        if _total([*parts, part, rest, note]) > budget:
            return [*parts, rest, note]
        parts.append(part)
    return [*parts, note]


def build_report(wiki: str, title: str, talk_title: str, check_id: str, revision: int | None,
                 items: list[ReportItem], dashboard_url: str, run_page: str, feedback_page: str, optout_name: str,
                 today: date | None = None, lang: str = "en", max_bytes: int = DEFAULT_MAX_PAGE_BYTES) -> TalkReport:
    """Compose the talk-page section for the reportable citations of one check, in ``lang`` (the
    wiki's content language; English where Side has no messages in it).

    The section, its heading and :data:`HEADROOM_BYTES` fit in ``max_bytes`` (the room the talk page
    has left under the wiki's page size limit): every field is capped (:mod:`bot.markup`), and when
    the citations in full would not fit they are given in brief, then as many as fit with a count
    of the rest, each with a link to the dashboard. The report itself is never dropped."""
    if not items:
        raise ValueError("a report needs at least one citation")
    msg = MESSAGES.messages(lang)
    today = today or date.today()
    count = len(items)
    heading = msg("side-report-heading", count, today.isoformat())
    article = page_link(title)
    intro = (msg("side-report-intro-diff", int(revision), article, count) if revision
             else msg("side-report-intro-recent", article, count))
    optout = f"{{{{bots|optout={optout_name}}}}}"
    head = msg("side-report-disclaimer", feedback_page) + "\n\n" + intro
    footer = msg("side-report-footer", dashboard_url, feedback_page, f"<code><nowiki>{optout}</nowiki></code>",
                 run_page)
    budget = max_bytes - HEADROOM_BYTES - size_of(heading) - size_of(head) - size_of(footer) - 4
    body = [head, *fit_items(msg, items, budget, dashboard_url), footer]
    summary = msg("side-report-summary", article, count, optout)
    return TalkReport(wiki=wiki, title=title, talk_title=talk_title, check_id=check_id, revision=revision,
                      heading=heading, body="\n\n".join(body), summary=summary, items=tuple(items))
