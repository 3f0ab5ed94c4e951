"""Replies model servers really send, end to end through a loopback OpenAI-compatible server: no run fails.

Each test: the hostile reply first, then a plain answer; the run ends SUCCEEDED with its conversation
stored, and the state machine never retried the model call (nothing transient happened).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from stepwise.local.example_api import ExampleToolApi
from stepwise.models.run import RunMeta, StoredMessage
from stepwise.store import ConversationStore
from tests.e2e.conftest import ConfigWriter, RecordingListener, get_tool, http_api
from tests.support.openai_server import FakeOpenAIServer, chat_completion

REACT_ANSWER = '```json\n{"action": "Final Answer", "action_input": "Done."}\n```'


class Ask:
    """Runs one question against a loopback model that first sends a given reply, then answers "Done."."""

    def __init__(
        self, server: FakeOpenAIServer, api: ExampleToolApi, write_config: ConfigWriter, local_run: Callable[..., Any]
    ) -> None:
        self._server, self._api, self._write_config, self._local_run = server, api, write_config, local_run
        self.store: ConversationStore | None = None
        """The store of the last run asked, to read its trace."""

    def __call__(
        self, reply: dict[str, Any], *, strategy: str = "function_calling"
    ) -> tuple[RunMeta, list[StoredMessage], RecordingListener]:
        self._server.enqueue(body=reply)
        answer = "Done." if strategy == "function_calling" else REACT_ANSWER
        self._server.default(body=chat_completion(content=answer))
        model = {
            "provider": "openai",
            "base_url": self._server.base_url,
            "model": "fake-model",
            "api_key": "sk-test-key",
            "timeout_seconds": 30,
            "capabilities": {"native_tools": True, "parallel_tools": True},
        }
        config = self._write_config(
            model,
            strategy=strategy,
            apis=[http_api(self._api.url, get_tool("get_weather", "/weather/{city}", city="string"))],
        )
        environment, listener = self._local_run(config)
        meta, _ = environment.ask("weather in Paris and Tokyo?")
        self.store = environment.runtime.store
        return meta, self.store.list_messages(meta.run_id), listener


@pytest.fixture
def ask_through_server(write_config: ConfigWriter, local_run: Callable[..., Any]) -> Iterator[Ask]:
    """An `Ask` on a loopback model server and the example tool API."""
    with FakeOpenAIServer() as server, ExampleToolApi() as api:
        yield Ask(server, api, write_config, local_run)


def _assert_went_on(meta: RunMeta, listener: RecordingListener) -> None:
    assert (meta.status, meta.stop_reason) == ("SUCCEEDED", "final_answer")
    assert [event.state for event in listener.events if event.type == "retry"] == []


def test_tool_calls_sharing_one_id_each_get_their_own_and_both_run(ask_through_server: Ask) -> None:
    # Given a reply whose two tool calls carry the same id
    calls = [
        {"id": "same", "name": "get_weather", "arguments": {"city": "Paris"}},
        {"id": "same", "name": "get_weather", "arguments": {"city": "Tokyo"}},
    ]
    # When the run goes through it
    meta, messages, listener = ask_through_server(chat_completion(tool_calls=calls))
    # Then both calls ran, each answered under its own id
    _assert_went_on(meta, listener)
    observations = [m for m in messages if m.role == "tool"]
    assert len({m.tool_call_id for m in observations}) == 2
    assert ["Paris" in observations[0].content, "Tokyo" in observations[1].content] == [True, True]


def test_tool_calls_without_ids_are_given_ids_and_run(ask_through_server: Ask) -> None:
    # Given a reply whose tool calls carry no id at all
    reply = chat_completion(tool_calls=[{"name": "get_weather", "arguments": {"city": "Paris"}}])
    del reply["choices"][0]["message"]["tool_calls"][0]["id"]
    # When the run goes through it / Then the call ran and was answered
    meta, messages, listener = ask_through_server(reply)
    _assert_went_on(meta, listener)
    assert [m.tool_call_id for m in messages if m.role == "tool"] == ["call_0"]


def test_an_absurd_tool_name_gets_a_corrective_observation_not_a_retry(ask_through_server: Ask) -> None:
    # Given a reply calling a tool whose name is 500 characters long
    reply = chat_completion(tool_calls=[{"name": "x" * 500, "arguments": {}}])
    # When the run goes through it
    meta, messages, listener = ask_through_server(reply)
    # Then the model was told the tool is unknown, and answered
    _assert_went_on(meta, listener)
    observations = [m for m in messages if m.role == "tool"]
    assert len(observations) == 1 and "unknown tool" in observations[0].content
    assert meta.answer == "Done."


def test_a_call_with_an_empty_name_is_dropped_and_the_other_runs(ask_through_server: Ask) -> None:
    # Given a reply with a nameless call beside a real one
    calls = [{"name": "", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "Paris"}}]
    # When the run goes through it / Then only the real call ran
    meta, messages, listener = ask_through_server(chat_completion(tool_calls=calls))
    _assert_went_on(meta, listener)
    assert [m.name for m in messages if m.role == "tool"] == ["get_weather"]


def test_lone_surrogates_and_nul_in_the_answer_are_replaced_in_it_and_noted_in_the_trace(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given a model whose answer holds a lone surrogate and a NUL character
    with FakeOpenAIServer() as server:
        server.default(body=chat_completion(content="Sunny\ud800 and\x00 mild."))
        model = {"provider": "openai", "base_url": server.base_url, "model": "fake-model", "api_key": "sk-test-key"}
        environment, _ = local_run(write_config(model, strategy="function_calling"))
        # When the question is asked
        meta, _ = environment.ask("weather in Paris?")
    # Then the user's answer shows both replaced and says nothing more, and the model step's trace says so
    assert (meta.status, meta.stop_reason) == ("SUCCEEDED", "final_answer")
    assert meta.answer == "Sunny\ufffd and\ufffd mild."
    (model_step,) = [step for step in environment.runtime.store.list_steps(meta.run_id) if step.kind == "llm"]
    assert model_step.note is not None
    assert "[2 characters that cannot be encoded (lone surrogate or NUL) replaced with U+FFFD]" in model_step.note


def test_a_lone_surrogate_in_tool_arguments_is_replaced_and_the_call_runs(ask_through_server: Ask) -> None:
    # Given a tool call whose arguments hold a lone surrogate
    reply = chat_completion(tool_calls=[{"name": "get_weather", "arguments": {"city": "Par\udc00is"}}])
    # When the run goes through it / Then the call ran with the character replaced
    meta, messages, listener = ask_through_server(reply)
    _assert_went_on(meta, listener)
    assistant = next(m for m in messages if m.role == "assistant" and m.tool_calls)
    assert assistant.tool_calls[0].arguments == {"city": "Par\ufffdis"}


def test_a_huge_reply_is_stored_capped_with_a_marker(ask_through_server: Ask) -> None:
    # Given an answer of 300 000 characters
    # When the run goes through it
    meta, _, listener = ask_through_server(chat_completion(content="la " * 100_000))
    # Then the stored answer is cut, with a marker saying how much was left out
    _assert_went_on(meta, listener)
    assert meta.answer is not None and len(meta.answer) < 70_000
    assert meta.answer.endswith("240000 more characters were not kept]")


def test_a_cut_off_json_action_block_is_sent_back_as_a_parse_error(ask_through_server: Ask) -> None:
    # Given a ReAct JSON reply stopped by max_tokens inside its action block
    cut = 'Thought: I need the weather.\n```json\n{"action": "get_weather", "action_input": {"city": "Par'
    # When the run goes through it
    meta, messages, _ = ask_through_server(chat_completion(content=cut), strategy="react")
    # Then the model was told its block was cut off, and its next reply is the answer
    assert meta.status == "SUCCEEDED"
    corrective = [m for m in messages if m.role == "user"][1]
    assert "cut off" in corrective.content
    assert meta.answer == "Done."


def test_a_call_with_5_mb_of_arguments_is_refused_naming_the_limit_and_the_run_goes_on(
    ask_through_server: Ask,
) -> None:
    # Given a reply whose one tool call carries a 5 MB arguments string
    reply = chat_completion(tool_calls=[{"name": "get_weather", "arguments": json.dumps({"city": "x" * 5_000_000})}])
    # When the run goes through it
    meta, messages, listener = ask_through_server(reply)
    # Then the call was refused with an observation naming the limit, and the next reply is the answer
    _assert_went_on(meta, listener)
    assert meta.answer == "Done."
    (refusal,) = [m for m in messages if m.role == "tool"]
    assert "60,000 characters" in refusal.content and "nothing was called" in refusal.content
    # and the trace shows the refusal as the first iteration's decision, the stored call holding no arguments
    assert ask_through_server.store is not None
    (decision,) = ask_through_server.store.list_steps(meta.run_id, iteration=1)[1:]
    assert (decision.kind, decision.decision) == ("parse", "parse_error")
    assert decision.error is not None and refusal.content.startswith(decision.error)
    (call,) = next(m for m in messages if m.role == "assistant").tool_calls
    assert call.arguments == {"_oversized_arguments": 5_000_012}


def test_a_negative_token_count_is_estimated_and_the_run_succeeds(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given a model server whose answer reports -5 output tokens
    with FakeOpenAIServer() as server:
        reply = chat_completion(content="Sunny in Paris.")
        reply["usage"] = {"prompt_tokens": 10, "completion_tokens": -5}
        server.default(body=reply)
        model = {"provider": "openai", "base_url": server.base_url, "model": "fake-model", "api_key": "sk-test-key"}
        environment, listener = local_run(write_config(model, strategy="function_calling"))
        # When the question is asked
        meta, _ = environment.ask("weather in Paris?")
    # Then the run succeeded with the answer, at once, its usage Stepwise's estimate
    _assert_went_on(meta, listener)
    assert meta.answer == "Sunny in Paris."
    assert meta.usage.estimated_calls == 1 and meta.usage.input_tokens > 10 and meta.usage.output_tokens > 0
    # And the model step says its usage was estimated, and why
    (model_step,) = [step for step in environment.runtime.store.list_steps(meta.run_id) if step.kind == "llm"]
    assert model_step.usage_estimated is True
    assert model_step.note is not None and "usage estimated (completion_tokens is negative (-5))" in model_step.note
