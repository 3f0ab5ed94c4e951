"""A2A agents as tools: the card read from a real `a2a-sdk` agent on loopback, calls through the SDK's client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from stepwise.config.a2a_source import A2aAgentConfig
from stepwise.config.credentials import SecretResolver
from stepwise.config.tool_sources import parse_tools_config
from stepwise.errors import ConfigError, ToolError
from stepwise.tools import ToolInvoker, ToolRegistry, build_tool_registry
from stepwise.tools.a2a import load_a2a_tools
from stepwise.tools.a2a.card import CardSummary, agent_specs
from stepwise.tools.a2a.transport import GuardedTransport
from stepwise.tools.base import CallContext
from stepwise.tools.guards import Origin, refusal_reason, system_resolver
from stepwise.tools.idempotency import idempotency_key
from tests.support.a2a_agent import Fail, Reply, Say, ScriptedA2aAgent
from tests.support.ports import refused_port
from tests.support.tool_server import Json, ScriptableToolServer
from tests.unit.tools.config_builders import call

AGENT_TOKEN = "a2a-token-Qz7Wk3Rp9Lm2"


@pytest.fixture(scope="module")
def agent() -> Iterator[ScriptedA2aAgent]:
    """One scripted agent for the module, its records cleared before each test that reads them."""
    scripted = ScriptedA2aAgent(
        {
            "weather in Paris?": Reply("drizzle, 14 °C", data={"celsius": 14, "sky": ["rain", "cloud"]}),
            "weather in Atlantis?": Fail("no such city"),
            "weather?": Fail("which city?", state="input-required"),
            "the slow one": Reply("too late", wait_seconds=5),
            "who am I?": Reply(f"you sent {AGENT_TOKEN}"),
            "hello": Say("hello to you"),
        }
    )
    with scripted.serving():
        yield scripted


def build(*entries: dict[str, Any], secret_resolver: SecretResolver | None = None) -> ToolRegistry:
    """A registry from ``a2a:`` entries."""
    return build_tool_registry(
        parse_tools_config({"a2a": list(entries)}), config_dir=Path("."), secret_resolver=secret_resolver
    )


def entry(agent: ScriptedA2aAgent, **settings: Any) -> dict[str, Any]:
    """The agent's ``a2a:`` entry, internal (loopback allowed)."""
    return {"url": agent.url, "internal": True, **settings}


def test_the_card_becomes_one_tool_named_and_described_by_it(agent: ScriptedA2aAgent) -> None:
    # Given the agent on loopback, configured as internal
    # When the registry is built
    registry = build(entry(agent))
    # Then the agent is one tool, its name the card's made model-safe, its description the card's and its skills'
    [spec] = registry.specs()
    assert spec.name == "Weather_Oracle"
    assert spec.description.splitlines() == [
        "Answers questions about the weather anywhere.",
        "Skills:",
        "- Forecast: The weather of a city, today or in the coming days.",
        "- Climate: Averages of a city's weather by month.",
    ]
    assert spec.parameters["required"] == ["message"]


def test_with_skills_each_skill_is_a_tool_under_the_configured_prefix() -> None:
    # Given a card with two skills and an agent configured with skills: true under the name weather
    card = CardSummary.model_validate(
        {
            "name": "Weather Oracle",
            "supportedInterfaces": [{"url": "https://agent.example.com/a2a", "protocolBinding": "JSONRPC"}],
            "skills": [
                {"id": "forecast", "description": "Tomorrow's weather.", "examples": ["Rain in Paris?"]},
                {"id": "climate.monthly", "name": "Climate"},
            ],
        }
    )
    config = A2aAgentConfig(url="https://agent.example.com", name="weather", skills=True)
    # When its tools are made
    offered = [(spec.name, spec.description, skill) for spec, skill in agent_specs(config, card)]
    # Then each skill is a tool, named <name>_<skill id> made model-safe, described by the skill
    assert offered == [
        (
            "weather_forecast",
            "Tomorrow's weather. (a skill of the remote agent Weather Oracle)\nExamples: Rain in Paris?",
            "forecast",
        ),
        ("weather_climate_monthly", "Climate (a skill of the remote agent Weather Oracle)", "climate.monthly"),
    ]


