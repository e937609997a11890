"""Engines and schema upgrades: one SQLAlchemy engine per URL, Alembic to bring its schema up.

The same code runs on the embedded default (SQLite under ``var/``) and on Toolforge's ToolsDB
(MariaDB, ``mysql+pymysql://…``); the differences (WAL and a busy timeout on SQLite, pre-ping
and recycling on MariaDB) are settled here, once, when the engine is made.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from service.store.optionfile import read_client_credentials
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


#: MySQL drivers that read user and password from ``read_default_file`` themselves.
OPTION_FILE_DRIVERS = frozenset({"pymysql", "mysqldb"})


def option_file_args(url: sa.URL) -> tuple[sa.URL, dict[str, Any]]:
    """``?read_default_file=PATH`` of a MySQL URL as driver arguments, the file checked first.

    Toolforge's ``replica.my.cnf`` holds the tool's ToolsDB credentials, so the URL names only
    host and database, e.g. ``mysql+pymysql://tools.db.svc.wikimedia.cloud/s12345__side?
    read_default_file=~/replica.my.cnf``; the driver reads the file on each new connection
    (see :mod:`service.store.optionfile`). URLs without the option come back unchanged.
    """
    option = url.query.get("read_default_file")
    if option is None:
        return url, {}
    path = Path(option if isinstance(option, str) else option[-1]).expanduser()
    if url.get_backend_name() not in ("mysql", "mariadb") or url.get_driver_name() not in OPTION_FILE_DRIVERS:
        raise StoreError(f"read_default_file works with mysql+pymysql or mysql+mysqldb URLs, "
                         f"not {url.drivername}")
    if url.password:
        raise StoreError("the database URL has a password and a read_default_file: "
                         "keep the password in the file")
    read_client_credentials(path)
    return url.difference_update_query(["read_default_file"]), {"read_default_file": str(path)}


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        path = sa.engine.make_url(url).database
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(url, connect_args={"timeout": 30})
        sa.event.listen(engine, "connect", _on_sqlite_connect)
        return engine
    parsed, connect_args = option_file_args(sa.engine.make_url(url))
    # ToolsDB closes idle connections: check them before use and recycle well under its timeout.
    return sa.create_engine(parsed, connect_args=connect_args, pool_pre_ping=True, pool_recycle=280)


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
