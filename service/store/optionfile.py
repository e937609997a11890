"""Database credentials from a MySQL option file, such as Toolforge's ``replica.my.cnf``.

Toolforge gives each tool its ToolsDB user and password in ``$HOME/replica.my.cnf``, an INI
file with a ``[client]`` section (``user = s12345``, ``password = ...``), readable by the tool
alone. Copying the password into an environment variable or a URL would leave a second copy
to leak and to go stale. Instead the database URL names only the host and the database and
points at the file (``?read_default_file=...``); the MySQL driver reads user and password from
it on every new connection (``service.store.store.make_engine``). This module checks the file first,
so a missing or incomplete one is a one-line configuration error rather than the server's
"Access denied for user ''".
"""

from __future__ import annotations

import configparser
from dataclasses import dataclass, field
from pathlib import Path

from side.errors import ConfigError

__all__ = ["CLIENT_GROUP", "ClientCredentials", "read_client_credentials"]

#: The option group MySQL clients read (and the only one Toolforge's file has).
CLIENT_GROUP = "client"


@dataclass(frozen=True)
class ClientCredentials:
    """The ``[client]`` user and password of an option file (the password never in a repr)."""

    user: str
    password: str = field(repr=False)


def _unquoted(value: str) -> str:
    """Option files may quote values (``password = 'x y'``), as MySQL clients allow."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def read_client_credentials(path: str | Path) -> ClientCredentials:
    """The ``[client]`` user and password of the option file at ``path`` (``~`` expanded).

    Raises ConfigError when the file cannot be read or parsed, or has no ``[client]`` user
    or no ``password`` line (an empty password is allowed: a local test server's root).
    """
    path = Path(path).expanduser()
    parser = configparser.RawConfigParser(allow_no_value=True, strict=False, interpolation=None)
    try:
        with path.open(encoding="utf-8") as fh:
            parser.read_file(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read the database option file {path}: {exc.strerror or exc}") from exc
    except (configparser.Error, UnicodeDecodeError) as exc:
        first_line = str(exc).splitlines()[0]
        raise ConfigError(f"database option file {path} is not an option file: {first_line}") from exc
    if not parser.has_section(CLIENT_GROUP):
        raise ConfigError(f"database option file {path} has no [{CLIENT_GROUP}] section")
    user = _unquoted(parser.get(CLIENT_GROUP, "user", fallback=None) or "")
    if not user:
        raise ConfigError(f"database option file {path} names no user in [{CLIENT_GROUP}]")
    if not parser.has_option(CLIENT_GROUP, "password"):
        raise ConfigError(f"database option file {path} has no password line in [{CLIENT_GROUP}]")
    return ClientCredentials(user, _unquoted(parser.get(CLIENT_GROUP, "password") or ""))
