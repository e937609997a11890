"""Throwaway databases on the real MariaDB server (CI and this machine run one on 127.0.0.1:3306).

Tests of the store, its migrations and the ToolsDB credentials each get a database of their own,
created here and dropped afterwards. Outside CI a missing server skips the test; in CI
(``CI=true``) it fails it.

Fixtures: ``mariadb_url`` (module: one throwaway database) and ``store_url`` (a test run once on
each engine the store supports: a fresh SQLite file, and that MariaDB database emptied first).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import sqlalchemy as sa

#: The server (no database): root with an empty password, as CI and this machine run it.
MARIADB = os.environ.get("SIDE_TEST_MARIADB", "mysql+pymysql://root@127.0.0.1:3306")


def admin_engine() -> sa.Engine:
    """Root on the server; skips (fails in CI) when none answers."""
    engine = sa.create_engine(MARIADB + "/test")
    try:
        with engine.connect():
            pass
    except sa.exc.OperationalError as exc:
        engine.dispose()
        message = f"MariaDB not reachable at {MARIADB}: {exc.orig}"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message)
        pytest.skip(message)
    return engine


@contextmanager
def throwaway_database(admin: sa.Engine, prefix: str = "side_test") -> Iterator[str]:
    """The name of a new utf8mb4 database, dropped when the block ends."""
    name = f"{prefix}_{secrets.token_hex(4)}"
    with admin.begin() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {name} CHARACTER SET utf8mb4"))
    try:
        yield name
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP DATABASE {name}"))


@contextmanager
def throwaway_url() -> Iterator[str]:
    """A store URL (``mysql+pymysql://…/name?charset=utf8mb4``) of a new database, dropped afterwards."""
    admin = admin_engine()
    try:
        with throwaway_database(admin) as name:
            yield f"{MARIADB}/{name}?charset=utf8mb4"
    finally:
        admin.dispose()


@pytest.fixture(scope="module")
def mariadb_url() -> Iterator[str]:
    """A throwaway database on the MariaDB server, for one test module."""
    with throwaway_url() as url:
        yield url


@pytest.fixture(params=["sqlite", "mariadb"])
def store_url(request: pytest.FixtureRequest, tmp_path) -> str:
    """The store's URL on each engine it supports; every test starts from an empty schema."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'side.sqlite3'}"
    from service.store.tables import metadata

    url = request.getfixturevalue("mariadb_url")
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            metadata.drop_all(conn)
            conn.execute(sa.text("DROP TABLE IF EXISTS alembic_version"))
    finally:
        engine.dispose()
    return url
