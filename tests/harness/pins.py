"""Pinned requirement files (the Lift Wing image's, scripts/constraints.txt), read the way the
tests compare them with pyproject.toml and with what is installed."""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


def project_name(requirement: str) -> str:
    """The PEP 503 name of a requirement (``Foo_Bar[x]>=1`` -> ``foo-bar``): pip takes the
    spellings of one name as one project."""
    name = re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].strip()
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_lines(path: Path) -> list[str]:
    """The requirements of a requirements file: comments, blank and option lines left out."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("-")]


def pins(path: Path) -> dict[str, str]:
    """Project name -> pinned version of each ``name==version`` line; anything else, or a
    project pinned twice, is an error in the file."""
    pinned: dict[str, str] = {}
    for line in requirement_lines(path):
        name, sep, number = line.partition("==")
        if not sep or not number.strip():
            raise ValueError(f"{path.name}: not a pin: {line!r}")
        if project_name(name) in pinned:
            raise ValueError(f"{path.name}: {name} is pinned twice")
        pinned[project_name(name)] = number.strip()
    return pinned


def installed_version(name: str) -> str | None:
    """The installed version without a local build label (torch's ``+cpu``), or None."""
    try:
        return version(name).split("+")[0]
    except PackageNotFoundError:
        return None


def differing_pins(path: Path) -> dict[str, tuple[str, str]]:
    """Project -> (pinned, installed) for each pin of ``path`` that is not the installed version;
    a project not installed here (an extra left out) is not compared."""
    differ = {}
    for name, pinned in pins(path).items():
        installed = installed_version(name)
        if installed is not None and installed != pinned:
            differ[name] = (pinned, installed)
    return differ
