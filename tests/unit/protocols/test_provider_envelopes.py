"""Provider envelopes read as each provider documents them: Gemini's Interactions API and code execution, Meta's
Llama API, Cloudflare Workers AI's calls, replies a provider stopped before any text (its filter, a call it could not
read, the output cap), whose reason the error names, and error bodies where a reply was expected."""

from __future__ import annotations

from typing import Any

import pytest

from stepwise.models.decision import FinalAnswer, ParseError, ToolCalls
from stepwise.protocols import parse_completion
from stepwise.protocols.provider_responses import completion_from_response


def _interaction(*steps: dict[str, Any], key: str = "steps") -> dict[str, Any]:
    return {
        "id": "v1_x",
        "object": "interaction",
        "model": "gemini-3-flash-preview",
        "status": "completed",
        key: list(steps),
    }


def test_an_interaction_reply_is_its_model_output_not_the_echoed_input_nor_the_thought() -> None:
    # Given an Interactions API response (the user's input echoed first, a thought summary, the model's output)
    response = _interaction(
        {"type": "user_input", "content": [{"type": "text", "text": "Tell me a joke."}]},
        {"type": "thought", "signature": "c2ln", "summary": [{"type": "text", "text": "A pun will do."}]},
        {"type": "model_output", "content": [{"type": "text", "text": "I would tell a UDP joke, "}]},
        {"type": "model_output", "content": [{"type": "text", "text": "but you might not get it."}]},
    )
    # When read / Then the answer is the model's outputs joined, and the summary is the reasoning
    completion = completion_from_response(response)
    assert not isinstance(completion, ParseError)
    assert completion.content == "I would tell a UDP joke, but you might not get it."
    assert [block.text for block in completion.reasoning] == ["A pun will do."]


def test_an_interaction_function_call_step_is_a_call_with_its_id() -> None:
    # Given a function_call step (arguments an object), in the steps shape and in the legacy outputs shape
    call = {"type": "function_call", "id": "fc_1", "name": "get_weather", "arguments": {"city": "Oslo"}}
    for response in (_interaction(call), _interaction(call, key="outputs")):
        # When parsed / Then it is the call to make, the provider's id kept
        decision = parse_completion(response, "function_calling")
        assert isinstance(decision, ToolCalls)
        assert [(c.id, c.name, c.arguments) for c in decision.calls] == [("fc_1", "get_weather", {"city": "Oslo"})]


def test_tools_gemini_ran_in_an_interaction_are_recorded_not_called() -> None:
    # Given a google_search call and result Gemini ran itself, then text apart from the legacy text before it
    response = _interaction(
        {"type": "text", "text": "Let me search."},
        {"type": "google_search_call", "id": "gs_1", "arguments": {"queries": ["x"]}},
        {"type": "google_search_result", "call_id": "gs_1", "result": []},
        {"type": "text", "text": "Spain won."},
        key="outputs",
    )
    # When read / Then nothing is to be called, the search is recorded, the texts are paragraphs apart
    completion = completion_from_response(response)
    assert not isinstance(completion, ParseError)
    assert (completion.tool_calls, completion.server_tools) == ([], ["google_search"])
    assert completion.content == "Let me search.\n\nSpain won."


# How a candidate Gemini stopped as a malformed function call comes: with no content, an empty one, empty parts, or
# only the thought it had before the call it could not write (a thinking model's).
_MALFORMED_CONTENTS: dict[str, dict[str, Any] | None] = {
    "no content": None,
    "an empty content": {},
    "empty parts": {"parts": []},
    "a thought only": {"role": "model", "parts": [{"text": "**Checking the weather**", "thought": True}]},
}


@pytest.mark.parametrize("content", _MALFORMED_CONTENTS.values(), ids=_MALFORMED_CONTENTS.keys())
def test_a_call_gemini_could_not_read_is_quoted_back_to_the_model_from_its_finish_message(
    content: dict[str, Any] | None,
) -> None:
    # Given a Gemini candidate stopped as a malformed function call, with Gemini's message naming the call
    said = "Malformed function call: print(default_api.get_weather(city=Paris))"
    candidate = {"finishReason": "MALFORMED_FUNCTION_CALL", "index": 0, "finishMessage": said}
    response = {"candidates": [candidate | ({} if content is None else {"content": content})]}
    # When parsed
    decision = parse_completion(response, "function_calling")
    # Then the model is told its call was malformed, and what Gemini read of it
    assert isinstance(decision, ParseError)
    assert f"MALFORMED_FUNCTION_CALL; the provider said: {said})" in decision.message


