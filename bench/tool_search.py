"""How often `find_tools` finds the tool people ask for: recall@5 over tests/fixtures/tool_search/queries.yaml.

Each query (GitHub's and Stripe's descriptions, tests/fixtures/openapi/real) is written the way people ask;
it hits when one of the tools that answer it is among the first five found, as find_tools shows five by
default. Also printed: recall@1 and the mean reciprocal rank of the first answering tool within ten, and
the queries missed. The test that holds recall@5 to at least 90% is tests/unit/tools/test_tool_search_recall.py.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from stepwise.tools.find_tools import ToolIndex
from tests.support.tool_search_queries import SearchCase, imported_registry, search_cases


def _rank(index: ToolIndex, case: SearchCase) -> int | None:
    """The rank (from 1) of the first tool that answers ``case`` among the first ten found, or None."""
    found = [spec.name for spec in index.search(case.query, 10)]
    ranks = [found.index(name) + 1 for name in case.tools if name in found]
    return min(ranks) if ranks else None


def main() -> None:
    """Print one row per document and one for all, then the queries missed."""
    print("Tool search: recall of find_tools over the queries people ask (tests/fixtures/tool_search)")
    print(f"{'document':<28}{'queries':>9}{'recall@1':>10}{'recall@5':>10}{'MRR@10':>8}")
    ranks: dict[str, list[int | None]] = {}
    misses: list[str] = []
    with tempfile.TemporaryDirectory() as directory:
        for document, cases in search_cases().items():
            index = ToolIndex(imported_registry(Path(directory), document).specs(full=True))
            ranks[document] = [_rank(index, case) for case in cases]
            misses += [
                f"  {case.query!r}" for case, rank in zip(cases, ranks[document], strict=True) if not rank or rank > 5
            ]
    for name, found in [*ranks.items(), ("all", [rank for each in ranks.values() for rank in each])]:
        top1 = sum(rank == 1 for rank in found) / len(found)
        top5 = sum(rank is not None and rank <= 5 for rank in found) / len(found)
        mrr = sum(1 / rank for rank in found if rank) / len(found)
        print(f"{name.removesuffix('.json'):<28}{len(found):>9}{top1:>10.1%}{top5:>10.1%}{mrr:>8.3f}")
    print("missed (no answering tool in the first five):")
    print("\n".join(misses) or "  none")


if __name__ == "__main__":
    main()
