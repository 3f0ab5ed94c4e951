"""The A2A app: Agent Cards, and each profile's JSON-RPC and HTTP+JSON endpoints, on the SDK's routes.

Paths: `/.well-known/agent-card.json` (the default profile's card), `/a2a/{profile}/.well-known/agent-card.json`,
`POST /a2a/{profile}` (JSON-RPC) and `/a2a/{profile}/message:send`, `…/tasks/{id}` and the rest of the
HTTP+JSON binding. Cards are public; every method needs the API's key (401 without a caller identity).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import DefaultServerCallContextBuilder, create_jsonrpc_routes, create_rest_routes
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from stepwise.config.model import StepwiseConfig
from stepwise.interop.a2a.cards import agent_card, base_url_of
from stepwise.interop.a2a.handler import CALLER_STATE, PROFILE_STATE, RunsRequestHandler
from stepwise.interop.a2a.paths import A2A_PREFIX, AGENT_CARD_PATH
from stepwise.interop.api_calls import api_caller_of
from stepwise.steps.api.ownership import request_owner
from stepwise.steps.api.problems import ApiError, Unauthorized

AGENT_PATH = A2A_PREFIX + "/{profile}"


def a2a_app(config: Callable[[], StepwiseConfig]) -> A2aGate:
    """The A2A app: the SDK's routes over the API, behind the gate of profiles and callers."""
    return A2aGate(_starlette_app(config), config)


class A2aGate:
    """In front of the SDK's routes: an unknown profile is 404, a method without a caller identity 401 (one
    that cannot name an owner 400, as the API answers).

    The identity is the one the API reads (the API key's id, or the IAM caller): on AWS API Gateway's
    authorizer and usage plan have checked the key before the request gets here.
    """

    def __init__(self, app: Starlette, config: Callable[[], StepwiseConfig]) -> None:
        self._app = app
        self._config = config

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """The ASGI application."""
        path: str = scope["path"]
        profile = _profile_in(path)
        if profile is not None and profile not in self._config().profiles:
            await _error(404, "not_found", f"no agent {profile}: the agents are the profiles")(scope, receive, send)
            return
        if path not in (AGENT_CARD_PATH, f"{A2A_PREFIX}/{profile}{AGENT_CARD_PATH}"):
            try:
                request_owner({"requestContext": api_caller_of(scope).request_context})
            except ApiError as refused:
                answer = _error(refused.status, refused.type, refused.message)
                if isinstance(refused, Unauthorized):
                    answer = _error(401, refused.type, f"{refused}: send the API key as x-api-key or a bearer token")
                    answer.headers["www-authenticate"] = "Bearer"
                await answer(scope, receive, send)
                return
        await self._app(scope, receive, send)


class _CallerContext(DefaultServerCallContextBuilder):
    """The SDK's call context, with the request's caller of the API and the profile its path names."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[CALLER_STATE] = api_caller_of(dict(request.scope))
        context.state[PROFILE_STATE] = request.path_params["profile"]
        return context


def _starlette_app(config: Callable[[], StepwiseConfig]) -> Starlette:
    handler = RunsRequestHandler(config)
    context = _CallerContext()

    async def card(request: Request) -> Response:
        settings = config()
        name = request.path_params.get("profile", settings.default_profile)
        request_context = api_caller_of(dict(request.scope)).request_context
        # Starlette's header names are lower-case
        root = base_url_of(request.url.scheme, dict(request.headers), request_context, request.url.path)
        return JSONResponse(agent_card_to_dict(agent_card(name, settings.profiles[name], root)))

    routes: list[BaseRoute] = [
        Route(AGENT_CARD_PATH, card, methods=["GET"]),
        Route(AGENT_PATH + AGENT_CARD_PATH, card, methods=["GET"]),
        *create_jsonrpc_routes(handler, AGENT_PATH, context_builder=context, enable_v0_3_compat=True),
        *create_rest_routes(handler, context_builder=context, path_prefix=AGENT_PATH),
    ]
    return Starlette(routes=routes)


def _profile_in(path: str) -> str | None:
    """The profile a path under `/a2a/` names."""
    if not path.startswith(A2A_PREFIX + "/"):
        return None
    return path.removeprefix(A2A_PREFIX + "/").split("/", 1)[0] or None


def _error(status: int, kind: str, message: str) -> JSONResponse:
    """An error in the API's shape."""
    return JSONResponse({"error": {"type": kind, "message": message}}, status_code=status)
