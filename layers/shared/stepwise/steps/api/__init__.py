"""The HTTP API: routes, error mapping, ownership, idempotency and the chat-completions facade.

`functions/api/app.py` builds a `RequestScopedResolver` (a Powertools resolver) and calls
`register_routes` on it; the logic behind each route is a plain function taking its dependencies
(`ApiServices`).

The names below are imported on first use, so that importing one light module of this package (the
authorizer's `caller_key`) does not load the whole API and Powertools' event handler.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stepwise.steps.api.request_checks import json_body_reader
    from stepwise.steps.api.resolver import RequestScopedResolver
    from stepwise.steps.api.route_table import ROUTES
    from stepwise.steps.api.routes import openapi_document, register_routes
    from stepwise.steps.api.services import ApiServices, LazyServices, services_from_environment

_MODULE_OF = {
    "RequestScopedResolver": "resolver",
    "ROUTES": "route_table",
    "json_body_reader": "request_checks",
    "openapi_document": "routes",
    "register_routes": "routes",
    "ApiServices": "services",
    "LazyServices": "services",
    "services_from_environment": "services",
}

__all__ = [
    "ROUTES",
    "ApiServices",
    "LazyServices",
    "RequestScopedResolver",
    "json_body_reader",
    "openapi_document",
    "register_routes",
    "services_from_environment",
]


def __getattr__(name: str) -> Any:
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_MODULE_OF[name]}"), name)
