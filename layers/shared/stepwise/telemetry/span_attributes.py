"""The attributes of each kind of span, as OpenTelemetry's semantic conventions v1.37.0 name them: HTTP server
spans (stable) and GenAI inference, agent and tool spans (development). Imported only when spans are on.

The stable names (HTTP, URL, server, client, user agent, error) are the `opentelemetry-semantic-conventions`
package's constants. The GenAI names are written here: the package keeps them only in its private
`_incubating` modules, marked as moved to the GenAI conventions' own repository, so they are not imported
from it. Every value is metadata (ids, names, numbers, the request's settings): never a prompt, an answer,
tool arguments or a result, which the conventions leave opt-in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.semconv.attributes.client_attributes import CLIENT_ADDRESS
from opentelemetry.semconv.attributes.http_attributes import (
    HTTP_REQUEST_METHOD,
    HTTP_REQUEST_METHOD_ORIGINAL,
    HTTP_ROUTE,
)
from opentelemetry.semconv.attributes.network_attributes import NETWORK_PROTOCOL_VERSION
from opentelemetry.semconv.attributes.server_attributes import SERVER_ADDRESS, SERVER_PORT
from opentelemetry.semconv.attributes.url_attributes import URL_PATH, URL_QUERY, URL_SCHEME
from opentelemetry.semconv.attributes.user_agent_attributes import USER_AGENT_ORIGINAL

from stepwise.llm.endpoints import ModelEndpoint
from stepwise.models.messages import ChatRequest, Completion

GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_OUTPUT_TYPE = "gen_ai.output.type"
GEN_AI_TOOL_TYPE = "gen_ai.tool.type"
# gen_ai.provider.name: OpenTelemetry's well-known names for the configured providers, ours for the scripted one
PROVIDER_NAMES = {"openai": "openai", "bedrock": "aws.bedrock", "scripted": "stepwise.scripted"}
# The conventions' tool types: `extension` is a tool the agent itself executes (every tool of a profile:
# built-in, Python, HTTP/OpenAPI, MCP, A2A, another agent); `function` one whose call the model's client
# executes (a chat completions caller's own tools, handed back to it and never run here, so never a span).
AGENT_EXECUTED_TOOL = "extension"
_KNOWN_METHODS = frozenset({"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def provider_name(provider: str) -> str:
    """`gen_ai.provider.name` of a configured provider."""
    return PROVIDER_NAMES.get(provider, provider)


def _server(address: str | None, port: int | None) -> dict[str, Any]:
    if not address:
        return {}
    return {SERVER_ADDRESS: address} | ({SERVER_PORT: port} if port else {})


def chat_request_attributes(endpoint: ModelEndpoint, request: ChatRequest) -> dict[str, Any]:
    """A `chat` span's attributes known before the call: provider, model, server and the request's settings."""
    sampling = request.sampling
    attributes: dict[str, Any] = {
        GEN_AI_OPERATION_NAME: "chat",
        GEN_AI_PROVIDER_NAME: provider_name(endpoint.provider),
        GEN_AI_REQUEST_MODEL: endpoint.model,
        # a response schema asks for JSON; any other request for text
        GEN_AI_OUTPUT_TYPE: "json" if request.response_schema is not None else "text",
        **_server(endpoint.address, endpoint.port),
    }
    settings: dict[str, Any] = {
        "gen_ai.request.max_tokens": request.max_tokens,
        "gen_ai.request.temperature": request.temperature,
        "gen_ai.request.top_p": sampling.top_p,
        "gen_ai.request.seed": sampling.seed,
        "gen_ai.request.frequency_penalty": sampling.frequency_penalty,
        "gen_ai.request.presence_penalty": sampling.presence_penalty,
        "gen_ai.request.stop_sequences": list(request.stop) or None,
    }
    return attributes | {name: value for name, value in settings.items() if value is not None}


def chat_response_attributes(completion: Completion) -> dict[str, Any]:
    """A `chat` span's attributes from the response: its id, model, finish reason and token usage."""
    attributes: dict[str, Any] = {
        "gen_ai.usage.input_tokens": completion.usage.input_tokens,
        "gen_ai.usage.output_tokens": completion.usage.output_tokens,
    }
    if completion.response_id:
        attributes["gen_ai.response.id"] = completion.response_id
    if completion.model:
        attributes["gen_ai.response.model"] = completion.model
    if completion.finish_reason:
        attributes["gen_ai.response.finish_reasons"] = [completion.finish_reason]
    return attributes


def agent_attributes(profile: str, endpoint: ModelEndpoint, session_id: str | None) -> dict[str, Any]:
    """An `invoke_agent` span's attributes: the agent (profile), its model's provider and model, its session."""
    attributes: dict[str, Any] = {
        GEN_AI_OPERATION_NAME: "invoke_agent",
        GEN_AI_AGENT_NAME: profile,
        GEN_AI_PROVIDER_NAME: provider_name(endpoint.provider),
        GEN_AI_REQUEST_MODEL: endpoint.model,
        **_server(endpoint.address, endpoint.port),
    }
    if session_id:
        attributes[GEN_AI_CONVERSATION_ID] = session_id
    return attributes


def tool_attributes(name: str, call_id: str, description: str | None) -> dict[str, Any]:
    """An `execute_tool` span's attributes: the tool the agent runs, and the model's call id."""
    attributes: dict[str, Any] = {
        GEN_AI_OPERATION_NAME: "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        GEN_AI_TOOL_TYPE: AGENT_EXECUTED_TOOL,
    }
    if description:
        attributes["gen_ai.tool.description"] = description
    return attributes


def http_server_attributes(
    *,
    method: str,
    route: str | None,
    path: str,
    query: str,
    headers: Mapping[str, str],
    client_address: str | None,
    protocol: str | None,
) -> dict[str, Any]:
    """An HTTP SERVER span's attributes from the request: method, route, URL parts, server, client, agent.

    `headers` are in lower case. The scheme is the one the caller used: API Gateway says it in
    `X-Forwarded-Proto` (and the port in `X-Forwarded-Port`); `stepwise serve` speaks plain HTTP.
    """
    scheme = headers.get("x-forwarded-proto", "").split(",")[0].strip().lower() or "http"
    known = method.upper() if method.upper() in _KNOWN_METHODS else None
    attributes: dict[str, Any] = {
        HTTP_REQUEST_METHOD: known or "_OTHER",
        URL_PATH: path,
        URL_SCHEME: scheme,
    }
    if known is None:
        attributes[HTTP_REQUEST_METHOD_ORIGINAL] = method
    if route:
        attributes[HTTP_ROUTE] = route
    if query:
        attributes[URL_QUERY] = query
    host = urlsplit(f"//{headers.get('host', '')}")
    try:
        given_port = host.port
    except ValueError:
        given_port = None
    forwarded_port = headers.get("x-forwarded-port", "")
    port = int(forwarded_port) if forwarded_port.isdigit() else given_port or _DEFAULT_PORTS.get(scheme)
    attributes |= _server(host.hostname, port)
    if client_address:
        attributes[CLIENT_ADDRESS] = client_address
    if user_agent := headers.get("user-agent"):
        attributes[USER_AGENT_ORIGINAL] = user_agent
    if protocol and protocol.upper().startswith("HTTP/"):
        attributes[NETWORK_PROTOCOL_VERSION] = protocol[len("HTTP/") :]
    return attributes
