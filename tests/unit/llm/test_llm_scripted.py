"""ScriptedChatModel: scenario matching, stateless turn selection, script files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stepwise.config.llm import ScriptScenario, ScriptToolCall, ScriptTurn, ScriptUsage
from stepwise.errors import ConfigError, LLMPermanentError
from stepwise.llm.scripted import ScriptedChatModel
from stepwise.models.messages import ChatMessage, ChatRequest, ToolCall

WEATHER = ScriptScenario(
    match="weather|forecast",
    turns=[
        ScriptTurn(content="Thought: I need the weather."),
        ScriptTurn(
            tool_calls=[
                ScriptToolCall(name="get_weather", arguments={"city": "Paris"}),
                ScriptToolCall(name="get_time"),
            ]
        ),
        ScriptTurn(content="It is sunny.", usage=ScriptUsage(input_tokens=10, output_tokens=5)),
    ],
)
DEFAULT = ScriptScenario(turns=[ScriptTurn(content="I can only talk about the weather.")])


def conversation(question: str, assistant_turns: int = 0) -> ChatRequest:
    """A request with a system prompt, the question and `assistant_turns` earlier exchanges."""
    messages = [ChatMessage(role="system", content="You answer."), ChatMessage(role="user", content=question)]
    for turn in range(assistant_turns):
        messages.append(ChatMessage(role="assistant", content=f"step {turn}"))
        messages.append(ChatMessage(role="user", content="Observation: done"))
    return ChatRequest(messages=messages)


def test_picks_the_scenario_whose_pattern_is_in_the_question() -> None:
    # Given a default scenario listed before a weather scenario
    model = ScriptedChatModel([DEFAULT, WEATHER])
    # When the question mentions the forecast in another case
    completion = model.complete(conversation("What is the FORECAST for Paris?"))
    # Then the weather scenario plays its first turn
    assert completion.content == "Thought: I need the weather."


def test_only_the_first_user_message_selects_the_scenario() -> None:
    # Given a question about something else, followed by a user message that mentions the weather
    request = conversation("Tell me a joke")
    request.messages.append(ChatMessage(role="user", content="weather"))
    # When the model is called
    completion = ScriptedChatModel([WEATHER, DEFAULT]).complete(request)
    # Then the default scenario plays
    assert completion.content == "I can only talk about the weather."


def test_no_matching_scenario_is_a_permanent_error_without_the_question() -> None:
    # Given only a weather scenario
    model = ScriptedChatModel([WEATHER])
    # When the question matches nothing, then the error does not repeat the question
    with pytest.raises(LLMPermanentError, match="no scenario matches") as caught:
        model.complete(conversation("Secret plans for Tuesday"))
    assert "Secret" not in str(caught.value)


def test_the_turn_is_the_number_of_assistant_messages() -> None:
    # Given a conversation with two assistant messages already
    request = conversation("weather in Paris?", assistant_turns=2)
    # When the model is called twice (a retried call)
    first = ScriptedChatModel([WEATHER]).complete(request)
    again = ScriptedChatModel([WEATHER]).complete(request)
    # Then the third turn plays both times
    assert first.content == again.content == "It is sunny."
    assert (first.usage.input_tokens, first.usage.output_tokens) == (10, 5)


def test_native_tool_calls_get_ids_from_the_turn_and_position() -> None:
    # Given a conversation at the second turn
    request = conversation("weather in Paris?", assistant_turns=1)
    # When the model is called
    completion = ScriptedChatModel([WEATHER]).complete(request)
    # Then the tool calls have deterministic ids
    assert completion.tool_calls == [
        ToolCall(id="call_1_0", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="call_1_1", name="get_time", arguments={}),
    ]
    assert completion.finish_reason == "tool_calls"


def test_past_the_last_turn_the_last_one_repeats() -> None:
    # Given a conversation longer than the script
    request = conversation("weather in Paris?", assistant_turns=7)
    # When the model is called
    completion = ScriptedChatModel([WEATHER]).complete(request)
    # Then the last turn plays again
    assert completion.content == "It is sunny."


def test_usage_is_estimated_from_text_length_when_not_scripted() -> None:
    # Given a turn of 28 characters without usage, and a prompt of 11 + 48 = 59 characters
    request = conversation("Weather in Paris, near the Eiffel tower, please?")
    # When the model is called
    completion = ScriptedChatModel([WEATHER]).complete(request)
    # Then tokens are a quarter of the characters, rounded up
    assert completion.usage.input_tokens == 15
    assert completion.usage.output_tokens == 7


def test_latency_is_slept_through_the_injected_sleep() -> None:
    # Given a turn with a latency and a sleep that records
    slept: list[float] = []
    scenario = ScriptScenario(turns=[ScriptTurn(content="ok", latency_ms=250)])
    model = ScriptedChatModel([scenario], sleep=slept.append)
    # When the model is called
    model.complete(conversation("anything"))
    # Then it slept for the turn's latency
    assert slept == [0.25]


def test_loads_a_yaml_script(tmp_path: Path) -> None:
    # Given a YAML script like the demo's
    script = tmp_path / "demo.yaml"
    script.write_text(
        """
