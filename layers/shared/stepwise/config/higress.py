"""Reading a Higress ``ai-agent`` plugin configuration as a Stepwise configuration.

A gateway agent moves over unchanged: its file has a top-level ``llm`` block and ``apis``, where each API
is either the plugin's own shape (``apiProvider`` + ``api``, an OpenAPI document as a string) or the
``url`` + ``tools[]`` shape (``toolName``, ``description``, ``method``, ``path``, ``parameter``, and
``apiKey {in, name, value}``). `higress_to_stepwise` turns it into a Stepwise configuration mapping:

- ``llm`` becomes the model ``higress``: an OpenAI-compatible endpoint at ``<scheme>://<domain><path>``
  (``path`` must end in ``/chat/completions``), with its ``model``, ``apiKey``, ``maxExecutionTime`` and
  ``maxTokens``;
- every API becomes an ``openapi`` source (the document inline; its ``servers[0].url`` as the base, else
  the provider's domain) or an ``apis`` entry, with the ``apiKey`` placed as the plugin places it: in the
  query for ``in: query``, else in the named header; ``internal: true`` on an ``apiProvider`` (a Stepwise
  addition, as on Stepwise's own shapes) lets it be called on a loopback or private address;
- one ``default`` profile uses the model with the ReAct Thought/Action text protocol the plugin uses,
  ``maxIterations`` as its iteration limit, and ``jsonResp.jsonSchema`` as its response schema, written
  as the Higress READMEs write it: a YAML mapping (English README), or text holding YAML (the Chinese
  README's ``jsonSchema: |``) or JSON.

The scheme: the plugin calls a Higress service cluster by ``serviceName`` and ``servicePort``, and the cluster's
registry (not this file) says whether it speaks http or https. Stepwise calls the domain itself, so it reads
the scheme from the port: 443 is https, 80 is http. Any other port is ambiguous (``:8443`` and ``:8080`` are
both common) and refused at load unless the block says ``protocol: http`` or ``protocol: https``, a field
Stepwise adds and the plugin ignores, so the file stays valid for Higress.

A file holding only part of a plugin configuration (the READMEs show ``jsonResp:`` alone, "added to the
above configuration") is recognised, and `higress_fragment_explanation` says so in one line.

``promptTemplate.language`` (``CH`` or ``EN``) becomes the profile's ``language``, so Stepwise's own prompts
are Chinese or English; the templates in ``promptTemplate`` and ``returnResponseTemplate`` are accepted and
not used (Stepwise has its own prompts and response format); the conversion says so in its notes.

An ``ai-intent`` plugin configuration (``scene`` + ``llm``) is recognised too: it is Stepwise's ``intent:``
section as it is, and `higress_intent_placement` says so in one line, with its problems if it has any.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from stepwise.config.intent import HIGRESS_SINGLE_CATEGORY, IntentConfig
from stepwise.errors import ConfigError
from stepwise.inputs.validation_problems import describe_problems

MODEL_NAME = "higress"
PROFILE_NAME = "default"
CHAT_COMPLETIONS_SUFFIX = "/chat/completions"
DEFAULT_MAX_ITERATIONS = 15
DEFAULT_MAX_EXECUTION_MS = 50_000
DEFAULT_MAX_TOKENS = 1000

_STRICT = ConfigDict(extra="forbid", populate_by_name=True, hide_input_in_errors=True)
# The top-level keys of an ai-agent plugin configuration.
AGENT_KEYS = frozenset({"llm", "apis", "promptTemplate", "jsonResp", "returnResponseTemplate"})


class HigressApiKey(BaseModel):
    """``apiKey`` of an API provider: ``in`` is ``query``, ``header`` or ``none``."""

    model_config = _STRICT

    location: str = Field(default="header", alias="in")
    name: str = ""
    value: str = Field(default="", repr=False)


Scheme = Literal["http", "https"]


def _lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


class HigressLlm(BaseModel):
    """The plugin's ``llm`` block; zeros mean the plugin's defaults, as in the plugin. ``protocol`` is
    Stepwise's: the scheme of a ``servicePort`` other than 80 and 443."""

    model_config = _STRICT

    api_key: str = Field(alias="apiKey", min_length=1, repr=False)
    service_name: str | None = Field(default=None, alias="serviceName")
    service_port: int = Field(alias="servicePort", gt=0, le=65_535)
    protocol: Annotated[Scheme, BeforeValidator(_lower)] | None = None
    domain: str = Field(min_length=1)
    path: str = Field(min_length=1)
    model: str = Field(min_length=1)
    max_iterations: int = Field(default=0, alias="maxIterations", ge=0)
    max_execution_time: int = Field(default=0, alias="maxExecutionTime", ge=0)
    max_tokens: int = Field(default=0, alias="maxTokens", ge=0)


