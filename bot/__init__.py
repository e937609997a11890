"""Side's citation bot: recent changes -> added citations -> checks -> talk-page reports.

The package never imports pywikibot at import time (only the functions that talk to a wiki,
and the script's modules ``bot.sidebot`` and ``bot.options``, do), so its pure parts (policy,
report text, checkpoint) are usable and testable anywhere. The names below load their module on
first use, so that importing the package (``side-bot`` starts from :mod:`bot.entry`) needs
neither the results store nor pywikibot.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> the module that defines it.
_EXPORTS = {
    **dict.fromkeys(("Change", "EventStreamFeed", "RecentChangesFeed", "fetch_revisions", "is_revert", "skip_reason"),
                    "bot.changes"),
    **dict.fromkeys(("Checkpoint", "CheckpointError", "CheckpointFile", "Position"), "bot.checkpoint"),
    **dict.fromkeys(("ReportPolicy", "exclusion_reason", "is_reportable", "is_run_enabled", "report_decision",
                     "report_threshold"), "bot.policy"),
    **dict.fromkeys(("TalkReport", "build_report"), "bot.report"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'bot' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
