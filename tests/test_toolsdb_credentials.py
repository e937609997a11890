"""ToolsDB credentials come from a ``replica.my.cnf`` option file, never from the database URL.

On Toolforge the URL names host and database and ends in ``?read_default_file=...``; user
and password stay in ``$HOME/replica.my.cnf``. These tests write such a file in a temporary
folder and open the results store on the real MariaDB server on 127.0.0.1:3306.
"""

from __future__ import annotations

import secrets

import pytest
import sqlalchemy as sa

from service.store import Store, StoreError
from service.store.migrate import schema_version
from service.store.optionfile import read_client_credentials
from side.errors import ConfigError

from harness.mariadb import MARIADB, admin_engine, throwaway_database

SERVER = sa.engine.make_url(MARIADB)


@pytest.fixture(scope="module")
def admin():
    """Root on the MariaDB server; skips (fails in CI) when none answers."""
    engine = admin_engine()
    yield engine
    engine.dispose()


@pytest.fixture
def database(admin):
    """A throwaway database, dropped afterwards."""
    with throwaway_database(admin, "side_cnf") as name:
        yield name


def url_for(database: str, option_file: str) -> str:
    """Host and database only; the credentials are the option file's."""
    host = f"{SERVER.host}:{SERVER.port or 3306}"
    return f"mysql+pymysql://{host}/{database}?charset=utf8mb4&read_default_file={option_file}"


def current_user(store: Store) -> str:
    with store.engine.connect() as conn:
        return conn.execute(sa.text("SELECT CURRENT_USER()")).scalar_one()


def test_the_store_opens_with_the_user_of_replica_my_cnf(database, tmp_path, monkeypatch):
    (tmp_path / "replica.my.cnf").write_text(f"[client]\nuser = {SERVER.username}\n"
                                             f"password = {SERVER.password or ''}\n")
    monkeypatch.setenv("HOME", str(tmp_path))  # ~ is the tool's home, as on Toolforge
    store = Store.open(url_for(database, "~/replica.my.cnf"))
    try:
        assert store.ping() == schema_version(store.engine) is not None  # migrated: the schema exists
        assert current_user(store).startswith(f"{SERVER.username}@")
        shown = store.engine.url.render_as_string(hide_password=False)
        assert "read_default_file" not in shown and "@" not in shown  # no credentials in the URL
    finally:
        store.close()


def test_a_tool_account_with_a_password_connects_through_its_file(admin, database, tmp_path):
    """The Toolforge case: a user of its own, a quoted password only the file knows."""
    user, password = f"s{secrets.token_hex(4)}", f"pw {secrets.token_urlsafe(12)}"
    with admin.begin() as conn:
        conn.execute(sa.text(f"CREATE USER '{user}'@'%' IDENTIFIED BY :password"), {"password": password})
        conn.execute(sa.text(f"GRANT ALL ON {database}.* TO '{user}'@'%'"))
    try:
        option_file = tmp_path / "replica.my.cnf"
        option_file.write_text(f"[client]\nuser = '{user}'\npassword = '{password}'\n")
        assert read_client_credentials(option_file).password == password
        assert password not in repr(read_client_credentials(option_file))
        store = Store.open(url_for(database, str(option_file)))
        try:
            assert current_user(store).startswith(f"{user}@")
            assert store.ping() is not None
        finally:
            store.close()
        option_file.write_text(f"[client]\nuser = '{user}'\npassword = 'not {password}'\n")
        with pytest.raises(StoreError, match=f"Access denied for user '{user}'"):
            Store.open(url_for(database, str(option_file)))
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP USER '{user}'@'%'"))


@pytest.mark.parametrize(("content", "message"), [
    (None, "cannot read the database option file"),
    ("user = root\n", "is not an option file"),
    ("[mysql]\nuser = root\npassword =\n", r"has no \[client\] section"),
    ("[client]\npassword = x\n", r"names no user in \[client\]"),
    ("[client]\nuser = root\n", r"has no password line in \[client\]"),
])
def test_a_missing_or_incomplete_option_file_is_one_clear_error(tmp_path, content, message):
    option_file = tmp_path / "replica.my.cnf"
    if content is not None:
        option_file.write_text(content)
    with pytest.raises(ConfigError, match=message) as caught:
        Store.open(url_for("s12345__side", str(option_file)))
    assert "\n" not in str(caught.value)


def test_credentials_are_taken_from_one_place_only(tmp_path):
    option_file = tmp_path / "replica.my.cnf"
    option_file.write_text("[client]\nuser = root\npassword =\n")
    with pytest.raises(StoreError, match="keep the password in the file"):
        Store.open(f"mysql+pymysql://root:secret@127.0.0.1/side?read_default_file={option_file}")
    with pytest.raises(StoreError, match="mysql\\+pymysql or mysql\\+mysqldb"):
        Store.open(f"postgresql://127.0.0.1/side?read_default_file={option_file}")
