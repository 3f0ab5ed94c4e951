"""Properties: parsing never raises on any input, and what a protocol writes it reads back."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from stepwise.models.decision import FinalAnswer, ParseError, ToolCalls
from stepwise.models.messages import Completion, ToolCall
from stepwise.protocols import TEXT_PROTOCOLS, ProtocolName, get_protocol, parse_completion
from stepwise.protocols.base import TextProtocol

# 100 examples a property in the suite; `make fuzz` runs these properties with its own count (500)
EXAMPLES = int(os.environ.get("STEPWISE_FUZZ_EXAMPLES", "100"))
PROPERTY_SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PROTOCOL_CHOICES = ["auto", "function_calling", *TEXT_PROTOCOLS]

# Pieces of every protocol's syntax, so that random text often looks almost like real output.
FRAGMENTS = [
    "Thought:", "Action:", "Action Input:", "Final Answer:", "Observation:", "思考\uff1a", "动作\uff1a",
    "动作输入\uff1a", "最终答案\uff1a", "ACTION\uff1a", "**Action:**", "```json\n", "```", "{", "}", "[",
    "]", '"', "'", "\\", "\\u", "\\ud83d", ",", ":", "=", "(", ")", "\n", "True", "None", "null",
    "1e999", "-", "<action>", "</action>", "<final_answer>", "</final_answer>", "<thought>",
    "<observation>", "<action_input>", "/*ACTION*/", "/*END_ACTION*/", "/*FINAL_ANSWER*/",
    "/*PLANNING*/", "/*", "*/", '"action"', '"action_input"', '"tool"', '"parameters"',
    "Final Answer", "search", "search(", "&quot;", "//",
]  # fmt: skip
model_like_text = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=12), max_size=40).map("".join)

RESPONSE_KEYS = [
    "choices", "message", "content", "tool_calls", "function", "name", "arguments", "output", "toolUse",
    "toolUseId", "input", "type", "text", "id", "refusal", "function_call", "tool_use", "_raw",
]  # fmt: skip
json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
response_like = st.recursive(
    json_scalars | st.sampled_from(["tool_use", "text", "{}", '{"a": 1', "get_time"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(RESPONSE_KEYS) | st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=25,
)
response_dicts = st.dictionaries(st.sampled_from(RESPONSE_KEYS) | st.text(max_size=8), response_like, max_size=5)


def assert_one_decision(decision: object) -> None:
    assert isinstance(decision, ToolCalls | FinalAnswer | ParseError)


@PROPERTY_SETTINGS
@given(text=st.text(), protocol=st.sampled_from(PROTOCOL_CHOICES))
def test_arbitrary_text_never_raises(text: str, protocol: str) -> None:
    # Given any text / When parsed with any protocol / Then one decision comes back
    assert_one_decision(parse_completion(text, protocol))


@PROPERTY_SETTINGS
@given(text=model_like_text, protocol=st.sampled_from(PROTOCOL_CHOICES))
def test_model_like_text_never_raises(text: str, protocol: str) -> None:
    # Given text stitched from protocol syntax / When parsed / Then one decision comes back
    assert_one_decision(parse_completion(text, protocol))


@PROPERTY_SETTINGS
@given(response=response_dicts, protocol=st.sampled_from(PROTOCOL_CHOICES))
def test_arbitrary_json_like_dicts_never_raise(response: dict[str, Any], protocol: str) -> None:
    # Given any JSON-like dict, often shaped like a provider response / When parsed / Then one decision
    assert_one_decision(parse_completion(response, protocol))


@PROPERTY_SETTINGS
@given(raw=st.text() | model_like_text, name=st.sampled_from(["search", "x" * 128, "a b"]))
def test_arbitrary_native_raw_arguments_never_raise(raw: str, name: str) -> None:
    # Given a native call whose kept raw arguments are any text / When parsed / Then one decision
    completion = Completion(tool_calls=[ToolCall(id="c", name=name, arguments={"_raw": raw})])
    assert_one_decision(parse_completion(completion))


# Text without the characters that open tags or markers, which a value may not contain unescaped.
safe_text = st.text(st.characters(blacklist_characters="<>/*", blacklist_categories=["Cs"]), max_size=20)
argument_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | safe_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(safe_text, inner, max_size=3),
    max_leaves=10,
)
identifiers = st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True)


@pytest.mark.parametrize("name", TEXT_PROTOCOLS)
@PROPERTY_SETTINGS
@given(arguments=st.dictionaries(identifiers, argument_values, max_size=4))
def test_a_rendered_call_parses_back_to_the_same_call(name: ProtocolName, arguments: dict[str, Any]) -> None:
    # Given a call written in a protocol's own format (as for a call stored without text)
    protocol = get_protocol(name)
    assert isinstance(protocol, TextProtocol)
    text = protocol.render_tool_calls([ToolCall(id="x", name="run_sql", arguments=arguments)])
    # When that text is parsed
    decision = protocol.parse(Completion(content=text))
    # Then the same tool and arguments come back
    assert isinstance(decision, ToolCalls)
    assert (decision.calls[0].name, decision.calls[0].arguments) == ("run_sql", arguments)


FENCE_LANGUAGES = [
    "json",
    "JSON",
    "jsonc",
    "json5",
    "python",
    "py",
    "javascript",
    "js",
    "yaml",
    "text",
    "txt",
    "tool_code",
]
fence_layouts = st.sampled_from(
    [
        "Action: ```{lang}\n{body}\n```",
        "Action:\n```{lang}\n{body}\n```",
        "Action: ```{lang} {body}```",
        "Thought: {body}\nAction: ```{lang}",
        "{body}\n```{lang}\n{body}",
        "```{lang}\n{body}",
    ]
)


@PROPERTY_SETTINGS
@given(
    lang=st.sampled_from(FENCE_LANGUAGES),
    layout=fence_layouts,
    body=model_like_text,
    protocol=st.sampled_from(PROTOCOL_CHOICES),
)
@example(lang="json", layout="Action: ```{lang} {body}```", body="()", protocol="auto")  # once read as a call to `json`
def test_a_fence_language_tag_is_never_read_as_a_tool_name(lang: str, layout: str, body: str, protocol: str) -> None:
    # Given a fenced block whose language tag sits where a tool name could be, around any model-like text
    text = layout.format(lang=lang, body=body)
    # When parsed with any protocol
    decision = parse_completion(text, protocol)
    # Then no call is named after the tag (the tag word appearing elsewhere as a tool call is fine)
    assert_one_decision(decision)
    if isinstance(decision, ToolCalls) and lang not in body:
        assert all(call.name.casefold() != lang.casefold() for call in decision.calls)
