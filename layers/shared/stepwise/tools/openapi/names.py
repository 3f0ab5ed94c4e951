"""Names a model accepts, made from OpenAPI names: tool names and argument (property) names."""

from __future__ import annotations

import re
from collections.abc import Collection

MAX_NAME_CHARS = 64
_NOT_TOOL_NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9_-]+")
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Comparison operators in parameter names (Twilio's `StartTime<` and `StartTime>`, a `price>=`) are spelt
# as words, so that the argument keeps their meaning instead of losing them with the other characters.
_OPERATOR_WORDS = {"<=": "lte", ">=": "gte", "!=": "ne", "<": "lt", ">": "gt", "=": "eq", "!": "not"}
_OPERATOR = re.compile("|".join(re.escape(operator) for operator in _OPERATOR_WORDS))


def tool_name_for(operation_id: str | None, method: str, path: str) -> str:
    """The tool name of an operation: its operationId, else method and path, as ``^[A-Za-z0-9_-]{1,64}$``.

    ``GET /pets/{petId}/photos`` becomes ``get_pets_petId_photos``; other characters become ``_``.
    """
    raw = operation_id if operation_id else f"{method.lower()}_{path}"
    return _sanitised(raw) or f"{method.lower()}_root"


def argument_name_for(name: str) -> str:
    """An argument name made of the characters every model provider accepts in a property name.

    ``filter[status]`` becomes ``filter_status``, ``StartTime<`` ``StartTime_lt`` and ``price>=``
    ``price_gte``; ``X-Request-ID`` stays as it is.
    """
    spelt = _OPERATOR.sub(lambda found: f"_{_OPERATOR_WORDS[found.group()]}_", name)
    if spelt != name:
        spelt = re.sub(r"_{2,}", "_", spelt).strip("_")
    return _sanitised(spelt) or "value"


def free_argument_name(name: str, location: str, *, taken: Collection[str]) -> str:
    """The argument name of parameter ``name`` in ``location``: its own made model-safe, else the first of
    ``<location>_<name>``, ``<location>_<name>_2``, ``_3``... that is not ``taken`` (see
    `stepwise.tools.openapi.operations`)."""
    own, prefixed = argument_name_for(name), argument_name_for(f"{location}_{name}")
    for candidate in (own, prefixed):
        if candidate not in taken:
            return candidate
    number = 2
    while (candidate := numbered(prefixed, number)) in taken:
        number += 1
    return candidate


def numbered(name: str, number: int) -> str:
    """``name`` with the suffix ``_<number>``, cut to fit `MAX_NAME_CHARS`."""
    suffix = f"_{number}"
    return name[: MAX_NAME_CHARS - len(suffix)] + suffix


def model_safe_name(raw: str) -> str:
    """``raw`` as a tool name a model accepts; ``docs.search`` becomes ``docs_search``."""
    return _sanitised(raw) or "tool"


def _sanitised(raw: str) -> str:
    if _TOOL_NAME.fullmatch(raw):
        return raw
    name = _NOT_TOOL_NAME_CHARACTERS.sub("_", raw).strip("_")
    name = re.sub(r"_{2,}", "_", name)
    return name[:MAX_NAME_CHARS].rstrip("_")
