"""A remote agent's Agent Card, validated, and the tools it becomes.

The SDK's resolver reads the card into its protobuf `AgentCard`; what Stepwise uses of it (name, description,
skills, the interfaces it can be called at) is read into `CardSummary`, so a card without a name or without
an interface Stepwise can speak (JSON-RPC or HTTP+JSON on the configured origin) is refused naming the field.

By default the agent is one tool, described by the card's description and its skills; with ``skills: true``
each skill is a tool of its own, named ``<name>_<skill id>``. A2A has no field that picks a skill (the agent
reads the message and decides), so a skill's tool sends the skill's id in the message's metadata as
``skill``, a hint an agent may use or ignore.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from stepwise.config.a2a_source import A2aAgentConfig
from stepwise.models.messages import ToolSpec
from stepwise.tools.openapi.names import MAX_NAME_CHARS, model_safe_name

MAX_DESCRIPTION_CHARS = 4096
MAX_SKILLS_LISTED = 20
MAX_EXAMPLES_LISTED = 3
# The bindings the SDK speaks over HTTP with its own httpx client (gRPC would need its own channel).
SPOKEN_BINDINGS = ("JSONRPC", "HTTP+JSON")

MESSAGE_PARAMETERS = {
    "type": "object",
    "properties": {
        "message": {
            "type": "string",
            "minLength": 1,
            "description": "What to ask or tell the agent, in plain words. It sees only this message, so include "
            "everything it needs.",
        }
    },
    "required": ["message"],
    "additionalProperties": False,
}

_CARD = ConfigDict(extra="ignore", populate_by_name=True, hide_input_in_errors=True, frozen=True)


class CardSkill(BaseModel):
    """A skill the card lists."""

    model_config = _CARD

    id: str = Field(min_length=1, max_length=128)
    name: str = ""
    description: str = ""
    examples: list[str] = Field(default_factory=list)


class CardInterface(BaseModel):
    """Where and how the agent is called."""

    model_config = _CARD

    url: str = Field(min_length=1)
    protocol_binding: str = Field(alias="protocolBinding", min_length=1)


class CardSummary(BaseModel):
    """What Stepwise uses of an Agent Card."""

    model_config = _CARD

    name: str = Field(min_length=1, max_length=256)
    description: str = ""
    skills: list[CardSkill] = Field(default_factory=list)
    supported_interfaces: list[CardInterface] = Field(alias="supportedInterfaces", min_length=1)


def agent_tool_name(config: A2aAgentConfig, card: CardSummary | None) -> str:
    """The tool's name (with skills, its prefix): the configured one, else the card's made model-safe."""
    if config.name is not None:
        return config.name
    if card is None:
        raise ValueError("an agent without a configured name needs its card to be named")
    return model_safe_name(card.name)


def agent_specs(config: A2aAgentConfig, card: CardSummary | None) -> list[tuple[ToolSpec, str | None]]:
    """The tools the agent is offered as, each with the skill it stands for (None: the whole agent).

    Without a card (it could not be read, and the agent has a configured ``name``) the agent is one tool
    described by the configured ``description``.
    """
    name = agent_tool_name(config, card)
    if card is None:
        description = config.description or f"The remote A2A agent at {config.url}."
        return [(ToolSpec(name=name, description=description, parameters=MESSAGE_PARAMETERS), None)]
    if not config.skills or not card.skills:
        spec = ToolSpec(name=name, description=_agent_description(config, card), parameters=MESSAGE_PARAMETERS)
        return [(spec, None)]
    return [
        (
            ToolSpec(
                name=_skill_tool_name(name, skill.id),
                description=_clipped(_skill_description(card, skill)),
                parameters=MESSAGE_PARAMETERS,
            ),
            skill.id,
        )
        for skill in card.skills
    ]


def _agent_description(config: A2aAgentConfig, card: CardSummary) -> str:
    lines = [config.description or card.description.strip() or f"The remote agent {card.name}."]
    if card.skills:
        lines.append("Skills:")
        for skill in card.skills[:MAX_SKILLS_LISTED]:
            about = skill.description.strip() or skill.name or skill.id
            lines.append(f"- {skill.name or skill.id}: {about}")
        if len(card.skills) > MAX_SKILLS_LISTED:
            lines.append(f"- and {len(card.skills) - MAX_SKILLS_LISTED} more")
    return _clipped("\n".join(lines))


def _skill_description(card: CardSummary, skill: CardSkill) -> str:
    text = skill.description.strip() or skill.name or skill.id
    examples = [example for example in skill.examples if example.strip()][:MAX_EXAMPLES_LISTED]
    about = f"{text} (a skill of the remote agent {card.name})"
    return f"{about}\nExamples: {'; '.join(examples)}" if examples else about


def _skill_tool_name(prefix: str, skill_id: str) -> str:
    return model_safe_name(f"{prefix}_{skill_id}")[:MAX_NAME_CHARS]


def _clipped(text: str) -> str:
    return text if len(text) <= MAX_DESCRIPTION_CHARS else text[: MAX_DESCRIPTION_CHARS - 1] + "…"
