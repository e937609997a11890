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
