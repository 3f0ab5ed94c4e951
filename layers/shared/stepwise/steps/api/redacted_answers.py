"""Every JSON answer of the API holds no secret the configuration names, whatever was stored.

The store redacts what it writes, with the secrets its process knew; an item written before this process
knew a secret (by an older version, or a process that could not resolve it yet) would still be answered
as it was stored. So the API function registers the configuration's secrets before it answers anything
(`secrets_known_first`), and every JSON body it answers has each of its strings redacted
(`redacted_answer`): each string, not the JSON text, so the body stays the JSON it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware

from stepwise.config.redaction import redact_known_secrets, redact_strings

if TYPE_CHECKING:
    from stepwise.steps.api.services import LazyServices


def secrets_known_first(services: LazyServices) -> Callable[[APIGatewayRestResolver, NextMiddleware], Response[Any]]:
    """Middleware: the configuration is loaded (its secrets registered) before a route runs, and secrets it
    could not resolve then are tried again."""

    def known_first(app: APIGatewayRestResolver, next_middleware: NextMiddleware) -> Response[Any]:
        services.get().runtime.known_secrets()
        return next_middleware(app)

    return known_first


def _content_type(answer: dict[str, Any]) -> str:
    for name, value in (answer.get("headers") or {}).items():
        if name.lower() == "content-type":
            return str(value)
    for name, values in (answer.get("multiValueHeaders") or {}).items():
        if name.lower() == "content-type" and values:
            return str(values[0])
    return ""


def redacted_answer(answer: dict[str, Any]) -> dict[str, Any]:
    """`answer` (a proxy result) with known secrets redacted from each string of its JSON body; the same
    object when the body holds none (the body is searched whole first, which is one pass)."""
    body = answer.get("body")
    if not isinstance(body, str) or answer.get("isBase64Encoded") or "json" not in _content_type(answer).lower():
        return answer
    if redact_known_secrets(body) is body:
        return answer
    try:
        document = json.loads(body)
    except ValueError:
        return {**answer, "body": redact_known_secrets(body)}
    return {**answer, "body": json.dumps(redact_strings(document), separators=(",", ":"))}
