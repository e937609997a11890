"""The versions a fresh clone installs: scripts/constraints.txt, what is installed, and the image.

scripts/install.sh hands scripts/constraints.txt (written by scripts/freeze.sh) and the Lift Wing
image's pins to pip as constraints, so that a package released on PyPI after the tests last ran
cannot change what a fresh clone installs. These tests hold the three together: the constraints
name every package the project pulls in, at the version installed here, and the image pins the
same versions.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from harness.pins import differing_pins, installed_version, pins, project_name

REPO = Path(__file__).resolve().parent.parent
CONSTRAINTS = REPO / "scripts" / "constraints.txt"
IMAGE = REPO / "deploy" / "liftwing" / "side_verifier"
PROJECT = "side-citations"
# The extras scripts/install.sh installs: `dev` (which takes the service, bot, liftwing and milvus
# extras) and the LLM judge's test server.
EXTRAS = ("dev", "llm-test")


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
            child = project_name(requirement.name)
            if installed_version(child) is None:
                continue
            if child != PROJECT:
                seen.add(child)
            queue.append((child, frozenset(requirement.extras)))
    return seen


def test_the_constraints_are_the_versions_installed():
    """A constraint that differs from what is installed means the tests ran on another version
    than a fresh clone gets; a package not installed here (an extra skipped) is not compared."""
    assert differing_pins(CONSTRAINTS) == {}, "constrained, installed: run bash scripts/freeze.sh"


def test_the_constraints_name_every_package_the_project_pulls_in():
    torch_requires = distribution("torch").requires or []
    if any(project_name(Requirement(r).name).startswith("nvidia-") for r in torch_requires):
        pytest.skip("torch is the CUDA build here; the constraints name the CPU build's packages")
    pulled_in = _pulled_in()
    assert {"torch", "trafilatura", "flask", "pywikibot", "kserve"} <= pulled_in, "the walk found the extras"
    missing = sorted(pulled_in - set(pins(CONSTRAINTS)))
    assert missing == [], "not constrained: run bash scripts/freeze.sh"


def test_the_image_pins_the_constrained_versions():
    constrained = pins(CONSTRAINTS)
    for name in ("requirements.txt", "requirements-test.txt"):
        differ = {p: (v, constrained.get(p)) for p, v in pins(IMAGE / name).items() if constrained.get(p) != v}
        assert differ == {}, f"{name}: image pin, constraint"
