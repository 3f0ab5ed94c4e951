"""`find_tools`: a keyword search over a profile's tools, for a model offered too many to list.

The ranking is BM25F: BM25 over fields of different weight, each with its own length normalisation, so
that a long description (GitHub's run to pages) neither buries the operation whose name and summary say
what was asked nor lifts one that mentions the words in passing. The fields, strongest first:

- the summary: the first sentence (or line) of the description, what an OpenAPI ``summary`` becomes;
- the name (an operation id: ``issues/list-for-repo``, ``PostCustomersCustomer``);
- the rest of the description;
- the arguments: their names, the names of the fields of object arguments (a request ``body``), and
  the values of their short enums (``state: open | closed``).

Words are compared as `stepwise.tools.search_words` reduces them. Each word of the query also matches,
at a lower weight, its `SYNONYMS` and the words of the tools' vocabulary that share most of its letters
(``follow`` finds ``followers``, ``subscribe`` finds ``subscriptions``), and a phrasal verb its one-word
form (``pay out`` finds ``payouts``); the document frequency of a word so widened is that of all its
forms together. A tool's score is then scaled by the share of the query's words it matches, so one that
answers every part of the query comes before one that matches a single rare word, and raised by half when
the query states every word of its summary. A query that names its operation without its verb
("comment on an issue", "which themes ...": `implied_verb`) raises the tools it found that do that
operation. Three factors then order tools that match alike by what they do: a tool whose operation
agrees with the query's (`stepwise.tools.search_operations`: "confirm a payment" is a confirm, not an
update) scores half more; a list tool, when the query asks for many things ("the branches of a repo"),
0.4 more; and a tool up to 0.8 more by the share of its name the query says, each name word counted by
its idf among the tools' names (so an API's common prefix counts for nothing, and "issue a gift card"
is ``create_gift_cards`` before ``create_gift_cards_param_gift_card_id_disable``). A tool whose name,
summary or OpenAPI flag says it is deprecated scores half, and one that says what a better-ranked tool
says (an API's copy of an operation for another version) comes after all the others. Ties keep
configuration order. No model, no randomness: the same query over the same tools always finds the same
tools, which is what lets LLMCall re-derive what a run has found (see `stepwise.steps.tool_offer`).

The weights were measured: recall@5 and recall@1 over the queries of tests/fixtures/tool_search/queries.yaml
(and, for the three factors above, held_out.yaml too); held_out_unseen.yaml, over three other APIs, was
never looked at while choosing them (`make bench`, bench/tool_search.py).
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stepwise.errors import ToolError
from stepwise.models.messages import FIND_TOOLS, ToolSpec
from stepwise.tools.base import NO_CONTEXT, CallContext, ToolResult
from stepwise.tools.search_operations import LIST, asks_for_many, query_verbs, tool_verbs
from stepwise.tools.search_words import SYNONYMS, implied_verb, phrasal_compounds, without_markup, words
from stepwise.tools.tool_budget import shorten_description

__all__ = ["FIND_TOOLS", "FindTools", "ToolIndex", "find_tools_spec", "words"]

# Field weights and BM25's constants, measured on the queries of tests/fixtures/tool_search.
_FIELD_WEIGHTS = {"summary": 4.0, "name": 2.0, "description": 0.4, "arguments": 0.3}
_K1 = 2.0
_B = 0.75
_SYNONYM_WEIGHT = 0.7
_RELATED_WEIGHT = 0.7
# Two words are related forms when they share a prefix of at least this many letters and this share of
# the shorter one: follow/followers, subscribe/subscription, but not start/star.
_RELATED_MIN_PREFIX = 6
_RELATED_SHARE = 0.75
_DEPRECATED_FACTOR = 0.5
# The weight of the verb a query implies (`implied_verb`), of an idf of about 1.
_IMPLIED_WEIGHT = 1.0
# A tool whose whole summary the query states ("list pull requests" for "List pull requests") scores
# this much more: what the query says is exactly what the tool does.
_SUMMARY_STATED_BONUS = 0.5
# A tool whose operation agrees with the query's (`stepwise.tools.search_operations`) scores this much more.
_VERB_BONUS = 0.5
# A list tool scores this much more when the query asks for many things.
_MANY_BONUS = 0.4
# A tool scores up to this much more by the share of its name the query says (each word by its idf
# among the names): "issue a gift card" is create_gift_cards more than create_gift_cards_param_gift_card_id_disable.
_NAME_SHARE_BONUS = 0.8
_MAX_QUERY_CHARS = 500
_MAX_ENUM_VALUES = 20
_DEPRECATED_FLAG = "(deprecated) "
# The reduced tools find_tools' description names (a long list would cost every request more than it says).
_MAX_NAMED_REDUCED = 10


@dataclass(frozen=True)
class _Wanted:
    """What a query asks for: its words, every form they matched, its operation, and whether it asks for many."""

    said: set[str]
    forms: set[str]
    verbs: frozenset[str]
    many: bool


class ToolIndex:
    """The tools a search can find, indexed once (a profile's tools; built once per container)."""

    def __init__(self, specs: Sequence[ToolSpec]) -> None:
        self.specs = list(specs)
        documents = [_fields(spec) for spec in self.specs]
        average = {
            field: (sum(len(document[field]) for document in documents) / len(documents) if documents else 0.0) or 1.0
            for field in _FIELD_WEIGHTS
        }
        # word -> {tool position: the word's field-weighted, length-normalised count in that tool}
        self._postings: dict[str, dict[int, float]] = {}
        for position, document in enumerate(documents):
            for field, weight in _FIELD_WEIGHTS.items():
                said = document[field]
                norm = 1 - _B + _B * len(said) / average[field]
                for word, count in Counter(said).items():
                    postings = self._postings.setdefault(word, {})
                    postings[position] = postings.get(position, 0.0) + weight * count / norm
        self._vocabulary = sorted(self._postings)
        self._summaries = [frozenset(document["summary"]) for document in documents]
        self._verbs = [tool_verbs(document["summary"], document["name"]) for document in documents]
        self._names = [frozenset(document["name"]) for document in documents]
        named = Counter(word for name in self._names for word in name)
        self._name_idf = {word: math.log(len(documents) / count) for word, count in named.items()}
        # what a tool says, URLs left out (a version's copy of an operation links its own version's page)
        self._texts = [(*document["summary"], *document["description"]) for document in documents]
        self._deprecated = [
            spec.description.startswith(_DEPRECATED_FLAG)
            or "deprecated" in document["name"]
            or "deprecated" in document["summary"]
            for spec, document in zip(self.specs, documents, strict=True)
        ]

    def search(self, query: str, limit: int) -> list[ToolSpec]:
        """The at most ``limit`` best tools for ``query``, best first; none when no word matches."""
        query = query[:_MAX_QUERY_CHARS]
        asked = list(dict.fromkeys(words(query)))
        compounds = phrasal_compounds(query)
        total = len(self.specs)
        scores: dict[int, float] = {}
        matched: Counter[int] = Counter()
        forms: set[str] = set()
        for word in asked:
            combined: dict[int, float] = {}
            for form, weight in self._forms(word, compounds.get(word), asked):
                forms.add(form)
                for position, count in self._postings.get(form, {}).items():
                    combined[position] = combined.get(position, 0.0) + weight * count
            frequency = len(combined)
            idf = math.log(1 + (total - frequency + 0.5) / (frequency + 0.5))
            for position, count in combined.items():
                scores[position] = scores.get(position, 0.0) + idf * count * (_K1 + 1) / (_K1 + count)
                matched[position] += 1
        implied = implied_verb(query)
        if implied is not None and implied not in asked:
            # raises the tools already found that make what the query names; finds none, widens no coverage
            for position, count in self._postings.get(implied, {}).items():
                if position in scores:
                    scores[position] += _IMPLIED_WEIGHT * count * (_K1 + 1) / (_K1 + count)
        verbs = query_verbs(query, asked)
        wanted = _Wanted(said=set(asked), forms=forms, verbs=verbs, many=asks_for_many(query, verbs))
        ranked = sorted(
            (-self._final(position, score, matched[position] / len(asked), wanted), position)
            for position, score in scores.items()
        )
        return [self.specs[position] for position in self._distinct_first([position for _, position in ranked])][:limit]

    def _distinct_first(self, ranked: list[int]) -> list[int]:
        """``ranked`` with each tool whose description repeats a better one's moved after all the others.

        APIs publish one operation once per version (Shopify's every operation up to six times, the older
        ones deprecated): the copies would fill the first results with one operation.
        """
        seen: set[tuple[str, ...]] = set()
        first: list[int] = []
        copies: list[int] = []
        for position in ranked:
            key = self._texts[position]
            (copies if key in seen else first).append(position)
            seen.add(key)
        return first + copies

    def _final(self, position: int, score: float, coverage: float, wanted: _Wanted) -> float:
        """The score scaled by the share of the query the tool matches, and raised when the query states its
        summary, asks for its operation, says most of its name, or asks for many things of a list tool."""
        summary = self._summaries[position]
        stated = 1.0 if summary and summary <= wanted.said else 0.0
        score *= coverage * (1 + _SUMMARY_STATED_BONUS * stated)
        verbs = self._verbs[position]
        if wanted.verbs & verbs:
            score *= 1 + _VERB_BONUS
        if wanted.many and LIST in verbs:
            score *= 1 + _MANY_BONUS
        name = self._names[position]
        weight = sum(self._name_idf[word] for word in name)
        if weight:
            score *= 1 + _NAME_SHARE_BONUS * sum(self._name_idf[word] for word in name & wanted.forms) / weight
        return score * _DEPRECATED_FACTOR if self._deprecated[position] else score

    def _forms(self, word: str, compound: str | None, asked: list[str]) -> Iterator[tuple[str, float]]:
        """The forms ``word`` matches, each once, with its weight: itself, its phrasal compound,
        its synonyms and the related words of the vocabulary (a synonym the query says itself is its own word)."""
        seen = {word}
        yield word, 1.0
        if compound is not None and compound in self._postings and compound not in seen:
            seen.add(compound)
            yield compound, 1.0
        for synonym in SYNONYMS.get(word, ()):
            if synonym not in seen and synonym not in asked:
                seen.add(synonym)
                yield synonym, _SYNONYM_WEIGHT
        for related in self._related(word):
            if related not in seen:
                seen.add(related)
                yield related, _RELATED_WEIGHT

    def _related(self, word: str) -> Iterator[str]:
        """The words of the vocabulary that are other forms of ``word`` (a shared prefix, see above)."""
        if len(word) < _RELATED_MIN_PREFIX:
            return
        head = word[: max(_RELATED_MIN_PREFIX, math.ceil(_RELATED_SHARE * len(word)))]
        position = bisect.bisect_left(self._vocabulary, head)
        while position < len(self._vocabulary) and self._vocabulary[position].startswith(head):
            other = self._vocabulary[position]
            shared = len(_common_prefix(word, other))
            if other != word and shared >= _RELATED_SHARE * min(len(word), len(other)):
                yield other
            position += 1


def _common_prefix(first: str, second: str) -> str:
    length = 0
    for left, right in zip(first, second, strict=False):
        if left != right:
            break
        length += 1
    return first[:length]


def _fields(spec: ToolSpec) -> dict[str, list[str]]:
    """The words of each field of ``spec`` (see the module docstring)."""
    description = spec.description.removeprefix(_DEPRECATED_FLAG)
    summary = shorten_description(description)
    rest = description[len(summary) :] if description.startswith(summary) else description
    return {
        "summary": words(summary),
        "name": words(spec.name),
        "description": words(rest),
        "arguments": words(" ".join(_argument_words(spec.parameters))),
    }


def _argument_words(parameters: dict[str, Any]) -> Iterator[str]:
    """Argument names, the field names of object arguments, and the values of short enums of both."""
    properties = parameters.get("properties")
    if not isinstance(properties, dict):
        return
    for name, schema in properties.items():
        yield name
        yield from _enum_values(schema)
        fields = schema.get("properties") if isinstance(schema, dict) else None
        if isinstance(fields, dict):
            for field, field_schema in fields.items():
                yield field
                yield from _enum_values(field_schema)


def _enum_values(schema: Any) -> Iterator[str]:
    if not isinstance(schema, dict):
        return
    values = schema.get("enum")
    if isinstance(values, list) and len(values) <= _MAX_ENUM_VALUES:
        yield from (value for value in values if isinstance(value, str))
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list):
            for branch in branches:
                yield from _enum_values(branch)


