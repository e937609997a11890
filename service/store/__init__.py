"""The results store: every Check, its Results, review feedback and the bot's reports.

SQLAlchemy Core tables with Alembic migrations (``service/migrations``); SQLite by default,
MariaDB/ToolsDB by URL. Records cross the boundary as dataclasses, never as rows or dicts.
"""

from __future__ import annotations

from service.store.store import (
    Check,
    CheckRequest,
    Feedback,
    Report,
    Stats,
    Store,
    StoredResult,
    StoreError,
    check_key,
    make_engine,
    migrate,
    suggestion_key,
    utcnow,
)

__all__ = [
    "Check", "CheckRequest", "Feedback", "Report", "Stats", "Store", "StoreError", "StoredResult", "check_key",
    "make_engine", "migrate", "suggestion_key", "utcnow",
]
