"""Agent Cards: each profile described as an A2A agent, at the address the client reached the server by.

A card is built from the configuration alone: serving a public card contacts no tool source, so a
profile's tools show by the names it lists (an MCP server's or OpenAPI document's descriptions would
need them read).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_CURRENT, TransportProtocol

from stepwise.config.model import AgentProfile
from stepwise.interop.a2a.paths import A2A_PREFIX

API_KEY_SCHEME = "apiKey"
BEARER_SCHEME = "bearer"
MODES = ["text/plain", "application/json"]


def agent_url(base_url: str, profile: str) -> str:
    """The URL of a profile's A2A endpoint (JSON-RPC at it, HTTP+JSON under it)."""
    return f"{base_url}{A2A_PREFIX}/{profile}"


def agent_card(name: str, profile: AgentProfile, base_url: str) -> AgentCard:
    """The card of profile `name`, its endpoint under `base_url`."""
    url = agent_url(base_url, name)
    description = profile.description or f"The Stepwise agent profile {name}: it answers a question, using its tools."
    return AgentCard(
        name=name,
        description=description,
        version=_version(profile),
        provider=AgentProvider(organization="Stepwise", url=base_url),
        supported_interfaces=_interfaces(url),
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        security_schemes={
            API_KEY_SCHEME: SecurityScheme(
                api_key_security_scheme=APIKeySecurityScheme(
                    location="header", name="x-api-key", description="The API key of the Stepwise API."
                )
            ),
            BEARER_SCHEME: SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer", description="The same API key, as `Authorization: Bearer <key>`."
                )
            ),
        },
        # either scheme: two requirements, each naming one
        security_requirements=[
            SecurityRequirement(schemes={API_KEY_SCHEME: StringList()}),
            SecurityRequirement(schemes={BEARER_SCHEME: StringList()}),
        ],
        default_input_modes=MODES,
        default_output_modes=_output_modes(profile),
        skills=skills(name, description, profile),
    )


def skills(name: str, description: str, profile: AgentProfile) -> list[AgentSkill]:
    """The profile's skill (answering, tagged with its tools), then one skill per tool it lists by name."""
    tools: Sequence[str] = profile.tools or []
    answer = AgentSkill(
        id=name, name=name, description=description, tags=["stepwise", *tools], output_modes=_output_modes(profile)
    )
    return [
        answer,
        *(
            AgentSkill(id=f"{name}.{tool}", name=tool, description=f"Answers using the tool {tool}.", tags=[tool])
            for tool in tools
        ),
    ]


def base_url_of(scheme: str, headers: Mapping[str, str], request_context: Mapping[str, Any], path: str) -> str:
    """The URL the client reached the API by, without a trailing slash.

    The host is the request's `Host` (else API Gateway's `domainName`), the scheme the one a proxy in front
    forwarded. Behind API Gateway the path the client used holds the stage (`/prod/a2a/…`) or a custom
    domain's base path, which the request reaching us lacks: the difference is the base path.
    """
    host = headers.get("host") or str(request_context.get("domainName") or "")
    forwarded = headers.get("x-forwarded-proto", "").split(",")[0].strip()
    client_path = str(request_context.get("path") or path)
    base_path = client_path[: -len(path)] if path and client_path.endswith(path) else ""
    return f"{forwarded or scheme}://{host}{base_path.rstrip('/')}"


def _interfaces(url: str) -> list[AgentInterface]:
    """JSON-RPC and HTTP+JSON of protocol 1.0 at `url`; then JSON-RPC of 0.3, which the endpoint answers too:
    that interface gives the card 0.3's fields (`url`, `preferredTransport`), which clients of 0.3 read."""
    jsonrpc, http_json = TransportProtocol.JSONRPC.value, TransportProtocol.HTTP_JSON.value
    return [
        AgentInterface(url=url, protocol_binding=jsonrpc, protocol_version=PROTOCOL_VERSION_CURRENT),
        AgentInterface(url=url, protocol_binding=http_json, protocol_version=PROTOCOL_VERSION_CURRENT),
        AgentInterface(url=url, protocol_binding=jsonrpc, protocol_version=PROTOCOL_VERSION_0_3),
    ]


def _output_modes(profile: AgentProfile) -> list[str]:
    return MODES if profile.response_schema is not None else ["text/plain"]


def _version(profile: AgentProfile) -> str:
    """Changes with the profile: a digest of its configuration."""
    return hashlib.sha256(profile.model_dump_json().encode("utf-8")).hexdigest()[:12]