def test_a_finish_message_as_vertex_ai_sent_it_is_quoted_with_its_lines() -> None:
    # Given the finish message Vertex AI sent for a call Gemini wrote as Python, over two lines (as recorded in
    # googleapis/python-aiplatform issue 4472: "Finish message: Malformed function call:\nprint(28 > 30)")
    said = "Malformed function call:\nprint(28 > 30)\n"
    response = {"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL", "finishMessage": said, "content": {}}]}
    # When parsed
    decision = parse_completion(response, "function_calling")
    # Then the model is shown the code it wrote, the closing line break dropped
    assert isinstance(decision, ParseError)
    assert "the provider said: Malformed function call:\nprint(28 > 30))." in decision.message


@pytest.mark.parametrize(
    ("response", "words"),
    [
        ({"candidates": [{"finishReason": "SAFETY", "index": 0}]}, ["content filter", "SAFETY"]),
        ({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}, ["content filter", "PROHIBITED_CONTENT"]),
        ({"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL"}]}, ["malformed", "MALFORMED_FUNCTION_CALL"]),
        ({"choices": [{"index": 0, "finish_reason": "content_filter"}]}, ["content filter", "content_filter"]),
        (
            {
                "object": "response",
                "status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"},
                "output": [],
            },
            ["output limit", "max_output_tokens"],
        ),
        ({"type": "message", "content": [], "stop_reason": "refusal"}, ["content filter", "refusal"]),
    ],
    ids=[
        "gemini-safety",
        "gemini-prompt-blocked",
        "gemini-malformed-call",
        "azure-filter",
        "responses-cut",
        "claude-refusal",
    ],
)
def test_a_reply_the_provider_stopped_before_any_text_names_why(response: dict[str, Any], words: list[str]) -> None:
    # Given a response with no text and no call, and the provider's reason; When parsed
    decision = parse_completion(response, "function_calling")
    # Then it is a parse error saying the reply was empty and why
    assert isinstance(decision, ParseError)
    assert all(word in decision.message for word in ["empty", *words])


def test_an_empty_reply_that_simply_stopped_says_only_that_it_was_empty() -> None:
    # Given Gemini's candidate with no parts that ended normally; When parsed / Then the plain empty-reply error
    decision = parse_completion(
        {"candidates": [{"content": {"role": "model"}, "finishReason": "STOP"}]}, "function_calling"
    )
    assert decision == ParseError(message="Your reply was empty.")


def test_aleph_alpha_completions_are_read_as_text() -> None:
    # Given Aleph Alpha's complete API body; When parsed / Then its first completion is the answer
    response = {
        "model_version": "2021-12",
        "completions": [{"completion": " Paris.", "finish_reason": "maximum_tokens"}],
    }
    assert parse_completion(response, "function_calling") == FinalAnswer(text="Paris.")


def test_a_turn_the_provider_paused_is_continued_not_taken_as_the_answer() -> None:
    # Given Claude's reply paused in its own server-tool loop (pause_turn), with the text it wrote so far
    response = {
        "type": "message",
        "content": [
            {"type": "text", "text": "I'll search for that."},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}},
        ],
        "stop_reason": "pause_turn",
    }
    # When parsed, with and without its text / Then it is no final answer: the model is asked to go on
    decision = parse_completion(response, "function_calling")
    assert isinstance(decision, ParseError)
    assert decision.message.startswith("The provider paused your turn")
    silent = parse_completion({**response, "content": response["content"][1:]}, "function_calling")
    assert isinstance(silent, ParseError)
    assert silent.message.startswith("Your reply was empty: the provider paused your turn")


def test_a_spoken_reply_is_read_as_its_transcript() -> None:
    # Given an OpenAI chat completion whose reply is audio (content null, the transcript beside the data)
    message = {"role": "assistant", "content": None, "audio": {"id": "a1", "data": "UklG", "transcript": "Hello."}}
    response = {"choices": [{"index": 0, "finish_reason": "stop", "message": message}]}
    # When parsed / Then the transcript is the answer
    assert parse_completion(response, "function_calling") == FinalAnswer(text="Hello.")


