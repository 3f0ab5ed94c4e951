"""An OpenAPI source as HTTP tools: the document's selected operations under one API configuration."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

from pydantic import ValidationError

from stepwise.config.credentials import SecretResolver
from stepwise.config.http_api import SCHEMAS_CHECKED, ApiConfig, ApiKeyConfig, HttpToolConfig
from stepwise.config.openapi_source import OpenApiSourceConfig
from stepwise.config.url_checks import validated_http_url
from stepwise.errors import ConfigError
from stepwise.inputs.validation_problems import reasons_of
from stepwise.telemetry.observability import logger
from stepwise.tools.guards import HostResolver, refusal_without_resolving, system_resolver
from stepwise.tools.http_clients import ClientsByOrigin
from stepwise.tools.http_tool import HttpTool
from stepwise.tools.openapi.loader import DocumentLoader, LoadedDocument
from stepwise.tools.openapi.operations import (
    Operation,
    endpoint_for,
    list_operations,
    select_operations,
    unique_names,
)

_SERVER_VARIABLE = re.compile(r"\{([^{}]+)\}")


@dataclass(frozen=True)
class OpenApiImport:
    """An OpenAPI source as an API configuration, with what the import left out or renamed, and why."""

    api: ApiConfig
    skipped: list[str] = field(default_factory=list)
    renamed: list[str] = field(default_factory=list)
    refused_server: str | None = None

    @property
    def notes(self) -> list[str]:
        """One line per operation left out or renamed, and one when every call will be refused."""
        refused = [self.refused_server] if self.refused_server is not None else []
        return [f"skipped {note}" for note in self.skipped] + [f"renamed {note}" for note in self.renamed] + refused


def import_openapi_tools(
    source: OpenApiSourceConfig,
    *,
    loader: DocumentLoader,
    http_clients: ClientsByOrigin,
    secret_resolver: SecretResolver,
    host_resolver: HostResolver = system_resolver,
) -> tuple[list[HttpTool], list[str]]:
    """Read the source's document and make one `HttpTool` per selected operation, with the import's notes.

    Everything is checked here, at load time: a document that cannot be imported raises `ConfigError`
    naming the source, the operation and the reason, never at the first call.
    """
    imported = openapi_api_config(source, loader.load(source))
    api = imported.api
    tools = [
        HttpTool(api, endpoint, http_clients=http_clients, secret_resolver=secret_resolver, host_resolver=host_resolver)
        for endpoint in api.tools
    ]
    return tools, imported.notes


def openapi_api_config(source: OpenApiSourceConfig, loaded: LoadedDocument) -> OpenApiImport:
    """The `ApiConfig` an OpenAPI source stands for: base URL, credential, limits and one tool per operation.

    An operation that cannot be offered (a body no tool can send, a required cookie, a broken schema) is
    left out and named in `OpenApiImport.skipped` with the reason, or fails the import with
    ``onUnsupported: fail``.
    """
    where = f"openapi {source.describe()}"
    document = loaded.document
    selected = select_operations(list_operations(document, where=where), source.include, source.exclude, where=where)
    operations, renamed = unique_names(selected)
    endpoints: list[HttpToolConfig] = []
    skipped: list[str] = []
    for operation in operations:
        try:
            endpoints.append(_readable_endpoint(document, operation, where=where, credential=source.api_key))
        except ConfigError as exc:
            if source.on_unsupported == "fail":
                raise
            skipped.append(str(exc).removeprefix(f"{where}: "))
    if not endpoints:
        reasons = f" ({len(skipped)} skipped: {skipped[0]}...)" if skipped else ""
        raise ConfigError(f"{where}: no operation is left to offer as a tool{reasons}")
    if skipped:
        logger.info("openapi operations skipped", extra={"source": where, "skipped": len(skipped)})
    settings: dict[str, Any] = {
        "url": base_url_for(source, loaded, where=where),
        "apiKey": source.api_key,
        "maxExecutionTime": source.max_execution_time,
        "internal": source.internal,
        "maxResponseBytes": source.max_response_bytes,
        "sideEffects": source.side_effects,
        "idempotencyKey": source.idempotency_key,
        "tools": endpoints,
    }
    try:
        api = ApiConfig.model_validate(settings, context={SCHEMAS_CHECKED: True})
        return OpenApiImport(api=api, skipped=skipped, renamed=renamed, refused_server=_refused_server(source, api.url))
    except ValidationError as exc:
        raise ConfigError(f"{where}: {reasons_of(exc)}") from None


def _readable_endpoint(
    document: dict[str, Any], operation: Operation, *, where: str, credential: ApiKeyConfig | None
) -> HttpToolConfig:
    """`endpoint_for`, with a malformed part of the document reported as the operation's `ConfigError`.

    The walk expects what the OpenAPI schema allows; a number where a schema goes or a list where a mapping
    does breaks it before any check could name the problem, and the operation is then as unusable as one a
    check refuses: skipped, or failing the import, with the operation named.
    """
    try:
        return endpoint_for(document, operation, where=where, credential=credential)
    except (TypeError, AttributeError, KeyError, IndexError) as exc:
        raise ConfigError(
            f"{where}: {operation.label}: a malformed part of its description ({type(exc).__name__}: {exc})"
        ) from None


def base_url_for(source: OpenApiSourceConfig, loaded: LoadedDocument, *, where: str) -> str:
    """``baseUrl`` when configured, else the document's first server (variables at their defaults).

    A relative server URL is resolved against the URL the document was fetched from; a document read
    from a file or S3 has nothing to resolve it against, so it then needs ``baseUrl``.
    """
    if source.base_url is not None:
        return source.base_url
    servers = loaded.document.get("servers")
    first = servers[0] if isinstance(servers, list) and servers and isinstance(servers[0], dict) else {}
    declared = first.get("url")
    url = _with_variables(declared if isinstance(declared, str) else "/", first.get("variables"), where=where)
    if not urlsplit(url).scheme:
        if loaded.location is None:
            named = f"servers[0].url {url!r} is relative" if servers else "the document names no server"
            raise ConfigError(f"{where}: {named}; set baseUrl")
        url = urljoin(loaded.location, url)
    try:
        return validated_http_url(url, what="servers[0].url")
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}; set baseUrl") from None


def _refused_server(source: OpenApiSourceConfig, url: str) -> str | None:
    """What to say when the document's server is an address every call to is refused (the SSRF guard's)."""
    if source.base_url is not None or source.internal:
        return None  # a configured baseUrl is checked by `stepwise config check` as a field of its own
    reason = refusal_without_resolving(urlsplit(url).hostname or "")
    if reason is None:
        return None
    return (
        f"servers[0].url {url} is {reason}: every call will be refused; mark the source internal: true "
        "if it is meant to be reached, or set baseUrl"
    )


def _with_variables(url: str, variables: object, *, where: str) -> str:
    defaults = variables if isinstance(variables, dict) else {}

    def substitute(match: re.Match[str]) -> str:
        variable = defaults.get(match.group(1))
        if not isinstance(variable, dict) or variable.get("default") is None:
            raise ConfigError(f"{where}: server variable {match.group(1)} has no default; set baseUrl")
        return str(variable["default"])

    return _SERVER_VARIABLE.sub(substitute, url)