class HigressApiProvider(BaseModel):
    """Where an API is served, and its credential; ``protocol`` and ``internal`` are Stepwise's (the scheme of
    a ``servicePort`` other than 80 and 443, and calls allowed to a loopback or private address)."""

    model_config = _STRICT

    service_name: str | None = Field(default=None, alias="serviceName")
    service_port: int = Field(alias="servicePort", gt=0, le=65_535)
    protocol: Annotated[Scheme, BeforeValidator(_lower)] | None = None
    internal: bool = False
    domain: str = Field(min_length=1)
    api_key: HigressApiKey | None = Field(default=None, alias="apiKey")
    max_execution_time: int | None = Field(default=None, alias="maxExecutionTime", gt=0)


class HigressApi(BaseModel):
    """One ``apis`` entry in the plugin's shape: a provider and its OpenAPI document as text."""

    model_config = _STRICT

    api_provider: HigressApiProvider = Field(alias="apiProvider")
    api: str = Field(min_length=1)


class HigressJsonResponse(BaseModel):
    """``jsonResp``: answer as JSON, following ``jsonSchema`` (a mapping, or YAML or JSON text) when given."""

    model_config = _STRICT

    enable: bool = False
    json_schema: dict[str, Any] | str | None = Field(default=None, alias="jsonSchema")


class HigressAgentConfig(BaseModel):
    """The whole plugin configuration."""

    model_config = _STRICT

    llm: HigressLlm
    apis: list[dict[str, Any]] = Field(min_length=1)
    prompt_template: dict[str, Any] | None = Field(default=None, alias="promptTemplate")
    json_resp: HigressJsonResponse | None = Field(default=None, alias="jsonResp")
    return_response_template: str | None = Field(default=None, alias="returnResponseTemplate")


@dataclass(frozen=True)
class HigressConversion:
    """The Stepwise configuration mapping, and notes on what of the original is not used."""

    config: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def is_higress_agent_config(raw: object) -> bool:
    """True for a mapping in the plugin's shape: a top-level ``llm`` block and no Stepwise ``models``."""
    return isinstance(raw, Mapping) and "llm" in raw and "models" not in raw


def higress_agent_fragment(raw: object) -> list[str]:
    """The ai-agent keys of a mapping that holds nothing else and lacks ``llm`` or ``apis``; empty otherwise.

    ``apis:`` alone is not taken for one: it is as likely a Stepwise ``tools.apis`` section put at the top.
    """
    if not isinstance(raw, Mapping) or not set(raw) - {"apis"} or not set(raw) <= AGENT_KEYS:
        return []
    return [] if {"llm", "apis"} <= set(raw) else [str(key) for key in raw]


def higress_fragment_explanation(keys: list[str], *, source: str = "<config>") -> str:
    """One line saying a file is part of a Higress ai-agent configuration, and what it needs."""
    shown = ", ".join(f"{key}:" for key in keys)
    return (
        f"{source}: this is a Higress ai-agent fragment ({shown}); a configuration needs llm: and apis: beside "
        "it: add it to the plugin configuration it belongs to, as the Higress README does"
    )


