"""The metrics the code publishes are the ones docs/http-api.md lists, by their real names and dimensions.

Read from the source: every `metrics.add_metric(name=...)` (a conditional name counts both ways) and
every `metrics.add_dimensions(...)` keyword, against the names in the "Metrics" section's table. An
`add_metric` method passing on its own `name` parameter (the per-invocation metrics provider forwarding to
Powertools) publishes no name of its own.
"""

from __future__ import annotations

import ast
import re

from tests.conftest import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "layers" / "shared" / "stepwise"
HTTP_API = PROJECT_ROOT / "docs" / "http-api.md"


def _names(node: ast.expr) -> set[str]:
    """The string constants an expression can evaluate to (`"A" if x else "B"` gives both)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.IfExp):
        return _names(node.body) | _names(node.orelse)
    raise AssertionError(f"a metric named by an expression the docs cannot list: {ast.unparse(node)}")


def _forwarded_names(tree: ast.Module) -> set[int]:
    """The ids of the expressions that are an `add_metric` method's own parameter, read inside it (a provider
    forwarding the call; a helper of another name taking a metric's name would hide the names it is given)."""
    forwarded: set[int] = set()
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) and function.name == "add_metric":
            parameters = {argument.arg for argument in function.args.args + function.args.kwonlyargs}
            forwarded |= {
                id(node) for node in ast.walk(function) if isinstance(node, ast.Name) and node.id in parameters
            }
    return forwarded


def published() -> tuple[set[str], set[str]]:
    """(metric names, extra dimension names) of every `add_metric` and `add_dimensions` call in the package."""
    metrics: set[str] = set()
    dimensions: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        forwarded = _forwarded_names(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr == "add_metric":
                name = next(keyword.value for keyword in node.keywords if keyword.arg == "name")
                if id(name) not in forwarded:
                    metrics |= _names(name)
            elif node.func.attr == "add_dimensions":
                dimensions |= {keyword.arg for keyword in node.keywords if keyword.arg}
    return metrics, dimensions


def documented_table() -> str:
    """The "## Metrics" section of docs/http-api.md."""
    text = HTTP_API.read_text(encoding="utf-8")
    return text.split("\n## Metrics\n", 1)[1].split("\n## ", 1)[0]


def test_every_metric_the_code_publishes_is_listed_by_its_real_name_and_no_other() -> None:
    # Given the metric names the code publishes and the names the docs' table lists (backticked, first column)
    metrics, _ = published()
    rows = [line for line in documented_table().splitlines() if line.startswith("| `")]
    listed = {name for row in rows for name in re.findall(r"`([A-Za-z]+)`", row.split("|")[1])}
    # Then they are the same names
    assert metrics, "no add_metric call found"
    assert listed == metrics


def test_every_dimension_the_code_adds_is_named_in_the_docs() -> None:
    # Given the dimensions the code adds to its metrics
    _, dimensions = published()
    section = documented_table()
    # Then each is named in the section
    assert dimensions
    for dimension in dimensions:
        assert f"`{dimension}`" in section, dimension
