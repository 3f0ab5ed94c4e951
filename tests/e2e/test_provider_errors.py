"""Provider errors a run survives, against a strict OpenAI-compatible fake, through the real state machine.

Each scenario ends the run SUCCEEDED or with a stop reason, with a non-empty answer whenever a tool had
answered (outcome `partial`), FAILED when nothing had (`none`); the fake refuses what the real provider
refuses (tests/support/strict_openai.py), with its recorded error bodies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.e2e.conftest import ConfigWriter, http_api
from tests.support.openai_server import FakeOpenAIServer, chat_completion
from tests.support.provider_errors import recorded_error
from tests.support.strict_openai import ProviderRules, strict_openai_server
from tests.support.tool_server import Json, ScriptableToolServer

REPORT = "Quarterly revenue grew 12 percent; " * 300


@pytest.fixture
def report_api() -> Iterator[ScriptableToolServer]:
    """A tool API whose one tool returns a long report (about 10,000 characters)."""
    with ScriptableToolServer() as server:
        server.on("/v1/report", Json({"report": REPORT}))
        yield server


def report_tool(server: ScriptableToolServer) -> dict[str, Any]:
    return http_api(
        f"{server.url}/v1",
        {"toolName": "get_report", "description": "The quarterly report", "method": "GET", "path": "/report"},
    )


def openai_model(server: FakeOpenAIServer, model: str = "gpt-4o-mini", **extra: Any) -> dict[str, Any]:
    return {
        "provider": "openai",
        "base_url": server.base_url,
        "model": model,
        "api_key": "sk-loopback-key",
        "timeout_seconds": 30,
        "capabilities": {"native_tools": True, "parallel_tools": True},
        **extra,
    }


def calls_report() -> dict[str, Any]:
    return chat_completion(tool_calls=[{"name": "get_report", "arguments": {}}])


def run(local_run: Callable[..., Any], config_dir: Any, question: str = "How did the quarter go?") -> tuple[Any, Any]:
    environment, _ = local_run(config_dir)
    meta, _ = environment.ask(question)
    return environment, meta


def test_a_context_overflow_after_a_tool_answered_ends_with_what_the_tool_returned(
    write_config: ConfigWriter, local_run: Callable[..., Any], report_api: ScriptableToolServer
) -> None:
    # Given a model whose window holds the question but not the tool's long report
    rules = ProviderRules.for_model("gpt-4o-mini", context_window=800)
    with strict_openai_server(rules) as server:
        server.enqueue(body=calls_report())
        config = write_config(openai_model(server), apis=[report_tool(report_api)], strategy="function_calling")
        # When the question is asked
        _, meta = run(local_run, config)
    # Then the provider refused the second call as too long; the conversation was summarized (the summarizer,
    # on the same window, was refused too, so the digest stood in), the call made again and, refused again,
    # cut to fit once more; told a far larger window by the catalog, Stepwise could not make it fit, and the
    # run ended with the report's summary
    assert rules.refused == ["context_length_exceeded"] * 4
    assert (meta.status, meta.stop_reason, meta.outcome) == ("SUCCEEDED", "context_window", "partial")
    assert meta.error is not None and meta.error.type == "ContextWindowExhausted"
    assert "Quarterly revenue grew 12 percent" in (meta.answer or "")


@pytest.mark.parametrize("refusal", ["invalid_api_key", "model_not_found", "unsupported_parameter"])
def test_a_refused_call_after_a_tool_answered_ends_with_the_best_answer_not_null(
    refusal: str, write_config: ConfigWriter, local_run: Callable[..., Any], report_api: ScriptableToolServer
) -> None:
    # Given a provider that refuses the second call (401, 404, 400 invalid_request_error) after a tool call
    with FakeOpenAIServer() as server:
        refused = recorded_error("openai", refusal, model="gpt-4o-mini", field="seed")
        server.enqueue(body=calls_report())
        server.default(status=refused["status"], body=refused["body"])
        config = write_config(openai_model(server), apis=[report_tool(report_api)], strategy="function_calling")
        # When the question is asked
        _, meta = run(local_run, config)
        # Then the refusal was not retried
        assert len(server.requests) == 2
    # And the run ended with a stop reason and what the tool had returned, the error kept
    assert (meta.status, meta.stop_reason) == ("SUCCEEDED", "model_error")
    assert meta.error is not None and refused["body"]["error"]["code"] in meta.error.message
    assert "Quarterly revenue" in (meta.answer or "")


def test_a_reply_with_no_choices_is_told_to_the_model_and_the_run_goes_on(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given a provider that answers 200 with `choices: []` once, then an answer
    with FakeOpenAIServer() as server:
        server.enqueue(
            body={"id": "chatcmpl-empty", "object": "chat.completion", "model": "gpt-4o-mini", "choices": []}
        )
        server.enqueue(body=chat_completion(content="Revenue grew."))
        config = write_config(openai_model(server), builtin=["current_time"], strategy="function_calling")
        # When the question is asked
        _, meta = run(local_run, config)
        # Then the model was told its reply was empty, and its next answer ended the run
        second = server.requests[1].body["messages"]
    assert any("reply was empty" in str(message.get("content")) for message in second)
    assert (meta.status, meta.stop_reason, meta.answer) == ("SUCCEEDED", "final_answer", "Revenue grew.")


def test_a_tool_call_cut_at_the_output_cap_is_not_run_and_the_model_is_told(
    write_config: ConfigWriter, local_run: Callable[..., Any], report_api: ScriptableToolServer
) -> None:
    # Given a model whose tool call was cut at the output cap, then an answer
    with FakeOpenAIServer() as server:
        cut = chat_completion(
            tool_calls=[{"name": "get_report", "arguments": '{"quarter": "Q3", "detail": "every li'}],
            finish_reason="length",
        )
        server.enqueue(body=cut)
        server.enqueue(body=chat_completion(content="I could not fetch the report."))
        config = write_config(openai_model(server), apis=[report_tool(report_api)], strategy="function_calling")
        # When the question is asked
        _, meta = run(local_run, config)
        second = server.requests[1].body["messages"]
    # Then the half-written call never reached the tool, and the model read why
    assert report_api.requests == []
    assert any("cut off at the output limit" in str(message.get("content")) for message in second)
    assert (meta.status, meta.answer) == ("SUCCEEDED", "I could not fetch the report.")


def test_sampling_fields_a_reasoning_model_refuses_are_dropped_before_they_leave(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given a reasoning model (it refuses temperature and takes max_completion_tokens) and a profile that sets both
    rules = ProviderRules.for_model("gpt-5-mini")
    with strict_openai_server(rules) as server:
        server.enqueue(body=chat_completion(content="Fine."))
        config = write_config(
            openai_model(server, model="gpt-5-mini"),
            builtin=["current_time"],
            strategy="function_calling",
            temperature=0.3,
            max_tokens=400,
        )
        # When the question is asked
        environment, meta = run(local_run, config)
        sent = server.requests[0].body
    # Then the request left without temperature, with the cap under the model's name, and the trace says so
    assert rules.refused == []
    assert "temperature" not in sent and sent["max_completion_tokens"] == 400
    model_step = next(step for step in environment.runtime.store.list_steps(meta.run_id) if step.kind == "llm")
    assert "temperature dropped" in (model_step.note or "")
    assert (meta.status, meta.answer) == ("SUCCEEDED", "Fine.")


def test_an_overloaded_provider_is_retried_within_the_run(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given a provider overloaded once (Anthropic's 529 overloaded_error), then an answer
    with FakeOpenAIServer() as server:
        overloaded = recorded_error("anthropic", "overloaded_error")
        server.enqueue(status=overloaded["status"], body=overloaded["body"])
        server.enqueue(body=chat_completion(content="Back."))
        config = write_config(openai_model(server), builtin=["current_time"], strategy="function_calling")
        # When the question is asked
        _, meta = run(local_run, config)
        # Then the call was retried and the run succeeded
        assert len(server.requests) == 2
    assert (meta.status, meta.answer) == ("SUCCEEDED", "Back.")


def test_a_hanging_model_ends_the_run_at_its_deadline_with_a_stop_reason(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given a model that never answers within its 60 s timeout, and a run allowed 2 seconds
    with FakeOpenAIServer() as server:
        server.default(body=chat_completion(content="Too late."), delay_seconds=60)
        config = write_config(
            openai_model(server, timeout_seconds=60),
            builtin=["current_time"],
            strategy="function_calling",
            limits={"max_execution_seconds": 2},
        )
        # When the question is asked
        _, meta = run(local_run, config)
        attempts = len(server.requests)
    # Then the call was cut at the deadline and not retried past it: the run ended on its deadline, FAILED, as
    # nothing had answered (no placeholder answer)
    assert attempts == 1
    assert (meta.status, meta.stop_reason, meta.outcome, meta.answer) == ("FAILED", "deadline", "none", None)
    assert meta.error is not None and meta.error.type == "LLMDeadlineReached"
