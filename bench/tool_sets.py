"""What large real tool sets cost a request, and what the schema limit and `find_tools` make of it.

For each real OpenAPI document (tests/fixtures/openapi/real): the tools imported with the default
``maxSchemaBytes`` (16 KB), how many were trimmed or reduced, the JSON of all the tools as an
OpenAI-compatible request carries them, the same for the first request of a run that gets `find_tools`
instead, and the time to index the tools and to search them.
"""

from __future__ import annotations

import gzip
import json
import tempfile
import time
from pathlib import Path

from bench.openapi_import import DOCUMENTS
from stepwise.config.model import ToolSearch
from stepwise.config.tool_sources import parse_tools_config
from stepwise.models.messages import ToolSpec
from stepwise.steps.tool_offer import offered
from stepwise.tools import build_tool_registry
from stepwise.tools.find_tools import FindTools, ToolIndex

_QUERIES = ("create a customer", "list orders", "delete a webhook", "refund a payment", "update repository")


def _request_bytes(specs: list[ToolSpec]) -> int:
    """The ``tools`` array of an OpenAI chat request offering ``specs``, in bytes."""
    return len(json.dumps([{"type": "function", "function": spec.model_dump()} for spec in specs]).encode())


def measure(document: Path) -> dict[str, float]:
    """The figures of one document (see the module docstring)."""
    with tempfile.TemporaryDirectory() as directory:
        name = document.name.removesuffix(".gz")
        (Path(directory) / name).write_bytes(gzip.decompress(document.read_bytes()))
        entry = {"source": name, "baseUrl": "https://api.example.com"}
        registry = build_tool_registry(parse_tools_config({"openapi": [entry]}), config_dir=Path(directory))
    specs = registry.specs()
    started = time.perf_counter()
    finder = FindTools(ToolIndex(registry.specs(full=True)), 5, full_specs=registry.full_specs())
    index_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    for query in _QUERIES:
        finder.call({"query": query})
    search_ms = (time.perf_counter() - started) * 1000 / len(_QUERIES)
    first = offered(specs, finder.spec, [], [], search=ToolSearch(), tool_choice=None)
    return {
        "tools": len(specs),
        "trimmed": sum(note.startswith("trimmed ") for note in registry.notes),
        "reduced": sum(note.startswith("reduced ") for note in registry.notes),
        "all_kb": _request_bytes(specs) / 1024,
        "first_kb": _request_bytes(first) / 1024,
        "index_ms": index_ms,
        "search_ms": search_ms,
    }


def main() -> None:
    """Print one row per document."""
    print("Large tool sets: maxSchemaBytes 16 KB, find_tools past 32 tools")
    header = f"{'document':<28}{'tools':>7}{'trimmed':>9}{'reduced':>10}{'all tools':>12}{'1st request':>13}"
    print(header + f"{'index':>10}{'search':>10}")
    for document in sorted(DOCUMENTS.glob("*.json.gz")):
        figures = measure(document)
        print(
            f"{document.name.removesuffix('.json.gz'):<28}{figures['tools']:>7.0f}{figures['trimmed']:>9.0f}"
            f"{figures['reduced']:>10.0f}{figures['all_kb']:>9.0f} KB{figures['first_kb']:>10.1f} KB"
            f"{figures['index_ms']:>7.0f} ms{figures['search_ms']:>7.1f} ms"
        )


if __name__ == "__main__":
    main()
