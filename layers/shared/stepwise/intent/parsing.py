"""Reading a classification out of what a model really writes.

Models asked for `{"use_for": ..., "result": ...}` lines also answer with code fences, arrays, single
quotes, trailing commas, keys in other case, a `{use_for: option}` object, reasoning in `<think>` tags,
prose around the JSON, or a bare option word. Structured answers are read first; only when the text
holds none are the options searched for in the prose, unless it is a refusal or a negated explanation. A
whole provider response (OpenAI, DashScope, Bedrock, Anthropic) given as the text is unwrapped first.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import ValidationError

from stepwise.config.intent import Category
from stepwise.intent.option_search import canonical_option, labelled_answers, search_text, without_ruled_out
from stepwise.models.messages import Completion
from stepwise.protocols.provider_responses import completion_from_response
from stepwise.protocols.think_blocks import split_reasoning

# A classification answer is a few lines; reading more only costs time on a misbehaving model.
MAX_ANSWER_CHARS = 20_000
# ast.literal_eval parses Python-literal answers (single quotes, True/None); bounded to keep it cheap.
_MAX_LITERAL_CHARS = 4_000
_MAX_NESTING = 4

_FENCE = re.compile(r"```(?:jsonl?|json5|javascript|js|python|py|yaml|yml|text|txt|plaintext)?", re.IGNORECASE)
_TYPOGRAPHIC_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_FLAT_OBJECT = re.compile(r"\{[^{}]*\}")
_LOOSE_PAIR = re.compile(
    r"""["']?(?P<key>[A-Za-z_][\w\- ]{0,63}?)["']?\s*[:=\uff1a]\s*"""
    r"""(?:"(?P<double>[^"]*)"|'(?P<single>[^']*)'|(?P<bare>[^,;}\n]*))"""
)

_USE_FOR_KEYS = ("usefor", "usedfor")
_ENVELOPE_KEYS = ("choices", "output", "content", "candidates", "message")
_NOT_FOUND = re.compile(r"^[\W_]*(?:not[ _-]?found|未找到|没有找到)[\W_]*$", re.IGNORECASE)
# Refusals and negated explanations, in English and Chinese; a free-text answer holding one names nothing.
_REFUSAL = re.compile(
    r"\b(?:sorry|cannot|can't|can not|unable|not|none of|no (?:option|category))\b|无法|不能|抱歉|不是|不属于|没有",
    re.IGNORECASE,
)
_RESULT_KEYS = ("result", "option", "value", "answer", "choice", "label", "intent", "category", "class")


def _clean(text: str) -> str:
    # What the model thought is never read as its answer: it names the options it weighed and rejected.
    text = split_reasoning(text[:MAX_ANSWER_CHARS]).reply
    text = _FENCE.sub("\n", text)
    return text.replace("`", "").translate(_TYPOGRAPHIC_QUOTES)


def _decode(span: str) -> Any:
    """The JSON (or Python-literal) value written in `span`, or None when it is neither."""
    for candidate in (span, _TRAILING_COMMA.sub(r"\1", span)):
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):
            continue
    if len(span) > _MAX_LITERAL_CHARS:
        return None
    # The compiler warns about odd literals and escapes in model text ("1st", "\\d"); that is noise here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.literal_eval(span)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None


def _loose_object(span: str) -> dict[str, str] | None:
    """`{use_for: intent-route, result: Finance}` and similar unquoted objects, read as key/value pairs."""
    pairs: dict[str, str] = {}
    for match in _LOOSE_PAIR.finditer(span[1:-1]):
        value = match.group("double") or match.group("single") or match.group("bare") or ""
        pairs[match.group("key").strip()] = value.strip()
    return pairs or None


def _structured_values(text: str) -> list[Any]:
    """Every JSON-like value: the whole text when it is one, else each line's span and each flat object."""
    whole = _decode(text.strip())
    if isinstance(whole, dict | list):
        return [whole]
    values: list[Any] = []
    for line in text.splitlines():
        starts = [index for index in (line.find("{"), line.find("[")) if index >= 0]
        end = max(line.rfind("}"), line.rfind("]"))
        if starts and end > min(starts):
            value = _decode(line[min(starts) : end + 1])
            if isinstance(value, dict | list):
                values.append(value)
    for match in _FLAT_OBJECT.finditer(text):
        value = _decode(match.group(0))
        values.append(value if isinstance(value, dict) else _loose_object(match.group(0)))
    return [value for value in values if value]


def _mappings(value: Any, depth: int = 0) -> Iterator[dict[Any, Any]]:
    """The objects in a decoded value, including those nested in lists and under wrapper keys."""
    if depth > _MAX_NESTING:
        return
    if isinstance(value, dict):
        yield value
        children: Any = value.values()
    elif isinstance(value, list):
        children = value
    else:
        return
    for child in children:
        if isinstance(child, dict | list):
            yield from _mappings(child, depth + 1)