def test_every_responses_item_of_a_tool_the_provider_ran_is_recorded_and_none_is_called() -> None:
    # Given Responses items of tools xAI and OpenAI ran themselves, and a computer call the caller would drive
    items = [{"type": kind, "id": kind} for kind in ("x_search_call", "code_interpreter_call", "computer_call")]
    message = {"type": "message", "content": [{"type": "output_text", "text": "Done."}]}
    # When read / Then the provider's tools are recorded, the caller's is not, and nothing is to be called
    completion = completion_from_response({"object": "response", "output": [*items, message]})
    assert not isinstance(completion, ParseError)
    assert (completion.content, completion.tool_calls) == ("Done.", [])
    assert completion.server_tools == ["x_search", "code_interpreter"]


def test_a_mistral_conversation_reads_its_message_and_calls_and_records_the_tools_mistral_ran() -> None:
    # Given a Conversations API response: a web search Mistral ran, its message (text chunks around a citation),
    # and a function call for the caller
    response = {
        "object": "conversation.response",
        "outputs": [
            {"type": "tool.execution", "name": "web_search"},
            {
                "type": "message.output",
                "content": [
                    {"type": "text", "text": "Spain won"},
                    {"type": "tool_reference", "tool": "web_search", "title": "Euro 2024", "url": "https://e.org"},
                    {"type": "text", "text": " in 2024."},
                ],
            },
            {"type": "function.call", "tool_call_id": "t1", "name": "search", "arguments": '{"query": "final"}'},
        ],
    }
    # When read / Then the text is one sentence, the call is to make, the search is recorded
    completion = completion_from_response(response)
    assert not isinstance(completion, ParseError)
    assert completion.content == "Spain won in 2024."
    assert [(c.id, c.name, c.arguments) for c in completion.tool_calls] == [("t1", "search", {"query": "final"})]
    assert completion.server_tools == ["web_search"]


def test_the_reasoning_bedrock_puts_before_gpt_oss_answers_is_not_the_answer() -> None:
    # Given gpt-oss through Bedrock's InvokeModel: its reasoning in <reasoning> tags before the text content
    message = {"role": "assistant", "content": "<reasoning>Largest planet: Jupiter.</reasoning>Jupiter is the largest."}
    response = {"choices": [{"index": 0, "finish_reason": "stop", "message": message}]}
    # When parsed / Then the answer is the text after the reasoning
    assert parse_completion(response, "function_calling") == FinalAnswer(text="Jupiter is the largest.")


def test_code_gemini_ran_and_the_searches_and_pages_it_grounded_on_are_recorded_as_tools_it_ran() -> None:
    # Given a generateContent candidate with code Gemini ran, its result, the answer, and grounding searches
    parts = [
        {"executableCode": {"language": "PYTHON", "code": "print(2 + 2)"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "4\n"}},
        {"text": "2 + 2 = 4."},
    ]
    candidate = {
        "content": {"parts": parts},
        "finishReason": "STOP",
        "groundingMetadata": {"webSearchQueries": ["2+2"]},
        "urlContextMetadata": {"urlMetadata": [{"retrievedUrl": "https://e.org"}]},
    }
    # When read / Then the answer is the text and the tools are recorded, none called
    completion = completion_from_response({"candidates": [candidate]})
    assert not isinstance(completion, ParseError)
    assert (completion.content, completion.tool_calls) == ("2 + 2 = 4.", [])
    assert completion.server_tools == ["code_execution", "google_search", "url_context"]


def test_a_choice_without_a_message_whose_finish_reason_is_no_word_is_unreadable() -> None:
    # Given a choice with neither a message nor a finish reason that is a string; When parsed
    decision = parse_completion({"choices": [{"index": 0, "finish_reason": {"reason": "x"}}]}, "function_calling")
    # Then it is the parse error naming what is missing, never an exception
    assert decision == ParseError(message="The response has no choices[0].message.")


def test_the_tools_a_groq_compound_system_ran_are_recorded_and_its_answer_kept() -> None:
    # Given a Groq compound reply: the answer, with the searches Groq ran itself listed beside it
    message = {"role": "assistant", "content": "About $97,000.", "executed_tools": [{"type": "search", "index": 0}]}
    # When read / Then the answer is the content, nothing is to be called, the search is recorded
    completion = completion_from_response({"choices": [{"index": 0, "finish_reason": "stop", "message": message}]})
    assert not isinstance(completion, ParseError)
    assert (completion.content, completion.tool_calls, completion.server_tools) == ("About $97,000.", [], ["search"])


