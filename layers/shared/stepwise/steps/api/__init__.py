"""The HTTP API: routes, error mapping, ownership, idempotency and the chat-completions facade.

`functions/api/app.py` builds a `RequestScopedResolver` (a Powertools resolver) and calls
`register_routes` on it; the logic behind each route is a plain function taking its dependencies
(`ApiServices`).
"""

from stepwise.steps.api.resolver import RequestScopedResolver
from stepwise.steps.api.routes import ROUTES, json_body_reader, openapi_document, register_routes
from stepwise.steps.api.services import ApiServices, LazyServices, services_from_environment

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
