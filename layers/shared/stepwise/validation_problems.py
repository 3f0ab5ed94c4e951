"""Describing a pydantic `ValidationError` by field and reason only, never by the offending value (every
boundary that validates with pydantic words its errors this way)."""

from __future__ import annotations

from pydantic import ValidationError


def describe_problems(exc: ValidationError, *, limit: int | None = None, top_level: str = "(top level)") -> str:
    """`field.path: reason` for each problem (the first `limit` of them), joined by "; ".

    The values are left out on purpose: they may be model output or user text, which must not reach
    error messages and logs.
    """
    errors = exc.errors()[:limit]
    return "; ".join(f"{'.'.join(str(part) for part in error['loc']) or top_level}: {error['msg']}" for error in errors)