def is_higress_intent_config(raw: object) -> bool:
    """True for a mapping in the ai-intent plugin's shape: a top-level ``scene`` block, no agent or Stepwise keys."""
    return isinstance(raw, Mapping) and "scene" in raw and not {"apis", "models", "profiles"} & raw.keys()


def higress_intent_placement(raw: Mapping[str, Any], *, source: str = "<config>") -> str:
    """One line saying where an ai-intent configuration goes, and whether it is valid there.

    The plugin's file configures only the classification, not an agent, so it cannot be a Stepwise
    configuration on its own; it is accepted as it is as the ``intent:`` section of one.
    """
    where = (
        "it goes as it is under intent: in a Stepwise configuration that has models: and profiles:, "
        f"with routes: sending each option (use_for {HIGRESS_SINGLE_CATEGORY} for scene.category) to a profile"
    )
    try:
        IntentConfig.model_validate(raw)
    except ValidationError as exc:
        problems = describe_problems(exc)
        return f"{source}: a Higress ai-intent plugin configuration ({where}); as the intent section: {problems}"
    return f"{source}: a Higress ai-intent plugin configuration, valid as Stepwise's intent section: {where}"


def higress_to_stepwise(raw: Mapping[str, Any], *, source: str = "<config>") -> HigressConversion:
    """Convert a Higress ai-agent configuration; `ConfigError` names ``source``, the field and the reason."""
    try:
        agent = HigressAgentConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {describe_problems(exc)}") from None
    apis: list[dict[str, Any]] = []
    openapi: list[dict[str, Any]] = []
    for index, entry in enumerate(agent.apis):
        if "apiProvider" in entry or "api_provider" in entry:
            openapi.append(_openapi_source(entry, f"{source} apis[{index}]"))
        else:
            apis.append(entry)
    profile: dict[str, Any] = {
        "model": MODEL_NAME,
        "strategy": "react",
        "protocol": "react_text",
        "limits": {"max_iterations": agent.llm.max_iterations or DEFAULT_MAX_ITERATIONS},
    }
    language = _language(agent.prompt_template)
    if language is not None:
        profile["language"] = language
    if agent.json_resp is not None and agent.json_resp.enable:
        profile["response_schema"] = _response_schema(agent.json_resp, source)
    config = {
        "models": {MODEL_NAME: _model(agent.llm, source)},
        "tools": {"apis": apis, "openapi": openapi},
        "profiles": {PROFILE_NAME: profile},
        "default_profile": PROFILE_NAME,
    }
    templates = {key: value for key, value in (agent.prompt_template or {}).items() if key != "language"}
    notes = [
        f"{key} is not used: Stepwise has its own {what}"
        for key, value, what in (
            ("promptTemplate templates", templates or None, "ReAct prompts (promptTemplate.language is used)"),
            ("returnResponseTemplate", agent.return_response_template, "response format"),
        )
        if value is not None
    ]
    return HigressConversion(config, notes)


def _language(prompt_template: dict[str, Any] | None) -> str | None:
    """The profile language for ``promptTemplate.language`` (the plugin's ``CH`` or ``EN``), if set."""
    language = (prompt_template or {}).get("language")
    if not isinstance(language, str):
        return None
    return {"CH": "zh", "ZH": "zh", "EN": "en"}.get(language.strip().upper())


