"""Recorded provider error bodies (tests/fixtures/providers/error_bodies.yaml), filled in for a test."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

ERROR_BODIES = Path(__file__).resolve().parents[1] / "fixtures" / "providers" / "error_bodies.yaml"


@cache
def _recorded() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(ERROR_BODIES.read_text(encoding="utf-8"))
    return loaded


def _filled(value: Any, values: dict[str, Any]) -> Any:
    if isinstance(value, str):
        # a field that is one placeholder takes the value as it is (llama.cpp's numbers are JSON numbers)
        if value.startswith("{") and value.endswith("}") and value[1:-1] in values:
            return values[value[1:-1]]
        return value.format(**values) if values else value
    if isinstance(value, dict):
        return {key: _filled(item, values) for key, item in value.items()}
    if isinstance(value, list):
        return [_filled(item, values) for item in value]
    return value


def recorded_error(provider: str, name: str, **values: Any) -> dict[str, Any]:
    """The recorded error `name` of `provider` (`status`, `body` or `code`/`message`, `source`), its
    `{placeholders}` filled from `values`."""
    entry: dict[str, Any] = _recorded()[provider][name]
    return _filled(entry, values)
