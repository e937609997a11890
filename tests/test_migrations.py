"""The Alembic migrations build exactly the tables the store queries, on SQLite and on MariaDB.

Alembic's autogenerate comparison (``compare_metadata``) is run between a database migrated to
head and ``service.store.tables.metadata``: types, nullability, server defaults, indexes,
unique constraints and foreign keys must all agree. A deliberately altered copy of the tables
must disagree, so the comparison is known to see what it is asked to guard.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from service.store import make_engine, migrate
from service.store.tables import metadata

from harness.mariadb import throwaway_url


@pytest.fixture
def database_url(request, tmp_path):
    """An empty database on each engine the store supports; MariaDB gets a throwaway database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'side.sqlite3'}"
        return
    with throwaway_url() as url:
        yield url


def schema_diff(url: str, target: sa.MetaData) -> list:
    """What autogenerate would change to turn the migrated database into ``target``."""
    engine = make_engine(url)
    try:
        migrate(engine)
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": True})
            return compare_metadata(context, target)
    finally:
        engine.dispose()


def kinds(diff: list) -> set[tuple[str, str]]:
    """(operation, table.column or index name) of each difference; type changes come in lists."""
    found = set()
    for item in diff:
        for op in item if isinstance(item, list) else [item]:
            if op[0] == "modify_type":
                found.add((op[0], f"{op[2]}.{op[3]}"))
            elif op[0] in ("add_column", "remove_column"):
                found.add((op[0], f"{op[2]}.{op[3].name}"))
            elif op[0] in ("add_index", "remove_index"):
                found.add((op[0], op[1].name))
            else:
                found.add((op[0], ""))
    return found


@pytest.mark.parametrize("database_url", ["sqlite", "mariadb"], indirect=True)
def test_migrations_build_exactly_the_tables_the_store_queries(database_url):
    assert schema_diff(database_url, metadata) == []


@pytest.mark.parametrize("database_url", ["sqlite", "mariadb"], indirect=True)
def test_a_table_that_drifted_from_the_migrations_is_caught(database_url):
    drifted = sa.MetaData()
    for table in metadata.sorted_tables:
        table.to_metadata(drifted)
    drifted.tables["checks"].append_column(sa.Column("priority", sa.Integer, nullable=True))
    drifted.tables["feedback"].indexes.clear()
    # the drift this test was written for: TEXT in the tables against LONGTEXT from migration 0001
    drifted.tables["results"].c.claim.type = sa.Text()
    found = kinds(schema_diff(database_url, drifted))
    assert {("add_column", "checks.priority"), ("remove_index", "ix_feedback_result")} <= found
    if database_url.startswith("mysql"):  # SQLite has one TEXT type: only MariaDB can tell them apart
        assert ("modify_type", "results.claim") in found


def test_reviewer_migration_drops_unverified_names_and_downgrades(tmp_path):
    """0006_reviewer: a name typed before logins is not carried over as a reviewer (it was never
    verified); a downgrade brings the ``user`` column back with the reviewers' names."""
    import sqlite3

    from alembic import command
    from alembic.config import Config as AlembicConfig

    from service.store.migrate import MIGRATIONS_DIR

    path = tmp_path / "side.sqlite3"
    engine = make_engine(f"sqlite:///{path}")
    migrate(engine, "0003")
    row = ("INSERT INTO feedback (result_id, action, reason, comment, suggestion_url, {column}, created_at) "
           "VALUES (1, 'accept', '', '', '', ?, '2026-01-01 00:00:00')")
    with sqlite3.connect(path) as raw:  # a check and a result for the feedback to belong to
        raw.execute("INSERT INTO checks VALUES ('chk_1', 'enwiki', 'A', 1, NULL, 'api', 'done', '', '{}', 1, 1, 1, "
                    "'2026-01-01 00:00:00', NULL, NULL, NULL)")
        raw.execute("INSERT INTO results (id, check_id, position, client_key, claim_key, claim_text, citation_url, "
                    "claim, source_status, source_error, flagged, reasons, suggestions, review_status, created_at) "
                    "VALUES (1, 'chk_1', 0, '', 'k', 'A.', '', '{}', 'fetched', '', 1, '[]', '[]', 'accepted', "
                    "'2026-01-01 00:00:00')")
        raw.execute(row.format(column="user"), ("Typed Name",))
    migrate(engine, "0006_reviewer")
    with engine.connect() as conn:
        assert {c["name"] for c in sa.inspect(conn).get_columns("feedback")} >= {"reviewer"}
        assert "user" not in {c["name"] for c in sa.inspect(conn).get_columns("feedback")}
        assert conn.execute(sa.text("SELECT reviewer FROM feedback")).scalars().all() == [""]
    with sqlite3.connect(path) as raw:
        raw.execute(row.format(column="reviewer"), ("Alice",))
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0003")
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT user FROM feedback ORDER BY id")).scalars().all() == ["", "Alice"]
    engine.dispose()