def test_a_skills_tool_sends_its_skill_as_a_hint(agent: ScriptedA2aAgent) -> None:
    # Given the agent offered skill by skill
    invoker = ToolInvoker(build(entry(agent, name="weather", skills=True)))
    agent.received.clear()
    # When the forecast skill's tool is called
    observation = invoker.invoke(call("weather_forecast", message="weather in Paris?"))
    # Then the agent received the message with the skill's id in its metadata
    assert observation.ok
    assert [(each.text, each.metadata) for each in agent.received] == [("weather in Paris?", {"skill": "forecast"})]


def test_a_call_observes_the_tasks_artifacts(agent: ScriptedA2aAgent) -> None:
    # Given the agent as a tool
    invoker = ToolInvoker(build(entry(agent, name="weather")))
    # When the model asks it something it answers with a text and a data artifact
    observation = invoker.invoke(call("weather", message="weather in Paris?"))
    # Then the observation is the text, then the data as compact JSON
    assert (observation.ok, observation.content) == (True, 'drizzle, 14 °C\n\n{"celsius":14,"sky":["rain","cloud"]}')


def test_an_agent_answering_with_a_message_is_observed_by_its_text(agent: ScriptedA2aAgent) -> None:
    invoker = ToolInvoker(build(entry(agent, name="weather")))
    # When the agent answers with a message instead of a task
    observation = invoker.invoke(call("weather", message="hello"))
    # Then the observation is the message's text
    assert (observation.ok, observation.content) == (True, "hello to you")


def test_an_agent_that_does_not_stream_is_polled_until_its_task_ends() -> None:
    agent = ScriptedA2aAgent({"weather in Oslo?": Reply("snow", wait_seconds=0.3)}, streaming=False)
    with agent.serving():
        # Given an agent whose card says it does not stream, and takes 0.3 s over a question
        invoker = ToolInvoker(build(entry(agent, name="weather")))
        agent.headers.clear()
        # When it is asked
        observation = invoker.invoke(call("weather", message="weather in Oslo?"))
    # Then the task was read again until it completed, and its artifact is the observation
    assert (observation.ok, observation.content) == (True, "snow")
    assert len(agent.headers) >= 3  # the message, then at least two reads of the task


def test_building_the_tools_again_reads_the_card_no_more(agent: ScriptedA2aAgent, tmp_path: Path) -> None:
    # Given the agent's tools built once, as one handler's runtime builds them
    config = parse_tools_config({"a2a": [entry(agent, maxResponseBytes=4096)]})
    first = build_tool_registry(config, config_dir=tmp_path)
    agent.headers.clear()
    # When another handler of the same process builds them
    second = build_tool_registry(config, config_dir=tmp_path)
    # Then it has the same tool, and the agent was not asked again
    assert second.names() == first.names() == ["Weather_Oracle"]
    assert agent.headers == []


def test_every_attempt_of_one_call_sends_the_same_message_id(agent: ScriptedA2aAgent) -> None:
    # Given the agent as a tool, and the key of one call and of another
    [tool] = load_a2a_tools(A2aAgentConfig.model_validate(entry(agent)), secret_resolver=SecretResolver())[0]
    first_key = idempotency_key("run-1", 2, "call_0")
    other_key = idempotency_key("run-1", 2, "call_1")
    agent.received.clear()
    # When the call is sent, sent again (a retried step), and another call is sent
    for key in (first_key, first_key, other_key):
        tool.call({"message": "weather in Paris?"}, CallContext(idempotency_key=key))
    # Then the two attempts carried the call's key as their message id, the other call its own
    assert [each.message_id for each in agent.received] == [first_key, first_key, other_key]