def find_tools_spec(hidden: int, limit: int, reduced: Sequence[str] = (), *, searching: bool = True) -> ToolSpec:
    """The spec of `find_tools` as the model sees it: the search over ``hidden`` tools (when ``searching``),
    and the full schemas of the ``reduced`` tools on request (when there are any)."""
    properties: dict[str, Any] = {}
    parts: list[str] = []
    if searching:
        parts.append(
            f"Search {hidden} more tools that are not listed here, by keywords of what you want to do "
            '(for example "create customer" or "list orders"). Returns the names and purposes of at most '
            f"{limit} matching tools; those tools can be called from your next step on."
        )
        properties["query"] = {"type": "string", "description": "keywords of the task or the tool"}
    if reduced:
        shown = ", ".join(reduced[:_MAX_NAMED_REDUCED]) + (", ..." if len(reduced) > _MAX_NAMED_REDUCED else "")
        parts.append(
            f"Give tool, the name of a tool whose schema is shown reduced ({shown}), and its full schema is "
            "offered from your next step on."
        )
        properties["tool"] = {"type": "string", "description": "the name of a tool to be offered with its full schema"}
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if len(properties) == 1:
        # with both, either may be given
        parameters["required"] = list(properties)
    return ToolSpec(name=FIND_TOOLS, description=" ".join(parts), parameters=parameters)


