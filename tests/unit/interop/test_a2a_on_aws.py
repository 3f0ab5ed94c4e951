"""The A2A app as the streaming function serves it on AWS, behind API Gateway's stage and authorizer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import MutableMapping
from typing import Any

import httpx

from stepwise.config.model import StepwiseConfig
from stepwise.interop.registry import protocol_apps
from stepwise.streaming.lambda_app import REQUEST_CONTEXT_HEADER, StreamingApp

CONFIG = StepwiseConfig.model_validate(
    {
        "models": {"scripted": {"provider": "scripted", "scenarios": [{"turns": [{"content": "hi"}]}]}},
        "profiles": {"default": {"model": "scripted"}, "researcher": {"model": "scripted", "tools": ["search"]}},
    }
)
DOMAIN = "abc123.execute-api.eu-west-1.amazonaws.com"


def api_function(event: dict[str, Any], context: Any) -> dict[str, Any]:
    raise AssertionError("the card and a refused method never call the API")


def get(path: str, request_context: dict[str, Any], method: str = "GET") -> httpx.Response:
    """`path` through the streaming function's app, as the Web Adapter forwards it from API Gateway."""
    app = StreamingApp(api_function, lambda invoke: [], protocol_apps=protocol_apps(lambda: CONFIG))
    headers = {"host": DOMAIN, "x-forwarded-proto": "https", REQUEST_CONTEXT_HEADER: json.dumps(request_context)}

    async def asgi(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        await app(dict(scope), receive, send)

    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=asgi)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8080") as client:
            return await client.request(method, path, headers=headers, json={} if method == "POST" else None)

    return asyncio.run(call())


def test_a_card_behind_api_gateway_names_the_endpoint_with_its_stage() -> None:
    # Given API Gateway's request context for the researcher's card on the prod stage
    context = {"stage": "prod", "domainName": DOMAIN, "path": "/prod/a2a/researcher/.well-known/agent-card.json"}
    # When the streaming function serves the card
    card = get("/a2a/researcher/.well-known/agent-card.json", context).json()
    # Then its endpoint is the stage's URL, as clients reach it
    assert {each["url"] for each in card["supportedInterfaces"]} == {f"https://{DOMAIN}/prod/a2a/researcher"}


def test_the_root_card_is_the_default_profiles() -> None:
    # When the root's card is read on the stage
    card = get("/.well-known/agent-card.json", {"stage": "prod", "path": "/prod/.well-known/agent-card.json"}).json()
    # Then it is the default profile's, its endpoint under the stage
    assert (card["name"], card["supportedInterfaces"][0]["url"]) == ("default", f"https://{DOMAIN}/prod/a2a/default")


def test_a_method_without_an_identity_from_api_gateway_is_401() -> None:
    # Given a request context without identity (a header sent by the client is not one)
    context = {"stage": "prod", "path": "/prod/a2a/default", "identity": {}}
    # When a method is called, then it is refused before the API is called
    assert get("/a2a/default", context, method="POST").status_code == 401
