"""Describing a pydantic `ValidationError` by field and reason only, never by the offending value (every
boundary that validates with pydantic words its errors this way)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError


def describe_problems(exc: ValidationError, *, limit: int | None = None, top_level: str = "(top level)") -> str:
    """`field.path: reason` for each problem (the first `limit` of them), joined by "; ".

    The values are left out on purpose: they may be model output or user text, which must not reach
    error messages and logs.
    """
    errors = exc.errors()[:limit]
    return "; ".join(f"{'.'.join(str(part) for part in error['loc']) or top_level}: {error['msg']}" for error in errors)


def reason_of(error: Mapping[str, Any]) -> str:
    """One problem's reason as a person reads it: pydantic's message without its "Value error, " prefix."""
    return str(error.get("msg", "invalid")).removeprefix("Value error, ")


def reasons_of(exc: ValidationError) -> str:
    """The reasons of every problem, joined by "; " (the field left to the caller, which knows its name)."""
    return "; ".join(reason_of(error) for error in exc.errors())
