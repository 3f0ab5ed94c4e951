"""The queries `find_tools` is measured on, and recall@k over them.

tests/fixtures/tool_search/queries.yaml (GitHub, Stripe) is the set the ranking was tuned on;
held_out.yaml (Discord, Shopify) was never used to tune it, so it measures how the search generalises;
held_out_unseen.yaml (Slack, Google Calendar, Google Drive) was written before any search over its APIs
was run, and measured only before and after a change, never looked at while making it.

Used by tests/unit/tools/test_find_tools.py (which asserts the recall) and bench/tool_search.py (which
prints it).
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from stepwise.config.tool_sources import parse_tools_config
from stepwise.tools import ToolRegistry, build_tool_registry
from stepwise.tools.find_tools import ToolIndex

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
QUERIES = FIXTURES / "tool_search" / "queries.yaml"
HELD_OUT = FIXTURES / "tool_search" / "held_out.yaml"
UNSEEN = FIXTURES / "tool_search" / "held_out_unseen.yaml"
REAL_DOCUMENTS = FIXTURES / "openapi" / "real"


@dataclass(frozen=True)
class SearchCase:
    """One query and the tools that answer it (any one of them found counts)."""

    query: str
    tools: tuple[str, ...]


@dataclass
class Recall:
    """How many of the queries found one of their tools among the first k, and the queries that did not."""

    hits: int = 0
    total: int = 0
    misses: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        """The share of queries that found a tool that answers them."""
        return self.hits / self.total if self.total else 0.0


def search_cases(path: Path = QUERIES) -> dict[str, list[SearchCase]]:
    """The queries of each document in ``path`` (by the document's file name, without ``.gz``)."""
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {
        document: [SearchCase(entry["query"], tuple(entry["tools"])) for entry in entries]
        for document, entries in raw.items()
    }


def imported_registry(directory: Path, document: str) -> ToolRegistry:
    """The tools of one real document, with the default limits (none is called: the base URL is never reached)."""
    (directory / document).write_bytes(gzip.decompress((REAL_DOCUMENTS / f"{document}.gz").read_bytes()))
    entry = {"source": document, "baseUrl": "http://127.0.0.1:9", "internal": True}
    return build_tool_registry(parse_tools_config({"openapi": [entry]}), config_dir=directory)


def recall_at(index: ToolIndex, cases: list[SearchCase], k: int = 5, into: Recall | None = None) -> Recall:
    """Recall@k of ``cases`` over ``index``: a query hits when one of its tools is among the first ``k`` found."""
    recall = into if into is not None else Recall()
    for case in cases:
        found = [spec.name for spec in index.search(case.query, k)]
        recall.total += 1
        if set(case.tools) & set(found):
            recall.hits += 1
        else:
            recall.misses.append(f"{case.query!r}: found {found}, not {list(case.tools)}")
    return recall
