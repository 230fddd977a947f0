"""The import graph of fbbench.engines has no circle (function-level imports included).

Importing a module runs its package's ``__init__`` first, so an import of ``a.b.c`` is counted
as an import of ``a.b`` too.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

PACKAGE = "fbbench.engines"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that ``path`` imports, with the packages their import runs."""
    name = _module_name(path)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            targets = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            parts = target.split(".")
            found |= {".".join(parts[:n]) for n in range(1, len(parts) + 1)} & modules
    # A package's own submodules are not imports of the package, nor is the module itself.
    return {target for target in found if target != name and not name.startswith(target + ".")}


def engines_import_graph() -> dict[str, set[str]]:
    files = sorted((REPO / "fbbench" / "engines").rglob("*.py"))
    modules = {_module_name(path) for path in files}
    return {_module_name(path): _imports(path, modules) - {PACKAGE} for path in files}


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node], path[len(path):] = "open", [node]
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return [*path[path.index(target):], target]
            if target not in state and (found := visit(target)):
                return found
        state[node] = "done"
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_engines_have_no_import_circle() -> None:
    graph = engines_import_graph()
    assert "fbbench.engines.installation" in graph["fbbench.engines.catalog"]  # the graph is read
    assert _circle(graph) is None, " → ".join(_circle(graph) or [])
