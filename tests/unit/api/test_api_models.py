"""The request models: what a run or chat completion request must hold, and what it may not."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from stepwise.models.api_requests import InputMessage, RunRequest
from stepwise.models.chat_api import ChatCompletionRequest


def problems(model: type[RunRequest] | type[ChatCompletionRequest], body: dict[str, Any]) -> set[str]:
    """The fields a body is refused for ("" for the body as a whole)."""
    with pytest.raises(ValidationError) as refused:
        model.model_validate(body)
    return {".".join(str(part) for part in error["loc"]) for error in refused.value.errors()}


def test_a_run_request_takes_the_question_as_input_or_as_messages() -> None:
    # When a request gives its question either way
    by_input = RunRequest.model_validate({"input": "hi"})
    by_messages = RunRequest.model_validate({"messages": [{"role": "user", "content": "hi"}]})
    # Then both are accepted
    assert (by_input.input, by_messages.messages is not None) == ("hi", True)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({}, "", id="neither"),
        pytest.param({"input": "a", "messages": [{"role": "user", "content": "b"}]}, "", id="both"),
        pytest.param({"input": " \n"}, "input", id="blank input"),
        pytest.param({"messages": []}, "messages", id="no messages"),
        pytest.param({"messages": [{"role": "assistant", "content": "hi"}]}, "messages", id="no question last"),
        pytest.param({"messages": [{"role": "tool", "content": "x"}]}, "messages.0", id="tool without call id"),
        pytest.param({"input": "hi", "metadata": {f"k{n}": "v" for n in range(17)}}, "metadata", id="metadata"),
        pytest.param({"input": "hi", "session_id": "has space"}, "session_id", id="session id"),
        pytest.param({"input": "hi", "max_iterations": 3}, "max_iterations", id="unknown field"),
    ],
)
def test_a_run_request_is_refused_naming_the_field_at_fault(body: dict[str, Any], field: str) -> None:
    # When the body is validated, then the field at fault is named
    assert field in problems(RunRequest, body)


def test_content_given_as_text_parts_is_read_as_their_joined_text() -> None:
    # Given a message whose content is a list of text parts, as OpenAI clients may send
    message = InputMessage.model_validate(
        {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}
    )
    # Then its text is the parts joined
    assert message.text == "one\ntwo"


def test_a_chat_completion_request_accepts_the_openai_sampling_fields() -> None:
    # When a request carries the fields OpenAI clients commonly send
    request = ChatCompletionRequest.model_validate(
        {
            "model": "gpt-4o",
            "messages": [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "hi"}],
            "temperature": 0.2,
            "max_tokens": 100,
            "stream": True,
            "stream_options": {"include_usage": True},
            "user": "u-1",
        }
    )
    # Then it is accepted
    assert (request.stream, request.stream_options is not None and request.stream_options.include_usage) == (
        True,
        True,
    )


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        pytest.param({"n": 2}, "n", id="several choices"),
        pytest.param(
            {"tools": [{"type": "function", "function": {"name": "has space"}}]},
            "tools.0.function.name",
            id="client tool name",
        ),
        pytest.param(
            {"tools": [{"type": "function", "function": {"name": "find_tools"}}]},
            "tools",
            id="client tool named as the tool search",
        ),
        pytest.param(
            {"tools": [{"type": "function", "function": {"name": "get"}}] * 2},
            "tools",
            id="two client tools of one name",
        ),
        pytest.param({"stop": ["a", "b", "c", "d", "e"]}, "stop", id="more than four stops"),
        pytest.param({"response_format": {"type": "xml"}}, "response_format", id="unknown response format"),
        pytest.param({"logit_bias": {"50256": 200}}, "logit_bias", id="bias out of range"),
        pytest.param({"temperature": 5}, "temperature", id="temperature out of range"),
    ],
)
def test_a_chat_completion_request_refuses_what_the_agent_cannot_honour(extra: dict[str, Any], field: str) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]} | extra
    # When the body is validated, then the field is named
    assert field in problems(ChatCompletionRequest, body)