def _normal_key(key: str) -> str:
    return re.sub(r"[\s_\-]", "", key.casefold())


class _Reader:
    """Turns decoded objects into `use_for -> option`, keeping the first valid answer per category."""

    def __init__(self, categories: list[Category]) -> None:
        self.categories = categories
        self.by_name = {category.use_for.casefold(): category for category in categories}
        self.values: dict[str, str] = {}
        self.addressed = False

    def _category(self, name: object) -> Category | None:
        return self.by_name.get(name.strip().casefold()) if isinstance(name, str) else None

    def _record(self, category: Category, answer: object) -> None:
        option = canonical_option(answer, category)
        if option is not None:
            self.values.setdefault(category.use_for, option)

    def read(self, mapping: dict[Any, Any]) -> None:
        fields = {_normal_key(key): value for key, value in mapping.items() if isinstance(key, str)}
        use_for_key = next((key for key in _USE_FOR_KEYS if key in fields), None)
        result_key = next((key for key in _RESULT_KEYS if key in fields), None)
        if use_for_key is not None:
            self.addressed = True
            category = self._category(fields[use_for_key])
            if category is not None and result_key is not None:
                self._record(category, fields[result_key])
            return
        if result_key is not None:
            self.addressed = True
            # No use_for: the answer belongs to the one category that has such an option, if only one does.
            owners = [c for c in self.categories if canonical_option(fields[result_key], c) is not None]
            if len(owners) == 1:
                self._record(owners[0], fields[result_key])
            return
        for key, answer in mapping.items():
            category = self._category(key)
            if category is not None:
                self.addressed = True
                self._record(category, answer)


def _as_categories(categories: Sequence[dict[str, Any] | Category]) -> list[Category]:
    valid: list[Category] = []
    for category in categories:
        if isinstance(category, Category):
            valid.append(category)
            continue
        try:
            valid.append(Category.model_validate(category))
        except ValidationError:
            continue
    return valid


def _unwrapped(text: str) -> str:
    """The model's text when `text` is a whole provider response (OpenAI, DashScope, Bedrock, Anthropic)."""
    stripped = text.strip()
    if not stripped.startswith("{") or len(stripped) > MAX_ANSWER_CHARS:
        return text
    try:
        decoded = json.loads(stripped)
    except (ValueError, RecursionError):
        return text
    if not isinstance(decoded, dict) or not any(key in decoded for key in _ENVELOPE_KEYS):
        return text
    completion = completion_from_response(decoded)
    return completion.content if isinstance(completion, Completion) else text


def not_found_categories(text: str, categories: Sequence[Category]) -> list[str]:
    """The categories the model answered ``NotFound`` for, as the Higress prompt asks it to when no option fits.

    A bare ``NotFound`` answers every category; ``{"use_for": ..., "result": "NotFound"}`` answers one.
    """
    if not isinstance(text, str):
        return []
    cleaned = _clean(_unwrapped(text))
    if _NOT_FOUND.match(cleaned.strip()):
        return [category.use_for for category in categories]
    names = {category.use_for.casefold(): category.use_for for category in categories}
    found: list[str] = []
    for value in _structured_values(cleaned):
        for mapping in _mappings(value):
            fields = {_normal_key(key): item for key, item in mapping.items() if isinstance(key, str)}
            use_for = next((fields[key] for key in _USE_FOR_KEYS if key in fields), None)
            result = next((fields[key] for key in _RESULT_KEYS if key in fields), None)
            if isinstance(use_for, str) and isinstance(result, str) and _NOT_FOUND.match(result.strip()):
                name = names.get(use_for.strip().casefold())
                if name is not None and name not in found:
                    found.append(name)
    return found


def parse_intent(text: str, categories: Sequence[dict[str, Any] | Category]) -> dict[str, str]:
    """Read a model's classification answer: `use_for -> option`, `{}` when nothing is recognised.

    Accepts one JSON object per line, a JSON array, code fences, inline backticks, single quotes,
    prose around the JSON, keys in other case and `{use_for: option}` objects. When the text holds no
    structured answer, each category's options are searched for in it as whole words (longest option
    first; several different options found means no answer for that category). An answer that is not
    one of the category's options is dropped; one differing only in case becomes the option as
    configured. Unknown use_for values and invalid category definitions are ignored. Never raises.
    """
    if not isinstance(text, str) or not isinstance(categories, list | tuple):
        return {}
    known = _as_categories(categories)
    if not known:
        return {}
    cleaned = _clean(_unwrapped(text))
    reader = _Reader(known)
    for value in _structured_values(cleaned):
        for mapping in _mappings(value):
            reader.read(mapping)
    if reader.addressed:
        return reader.values
    labelled = labelled_answers(cleaned, known)
    if labelled:
        return labelled
    for category in known:
        cleaned = without_ruled_out(cleaned, category)
    if _REFUSAL.search(cleaned):
        # "I cannot classify this" or "this is not about Finance": an option named there is no answer.
        return {}
    return search_text(cleaned, known)