def test_a_failed_task_is_a_failed_observation_with_the_agents_reason(agent: ScriptedA2aAgent) -> None:
    invoker = ToolInvoker(build(entry(agent, name="weather")))
    # When the agent fails the task
    observation = invoker.invoke(call("weather", message="weather in Atlantis?"))
    # Then the observation failed, saying the task failed and why
    assert not observation.ok
    assert observation.error == "the agent Weather Oracle's task ended failed"
    assert observation.content.startswith("Error: the agent Weather Oracle's task ")
    assert observation.content.endswith(" ended failed; it said: no such city")


def test_a_task_waiting_for_input_is_a_failed_observation_passing_on_the_question(agent: ScriptedA2aAgent) -> None:
    invoker = ToolInvoker(build(entry(agent, name="weather")))
    # When the agent asks for more input
    observation = invoker.invoke(call("weather", message="weather?"))
    # Then the observation says so, with the agent's question and what to do
    assert not observation.ok
    assert "needs more input to go on" in observation.content and "it said: which city?" in observation.content
    assert observation.content.endswith("Call it again with a message that holds everything it asked for.")


def test_a_task_still_running_at_the_timeout_is_observed_as_timed_out_and_canceled(agent: ScriptedA2aAgent) -> None:
    # Given the agent with a half-second bound
    invoker = ToolInvoker(build(entry(agent, name="weather", timeoutSeconds=0.5)))
    agent.canceled.clear()
    # When it is asked something it takes five seconds over
    observation = invoker.invoke(call("weather", message="the slow one"))
    # Then the observation says the task was still working, and the task was canceled
    assert (observation.ok, observation.error) == (False, "timed out after 0.5 s")
    assert observation.content.endswith("was still working after 0.5 s; it was asked to cancel")
    assert len(agent.canceled) == 1 and agent.canceled[0] in observation.content


def test_the_credential_is_sent_and_redacted_from_what_the_agent_echoes(agent: ScriptedA2aAgent) -> None:
    # Given the agent with a bearer credential
    resolver = SecretResolver()
    registry = build(
        entry(agent, name="weather", apiKey={"in": "bearer", "value": AGENT_TOKEN}), secret_resolver=resolver
    )
    agent.headers.clear()
    # When it is called, and answers with the credential
    observation = ToolInvoker(registry).invoke(call("weather", message="who am I?"))
    # Then every request carried it, and the observation does not
    assert agent.headers and {each["authorization"] for each in agent.headers} == {f"Bearer {AGENT_TOKEN}"}
    assert observation.content == "you sent ***"


def test_an_agent_on_a_private_address_is_refused_before_any_request() -> None:
    # Given an agent whose name resolves to a private address, not marked internal
    config = A2aAgentConfig(url="https://agent.example.com", name="partner")
    # When its tools are loaded
    with pytest.raises(ConfigError) as refused:
        load_a2a_tools(config, secret_resolver=SecretResolver(), host_resolver=lambda host, port: ["10.0.0.7"])
    # Then it is refused, naming the address and the opt-in
    assert "refused to call agent.example.com: 10.0.0.7 is a private address" in str(refused.value)
    assert "internal: true" in str(refused.value)


def test_a_loopback_agent_not_marked_internal_is_never_asked(agent: ScriptedA2aAgent) -> None:
    agent.headers.clear()
    # When an agent on loopback, not marked internal, is built
    with pytest.raises(ConfigError, match=r"127\.0\.0\.1 is a loopback address"):
        build({"url": agent.url})
    # Then it received nothing
    assert agent.headers == []