def _model(llm: HigressLlm, source: str) -> dict[str, Any]:
    if not llm.path.endswith(CHAT_COMPLETIONS_SUFFIX):
        raise ConfigError(f"{source}: llm.path: {llm.path!r} must end with {CHAT_COMPLETIONS_SUFFIX}")
    origin = _origin(llm.domain, llm.service_port, llm.protocol, where=f"{source}: llm")
    base = origin + llm.path.removesuffix(CHAT_COMPLETIONS_SUFFIX)
    return {
        "provider": "openai",
        "base_url": base,
        "model": llm.model,
        "api_key": llm.api_key,
        "timeout_seconds": (llm.max_execution_time or DEFAULT_MAX_EXECUTION_MS) / 1000,
        "max_tokens": llm.max_tokens or DEFAULT_MAX_TOKENS,
        "capabilities": {"native_tools": False, "parallel_tools": False, "stop_sequences": True},
    }


def _openapi_source(entry: dict[str, Any], label: str) -> dict[str, Any]:
    """The ``openapi`` source of one plugin-shaped API; ``label`` names it (``agent.yaml apis[0]``)."""
    try:
        api = HigressApi.model_validate(entry)
    except ValidationError as exc:
        raise ConfigError(f"{label}: {describe_problems(exc)}") from None
    provider = api.api_provider
    # deferred: the runtime imports this module to read its configuration, and needs no tools for that
    from stepwise.tools.openapi.loader import parse_document

    document = parse_document(api.api, where=label)
    info = document.get("info")
    title = info.get("title") if isinstance(info, dict) else None
    converted: dict[str, Any] = {"document": document, "name": f"{label} ({title})" if title else label}
    if not document.get("servers"):
        # The plugin sends to its service cluster with the domain as Host; without servers, call the domain.
        converted["baseUrl"] = _origin(
            provider.domain, provider.service_port, provider.protocol, where=f"{label}: apiProvider"
        )
    if provider.internal:
        converted["internal"] = True
    key = provider.api_key
    if key is not None and key.value and key.location != "none":
        location = key.location if key.location in ("query", "bearer") else "header"
        converted["apiKey"] = {"in": location, "value": key.value, **({"name": key.name} if key.name else {})}
    if provider.max_execution_time is not None:
        converted["maxExecutionTime"] = provider.max_execution_time
    return converted


def _response_schema(json_resp: HigressJsonResponse, source: str) -> dict[str, Any]:
    schema = json_resp.json_schema
    if schema is None:
        return {"type": "object"}
    if isinstance(schema, str):
        schema = _schema_text(schema, source)
    if not isinstance(schema, dict):
        raise ConfigError(f"{source}: jsonResp.jsonSchema must be a JSON schema object")
    return schema


def _schema_text(text: str, source: str) -> Any:
    """A schema written as text: JSON, or YAML (JSON's superset, which the Chinese README uses)."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    # deferred: a configuration without a text schema needs no YAML parser here
    import yaml

    from stepwise.inputs.yaml_aliases import AliasExpansionExceeded, check_alias_expansion

    try:
        schema = yaml.safe_load(text)
        check_alias_expansion(schema, what="jsonResp.jsonSchema")
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{source}: jsonResp.jsonSchema is text that is neither JSON nor YAML{at}") from None
    except AliasExpansionExceeded as exc:
        raise ConfigError(f"{source}: jsonResp.jsonSchema: {exc}") from None
    return schema


_DEFAULT_PORTS: dict[Scheme, int] = {"http": 80, "https": 443}


def _origin(domain: str, port: int, protocol: Scheme | None, *, where: str) -> str:
    """``<scheme>://<domain>[:<port>]``: the scheme ``protocol`` says, else the port's (80 http, 443 https);
    `ConfigError` for another port without ``protocol``, naming the block ``where`` and the fix."""
    scheme = protocol or next((name for name, default in _DEFAULT_PORTS.items() if default == port), None)
    if scheme is None:
        raise ConfigError(
            f"{where}: servicePort {port} does not say whether the service speaks http or https (Higress takes "
            "that from the service's registry, not from this file; 80 is http, 443 https): add protocol: http "
            "or protocol: https to the block"
        )
    return f"{scheme}://{domain}" if _DEFAULT_PORTS[scheme] == port else f"{scheme}://{domain}:{port}"
