"""The core library stays importable with no server: it never imports the service stack."""

from __future__ import annotations

import ast
from pathlib import Path

import side

FORBIDDEN = {"flask", "rq", "redis", "pywikibot", "workers", "bot", "gadget"}


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_side_imports_nothing_from_the_service_layers():
    package = Path(side.__file__).parent
    offenders = {
        str(path.relative_to(package)): sorted(imported_roots(path) & FORBIDDEN)
        for path in package.rglob("*.py")
        if imported_roots(path) & FORBIDDEN
    }
    assert offenders == {}
