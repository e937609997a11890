"""The optional parts of the distribution, and what to say when one is not installed.

``pip install side-citations`` installs the library and the ``side`` command. The queue, the
results store, the workers, the web service and the bot need extras (pyproject.toml). Their
console scripts and the ``side`` commands that read the store start inside
:func:`required_extra`, so a core-only install answers with one line naming the extra to
install (exit 2) instead of an ImportError traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from side.errors import SideError

__all__ = ["DISTRIBUTION", "EXTRA_MODULES", "EXIT_MISSING_EXTRA", "MissingExtraError", "install_command",
           "extra_of", "missing_extra_error", "required_extra"]

#: The name the project is published under on PyPI (the import package is ``side``).
DISTRIBUTION = "side-citations"

#: Top-level modules each extra brings, as ``import`` names them. An extra that includes another
#: (``bot`` needs ``service``) lists both sets.
_SERVICE = ("flask", "flask_cors", "flask_limiter", "werkzeug", "redis", "rq", "sqlalchemy", "alembic", "pymysql",
            "prometheus_client", "waitress", "requests_oauthlib", "jwt")
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "service": _SERVICE,
    "bot": (*_SERVICE, "pywikibot", "requests_sse"),
    "liftwing": ("kserve",),
    "milvus": ("pymilvus", "milvus_lite"),
}

#: Exit status of a command whose extra is missing (a usage error, as for bad arguments).
EXIT_MISSING_EXTRA = 2


class MissingExtraError(SideError):
    """A command needs an extra of the distribution that is not installed."""

    code = "missing_extra"


def install_command(extra: str) -> str:
    """``pip install 'side-citations[extra]'``."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def extra_of(error: ImportError, extra: str | None = None) -> str | None:
    """The extra whose module ``error`` failed to import (``extra`` first), or None if no extra has it."""
    root = (error.name or "").split(".")[0]
    candidates = ([extra] if extra else []) + [name for name in EXTRA_MODULES if name != extra]
    return next((name for name in candidates if root in EXTRA_MODULES.get(name, ())), None)


def missing_extra_error(error: ImportError, extra: str | None = None) -> MissingExtraError | None:
    """A MissingExtraError naming the extra that provides the module ``error`` lacks, or None."""
    found = extra_of(error, extra)
    if found is None:
        return None
    return MissingExtraError(f"this command needs the {found!r} extra ({error.name} is not installed): "
                             f"{install_command(found)}")


@contextmanager
def required_extra(extra: str, prog: str) -> Iterator[None]:
    """Run a console script's body: an import of a module of ``extra`` that fails prints one line
    (``prog: error: ...``) and exits 2. Any other ImportError is a bug and propagates."""
    try:
        yield
    except ImportError as exc:
        error = missing_extra_error(exc, extra)
        if error is None:
            raise
        print(f"{prog}: error: {error}", file=sys.stderr)
        raise SystemExit(EXIT_MISSING_EXTRA) from None
