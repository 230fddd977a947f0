"""The house's floors: no import circle inside engines/, database/, analysis/ or the Rust core's
modules, and the workload format does not import the analysis (function-level imports included).

Importing a module runs its package's ``__init__`` first, so an import of ``a.b.c`` is counted
as an import of ``a.b`` too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import REPO


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


def import_graph(package: str) -> dict[str, set[str]]:
    """Module → the modules of the same package it imports (the package itself left out)."""
    files = sorted((REPO / package.replace(".", "/")).rglob("*.py"))
    modules = {_module_name(path) for path in files}
    return {_module_name(path): _imports(path, modules) - {package} for path in files}


def imports_of(package: str, target: str) -> dict[str, set[str]]:
    """Module of ``package`` → the modules of ``target`` it imports."""
    files = sorted((REPO / package.replace(".", "/")).rglob("*.py"))
    targets = {_module_name(path) for path in (REPO / target.replace(".", "/")).rglob("*.py")}
    found = {_module_name(path): _imports(path, targets) for path in files}
    return {module: hits for module, hits in found.items() if hits}


def rust_module_graph() -> dict[str, set[str]]:
    """core/src: module → the crate modules it uses (``use crate::x``, ``crate::x::…``, ``super::x``)."""
    src = REPO / "core" / "src"
    graph: dict[str, set[str]] = {}
    for path in sorted(src.rglob("*.rs")):
        relative = path.relative_to(src).with_suffix("")
        parts = list(relative.parts[:-1]) if relative.name == "mod" else list(relative.parts)
        name = "::".join(parts)
        text = path.read_text().split("#[cfg(test)]")[0]  # a unit test may use any module
        used = {match for match in re.findall(r"crate::([a-z_]+(?:::[a-z_]+)?)", text)}
        parent = "::".join(parts[:-1])
        used |= {f"{parent}::{match}" if parent else match for match in re.findall(r"super::([a-z_]+)", text)}
        graph[name] = {target for target in used if target != name and not target.startswith(name + "::")}
    modules = set(graph)
    # crate::run::state names a module file, crate::run::Shared an item of crate::run.
    return {name: {t if t in modules else t.split("::")[0] for t in targets} - {name}
            for name, targets in graph.items()}


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
    graph = import_graph("fbbench.engines")
    assert "fbbench.engines.installation" in graph["fbbench.engines.catalog"]  # the graph is read
    assert _circle(graph) is None, " → ".join(_circle(graph) or [])


@pytest.mark.parametrize("package", ["fbbench.database", "fbbench.analysis"])
def test_database_and_analysis_have_no_import_circle(package: str) -> None:
    graph = import_graph(package)
    assert sum(map(len, graph.values())) > 0  # the graph is read
    assert _circle(graph) is None, " → ".join(_circle(graph) or [])


def test_the_workload_format_does_not_import_the_analysis() -> None:
    assert imports_of("fbbench.workloads", "fbbench.analysis") == {}
    assert imports_of("fbbench.analysis", "fbbench.workloads")  # the other way it does: the check reads


def test_the_rust_core_has_no_module_circle() -> None:
    graph = rust_module_graph()
    assert "run" in graph and graph["run::worker"]  # the graph is read
    assert _circle(graph) is None, " → ".join(_circle(graph) or [])
