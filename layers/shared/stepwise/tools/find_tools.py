"""`find_tools`: a keyword search over a profile's tools, for a model offered too many to list.

The ranking is BM25 over words of each tool's name (counted three times: names are what imported APIs
get right), description and top-level argument names. Words are split at case changes, digits and
punctuation (``PostCustomersCustomer`` is "post customers customer"), lower-cased and reduced to a crude
singular; HTML tags and URLs in descriptions are not words. A tool whose name or description says it is
deprecated scores half. Ties keep configuration order. No model, no randomness: the same query over the
same tools always finds the same tools, which is what lets LLMCall re-derive what a run has found (see
`stepwise.steps.tool_offer`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from stepwise.errors import ToolError
from stepwise.models.messages import FIND_TOOLS, ToolSpec
from stepwise.tools.base import NO_CONTEXT, CallContext, ToolResult
from stepwise.tools.tool_budget import shorten_description

__all__ = ["FIND_TOOLS", "FindTools", "ToolIndex", "find_tools_spec", "words"]
_NAME_WEIGHT = 3
_K1 = 1.2
_B = 0.75
_DEPRECATED_FACTOR = 0.5
_MAX_QUERY_CHARS = 500
_MARKUP = re.compile(r"<[^>]*>|https?://\S+|&[a-z]+;")
# Words: a capitalised or lower-case run, an upper-case run (an acronym), or digits.
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_STOP_WORDS = frozenset(
    [
        *("a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "for", "from", "has", "i", "in", "into"),
        *("is", "it", "its", "me", "my", "need", "of", "on", "or", "please", "that", "the", "this", "to", "want"),
        *("was", "with", "you", "your"),
    ]
)


def words(text: str) -> list[str]:
    """The search words of ``text``: split, lower-cased, crude singular, stop words left out."""
    found: list[str] = []
    for raw in _WORD.findall(_MARKUP.sub(" ", text)):
        word = raw.lower()
        if word in _STOP_WORDS:
            continue
        found.append(_singular(word))
    return found


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 2 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


class ToolIndex:
    """The tools a search can find, indexed once (a profile's tools; built once per container)."""

    def __init__(self, specs: Sequence[ToolSpec]) -> None:
        self.specs = list(specs)
        self._documents: list[Counter[str]] = []
        self._deprecated: list[bool] = []
        for spec in self.specs:
            properties = spec.parameters.get("properties")
            argument_names = " ".join(properties) if isinstance(properties, dict) else ""
            name_words = words(spec.name)
            document = Counter(name_words * _NAME_WEIGHT + words(spec.description) + words(argument_names))
            self._documents.append(document)
            self._deprecated.append("deprecated" in document)
        self._lengths = [sum(document.values()) for document in self._documents]
        self._average_length = (sum(self._lengths) / len(self._lengths)) if self._lengths else 0.0
        frequency: Counter[str] = Counter()
        for document in self._documents:
            frequency.update(document.keys())
        total = len(self._documents)
        self._idf = {word: math.log(1 + (total - count + 0.5) / (count + 0.5)) for word, count in frequency.items()}

    def search(self, query: str, limit: int) -> list[ToolSpec]:
        """The at most ``limit`` best tools for ``query``, best first; none when no word matches."""
        asked = set(words(query[:_MAX_QUERY_CHARS]))
        scored: list[tuple[float, int]] = []
        for position, document in enumerate(self._documents):
            score = self._score(asked, document, self._lengths[position])
            if score > 0:
                if self._deprecated[position]:
                    score *= _DEPRECATED_FACTOR
                scored.append((-score, position))
        scored.sort()
        return [self.specs[position] for _, position in scored[:limit]]

    def _score(self, asked: set[str], document: Counter[str], length: int) -> float:
        score = 0.0
        norm = _K1 * (1 - _B + _B * length / self._average_length) if self._average_length else _K1
        for word in asked:
            count = document.get(word, 0)
            if count:
                score += self._idf[word] * count * (_K1 + 1) / (count + norm)
        return score


def find_tools_spec(hidden: int, limit: int) -> ToolSpec:
    """The spec of `find_tools` as the model sees it, saying how many tools it can find."""
    return ToolSpec(
        name=FIND_TOOLS,
        description=(
            f"Search {hidden} more tools that are not listed here, by keywords of what you want to do "
            '(for example "create customer" or "list orders"). Returns the names and purposes of at most '
            f"{limit} matching tools; those tools can be called from your next step on."
        ),
        parameters={
            "type": "object",
            "properties": {"query": {"type": "string", "description": "keywords of the task or the tool"}},
            "required": ["query"],
        },
    )


def query_of(arguments: dict[str, Any]) -> str | None:
    """The query of a `find_tools` call, or None when its arguments hold none."""
    query = arguments.get("query")
    return query if isinstance(query, str) and query.strip() else None


class FindTools:
    """The `find_tools` tool over an index: its observation lists what it found, one line per tool."""

    def __init__(self, index: ToolIndex, limit: int) -> None:
        self._index = index
        self._limit = limit
        self._spec = find_tools_spec(len(index.specs), limit)

    @property
    def spec(self) -> ToolSpec:
        """The spec offered to the model."""
        return self._spec

    def call(self, arguments: dict[str, Any], context: CallContext = NO_CONTEXT) -> ToolResult:
        """Search; the found tools are offered from the next model call on (see `stepwise.steps.tool_offer`)."""
        query = query_of(arguments)
        if query is None:
            raise ToolError("give a non-empty query: keywords of what you want to do")
        found = self._index.search(query, self._limit)
        if not found:
            return ToolResult(content=f"No tool matches {query!r}. Try other keywords, or fewer.")
        lines = [f"- {spec.name}: {shorten_description(words_only(spec.description))}" for spec in found]
        lead = f"Found {len(found)} tool{'' if len(found) == 1 else 's'}; you can call them from now on:"
        return ToolResult(content="\n".join([lead, *lines]))


def words_only(description: str) -> str:
    """A description without HTML tags and URLs, whitespace collapsed (what a found tool is shown with)."""
    return " ".join(_MARKUP.sub(" ", description).split())