scenarios:
  - match: "weather|forecast"
    turns:
      - tool_calls: [{name: get_weather, arguments: {city: Paris}}]
      - content: "Sunny in Paris."
  - turns:
      - content: "Ask me about the weather."
""",
        encoding="utf-8",
    )
    model = ScriptedChatModel.from_file(script)
    # When a weather question is asked, then its scenario plays
    assert model.complete(conversation("weather?")).tool_calls[0].arguments == {"city": "Paris"}
    # And when another is asked, the default plays
    assert model.complete(conversation("hello")).content == "Ask me about the weather."


def test_loads_a_json_script(tmp_path: Path) -> None:
    # Given a JSON script
    script = tmp_path / "demo.json"
    script.write_text(json.dumps({"scenarios": [{"turns": [{"content": "From JSON."}]}]}), encoding="utf-8")
    # When it is loaded and called, then its turn plays
    assert ScriptedChatModel.from_file(script).complete(conversation("hi")).content == "From JSON."


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("scenarios:\n  - turns:\n      - contents: hi\n", r"scenarios\.0\.turns\.0\.contents: Extra inputs"),
        ("scenarios:\n  - turns: []\n", r"scenarios\.0\.turns: List should have at least 1 item"),
        ("scenarios:\n  - match: '(unclosed'\n    turns: [{content: x}]\n", r"scenarios\.0\.match: .*regular"),
        (
            "scenarios:\n  - turns: [{content: x, latency_ms: -5}]\n",
            r"scenarios\.0\.turns\.0\.latency_ms: Input should be greater than or equal to 0",
        ),
        ("- just a list\n", r"\(top level\): Input should be a valid dictionary"),
        ("scenarios: [\n", r"not valid YAML"),
    ],
    ids=["typo", "no-turns", "bad-regex", "negative-latency", "not-a-mapping", "syntax"],
)
def test_a_malformed_script_is_a_config_error_naming_file_and_field(tmp_path: Path, text: str, expected: str) -> None:
    # Given a malformed script file
    script = tmp_path / "broken.yaml"
    script.write_text(text, encoding="utf-8")
    # When it is loaded, then the error names the file, the field and the reason
    with pytest.raises(ConfigError, match=expected) as caught:
        ScriptedChatModel.from_file(script)
    assert str(script) in str(caught.value)


def test_a_missing_script_is_a_config_error(tmp_path: Path) -> None:
    # Given a path where no file exists
    script = tmp_path / "absent.yaml"
    # When it is loaded, then the error names the file and the reason
    with pytest.raises(ConfigError, match=r"absent\.yaml: cannot read the script: No such file"):
        ScriptedChatModel.from_file(script)


def test_turns_a_summary_stands_for_count_toward_the_turn_played() -> None:
    # Given a request carrying one assistant turn, with two earlier ones summarized away
    request = conversation("weather in Paris?", assistant_turns=1).model_copy(update={"turns_before": 2})
    # When the scripted model answers; Then it plays the fourth turn's reply (the last one, repeated)
    assert ScriptedChatModel([WEATHER]).complete(request).content == "It is sunny."
