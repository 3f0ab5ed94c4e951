"""Remote A2A agents as Stepwise tools: the card read at cold start, each call a message through the A2A client."""

from __future__ import annotations

from typing import Any

from stepwise.config.a2a_source import A2aAgentConfig
from stepwise.config.credentials import SecretResolver
from stepwise.errors import ConfigError, ToolError
from stepwise.inputs.text_policy import clean_text, count_unencodable, replacement_note
from stepwise.models.messages import ToolSpec
from stepwise.tools.a2a.card import CardSummary, agent_specs
from stepwise.tools.a2a.client import A2aAgentClient
from stepwise.tools.base import NO_CONTEXT, CallContext, ToolResult
from stepwise.tools.guards import AddressPolicy, HostResolver, TargetRefused, refusal_reason, system_resolver


class A2aTool:
    """A remote agent (or one of its skills) offered as a tool taking ``{message: string}``."""

    def __init__(self, client: A2aAgentClient, *, spec: ToolSpec, skill: str | None) -> None:
        self._client = client
        self._spec = spec
        self.skill = skill

    @property
    def spec(self) -> ToolSpec:
        """What the model is told about this tool."""
        return self._spec

    def call(self, arguments: dict[str, Any], context: CallContext = NO_CONTEXT) -> ToolResult:
        """Send the message and follow its task; a task that did not complete is a failed result, not an exception.

        The message id is the call's idempotency key: every attempt of one call sends the same message.
        """
        result = self._client.ask(str(arguments["message"]), message_id=context.idempotency_key, skill=self.skill)
        # Capping encodes the text, which a lone surrogate would break: the text is repaired first, and says so.
        replaced = count_unencodable(result.content)
        content, truncated = self._capped(clean_text(result.content))
        if replaced:
            content = f"{content}\n{replacement_note(replaced)}"
        return result.model_copy(update={"content": content, "truncated": truncated})

    def _capped(self, text: str) -> tuple[str, bool]:
        limit = self._client.config.max_response_bytes
        encoded = text.encode("utf-8")
        if len(encoded) <= limit:
            return text, False
        kept = encoded[:limit].decode("utf-8", errors="ignore")
        # Redacted before the marker is added, so a secret cut in two is still recognised by its beginning.
        kept = self._client.redactor.redact(kept, cut_at_end=True)
        return f"{kept}…[truncated: the answer was longer than {limit} bytes]", True


def load_a2a_tools(
    config: A2aAgentConfig,
    *,
    secret_resolver: SecretResolver,
    host_resolver: HostResolver = system_resolver,
    address_policy: AddressPolicy = refusal_reason,
) -> tuple[list[A2aTool], list[str]]:
    """Read the agent's card and offer the agent (or each of its skills) as a tool; also notes for the registry.

    An agent with a configured ``name`` whose card cannot be read now is still offered, under that name, and a
    note says why; its calls read the card again and, while it still cannot be read, observe why. Without a
    ``name`` (or with ``skills: true``) the tools' names come from the card, so such a card is a `ConfigError`
    naming the agent; so is an agent the SSRF guard refuses, which no later call would reach either.
    """
    where = f"a2a {config.describe()}"
    client = A2aAgentClient(
        config, secret_resolver=secret_resolver, host_resolver=host_resolver, address_policy=address_policy
    )
    card: CardSummary | None
    notes: list[str] = []
    try:
        card = client.card().summary
    except TargetRefused as exc:
        # Not a passing outage: every call would be refused too.
        raise ConfigError(f"{where}: {exc}") from None
    except ToolError as exc:
        if config.name is None or config.skills:
            raise ConfigError(
                f"{where}: {exc}; give the agent a name: (without skills: true) to offer it while its card "
                "cannot be read"
            ) from None
        card = None
        notes.append(f"{where}: {exc}; offered as {config.name}, each call reads the card again")
    tools = [A2aTool(client, spec=spec, skill=skill) for spec, skill in agent_specs(config, card)]
    names = [tool.spec.name for tool in tools]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ConfigError(f"{where}: two skills of the card both become the tool {repeated[0]}")
    return tools, notes
