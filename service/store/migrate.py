"""Engines and schema upgrades: one SQLAlchemy engine per URL, Alembic to bring its schema up.

The same code runs on the embedded default (SQLite under ``var/``) and on Toolforge's ToolsDB
(MariaDB, ``mysql+pymysql://…``); the differences (WAL and a busy timeout on SQLite, pre-ping
and recycling on MariaDB) are settled here, once, when the engine is made.
"""

from __future__ import annotations

import time
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from service.store.records import StoreError

__all__ = ["MIGRATIONS_DIR", "make_engine", "migrate", "schema_version"]

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


def _on_sqlite_connect(dbapi_conn, _record) -> None:
    """WAL and a busy timeout let the web app read while a worker writes."""
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        path = sa.engine.make_url(url).database
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(url, connect_args={"timeout": 30})
        sa.event.listen(engine, "connect", _on_sqlite_connect)
        return engine
    # ToolsDB closes idle connections: check them before use and recycle well under its timeout.
    return sa.create_engine(url, pool_pre_ping=True, pool_recycle=280)


def migrate(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` with Alembic; safe to run from several processes."""
    from alembic import command
    from alembic.config import Config as AlembicConfig

    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    for attempt in range(5):
        try:
            with engine.begin() as conn:
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, revision)
            return
        except sa.exc.OperationalError as exc:  # another process is migrating the same database
            if attempt == 4:
                raise StoreError(f"could not migrate the results store: {exc.orig}") from exc
            time.sleep(0.2 * (attempt + 1))


def schema_version(engine: Engine) -> str | None:
    """The Alembic revision the database is at (None before the first migration)."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()
