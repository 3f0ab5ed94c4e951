"""The span of each API request: the root of the trace of the run a request starts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware

from stepwise.steps.api.problems import ApiError
from stepwise.steps.api.services import LazyServices


def traced_requests(services: LazyServices) -> Callable[[APIGatewayRestResolver, NextMiddleware], Response[Any]]:
    """Middleware: each API request is the SERVER span its run's trace starts from (the console's files
    are not traced). A refused request's span has its 4xx; anything else that escapes is a 500."""

    def traced(app: APIGatewayRestResolver, next_middleware: NextMiddleware) -> Response[Any]:
        event = app.current_event
        route = event.resource or event.path
        if route.startswith("/ui"):
            return next_middleware(app)
        headers = {str(name): str(value) for name, value in (event.headers or {}).items()}
        with services.get().runtime.spans.request(
            method=event.http_method, route=route, path=event.path, headers=headers
        ) as span:
            try:
                response = next_middleware(app)
            except ApiError as problem:
                span.responded(problem.status)
                raise
            except Exception:
                span.responded(500)
                raise
            span.responded(response.status_code)
            return response

    return traced
