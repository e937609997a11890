"""No two modules of the project import each other, directly or through others.

The graph is read from the source (every ``import`` statement, at module level or inside a
function, and those under ``if TYPE_CHECKING:`` too): a cycle is a design fault whatever
Python tolerates at run time.
"""

from __future__ import annotations

import ast
from pathlib import Path

from side.config import REPO_ROOT

#: Where the project's modules live (gadget/server is the web service; gadget/ itself holds
#: only its deploy script and entry module).
ROOTS = ("side", "service", "workers", "bot", "gadget")


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts).removesuffix(".__init__")


def project_modules() -> dict[str, Path]:
    found = {}
    for root in ROOTS:
        for path in (REPO_ROOT / root).rglob("*.py"):
            if "node_modules" not in path.parts and "migrations" not in path.parts:
                found[module_name(path)] = path
    return found


def imported(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` (at ``path``) imports: ``from a.b import c`` is ``a.b.c`` when that
    is a module, else ``a.b``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        out |= {target for target in targets if target in modules and target != name}
    return out


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(components)


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imported(path, name, modules) for name, path in modules.items()}


def test_the_cycle_finder_finds_a_cycle_through_three_modules():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert find_cycles(graph) == [["a", "b", "c"]]


def test_the_graph_sees_imports_inside_functions_and_type_checking_blocks():
    graph = import_graph()
    assert "side.retrieval.encoder" in graph["side.retrieval.retriever"]
    assert "side.sources.states" in graph["side.sources.fetch"]


def test_no_module_of_the_project_imports_itself_back():
    assert find_cycles(import_graph()) == []
