"""Replies read as leniently as the provider's own SDK reads them: one table of the deviations servers send.

Each case takes a real reply from the completion corpus (tests/corpus: DeepSeek's documented reply with its
reasoning and usage, OpenAI's documented tool call), changes it the way some server does, and says what is
read: the text, the tool calls, and the usage (the counts, or why they cannot be trusted and must be
estimated). Only a body with no chat completion envelope at all is refused.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from stepwise.llm.openai_replies import NotACompletion, read_chat_completion
from stepwise.models.finish import EMPTY_REPLY
from stepwise.models.messages import ChatMessage, ChatRequest, Completion, ToolCall, Usage
from stepwise.protocols.usage_fields import converse_usage
from stepwise.steps.token_estimate import reply_tokens, request_tokens
from stepwise.steps.usage_estimate import with_estimated_usage
from tests.corpus.rates import load

Body = dict[str, Any]
CORPUS = {case["name"]: case["input"] for case in load("function_calling")}
# DeepSeek's reply: 18 prompt tokens, 120 output tokens of which 104 reasoning.
ANSWER = "deepseek_reasoning_content"
TOOL_CALL = "openai_tool_call"


def usage(**changes: Any) -> Callable[[Body], None]:
    """Change the reply's `usage` object: a value of `...` removes the field."""

    def change(body: Body) -> None:
        for name, value in changes.items():
            if value is ...:
                body["usage"].pop(name, None)
            else:
                body["usage"][name] = value

    return change


def message(**changes: Any) -> Callable[[Body], None]:
    """Change the first choice's message."""

    def change(body: Body) -> None:
        body["choices"][0]["message"].update(changes)

    return change


def replace(**changes: Any) -> Callable[[Body], None]:
    """Change top-level fields of the body: a value of `...` removes the field."""

    def change(body: Body) -> None:
        for name, value in changes.items():
            if value is ...:
                body.pop(name, None)
            else:
                body[name] = value

    return change


def first_call(**changes: Any) -> Callable[[Body], None]:
    """Change the `function` of the reply's first tool call (`id` changes the call's id)."""

    def change(body: Body) -> None:
        call = body["choices"][0]["message"]["tool_calls"][0]
        if "id" in changes:
            call["id"] = changes.pop("id")
        call["function"].update(changes)

    return change


@dataclass(frozen=True)
class Case:
    """A corpus reply, how a server changes it, and what is read from it."""

    base: str
    change: Callable[[Body], None]
    text: str | None = None
    calls: list[tuple[str | None, str, dict[str, Any]]] | None = None
    # (input, output, cached, reasoning) when the usage is trusted
    counts: tuple[int, int, int, int] | None = None
    # words of `Usage.unreliable` when it is not
    unreliable: str | None = None
    finish_reason: str | None = field(default="unchanged")


