"""The answer a run stores at its limit, per protocol, and prompts in Chinese and English, end to end."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from stepwise.local.example_api import ExampleToolApi
from tests.e2e.conftest import ConfigWriter, get_tool, http_api, scripted_model
from tests.support.openai_server import FakeOpenAIServer, chat_completion

# A call of get_weather for Paris, written in each protocol's own format.
CALL_IN = {
    "react_json": 'Thought: weather\n```json\n{"action": "get_weather", "action_input": {"city": "Paris"}}\n```',
    "react_text": 'Thought: weather\nAction: get_weather\nAction Input: {"city": "Paris"}',
    "xml": '<thought>weather</thought>\n<action>get_weather(city="Paris")</action>',
    "markers": '/*PLANNING*/ weather /*END_PLANNING*/\n/*ACTION*/ {"tool": "get_weather", "parameters": '
    '{"city": "Paris"}} /*END_ACTION*/',
}


def _weather_api(url: str) -> dict[str, Any]:
    return http_api(url, get_tool("get_weather", "/weather/{city}", city="string"))


@pytest.mark.parametrize("protocol", [*CALL_IN, "function_calling"])
def test_a_run_reaching_its_limit_stores_a_summary_of_what_the_tools_returned(
    protocol: str, write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    with ExampleToolApi() as api:
        # Given a model that asks for the weather every time, even in the final round, and 2 iterations
        if protocol == "function_calling":
            turn = {"content": "weather", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
            model = scripted_model(turn, native_tools=True)
            config = write_config(
                model, strategy="function_calling", limits={"max_iterations": 2}, apis=[_weather_api(api.url)]
            )
        else:
            model = scripted_model({"content": CALL_IN[protocol]})
            config = write_config(model, protocol=protocol, limits={"max_iterations": 2}, apis=[_weather_api(api.url)])
        environment, _ = local_run(config)
        # When a question is asked
        meta, _ = environment.ask("What is the weather in Paris?")
    # Then the stored answer says the limit was reached and what the tool returned: no thought, no tool name
    assert (meta.status, meta.stop_reason, meta.outcome) == ("SUCCEEDED", "max_iterations", "partial")
    assert meta.answer is not None
    assert meta.answer.startswith("The run stopped (max_iterations) before the model gave a final answer.")
    assert "- get_weather: " in meta.answer and "light rain" in meta.answer


@pytest.mark.parametrize(
    ("language", "format_words", "corrective_words", "final_words"),
    [
        ("en", "To use a tool", "Reply again using exactly this format.", "You cannot use tools any more."),
        ("zh", "需要使用工具时", "请严格按照以下格式重新回复。", "你不能再使用工具了。"),
    ],
)
def test_the_profile_language_chooses_the_words_stepwise_says_to_the_model(
    language: str,
    format_words: str,
    corrective_words: str,
    final_words: str,
    write_config: ConfigWriter,
    local_run: Callable[..., Any],
) -> None:
    with FakeOpenAIServer() as server, ExampleToolApi() as api:
        # Given a model that first writes no action block, then calls a tool, then still calls it in the final round
        server.enqueue(body=chat_completion(content="Thought: let me think."))
        server.default(body=chat_completion(content=CALL_IN["react_json"]))
        model = {
            "provider": "openai",
            "base_url": server.base_url,
            "model": "fake-model",
            "api_key": "sk-test-key",
            "timeout_seconds": 30,
        }
        config = write_config(model, language=language, limits={"max_iterations": 3}, apis=[_weather_api(api.url)])
        environment, _ = local_run(config)
        # When a question is asked
        meta, _ = environment.ask("What is the weather in Paris?")
        bodies = [request.body for request in server.requests]
    # Then the format, the corrective observation and the final-round order are in the profile's language
    assert format_words in bodies[0]["messages"][0]["content"]
    corrective = [m for m in environment.runtime.store.list_messages(meta.run_id) if m.role == "user"][1]
    assert corrective_words in corrective.content
    assert final_words in bodies[-1]["messages"][-1]["content"]
    assert (meta.status, meta.stop_reason) == ("SUCCEEDED", "max_iterations")
