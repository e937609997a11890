"""What the bot reads of one revision at most, and why it skips one.

A revision may be up to 2 MiB of wikitext (MediaWiki's ``$wgMaxArticleSize``), and 2 MiB of
``a<ref name=n/>`` is 149,796 citation uses: read whole, a minute and 1.4 GB, past the bot's
1 GiB Toolforge job. :class:`RevisionLimits` holds ``bot.max_revision_bytes`` and
``bot.max_claims_per_revision``; :func:`revision_claims` applies them in the order that costs
least: sizes first (the feed's, before anything is downloaded, then the texts'), then a regex
count of the citation marks (milliseconds, before parsing), then the claims while the page is
walked. A revision over a cap raises :class:`RevisionSkipped` with the reason the run summary
counts. No pywikibot here: ``benchmarks/bad_input.py`` measures this path on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from side.config import BotConfig
from side.errors import SideError, TooManyClaimsError
from side.extract.claims import Claim
from side.extract.wikitext import added_citations

__all__ = ["CRASHED_TWICE", "TOO_LARGE", "TOO_MANY_CITATIONS", "UNREADABLE", "RevisionLimits", "RevisionSkipped",
           "revision_claims"]

#: Why a revision is skipped, as counted in the run summary ("skipped: <reason>").
TOO_LARGE = "revision too large"
TOO_MANY_CITATIONS = "too many citations"
CRASHED_TWICE = "crashed twice"
UNREADABLE = "could not be read"


class RevisionSkipped(SideError):
    """The bot does not read this revision; ``reason`` is one of the reasons above."""

    code = "revision_skipped"

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason} ({detail})")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class RevisionLimits:
    """The caps on one revision; None: no cap (a setting of 0)."""

    max_bytes: int | None = None
    max_claims: int | None = None

    @classmethod
    def from_config(cls, bot: BotConfig) -> RevisionLimits:
        return cls(bot.max_revision_bytes or None, bot.max_claims_per_revision or None)

    def check_sizes(self, *sizes: int, downloaded: bool = True) -> None:
        """Raise :class:`RevisionSkipped` when one of ``sizes`` (bytes of wikitext) is over the cap."""
        if self.max_bytes is None:
            return
        size = next((size for size in sizes if size > self.max_bytes), None)
        if size is not None:
            raise RevisionSkipped(TOO_LARGE, f"{size:,} bytes of wikitext, over bot.max_revision_bytes "
                                             f"{self.max_bytes:,}" + ("" if downloaded else "; not downloaded"))


def revision_claims(old_text: str, new_text: str, title: str, limits: RevisionLimits) -> list[Claim]:
    """The citations the new revision added (:func:`side.extract.wikitext.added_citations`),
    or :class:`RevisionSkipped` when either revision is over a cap."""
    limits.check_sizes(len(new_text.encode("utf-8")), len(old_text.encode("utf-8")))
    try:
        return added_citations(old_text, new_text, title, limits.max_claims)
    except TooManyClaimsError as exc:
        raise RevisionSkipped(TOO_MANY_CITATIONS, f"{exc}, over bot.max_claims_per_revision") from None