CASES: dict[str, Case] = {
    # usage: what the SDK passes through, read as the numbers they are
    "as documented": Case(ANSWER, lambda body: None, text="9.11 is less than 9.8.", counts=(18, 120, 0, 104)),
    "float counts": Case(ANSWER, usage(prompt_tokens=18.0, completion_tokens=120.0), counts=(18, 120, 0, 104)),
    "numeric strings": Case(ANSWER, usage(prompt_tokens="18", completion_tokens=" 120 "), counts=(18, 120, 0, 104)),
    "a total that is not a number": Case(ANSWER, usage(total_tokens="x"), counts=(18, 120, 0, 104)),
    "no total, null details": Case(
        ANSWER, usage(total_tokens=..., completion_tokens_details=None), counts=(18, 120, 0, 0)
    ),
    "cached tokens in the prompt details": Case(
        ANSWER, usage(prompt_tokens_details={"cached_tokens": "16"}), counts=(18, 120, 16, 104)
    ),
    "the Responses API's names": Case(
        ANSWER,
        usage(prompt_tokens=..., completion_tokens=..., input_tokens=18, output_tokens=120),
        counts=(18, 120, 0, 104),
    ),
    # usage that cannot be a real count: the reply is kept, its usage is to be estimated
    "a prompt count that is a word": Case(
        ANSWER, usage(prompt_tokens="lots"), text="9.11 is less than 9.8.", unreliable="prompt_tokens is not a number"
    ),
    "a negative output count": Case(ANSWER, usage(completion_tokens=-5), unreliable="completion_tokens is negative"),
    "a count that is true": Case(ANSWER, usage(completion_tokens=True), unreliable="completion_tokens is not a number"),
    "an infinite count": Case(ANSWER, usage(prompt_tokens=float("inf")), unreliable="prompt_tokens is not a number"),
    "more cached than prompt tokens": Case(
        ANSWER, usage(prompt_tokens_details={"cached_tokens": 50}), unreliable="more cached tokens (50)"
    ),
    "a trillion reasoning tokens": Case(
        ANSWER,
        usage(completion_tokens_details={"reasoning_tokens": 10**12}),
        unreliable="reasoning_tokens is beyond any model's window",
    ),
    "more reasoning than output tokens": Case(
        ANSWER,
        usage(completion_tokens_details={"reasoning_tokens": 500}, total_tokens=None),
        unreliable="more reasoning tokens (500) than output tokens (120)",
    ),
    "a prompt counted as nothing": Case(ANSWER, usage(prompt_tokens=0), unreliable="counted as 0 tokens"),
    "no output count": Case(ANSWER, usage(completion_tokens=...), unreliable="completion_tokens is missing"),
    "no usage": Case(ANSWER, replace(usage=...), text="9.11 is less than 9.8.", unreliable="the reply has no usage"),
    "a usage that is a list": Case(ANSWER, replace(usage=[18, 120]), unreliable="usage is not an object"),
    # the reply's shape
    "a text part whose text is null": Case(
        ANSWER,
        message(content=[{"type": "text", "text": None}, {"type": "text", "text": "It is 14 degrees."}]),
        text="It is 14 degrees.",
    ),
    "parts that are bare strings, images and thinking": Case(
        ANSWER,
        message(content=["It is ", {"type": "image_url"}, {"type": "thinking", "text": "hmm"}, "14 degrees."]),
        text="It is 14 degrees.",
    ),
    "content that is a number": Case(ANSWER, message(content=14), text=""),
    "a refusal part instead of text": Case(
        ANSWER,
        message(content=[{"type": "refusal", "refusal": "I cannot help with that."}]),
        text="I cannot help with that.",
    ),
    "a refusal beside null content": Case(
        "openai_refusal", lambda body: None, text="I'm sorry, I cannot assist with that request."
    ),
    "a finish reason that is not a string": Case(
        ANSWER, lambda body: body["choices"][0].update(finish_reason=7), finish_reason=None
    ),
    "a model name that is null": Case(ANSWER, replace(model=None), text="9.11 is less than 9.8."),
    "a choice with a delta instead of a message": Case(
        ANSWER,
        lambda body: body["choices"][0].update(delta=body["choices"][0].pop("message")),
        text="9.11 is less than 9.8.",
    ),
    "a legacy text choice": Case(
        ANSWER, lambda body: body.update(choices=[{"text": "Paris.", "index": 0}]), text="Paris."
    ),
    "no choice at all": Case(ANSWER, replace(choices=[]), text="", finish_reason=EMPTY_REPLY),
    "a spoken reply": Case(
        "openai_chat_audio_reply_transcript",
        lambda body: None,
        text="Yes, golden retrievers are known to be very friendly dogs.",
    ),
    "a choice the content filter stopped before any message": Case(
        "openllmetry_azure_openai_finish_content_filter_no_message",
        lambda body: None,
        text="",
        finish_reason="content_filter",
    ),
    # tool calls
    "a documented tool call": Case(
        TOOL_CALL, lambda body: None, calls=[("call_abc123", "get_current_weather", {"location": "Boston, MA"})]
    ),
    "arguments as an object": Case(
        TOOL_CALL,
        first_call(arguments={"location": "Paris"}),
        calls=[("call_abc123", "get_current_weather", {"location": "Paris"})],
    ),
    "arguments as an array": Case(
        TOOL_CALL, first_call(arguments=[1, 2]), calls=[("call_abc123", "get_current_weather", {"_raw": "[1, 2]"})]
    ),
    "null arguments": Case(TOOL_CALL, first_call(arguments=None), calls=[("call_abc123", "get_current_weather", {})]),
    "a numeric call id": Case(
        TOOL_CALL, first_call(id=7), calls=[("7", "get_current_weather", {"location": "Boston, MA"})]
    ),
    "a null name beside a good call": Case(
        TOOL_CALL,
        lambda body: body["choices"][0]["message"]["tool_calls"].insert(0, {"id": "x", "function": {"name": None}}),
        calls=[("call_abc123", "get_current_weather", {"location": "Boston, MA"})],
    ),
    "tool calls holding null and a string": Case(
        TOOL_CALL,
        lambda body: body["choices"][0]["message"]["tool_calls"].extend([None, "call"]),
        calls=[("call_abc123", "get_current_weather", {"location": "Boston, MA"})],
    ),
    "a legacy function call": Case(
        TOOL_CALL,
        message(tool_calls=None, function_call={"name": "get_time", "arguments": "{}"}),
        calls=[("call_0", "get_time", {})],
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_server_deviation_is_read_as_the_sdk_reads_it(case: Case) -> None:
    # Given a real reply changed the way some server changes it
    body = copy.deepcopy(CORPUS[case.base])
    case.change(body)
    # When it is read
    completion = read_chat_completion(body, model="configured-model")
    # Then its text, tool calls and usage are what it means, and broken usage is marked, never refused
    if case.text is not None:
        assert completion.content == case.text
    if case.calls is not None:
        assert [(call.id, call.name, call.arguments) for call in completion.tool_calls] == case.calls
    if case.finish_reason != "unchanged":
        assert completion.finish_reason == case.finish_reason
    counted = completion.usage
    if case.counts is not None:
        assert counted.unreliable is None
        assert (counted.input_tokens, counted.output_tokens, counted.cache_read_tokens, counted.reasoning_tokens) == (
            case.counts
        )
    if case.unreliable is not None:
        assert counted.unreliable is not None and case.unreliable in counted.unreliable
        assert (counted.input_tokens, counted.output_tokens, counted.reasoning_tokens) == (0, 0, 0)


def test_a_model_name_the_body_does_not_give_is_the_configured_one() -> None:
    # Given a reply without a usable model name; When read; Then the configured name stands
    body = copy.deepcopy(CORPUS[ANSWER]) | {"model": 12}
    assert read_chat_completion(body, model="configured-model").model == "configured-model"


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"object": "chat.completion"}, "choices: Field required"),
        ({"choices": None}, "choices: Input should be a valid list"),
        ({"choices": ["text"]}, "body.choices.0: Input should be a valid dictionary"),
        ({"choices": [{"index": 0, "message": None}]}, "body.choices.0.message: Input should be a valid dictionary"),
        ({"choices": [{"index": 0, "finish_reason": {}}]}, "body.choices.0.message: Field required"),
        ([{"choices": []}], "body: Input should be a valid dictionary"),
    ],
    ids=["no-choices", "null-choices", "a-string-choice", "a-null-message", "an-object-finish-reason", "a-list"],
)
def test_a_body_without_the_envelope_is_not_a_completion_and_the_field_is_named(body: Any, named: str) -> None:
    # Given a 200 body with no chat completion in it; When read; Then it is refused, naming the field and why
    with pytest.raises(NotACompletion, match=named):
        read_chat_completion(body, model="configured-model")