def test_gemini_text_on_both_sides_of_the_code_it_ran_is_two_paragraphs_not_one_sentence() -> None:
    # Given Gemini text, the code it ran and the output, then more text (the first passage ends without a break)
    parts = [
        {"text": "Here is the code:"},
        {"executableCode": {"language": "PYTHON", "code": "print(1 + 1)"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "2\n"}},
        {"text": "The answer is 2."},
    ]
    # When read / Then the two passages are a paragraph apart, not run together
    completion = completion_from_response({"candidates": [{"content": {"parts": parts}, "finishReason": "STOP"}]})
    assert not isinstance(completion, ParseError)
    assert completion.content == "Here is the code:\n\nThe answer is 2."


def test_a_passage_that_already_ends_with_a_blank_line_gets_no_second_one() -> None:
    # Given Gemini text ending in a blank line before the code it ran, then the answer
    parts = [
        {"text": "We sum them with a tool.\n\n"},
        {"executableCode": {"language": "PYTHON", "code": "print(28)"}},
        {"text": "The sum is 28."},
    ]
    # When read / Then that blank line is the paragraph break
    completion = completion_from_response({"candidates": [{"content": {"parts": parts}, "finishReason": "STOP"}]})
    assert not isinstance(completion, ParseError)
    assert completion.content == "We sum them with a tool.\n\nThe sum is 28."


@pytest.mark.parametrize(
    "content",
    ["It is sunny.", {"type": "text", "text": "It is sunny."}],
    ids=["string", "one-text-item"],
)
def test_a_llama_api_completion_message_is_the_answer_with_its_stop_reason(content: Any) -> None:
    # Given a Llama API response whose content is a string or one text item
    response = {"id": "x", "completion_message": {"role": "assistant", "stop_reason": "stop", "content": content}}
    # When read / Then its text is the answer and its stop reason is kept
    completion = completion_from_response(response)
    assert not isinstance(completion, ParseError)
    assert (completion.content, completion.finish_reason) == ("It is sunny.", "stop")


def test_a_llama_api_tool_call_is_a_call_with_its_id() -> None:
    # Given a Llama API response with a call (arguments a JSON string) beside an empty text item
    call = {"id": "call_1", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    message = {"role": "assistant", "stop_reason": "tool_calls", "content": {"type": "text", "text": ""}}
    # When parsed / Then it is the call, with the provider's id
    decision = parse_completion({"completion_message": {**message, "tool_calls": [call]}}, "function_calling")
    assert isinstance(decision, ToolCalls)
    assert [(c.id, c.name, c.arguments) for c in decision.calls] == [("call_1", "get_weather", {"city": "Paris"})]


def test_a_llama_stack_call_named_by_tool_name_and_call_id_is_read() -> None:
    # Given Llama Stack's inference reply: a call with call_id, tool_name and arguments as an object
    call = {"call_id": "c-7", "tool_name": "get_weather", "arguments": {"city": "Oslo"}}
    message = {"role": "assistant", "content": "", "stop_reason": "end_of_turn", "tool_calls": [call]}
    # When parsed / Then it is that call, with that id
    decision = parse_completion({"completion_message": message}, "function_calling")
    assert isinstance(decision, ToolCalls)
    assert [(c.id, c.name, c.arguments) for c in decision.calls] == [("c-7", "get_weather", {"city": "Oslo"})]


def test_cloudflare_workers_ai_tool_calls_are_calls_not_an_unknown_format() -> None:
    # Given a Workers AI REST response with traditional function calling's tool_calls (name, arguments object)
    response = {
        "result": {"tool_calls": [{"name": "get_weather", "arguments": {"city": "London"}}]},
        "success": True,
        "errors": [],
        "messages": [],
    }
    # When parsed / Then it is the call
    decision = parse_completion(response, "function_calling")
    assert isinstance(decision, ToolCalls)
    assert [(c.name, c.arguments) for c in decision.calls] == [("get_weather", {"city": "London"})]


def test_an_error_body_where_a_reply_was_expected_names_the_providers_message() -> None:
    # Given Google's error body (code, message, status) where a generateContent reply was expected
    error = {"code": 429, "message": "Quota exceeded for quota metric 'requests'.", "status": "RESOURCE_EXHAUSTED"}
    # When parsed / Then the parse error carries the provider's own message
    decision = parse_completion({"error": error}, "function_calling")
    assert decision == ParseError(
        message="The provider answered with an error, not a reply: Quota exceeded for quota metric 'requests'."
    )