def test_a_named_agent_that_cannot_be_reached_is_offered_and_each_call_observes_why() -> None:
    with refused_port() as port:
        # Given a named agent on a port that refuses connections
        registry = build({"url": f"http://127.0.0.1:{port}", "internal": True, "name": "partner", "timeoutSeconds": 5})
        # When it is called
        observation = ToolInvoker(registry).invoke(call("partner", message="hello"))
    # Then the tool was offered with a note, and the call's observation says the card could not be read
    assert registry.names() == ["partner"]
    assert registry.notes[0].startswith(f"a2a http://127.0.0.1:{port}: the Agent Card at ")
    assert not observation.ok
    assert f"the Agent Card at http://127.0.0.1:{port}/.well-known/agent-card.json could not be read" in (
        observation.content
    )


def test_a_malformed_card_is_observed_naming_the_field() -> None:
    with ScriptableToolServer() as server:
        # Given a server whose card has no name
        server.on("/.well-known/agent-card.json", Json({"description": "nameless", "supportedInterfaces": []}))
        registry = build({"url": server.url, "internal": True, "name": "partner"})
        # When the agent is called
        observation = ToolInvoker(registry).invoke(call("partner", message="hello"))
    # Then the observation names the card's field that does not fit
    assert not observation.ok
    assert "the A2A agent answered with a malformed Agent Card at " in observation.content
    assert "/.well-known/agent-card.json: name: Field required" in observation.content


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        pytest.param(
            {"apiKey": {"in": "query", "name": "k", "value": "v"}},
            " > apiKey: apiKey.in must be 'header' or 'bearer' for an A2A agent",
            id="key in the query",
        ),
        pytest.param(
            {"cardPath": "https://elsewhere.example.com/card.json"},
            " > cardPath: cardPath 'https://elsewhere.example.com/card.json' must be a path on the agent's origin, "
            "such as /agent/card.json",
            id="card elsewhere",
        ),
        pytest.param(
            {"skills": True, "name": "n" * 40},
            ": name: with skills: true it prefixes each skill's tool, so at most 32 characters",
            id="prefix too long",
        ),
    ],
)
def test_a_bad_entry_is_refused_naming_the_agent_and_the_field(settings: dict[str, Any], problem: str) -> None:
    # When an entry is invalid
    with pytest.raises(ConfigError) as refused:
        parse_tools_config({"a2a": [{"url": "https://agent.example.com", **settings}]})
    # Then the message names the agent, the field and the reason
    assert str(refused.value) == f"tools config: a2a https://agent.example.com{problem}"


def test_a_card_naming_an_interface_on_another_origin_is_refused_and_that_origin_never_called() -> None:
    with ScriptableToolServer() as server, ScriptableToolServer() as elsewhere:
        # Given a card whose only interface is on another origin
        interface = {"url": f"{elsewhere.url}/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        server.on("/.well-known/agent-card.json", Json({"name": "Mover", "supportedInterfaces": [interface]}))
        registry = build({"url": server.url, "internal": True, "name": "partner"})
        # When the agent is called
        observation = ToolInvoker(registry).invoke(call("partner", message="hello"))
        # Then the call is refused naming the origin, and the other origin received nothing
        assert not observation.ok
        assert f"offers no JSON-RPC or HTTP+JSON interface on {server.url}" in observation.content
        assert elsewhere.requests == []


def test_an_answer_over_the_body_cap_is_refused_unread() -> None:
    with ScriptableToolServer() as server:
        # Given an agent whose card is 3,000 bytes, and a transport capped at 1,000
        server.on("/card.json", Json({"name": "Big", "description": "x" * 3000}))
        transport = GuardedTransport(
            Origin.of(httpx.URL(server.url)),
            internal=True,
            host_resolver=system_resolver,
            address_policy=refusal_reason,
            max_body_bytes=1000,
        )

        async def fetch() -> None:
            async with httpx.AsyncClient(transport=transport) as http:
                await http.get(f"{server.url}/card.json")

        # When the card is read, then the body is refused at the cap
        with pytest.raises(ToolError, match="longer than 1000 bytes"):
            anyio.run(fetch)
