"""Bounds of the numeric options, checked before any work starts.

argparse only checks that a count is a number. Below its least sensible value it would not fail
later either: ``--limit -1`` slices off the last item, ``--k -4`` shows all but four hits,
``--max-words -1`` builds an empty index and ``--epochs -1`` trains nothing and still writes the
model. So each command states its bounds here, and a value outside them is one line and exit 2
(:class:`side.errors.InputError`).
"""

from __future__ import annotations

from pathlib import Path

from side.errors import InputError

__all__ = ["at_least", "above", "at_most", "folder_to_write"]


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def at_least(minimum: float, **options: float | None) -> None:
    """Each given option (None: left out) is ``minimum`` or more."""
    for name, value in options.items():
        if value is not None and not value >= minimum:  # NaN too
            raise InputError(f"{_option(name)} must be at least {minimum:g}, not {value:g}")


def above(bound: float, **options: float | None) -> None:
    """Each given option (None: left out) is more than ``bound``."""
    for name, value in options.items():
        if value is not None and not value > bound:
            raise InputError(f"{_option(name)} must be more than {bound:g}, not {value:g}")


def at_most(maximum: float, **options: float | None) -> None:
    """Each given option (None: left out) is ``maximum`` or less."""
    for name, value in options.items():
        if value is not None and not value <= maximum:
            raise InputError(f"{_option(name)} must be at most {maximum:g}, not {value:g}")


def folder_to_write(path: str | Path | None, option: str = "out") -> None:
    """``--out`` (None: left out) names a folder that exists or can be made: neither a file nor
    under one. Checked before the work, which can take an hour, not when its result is saved."""
    if path is None:
        return
    path = Path(path)
    for part in (path, *path.parents):
        if part.exists():
            if not part.is_dir():
                raise InputError(f"{_option(option)} {path}: {part} is a file, not a folder")
            return
