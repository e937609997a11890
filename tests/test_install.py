"""The versions a fresh clone installs: scripts/constraints.txt, what is installed, and the image.

scripts/install.sh hands scripts/constraints.txt (written by scripts/freeze.sh) and the Lift Wing
image's pins to pip as constraints, so that a package released on PyPI after the tests last ran
cannot change what a fresh clone installs. These tests hold the three together: the constraints
name every package the project pulls in, at the version installed here, and the image pins the
same versions.
"""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, distribution, version
from pathlib import Path

import pytest
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parent.parent
CONSTRAINTS = REPO / "scripts" / "constraints.txt"
IMAGE = REPO / "deploy" / "liftwing" / "side_verifier"
PROJECT = "side-citations"
# The extras scripts/install.sh installs: `dev` (which takes the service, bot, liftwing and milvus
# extras) and the LLM judge's test server.
EXTRAS = ("dev", "llm-test")


def _normal(name: str) -> str:
    """PEP 503's form of a project name: pip treats `Foo_Bar` and `foo-bar` as one project."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(path: Path) -> dict[str, str]:
    """name -> version of each `name==version` line; comments and option lines left out."""
    pins: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        name, sep, pinned = line.partition("==")
        assert sep and pinned.strip(), f"{path.name}: not a pin: {line!r}"
        assert _normal(name) not in pins, f"{path.name}: {name} is pinned twice"
        pins[_normal(name)] = pinned.strip()
    return pins


def _installed(name: str) -> str | None:
    """The installed version without a local build label (torch's `+cpu`), or None."""
    try:
        return version(name).split("+")[0]
    except PackageNotFoundError:
        return None


def _pulled_in() -> set[str]:
    """Every installed project that side-citations with its installed extras requires, directly
    or through another project, markers evaluated for this interpreter."""
    seen: set[str] = set()
    queue: list[tuple[str, frozenset[str]]] = [(PROJECT, frozenset(EXTRAS))]
    done: set[tuple[str, frozenset[str]]] = set()
    while queue:
        name, extras = queue.pop()
        if (name, extras) in done:
            continue
        done.add((name, extras))
        try:
            requires = distribution(name).requires or []
        except PackageNotFoundError:
            continue
        for text in requires:
            requirement = Requirement(text)
            marker = requirement.marker
            if marker is not None and not any(marker.evaluate({"extra": extra}) for extra in extras | {""}):
                continue
            child = _normal(requirement.name)
            if _installed(child) is None:
                continue
            if child != _normal(PROJECT):
                seen.add(child)
            queue.append((child, frozenset(requirement.extras)))
    return seen


def test_the_constraints_are_the_versions_installed():
    """A constraint that differs from what is installed means the tests ran on another version
    than a fresh clone gets; a package not installed here (an extra skipped) is not compared."""
    differ = {}
    for name, pinned in _pins(CONSTRAINTS).items():
        installed = _installed(name)
        if installed is not None and installed != pinned:
            differ[name] = (pinned, installed)
    assert differ == {}, "constrained, installed: run bash scripts/freeze.sh"


def test_the_constraints_name_every_package_the_project_pulls_in():
    torch_requires = distribution("torch").requires or []
    if any(_normal(Requirement(r).name).startswith("nvidia-") for r in torch_requires):
        pytest.skip("torch is the CUDA build here; the constraints name the CPU build's packages")
    pulled_in = _pulled_in()
    assert {"torch", "trafilatura", "flask", "pywikibot", "kserve"} <= pulled_in, "the walk found the extras"
    missing = sorted(pulled_in - set(_pins(CONSTRAINTS)))
    assert missing == [], "not constrained: run bash scripts/freeze.sh"


def test_the_image_pins_the_constrained_versions():
    constrained = _pins(CONSTRAINTS)
    for name in ("requirements.txt", "requirements-test.txt"):
        pins = _pins(IMAGE / name)
        differ = {p: (v, constrained.get(p)) for p, v in pins.items() if constrained.get(p) != v}
        assert differ == {}, f"{name}: image pin, constraint"
