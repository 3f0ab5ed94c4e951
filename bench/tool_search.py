"""How often `find_tools` finds the tool people ask for: recall@5 over the queries of tests/fixtures/tool_search.

Three sets, printed apart: queries.yaml (GitHub's and Stripe's descriptions), the set the ranking was tuned
on; held_out.yaml (Discord's and Shopify's), never used to tune it, which says how the search does on
APIs and phrasings it was not chosen for; and held_out_unseen.yaml (Slack's, Google Calendar's and Google
Drive's), written before any search over those APIs was run and never looked at while changing the
ranking. All the descriptions are in tests/fixtures/openapi/real. A query
hits when one of the tools that answer it is among the first five found, as find_tools shows five by
default. Also printed: recall@1 and the mean reciprocal rank of the first answering tool within ten, and
the queries missed. The test that holds the sets to their floors is
tests/unit/tools/test_tool_search_recall.py.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from stepwise.tools.find_tools import ToolIndex
from tests.support.tool_search_queries import HELD_OUT, QUERIES, UNSEEN, SearchCase, imported_registry, search_cases


def _rank(index: ToolIndex, case: SearchCase) -> int | None:
    """The rank (from 1) of the first tool that answers ``case`` among the first ten found, or None."""
    found = [spec.name for spec in index.search(case.query, 10)]
    ranks = [found.index(name) + 1 for name in case.tools if name in found]
    return min(ranks) if ranks else None


def _row(name: str, found: list[int | None]) -> str:
    top1 = sum(rank == 1 for rank in found) / len(found)
    top5 = sum(rank is not None and rank <= 5 for rank in found) / len(found)
    mrr = sum(1 / rank for rank in found if rank) / len(found)
    return f"{name:<34}{len(found):>9}{top1:>10.1%}{top5:>10.1%}{mrr:>8.3f}"


def _short(document: str) -> str:
    return document.removesuffix(".json").removesuffix(".yaml")


def main() -> None:
    """Print one row per document and one per set, then the queries missed."""
    print("Tool search: recall of find_tools over the queries people ask (tests/fixtures/tool_search)")
    print(f"{'set / document':<34}{'queries':>9}{'recall@1':>10}{'recall@5':>10}{'MRR@10':>8}")
    misses: list[str] = []
    with tempfile.TemporaryDirectory() as directory:
        for label, path in (("tuned on", QUERIES), ("held out", HELD_OUT), ("unseen", UNSEEN)):
            ranks: dict[str, list[int | None]] = {}
            for document, cases in search_cases(path).items():
                index = ToolIndex(imported_registry(Path(directory), document).specs(full=True))
                ranks[document] = [_rank(index, case) for case in cases]
                misses += [
                    f"  {label}: {_short(document)}: {case.query!r}"
                    for case, rank in zip(cases, ranks[document], strict=True)
                    if not rank or rank > 5
                ]
            for document, found in ranks.items():
                print(_row(f"{label}: {_short(document)}", found))
            print(_row(f"{label}: all ({path.name})", [rank for each in ranks.values() for rank in each]))
    print("missed (no answering tool in the first five):")
    print("\n".join(misses) or "  none")


if __name__ == "__main__":
    main()
