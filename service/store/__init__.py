"""The results store: every Check, its Results, review feedback and the bot's reports.

SQLAlchemy Core tables (``tables``) with Alembic migrations (``service/migrations``, run by
``migrate``); SQLite by default, MariaDB/ToolsDB by URL. Records (``records``) cross the
boundary as typed dataclasses and StrEnums, never as rows or dicts; the dashboard's numbers are
in ``stats`` and the bot's report ledger in ``ledger``. Import from here.
"""

from __future__ import annotations

from service.store.ledger import Report
from service.store.migrate import make_engine, migrate, schema_version
from service.store.records import (
    Check,
    CheckRequest,
    CheckStatus,
    DismissReason,
    Feedback,
    FeedbackAction,
    Origin,
    QueueView,
    ReviewStatus,
    StoredLeadClaim,
    StoredResult,
    StoreError,
    check_key,
    iso,
    suggestion_key,
    utcnow,
)
from service.store.stats import Stats
from service.store.store import Store

__all__ = [
    "Check", "CheckRequest", "CheckStatus", "DismissReason", "Feedback", "FeedbackAction", "Origin", "QueueView",
    "Report", "ReviewStatus", "Stats", "Store", "StoreError", "StoredLeadClaim", "StoredResult", "check_key", "iso",
    "make_engine", "migrate",
    "schema_version", "suggestion_key", "utcnow",
]
