"""The core library stays importable with no server: it never imports the service stack."""

from __future__ import annotations

import ast
from pathlib import Path

import side

#: The service stack and its libraries: the core library imports none of them.
FORBIDDEN = {"flask", "flask_cors", "flask_limiter", "werkzeug", "rq", "redis", "pywikibot", "sqlalchemy", "alembic",
             "pymysql", "waitress", "kserve", "service", "workers", "bot", "gadget"}


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


SERVICE_LAYERS = {"bot": "bot", "workers": "workers", "gadget": "gadget"}


def layer_imports(root: Path) -> set[str]:
    return set().union(*(imported_roots(p) for p in root.rglob("*.py"))) if root.is_dir() else set()


def test_bot_workers_and_web_depend_on_side_never_on_each_other():
    repo = Path(side.__file__).parent.parent
    crossings = {name: sorted(layer_imports(repo / name) & (set(SERVICE_LAYERS) - {name}))
                 for name in SERVICE_LAYERS}
    assert crossings == {"bot": [], "workers": [], "gadget": []}
    # the queue contract they share imports none of them either
    assert layer_imports(repo / "service") & set(SERVICE_LAYERS) == set()
    assert "side" in layer_imports(repo / "service")


def test_every_module_of_the_library_names_its_public_api():
    """``__all__`` in every module of side/ (and of the service package), each name defined there."""
    import importlib

    repo = Path(side.__file__).parent.parent
    missing, unresolved = [], []
    for package in ("side", "service"):
        for path in sorted((repo / package).rglob("*.py")):
            if path.name == "__main__.py" or "migrations" in path.parts:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            declared = [n for n in tree.body if isinstance(n, ast.Assign)
                        and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)]
            name = ".".join(path.relative_to(repo).with_suffix("").parts).removesuffix(".__init__")
            if not declared:
                missing.append(name)
                continue
            module = importlib.import_module(name)
            unresolved += [f"{name}.{n}" for n in module.__all__ if not hasattr(module, n)]
    assert missing == [] and unresolved == []