@pytest.mark.parametrize(
    ("sent", "counts", "unreliable"),
    [
        ({"inputTokens": 100, "outputTokens": 80, "cacheReadInputTokens": 900}, (1000, 80, 900), None),
        ({"inputTokens": "100", "outputTokens": 80.0}, (100, 80, 0), None),
        ({"inputTokens": 100, "outputTokens": -5}, None, "outputTokens is negative"),
        ({"inputTokens": 100}, None, "outputTokens is missing"),
        ({"inputTokens": 100, "outputTokens": 8, "cacheWriteInputTokens": "many"}, None, "not a number"),
        (None, None, "the reply has no usage"),
    ],
    ids=["cache-reads", "strings-and-floats", "negative", "missing", "not-a-number", "none"],
)
def test_converse_usage_is_read_the_same_way(
    sent: Any, counts: tuple[int, int, int] | None, unreliable: str | None
) -> None:
    # Given a Bedrock Converse usage as sent; When read
    read = converse_usage(sent)
    # Then the counts are Usage's (the cache reads within the input), or marked unreliable
    if counts is not None:
        assert read.unreliable is None and (read.input_tokens, read.output_tokens, read.cache_read_tokens) == counts
    else:
        assert read.unreliable is not None and unreliable is not None and unreliable in read.unreliable


def test_an_unreliable_usage_is_replaced_by_the_estimate_of_the_request_and_the_reply() -> None:
    # Given a reply whose usage could not be trusted, to a request of a few messages
    request = ChatRequest(messages=[ChatMessage(role="user", content="How warm is it in Paris? " * 20)])
    reply = Completion(content="It is 14 degrees.", usage=Usage(unreliable="completion_tokens is negative (-5)"))
    # When its usage is estimated
    estimated = with_estimated_usage(reply, request).usage
    # Then the counts are the estimates of the request and the reply, and the reason stays
    assert (estimated.input_tokens, estimated.output_tokens) == (request_tokens(request), reply_tokens(reply))
    assert estimated.input_tokens > 0 and estimated.output_tokens > 0
    assert estimated.unreliable == "completion_tokens is negative (-5)"


def test_a_counted_usage_is_left_as_the_provider_counted_it() -> None:
    # Given a reply whose usage the provider counted; When it goes through the estimate; Then it is unchanged
    reply = Completion(content="ok", usage=Usage(input_tokens=31, output_tokens=4))
    request = ChatRequest(messages=[ChatMessage(role="user", content="hi")])
    assert with_estimated_usage(reply, request) is reply


@pytest.mark.parametrize(
    ("case", "call"),
    [
        (
            "openai_custom_tool_call_free_text",
            ToolCall(id="call_custom_1", name="search", arguments={"input": "tech news today"}),
        ),
        (
            "openai_custom_tool_call_json_input",
            ToolCall(id="call_custom_1", name="get_weather", arguments={"city": "Paris"}),
        ),
    ],
)
def test_a_custom_tool_call_is_a_call_with_its_input_as_arguments(case: str, call: ToolCall) -> None:
    # Given a gpt-5 reply calling a custom tool, its input a free-form string (or a JSON object written there)
    # When the body is read
    completion = read_chat_completion(CORPUS[case], model="gpt-5")
    # Then it is that call, not an empty reply
    assert (completion.content, completion.tool_calls) == ("", [call])
