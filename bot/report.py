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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from bot.markup import external_link, nowiki, page_link
from service.store import StoredResult
from side.verify.levels import VerdictLevel

#: What each level says about the cited source, after the level's own words.
LEVEL_NOTES = {VerdictLevel.SUPPORTED: "the cited source appears to support the claim.",
               VerdictLevel.PARTIALLY_SUPPORTED: "the cited source appears to support only part of the claim.",
               VerdictLevel.NOT_SUPPORTED: "the cited source does not appear to support the claim.",
               VerdictLevel.CANNOT_CHECK: "Side could not check the cited source."}
#: At most this many unsupported words are quoted per citation, each at most WORD_CHARS long.
MAX_WORDS, WORD_CHARS = 12, 80


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


def _item_text(n: int, item: ReportItem) -> str:
    result = item.result
    lines = [f"'''Citation {n}'''", "; Claim", f": {nowiki(item.claim_text)}",
             "; Verdict", f": '''{result.level.text}''': {LEVEL_NOTES[result.level]}"]
    words = item.unsupported
    if words:
        quoted = ", ".join(nowiki(w, WORD_CHARS) for w in words[:MAX_WORDS])
        more = f" and {len(words) - MAX_WORDS} more" if len(words) > MAX_WORDS else ""
        lines.append(f": Words of the claim the source does not back: {quoted}{more}")
    lines += ["; Cited source", f": {external_link(item.citation_url, item.citation_title)}"]
    score = f"{result.score:.2f}" if result.score is not None else "n/a"
    evidence = result.evidence
    if evidence:
        lines.append(f": Its best matching passage (support score {score} on a 0–1 scale): "
                     f"{nowiki(evidence[0].text)}")
    else:
        lines.append(f": Support score {score} on a 0–1 scale; no passage of the page matched the claim.")
    if result.reasons:
        lines.append(": Why it was flagged: " + nowiki("; ".join(result.reasons), 300))
    if result.suggestions:
        best = result.suggestions[0]
        lines += ["; Suggested source",
                  f": {external_link(best.url, best.title)} (support score {best.score:.2f})"]
        if best.evidence and best.evidence.text:
            lines.append(f": Evidence: {nowiki(best.evidence.text)}")
        if best.message:  # one of the article's own sources: reuse its ref
            lines.append(f": {best.message[:1].upper()}{best.message[1:]}.")
        if best.cite:
            lines.append(f": Ready to paste: <code>{nowiki(best.cite, 1000)}</code>")
        if best.name_ref:
            lines.append(f": That source's ref has no name yet; give it this one first: "
                         f"<code>{nowiki(best.name_ref, 1000)}</code>")
    else:
        lines += ["; Suggested source", (": Side found no better source in its corpus; please look for one "
                                         "or check that the cited page supports the claim.")]
    return "\n".join(lines)


def build_report(wiki: str, title: str, talk_title: str, check_id: str, revision: int | None,
                 items: list[ReportItem], dashboard_url: str, run_page: str, feedback_page: str, optout_name: str,
                 today: date | None = None) -> TalkReport:
    """Compose the talk-page section for the reportable citations of one check."""
    if not items:
        raise ValueError("a report needs at least one citation")
    today = today or date.today()
    count = f"{len(items)} citation" + ("s" if len(items) > 1 else "")
    heading = f"Automated citation check: {count} not supported by the cited source ({today.isoformat()})"
    diff = f"[[Special:Diff/{int(revision)}|this edit]]" if revision else "a recent edit"
    intro = (f"''This is an automated suggestion by a bot running [[{feedback_page}|Side]], a citation-"
             f"verification tool. It can be wrong: please read the sources before changing the article.''\n\n"
             f"Side read the sources cited in {diff} to {page_link(title)} and rates {count} '''not supported''': "
             "the source does not appear to support the sentence it is attached to. A better source is "
             "suggested where Side found one.")
    body = [intro, *(_item_text(n, item) for n, item in enumerate(items, 1))]
    body.append(
        f"'''Feedback:''' mark each suggestion right or wrong on the [{dashboard_url} Side dashboard], or reply "
        f"at [[{feedback_page}]]. '''Opt out:''' add <code><nowiki>{{{{bots|optout={optout_name}}}}}</nowiki>"
        f"</code> to this talk page and the bot will not post here again; anyone can stop the bot everywhere at "
        f"[[{run_page}]]. ~~~~")
    summary = (f"Automated citation check of {page_link(title)}: {count} not supported by the cited source "
               f"(suggestion only; opt out with {{{{bots|optout={optout_name}}}}})")
    return TalkReport(wiki=wiki, title=title, talk_title=talk_title, check_id=check_id, revision=revision,
                      heading=heading, body="\n\n".join(body), summary=summary, items=tuple(items))
