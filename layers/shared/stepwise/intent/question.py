"""Finding the question in a request body with the subset of GJSON paths the Higress plugin uses."""

from __future__ import annotations

from typing import Any

from stepwise.config.intent import DEFAULT_QUESTION_PATH

_REVERSE = "@reverse"
_MISSING = object()


def _split_path(path: str) -> list[str]:
    """Split a GJSON path on dots; a backslash makes the next character literal (`a\\.b` is one key)."""
    parts: list[str] = []
    current: list[str] = []
    escaped = False
    for char in path:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ".":
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _step(value: Any, part: str) -> Any:
    if part == _REVERSE:
        return list(reversed(value)) if isinstance(value, list) else value
    if isinstance(value, dict):
        return value.get(part, _MISSING)
    if isinstance(value, list) and part.isdigit():
        index = int(part)
        return value[index] if index < len(value) else _MISSING
    return _MISSING


def _as_text(value: Any) -> str | None:
    """A string, or the text parts of an OpenAI-style content list joined; None for anything else."""
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, list):
        texts = [
            part["text"]
            for part in value
            if isinstance(part, dict)
            and part.get("type") in ("text", "input_text")
            and isinstance(part.get("text"), str)
        ]
        joined = "\n".join(text for text in texts if text.strip())
        return joined or None
    return None


def extract_question(body: dict[str, Any], path: str = DEFAULT_QUESTION_PATH) -> str | None:
    """Return the question found at `path` in a request body, or None when there is none.

    Paths are dotted keys with numeric list indices and `@reverse` (so the default,
    `messages.@reverse.0.content`, is the last message's content). Content given as a list of parts
    yields its text parts. When the path finds nothing, a string `input` field (the Responses API and
    Stepwise's own run request) is used. Never raises.
    """
    if not isinstance(body, dict):
        return None
    value: Any = body
    for part in _split_path(path):
        value = _step(value, part)
        if value is _MISSING:
            break
    found = None if value is _MISSING else _as_text(value)
    if found is not None:
        return found
    return _as_text(body.get("input")) if isinstance(body.get("input"), str) else None
