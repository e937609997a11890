"""Side's citation bot: recent changes -> added citations -> checks -> talk-page reports.

The package never imports pywikibot at import time (only the functions that talk to a wiki,
and the script's modules ``bot.sidebot`` and ``bot.options``, do), so its pure parts (policy,
report text, checkpoint) are usable and testable anywhere.
"""

from bot.changes import Change, EventStreamFeed, RecentChangesFeed, fetch_revisions, is_revert, skip_reason
from bot.checkpoint import Checkpoint, CheckpointError, CheckpointFile, Position
from bot.policy import (
    ReportPolicy,
    exclusion_reason,
    is_reportable,
    is_run_enabled,
    report_decision,
    report_threshold,
)
from bot.report import TalkReport, build_report

__all__ = [
    "Change", "Checkpoint", "CheckpointError", "CheckpointFile", "EventStreamFeed", "Position", "RecentChangesFeed",
    "ReportPolicy", "TalkReport", "build_report", "exclusion_reason", "fetch_revisions", "is_reportable",
    "is_revert", "is_run_enabled", "report_decision", "report_threshold", "skip_reason",
]