def query_of(arguments: dict[str, Any]) -> str | None:
    """The query of a `find_tools` call, or None when its arguments hold none."""
    query = arguments.get("query")
    return query if isinstance(query, str) and query.strip() else None


def full_schema_line(name: str) -> str:
    """The line of a `find_tools` observation saying the tool ``name`` is offered with its full schema
    (`stepwise.steps.tool_offer` reads it back)."""
    return f"The full schema of {name} is offered from your next step on."


class FindTools:
    """The `find_tools` tool over an index: its observation lists what it found, one line per tool, and
    the tools whose full schema it was asked for.

    ``searching`` is False for a profile whose tools are all offered but some with a reduced schema: its
    `find_tools` only offers full schemas. ``full_specs`` are those tools' full specs, by name.
    """

    def __init__(
        self,
        index: ToolIndex,
        limit: int,
        *,
        searching: bool = True,
        full_specs: Mapping[str, ToolSpec] | None = None,
    ) -> None:
        self._index = index
        self._limit = limit
        self.searching = searching
        self.full_specs: Mapping[str, ToolSpec] = full_specs or {}
        self._names = {spec.name: spec for spec in index.specs}
        self._spec = find_tools_spec(len(index.specs), limit, sorted(self.full_specs), searching=searching)

    @property
    def spec(self) -> ToolSpec:
        """The spec offered to the model."""
        return self._spec

    def call(self, arguments: dict[str, Any], context: CallContext = NO_CONTEXT) -> ToolResult:
        """Offer a full schema, or search; either takes effect from the next model call on (see
        `stepwise.steps.tool_offer`)."""
        tool = arguments.get("tool") if self.full_specs else None
        if isinstance(tool, str) and tool.strip():
            return self._full_schema(tool.strip())
        query = query_of(arguments) if self.searching else None
        if query is None:
            wanted = "a non-empty query: keywords of what you want to do" if self.searching else "the name of a tool"
            if self.searching and self.full_specs:
                wanted += ", or tool: the name of a tool whose full schema you need"
            raise ToolError(f"give {wanted}")
        found = self._index.search(query, self._limit)
        if not found:
            return ToolResult(content=f"No tool matches {query!r}. Try other keywords, or fewer.")
        lines = [_found_line(spec) for spec in found]
        lead = f"Found {len(found)} tool{'' if len(found) == 1 else 's'}; you can call them from now on:"
        return ToolResult(content="\n".join([lead, *lines]))

    def _full_schema(self, name: str) -> ToolResult:
        if name in self.full_specs:
            return ToolResult(content=full_schema_line(name))
        if name in self._names:
            lead = f"{name} is offered with its whole schema already; you can call it from now on:"
            return ToolResult(content="\n".join([lead, _found_line(self._names[name])]))
        reduced = ", ".join(sorted(self.full_specs))
        raise ToolError(f"no tool is named {name!r}; the tools shown with a reduced schema are {reduced}")


def _found_line(spec: ToolSpec) -> str:
    return f"- {spec.name}: {shorten_description(words_only(spec.description))}"


def words_only(description: str) -> str:
    """A description without HTML tags and URLs, whitespace collapsed (what a found tool is shown with)."""
    return " ".join(without_markup(description).split())
