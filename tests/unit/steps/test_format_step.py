"""Format with a response_schema, on a moto table: the structured call is made once, even when Format is retried."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stepwise.config.model import StepwiseConfig
from stepwise.errors import LLMTransientError
from stepwise.models.messages import ChatMessage, ChatRequest, Completion
from stepwise.models.state import StatePayload
from stepwise.steps.format import format_run
from stepwise.steps.iteration_guard import iteration_guard
from stepwise.steps.llm_call import llm_call
from stepwise.steps.parse import parse
from stepwise.steps.runs import create_run, execution_input
from stepwise.steps.runtime import StepRuntime
from stepwise.store import ConversationStore

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


class QueuedModel:
    """A chat model that plays queued completions (or raises queued errors) and records each request."""

    def __init__(self, *replies: Completion | Exception) -> None:
        self.replies = list(replies)
        self.requests: list[ChatRequest] = []

    def complete(self, request: ChatRequest) -> Completion:
        self.requests.append(request)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


def runtime_with(model: QueuedModel, table: tuple[Any, str], tmp_path: Path, **profile: Any) -> StepRuntime:
    config = StepwiseConfig.from_mapping(
        {
            "models": {
                "m": {
                    "provider": "scripted",
                    "scenarios": [{"turns": [{"content": "unused"}]}],
                    "capabilities": {"json_mode": True},
                }
            },
            "profiles": {"default": {"model": "m", "strategy": "react", "limits": {"max_parse_errors": 1}} | profile},
        },
        environ={},
    )
    client, table_name = table
    store = ConversationStore(client, table_name)
    return StepRuntime(config=config, config_dir=tmp_path, store=store, chat_models={"m": model})


def run_to_format(runtime: StepRuntime) -> StatePayload:
    """Create a run and take it through one guard, model call and parse; the payload Format receives."""
    meta = create_run(
        runtime, messages=[ChatMessage(role="user", content="Weather in Paris?")], owner="alice", profile="default"
    )
    payload = StatePayload.model_validate(execution_input(meta.run_id))
    return parse(llm_call(iteration_guard(payload, runtime), runtime), runtime)


def test_a_retried_format_reuses_the_stored_reply_and_keeps_the_model_text_as_answer(
    dynamodb_table: tuple[Any, str], tmp_path: Path
) -> None:
    # Given a run stopped by a parse error, whose first formatting reply is invalid and whose second call fails
    model = QueuedModel(
        Completion(content="Rainy in Paris."),
        Completion(content='{"city": 1}'),
        LLMTransientError("HTTP 503"),
        Completion(content='{"city": "Paris"}'),
    )
    runtime = runtime_with(model, dynamodb_table, tmp_path, response_schema=SCHEMA)
    payload = run_to_format(runtime)
    with pytest.raises(LLMTransientError):
        format_run(payload, runtime)
    # When Format is retried
    result = format_run(payload, runtime)
    # Then only the failed attempt was made again, and the answer is the model's text, not a formatting reply
    assert model.requests[3] == model.requests[2]
    meta = runtime.store.require_run(payload.run_id)
    assert (result.stop_reason, meta.answer, meta.output) == ("parse_errors", "Rainy in Paris.", {"city": "Paris"})
    assert meta.outcome == "partial"
    assert meta.usage.llm_calls == 3


def test_a_run_stopped_before_any_answer_or_tool_result_fails_without_a_placeholder_answer(
    dynamodb_table: tuple[Any, str], tmp_path: Path
) -> None:
    # Given a run stopped by a parse error whose model wrote only a thought, no tool having run
    model = QueuedModel(Completion(content="Thought: let me think."))
    runtime = runtime_with(model, dynamodb_table, tmp_path, response_schema=SCHEMA)
    payload = run_to_format(runtime)
    # When Format runs
    result = format_run(payload, runtime)
    # Then the run FAILED with nothing to answer (no formatting call made), the stop reason saying why
    meta = runtime.store.require_run(payload.run_id)
    assert (result.status, meta.status, meta.stop_reason, meta.outcome) == ("FAILED", "FAILED", "parse_errors", "none")
    assert (meta.answer, meta.error.type if meta.error else None, len(model.requests)) == (None, "NoAnswer", 1)


def test_a_profile_without_response_schema_makes_no_formatting_call(
    dynamodb_table: tuple[Any, str], tmp_path: Path
) -> None:
    # Given a profile without a schema, whose model answers at once
    model = QueuedModel(Completion(content='```json\n{"action": "Final Answer", "action_input": "Rain."}\n```'))
    runtime = runtime_with(model, dynamodb_table, tmp_path)
    payload = run_to_format(runtime)
    # When Format runs
    format_run(payload, runtime)
    # Then the model was called for the loop only, and the run has no output and no output error
    meta = runtime.store.require_run(payload.run_id)
    assert len(model.requests) == 1
    assert (meta.answer, meta.output, meta.output_error) == ("Rain.", None, None)


def test_formatting_a_structured_answer_reads_the_conversation_once(
    dynamodb_table: tuple[Any, str], tmp_path: Path
) -> None:
    # Given a run stopped by a parse error (so the answer comes from the conversation) with a schema to fill
    model = QueuedModel(Completion(content="Rainy in Paris."), Completion(content='{"city": "Paris"}'))
    runtime = runtime_with(model, dynamodb_table, tmp_path, response_schema=SCHEMA)
    payload = run_to_format(runtime)
    client, _ = dynamodb_table
    reads: list[str] = []
    for operation in ("Query", "GetItem", "BatchGetItem"):
        client.meta.events.register(f"before-call.dynamodb.{operation}", lambda model, **_: reads.append(model.name))
    # When Format runs
    format_run(payload, runtime)
    # Then it read the run once (one Query: META, the messages with their trace steps, the decisions) besides
    # the structured output's look for a formatting reply already stored, and the usage is complete
    meta = runtime.store.require_run(payload.run_id)
    assert reads == ["Query", "GetItem"]
    assert meta.usage.llm_calls == 2
    assert meta.output == {"city": "Paris"}


def test_a_chinese_profile_is_asked_for_its_structured_answer_in_chinese(
    dynamodb_table: tuple[Any, str], tmp_path: Path
) -> None:
    # Given a profile with language zh, whose model answers, then gives JSON that breaks the schema, then valid JSON
    model = QueuedModel(
        Completion(content='```json\n{"action": "Final Answer", "action_input": "巴黎下雨。"}\n```'),
        Completion(content='{"city": 1}'),
        Completion(content='{"city": "巴黎"}'),
    )
    runtime = runtime_with(model, dynamodb_table, tmp_path, response_schema=SCHEMA, language="zh")
    # When Format asks for the structured answer
    format_run(run_to_format(runtime), runtime)
    # Then what Stepwise said in both formatting calls is Chinese, never the English wording
    asked = model.requests[2].messages
    instruction, retry = asked[-3].content, asked[-1].content
    assert instruction.startswith("请把你的最终回答写成一个符合以下 JSON Schema 的 JSON 值")
    assert retry.startswith("这条回复不符合 schema") and retry.endswith("请只回复修正后的 JSON。")
    said = "\n".join(message.content for message in asked if message.role == "user")
    assert not any(words in said for words in ("Give your final answer", "Your final answer was", "Reply again"))
