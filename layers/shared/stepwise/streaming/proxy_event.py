"""The API Gateway REST (v1) proxy event of one HTTP request, as `ApiFunction` and the stream routes read it.

The request context (who is calling) is given by the caller: `stepwise serve` makes one from the
presented key; the streaming function takes the one API Gateway filled in, which the Lambda Web
Adapter forwards in `x-amzn-request-context`.
"""

from __future__ import annotations

import base64
import re
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from stepwise.steps.api.route_table import CONSOLE_ROUTES, ROUTES


def _resource_pattern(resource: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(resource)) + "$")


_RESOURCES = [
    (resource, _resource_pattern(resource))
    for resource in dict.fromkeys(path for _, path in (*ROUTES, *CONSOLE_ROUTES))
]


def group_pairs(pairs: list[tuple[str, str]]) -> tuple[dict[str, str] | None, dict[str, list[str]] | None]:
    """API Gateway's two views of repeated names: the last value of each, and all values of each."""
    if not pairs:
        return None, None
    multi: dict[str, list[str]] = {}
    for name, value in pairs:
        multi.setdefault(name, []).append(value)
    return {name: values[-1] for name, values in multi.items()}, multi


def resource_of(path: str) -> tuple[str, dict[str, str] | None]:
    """The API resource (`/v1/runs/{run_id}`) a path matches, with its path parameters; the path itself if none.

    A trailing slash is ignored, as API Gateway ignores it (`/ui/` is the resource `/ui`).
    """
    for candidate, pattern in _RESOURCES:
        match = pattern.match(path) or (pattern.match(path[:-1]) if len(path) > 1 and path.endswith("/") else None)
        if match:
            return candidate, match.groupdict() or None
    return path, None


def proxy_event(
    *, method: str, target: str, headers: list[tuple[str, str]], body: bytes, request_context: dict[str, Any]
) -> dict[str, Any]:
    """The proxy event for one HTTP request (`target` is the path with its query)."""
    split = urlsplit(target)
    path = unquote(split.path) or "/"
    resource, path_parameters = resource_of(path)
    single_headers, multi_headers = group_pairs(headers)
    query, multi_query = group_pairs(parse_qsl(split.query, keep_blank_values=True))
    try:
        text, encoded = (body.decode("utf-8"), False) if body else (None, False)
    except UnicodeDecodeError:
        text, encoded = base64.b64encode(body).decode("ascii"), True
    return {
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "headers": single_headers,
        "multiValueHeaders": multi_headers,
        "queryStringParameters": query,
        "multiValueQueryStringParameters": multi_query,
        "pathParameters": path_parameters,
        "stageVariables": None,
        "requestContext": {**request_context, "httpMethod": method, "resourcePath": resource},
        "body": text,
        "isBase64Encoded": encoded,
    }
