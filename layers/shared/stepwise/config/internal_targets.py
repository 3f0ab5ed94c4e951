"""Tool URLs that point at non-public addresses from a source not marked ``internal: true``.

The SSRF guard (`stepwise.tools.guards`) refuses every call, document fetch, MCP session and A2A request of a source
that is not ``internal`` when its host is a loopback, private, link-local or otherwise non-public
address. A URL whose host is such an address literal, or ``localhost``, is therefore refused every
time; `stepwise config check` reports it up front instead of letting the first call fail. Host names
are not resolved: what DNS answers where the check runs is not what it answers where the call is made.

Models are not checked: their calls go to the configured endpoint whatever its address (a local
Ollama or vLLM is a usual one), so nothing about them is refused later.
"""

import httpx

from stepwise.config.tool_sources import ToolsConfig
from stepwise.tools.guards import refusal_without_resolving


def unmarked_internal_urls(tools: ToolsConfig) -> list[str]:
    """One problem per tool URL whose every call would be refused, naming the field and how to mark it."""
    targets: list[tuple[str, str, str | None, bool]] = []
    for index, api in enumerate(tools.apis):
        targets.append((f"tools.apis.{index}", "url", api.url, api.internal))
    for index, source in enumerate(tools.openapi):
        document_url = source.source if source.source and source.source.startswith(("http://", "https://")) else None
        targets.append((f"tools.openapi.{index}", "source", document_url, source.internal))
        targets.append((f"tools.openapi.{index}", "baseUrl", source.base_url, source.internal))
    for index, server in enumerate(tools.mcp):
        targets.append((f"tools.mcp.{index}", "url", server.url, server.internal))
    for index, agent in enumerate(tools.a2a):
        targets.append((f"tools.a2a.{index}", "url", agent.url, agent.internal))
    problems: list[str] = []
    for where, name, url, internal in targets:
        reason = None if url is None or internal else refusal_without_resolving(httpx.URL(url).host)
        if reason is not None:
            problems.append(
                f"{where}.{name}: {url} is {reason}, refused at every call unless the source is marked "
                f"internal; set {where}.internal: true if it is meant to be reached"
            )
    return problems
