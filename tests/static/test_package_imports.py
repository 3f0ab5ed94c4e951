"""The package's import graph, read from the source: no module reaches itself through its imports, and the
layering of DESIGN.md holds (nothing deployed imports `stepwise.local`).

Every import counts, those inside functions and under `TYPE_CHECKING` included: a circle there still ties
two modules together for whoever reads or moves them.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import PROJECT_ROOT

PACKAGE_ROOT = PROJECT_ROOT / "layers" / "shared"
PACKAGE = PACKAGE_ROOT / "stepwise"


def module_name(path: Path) -> str:
    """`stepwise.tools.registry` for layers/shared/stepwise/tools/registry.py (a package is its __init__)."""
    parts = list(path.relative_to(PACKAGE_ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules() -> dict[str, Path]:
    """Every module of the package, by dotted name."""
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


def imported_modules(path: Path, name: str, known: set[str]) -> set[str]:
    """The package's modules that `path` imports; `from a import b` counts `a.b` when it is a module, else `a`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                if candidate in known:
                    found.add(candidate)
                elif base in known:
                    found.add(base)
    found.discard(name)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    modules = package_modules()
    known = set(modules)
    return {name: imported_modules(path, name, known) for name, path in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            if pending:
                child = pending.pop()
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, sorted(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_reader_finds_a_circle_when_there_is_one() -> None:
    # Given a graph where a imports b and b imports a, beside an acyclic c
    graph = {"a": {"b"}, "b": {"a"}, "c": {"a"}}
    # When its circles are found, then exactly a and b are one
    assert circles(graph) == [["a", "b"]]


def test_no_module_of_the_package_imports_itself_through_others() -> None:
    # Given every import of the package, deferred and type-only ones included
    graph = import_graph()
    # When the circles are looked for, then there are none
    assert circles(graph) == []


def test_nothing_but_the_command_line_imports_the_local_runtime() -> None:
    # Given every import of the package
    graph = import_graph()
    # When the modules outside stepwise.local that import it are listed
    importers = {
        name
        for name, imports in graph.items()
        if not name.startswith("stepwise.local") and any(target.startswith("stepwise.local") for target in imports)
    }
    # Then only the CLI does, as DESIGN.md's layering says
    assert importers == {"stepwise.cli"}
