"""The adversarial inputs of every function that reads caller, model or tool text with a regular expression
or a hand-written scan: `CASES`, timed by `bench/adversarial_inputs.py` and `tests/unit/test_linear_time.py`.

Each case is one function on untrusted text and one input worst for it: unterminated strings full of
escapes, long runs of the characters a pattern repeats, nested or unclosed brackets and tags, many
near-matches of a secret. `build(size)` makes the input at any size, a pattern repeated.

Functions that cap their input (a model reply past `MAX_PARSED_CHARS`, an intent answer past 20,000
characters) are timed below their cap: the parsers behind them are called directly, so a quadratic
reader cannot hide under a cap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench import foreign_patterns
from stepwise import overflow_wording
from stepwise.config import model as config_model
from stepwise.config.intent import Category
from stepwise.config.redaction import Redactor, redact_known_secrets
from stepwise.errors import ConfigError
from stepwise.inputs import json_limits, text_policy
from stepwise.inputs.echo_decoding import normalize
from stepwise.intent import option_search, parsing
from stepwise.models.messages import Completion, ToolSpec
from stepwise.protocols import (
    arguments,
    call_syntax,
    keywords,
    lenient_json,
    parse,
    provider_responses,
    shapes,
    text_tool_calls,
    tool_call_lines,
    tool_call_markup,
    tool_call_tokens,
)
from stepwise.protocols.markers import parse_markers
from stepwise.protocols.react_json import action_blocks, parse_react_json
from stepwise.protocols.react_text import parse_react_text, read_input_text
from stepwise.protocols.think_blocks import split_reasoning
from stepwise.protocols.turn_tokens import without_end_of_turn
from stepwise.protocols.xml_tags import parse_xml
from stepwise.steps import structured_output, summarizer, summary_text
from stepwise.steps.api.chat import stream_pieces
from stepwise.tools import http_response, search_words
from stepwise.tools.openapi.names import model_safe_name

TOOLS = [
    ToolSpec(
        name="search",
        description="Search.",
        parameters={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    )
]
CATEGORY = Category(use_for="intent-route", options=["Finance", "Non-urgent", "urgent"], default="Finance")
SECRET = "sk-live-Canary/7f+3a=9c&2<e0bé"
_REDACTOR = Redactor([SECRET])


@dataclass(frozen=True)
class Case:
    """One function on untrusted text, and one input that is hard for it."""

    function: str
    input: str
    run: Callable[[str], object]
    build: Callable[[int], str]


def repeated(pattern: str, *, prefix: str = "", suffix: str = "") -> Callable[[int], str]:
    """An input of `size` characters: `prefix`, then `pattern` repeated, then `suffix`."""

    def build(size: int) -> str:
        room = max(size - len(prefix) - len(suffix), 0)
        return prefix + (pattern * (room // len(pattern) + 1))[:room] + suffix

    return build


def _two_runs(before: str, between: str) -> Callable[[int], str]:
    """An input of `size` characters: `before`, spaces, `between`, spaces, `x`."""

    def build(size: int) -> str:
        half = max(size - len(before) - len(between) - 1, 0) // 2
        return before + " " * half + between + " " * half + "x"

    return build


def _react_json(text: str) -> object:
    return parse_react_json(text, TOOLS, "c")


def _react_text(text: str) -> object:
    return parse_react_text(text, TOOLS, "c")


def _xml(text: str) -> object:
    return parse_xml(text, TOOLS, "c")


def _markers(text: str) -> object:
    return parse_markers(text, TOOLS, "c")


def _native(text: str) -> object:
    call = {"id": "c", "type": "function", "function": {"name": "search", "arguments": text}}
    return provider_responses.completion_from_response(
        {"choices": [{"message": {"content": text, "tool_calls": [call]}}]}
    )


def _detect(text: str) -> object:
    completion = provider_responses.completion_from_response({"choices": [{"message": {"content": text}}]})
    return parse.detect_protocol(completion) if isinstance(completion, Completion) else None


def _describe_body(text: str) -> object:
    body = text.encode("utf-8", "surrogatepass")
    return http_response.describe_body(
        body, content_type="application/json", truncated=False, max_bytes=len(body) + 1, redactor=_REDACTOR
    )


def _intent_values(text: str) -> object:
    # parse_intent cuts an answer at 20,000 characters; the reading behind it is timed uncapped
    return parsing._structured_values(split_reasoning(text).reply)


def _ruled_out(text: str) -> object:
    return option_search.without_ruled_out(text, CATEGORY)


def _written_calls(text: str) -> object:
    return text_tool_calls.tool_calls_in_text(text)


def _end_of_turn(text: str) -> object:
    return without_end_of_turn(Completion(content=text))


def _notes(text: str) -> object:
    return summarizer.read_notes(text, 1_000_000)


def _attributed(text: str) -> object:
    return summary_text.attributed_facts(text, [])


def _environment(text: str) -> object:
    try:
        return config_model._substitute_environment(text, {}, "<config>")
    except ConfigError as exc:
        return exc


def _cases() -> list[Case]:
    cases = [
        # inputs: what every boundary applies
        Case(
            "json_limits.nesting_depth",
            'unterminated "\\"…',
            json_limits.nesting_depth,
            repeated('\\"', prefix='{"input": "'),
        ),
        Case("json_limits.nesting_depth", "[[[…", json_limits.nesting_depth, repeated("[")),
        Case("json_limits.nesting_depth", '"""…', json_limits.nesting_depth, repeated('"')),
        Case("json_limits.nesting_depth", '["\\…', json_limits.nesting_depth, repeated('["\\')),
        Case(
            "json_limits.load_json",
            'unterminated "\\"…',
            _refused(json_limits.load_json),
            repeated('\\"', prefix='{"input": "'),
        ),
        Case("text_policy.clean_text", "lone surrogates", text_policy.clean_text, repeated("a\ud800")),
        Case("text_policy.find_unencodable", "no match", text_policy.find_unencodable, repeated("abc")),
        # redaction (every stored string and log record)
        Case("echo_decoding.normalize", "\\\\…", normalize, repeated("\\")),
        Case("echo_decoding.normalize", "%25%25…41", normalize, repeated("%25", suffix="41")),
        Case("echo_decoding.normalize", "&#67;…", normalize, repeated("&#67;")),
        Case("echo_decoding.normalize", "\\x41\\u0041…", normalize, repeated("\\x41\\u0041")),
        Case("echo_decoding.normalize", "&&&#…", normalize, repeated("&&&#")),
        Case("echo_decoding.normalize", "full-width, zero-width joined…", normalize, repeated("\uff53\u200dk\u0301")),
        Case("echo_decoding.normalize", "a b c d… (spaced out)", normalize, repeated("a ")),
        Case("echo_decoding.normalize", "a b c d e f g. (spaced, cut short)", normalize, repeated("a b c d e f g. ")),
        Case("echo_decoding.normalize", "73:6b:2d… (hex with colons)", normalize, repeated("73:")),
        Case("Redactor.redact", "near-matches of the secret", _REDACTOR.redact, repeated(SECRET[:-1] + " ")),
        Case(
            "Redactor.redact", "near-matches, percent-encoded", _REDACTOR.redact, repeated("%73%6B%2D%6C%69%76%65%2D")
        ),
        Case("Redactor.redact", "base64-like run", _REDACTOR.redact, repeated("c2stbGl2ZS1DYW5h")),
        Case("Redactor.redact", "parts of the secret", _REDACTOR.redact, repeated(SECRET[:15] + SECRET[:20])),
        Case("Redactor.redact", "the secret spaced out", _REDACTOR.redact, repeated(" ".join(SECRET[:-1]) + " ")),
        Case("redact_known_secrets", "near-matches of the secret", redact_known_secrets, repeated(SECRET[:-2])),
        # protocols: what a model writes
        Case("lenient_json.load_lenient", '{"a":…', lenient_json.load_lenient, repeated('{"a":')),
        Case("lenient_json.load_lenient", "[[[…", lenient_json.load_lenient, repeated("[")),
        Case(
            "lenient_json.load_lenient",
            "unterminated '\\'…",
            lenient_json.load_lenient,
            repeated("\\'", prefix="{'a': '"),
        ),
        Case("lenient_json.find_objects", "{{{…", lambda text: list(lenient_json.find_objects(text)), repeated("{")),
        Case(
            "lenient_json.find_objects",
            '{"a": "…',
            lambda text: list(lenient_json.find_objects(text)),
            repeated('{"a": "'),
        ),
        Case("lenient_json.strip_code_fence", "```…", lenient_json.strip_code_fence, repeated("```")),
        Case("react_json.action_blocks", "```json\\n{…", action_blocks, repeated("```json\n{")),
        Case(
            "react_json.parse_react_json",
            '{"action": "x", "action_input": {"a":…',
            _react_json,
            repeated('{"action": "x", "action_input": {"a":'),
        ),
        Case("react_json.parse_react_json", "{/*…", _react_json, repeated("{/*")),
        Case("react_json.parse_react_json", "Action: x\\n…", _react_json, repeated("Action: x\n")),
        Case(
            "react_text.parse_react_text",
            "Action: x\\nAction Input: {…",
            _react_text,
            repeated("Action: x\nAction Input: {"),
        ),
        Case("react_text.parse_react_text", "Final Answer: …", _react_text, repeated("Final Answer: ")),
        Case("react_text.read_input_text", "x[x[x[…", read_input_text, repeated("x[")),
        Case("xml_tags.parse_xml", "<action>…", _xml, repeated("<action>")),
        Case("xml_tags.parse_xml", "<action + spaces, never closed", _xml, repeated(" ", prefix="<action")),
        Case("xml_tags.parse_xml", '<action>f("a", …', _xml, repeated('<action>f("a", ')),
        Case("xml_tags.parse_xml", "<tool>x</tool><tool_input>{…", _xml, repeated("<tool>x</tool><tool_input>{")),
        Case("markers.parse_markers", "/*ACTION*/ {…", _markers, repeated("/*ACTION*/ {")),
        Case("markers.parse_markers", "/* spaces, never closed", _markers, repeated(" ", prefix="/*")),
        Case("markers.parse_markers", "/*END_ACTION*/…", _markers, repeated("/*END_ACTION*/")),
        Case("call_syntax.parse_call", "f(a=f(a=…", call_syntax.parse_call, repeated("f(a=")),
        Case("call_syntax.parse_call", 'f("\\"…', call_syntax.parse_call, repeated('\\"', prefix='f("')),
        Case(
            "call_syntax.parse_call", "spaces before (", call_syntax.parse_call, repeated(" ", prefix="f", suffix="x")
        ),
        Case(
            "call_syntax.parse_call",
            "f(/* never closed, /* …",
            call_syntax.parse_call,
            repeated("/*" + " " * 60 + ", ", prefix="f("),
        ),
        Case("keywords.find_keywords", "Action: …", keywords.find_keywords, repeated("Action: ")),
        Case(
            "keywords.find_keywords",
            "label-like run without colon",
            keywords.find_keywords,
            repeated("*_ \t", prefix="- Action"),
        ),
        Case("keywords.find_keywords", "a line of *", keywords.find_keywords, repeated("*")),
        Case("keywords.clean_thought", "```json ```…", keywords.clean_thought, repeated("```json ")),
        Case("arguments.decode_arguments", '{"a":…', arguments.decode_arguments, repeated('{"a":')),
        Case("arguments.clean_tool_name", "spaces", arguments.clean_tool_name, repeated(" ")),
        Case("provider_responses.completion_from_response", '{"a":… as arguments', _native, repeated('{"a":')),
        Case("parse.detect_protocol", "<action + spaces, never closed", _detect, repeated(" ", prefix="<action")),
        Case("parse.detect_protocol", "/* spaces, never closed", _detect, repeated(" ", prefix="/*")),
        Case("shapes.has_action_key", "'action' without colon", shapes.has_action_key, repeated("'action' ")),
        Case(
            "shapes.is_plain_prose", "< + spaces, ```json + spaces", shapes.is_plain_prose, _two_runs("<", "x```json")
        ),
        # reasoning written into a reply, split off before anything reads it
        Case("think_blocks.split_reasoning", "<think> never closed", split_reasoning, repeated("<think>")),
        Case("think_blocks.split_reasoning", "</think> only", split_reasoning, repeated("</think>")),
        Case("think_blocks.split_reasoning", "closed blocks", split_reasoning, repeated("<think></think>\n")),
        Case("think_blocks.split_reasoning", "line openers", split_reasoning, repeated("x\n<think>")),
        Case("think_blocks.split_reasoning", "<reasoning> never closed", split_reasoning, repeated("<reasoning>")),
        Case(
            "think_blocks.split_reasoning",
            "Granite opener + spaces",
            split_reasoning,
            repeated(" ", prefix="Here is my thought process:"),
        ),
        Case(
            "think_blocks.split_reasoning",
            "harmony analysis, no final",
            split_reasoning,
            repeated("<|channel|>analysis<|message|> "),
        ),
        Case(
            "think_blocks.split_reasoning",
            "answer wrapper + spaces",
            split_reasoning,
            repeated(" ", prefix="<think>x</think><answer>"),
        ),
        Case("lenient_json.close_cut_off", '{"a": [{"b": …', lenient_json.close_cut_off, repeated('{"a": [')),
        Case(
            "lenient_json.close_cut_off",
            "{ + a word cut by punctuation",
            lenient_json.close_cut_off,
            repeated("a", prefix="{", suffix="-"),
        ),
        Case("text_tool_calls.tool_calls_in_text", "<tool_call>…", _written_calls, repeated("<tool_call>")),
        Case(
            "text_tool_calls.tool_calls_in_text",
            "parameter + spaces",
            _written_calls,
            repeated(" ", prefix="<tool_call><function=f><parameter=p>"),
        ),
        Case(
            "text_tool_calls.tool_calls_in_text", "GLM <arg_key>, never closed", _written_calls, repeated("<arg_key>")
        ),
        Case("text_tool_calls.tool_calls_in_text", "harmony <|message|>…", _written_calls, repeated("<|message|>")),
        Case(
            "text_tool_calls.tool_calls_in_text",
            "FunctionGemma key run, never a value",
            _written_calls,
            repeated("a", prefix="<start_function_call>call:f{"),
        ),
        Case(
            "text_tool_calls.tool_calls_in_text",
            "call objects, never closed",
            _written_calls,
            repeated('{"name": "f", "arguments": {'),
        ),
        Case("text_tool_calls.tool_calls_in_text", "```tool_code fences…", _written_calls, repeated("```tool_code\n")),
        Case(
            "text_tool_calls.tool_calls_in_text",
            "tool_code x = x = …",
            _written_calls,
            repeated("x = ", prefix="```tool_code\n"),
        ),
        Case(
            "text_tool_calls.tool_calls_in_text",
            "bare calls f(a='x') f(a='x') …",
            _written_calls,
            repeated("f(a='x') ", suffix="f()"),
        ),
        Case(
            "text_tool_calls.tool_calls_in_text",
            "a call list per line [f(a=1)]\\n…",
            _written_calls,
            repeated("[f(a=1)]\n", suffix="[f()]"),
        ),
        # The readers of one family each, timed alone: tool_calls_in_text runs every reader on each input.
        Case(
            "tool_call_markup.inline_function_calls",
            "<function=f>{ openings, one closing at the end",
            tool_call_markup.inline_function_calls,
            repeated("<function=f>{", suffix="</function>"),
        ),
        Case(
            "tool_call_markup.tagged_calls",
            "<function_call><invoke_name>f</invoke_name><parameters><a>x …, nothing closed",
            tool_call_markup.tagged_calls,
            repeated("<function_call><invoke_name>f</invoke_name><parameters><a>x"),
        ),
        Case(
            "tool_call_tokens.gemma4_calls",
            '<|tool_call>call:f{a:<|"|>x …, nothing closed',
            tool_call_tokens.gemma4_calls,
            repeated('<|tool_call>call:f{a:<|"|>x'),
        ),
        Case(
            "text_tool_calls.tool_calls_in_text",
            '<tool_calls><invoke name="f"><parameter name="a" string="true" … never closed',
            _written_calls,
            repeated('<parameter name="a" string="true" ', prefix='<tool_calls><invoke name="f">'),
        ),
        Case(
            "tool_call_lines.recipient_calls",
            ">>>name and spaces, no line break",
            tool_call_lines.recipient_calls,
            repeated(">>>name \t"),
        ),
        Case(
            "tool_call_lines.nested_call",
            "Call: f(a=x a=x … never closed",
            tool_call_lines.nested_call,
            repeated("a=x ", prefix="Call: f("),
        ),
        Case(
            "tool_call_lines.call_line_calls",
            "Call: f(a=f(a=…",
            tool_call_lines.call_line_calls,
            repeated("f(a=", prefix="Call: "),
        ),
        Case(
            "text_tool_calls.tool_calls_in_text",
            "a tuple value (1, (1, (1, …",
            _written_calls,
            repeated("(1, ", prefix="[f(a=", suffix=")]"),
        ),
        Case(
            "react_text.parse_react_text",
            "a bracket never closed",
            _react_text,
            repeated("a ", prefix="Action: search["),
        ),
        Case(
            "react_text.parse_react_text",
            "Search[a], Search[a], …",
            _react_text,
            repeated("Search[a], ", prefix="Action: "),
        ),
        Case("turn_tokens.without_end_of_turn", "</s></s>…", _end_of_turn, repeated("</s>")),
        Case("turn_tokens.without_end_of_turn", "spaces + <|im_end|>…", _end_of_turn, repeated(" <|im_end|>\n")),
        Case(
            "react_text.parse_react_text",
            "one line, spaces before a label",
            _react_text,
            repeated(" ", prefix="Thought: x", suffix="Final Answer: 1"),
        ),
        Case("react_text.parse_react_text", "a fence around every line", _react_text, repeated("```\nThought: x\n")),
        Case(
            "react_text.parse_react_text",
            "a label on a thought's line + spaces",
            _react_text,
            repeated(" ", prefix="Thought: x Final Answer", suffix="y"),
        ),
        # intent: what a classifier model writes
        Case("intent.parsing (structured values)", "{a: {a: …", _intent_values, repeated("{a: ")),
        Case("intent.parsing (structured values)", "<think> never closed", _intent_values, repeated("<think>")),
        Case("intent.parsing (structured values)", "a + spaces, no colon", _intent_values, repeated(" ", prefix="{a")),
        Case(
            "intent.option_search.find_option",
            "near-matches of options",
            lambda text: option_search.find_option(text, CATEGORY),
            repeated("Financ urgen Non-urgen "),
        ),
        Case(
            "intent.option_search.search_text",
            "label-like lines",
            lambda text: option_search.search_text(text, [CATEGORY]),
            repeated("intent-route: x\n"),
        ),
        Case(
            "intent.option_search.search_text",
            "a label + spaces",
            lambda text: option_search.search_text(text, [CATEGORY]),
            repeated(" ", prefix="intent-route", suffix="x"),
        ),
        Case("intent.option_search.without_ruled_out", "negations", _ruled_out, repeated("not Finance, ")),
        Case(
            "intent.option_search.labelled_answers",
            "result labels",
            lambda text: option_search.labelled_answers(text, [CATEGORY]),
            repeated("result: x\n"),
        ),
        # tools: what an API answers
        Case("http_response.describe_body", 'unterminated "\\"…', _describe_body, repeated('\\"', prefix='{"a": "')),
        Case("http_response.describe_body", "[[[…", _describe_body, repeated("[")),
        Case("openapi.names.model_safe_name", "characters no tool name has", model_safe_name, repeated("é/")),
        # tools: a tool's description as an API or MCP server writes it, and a query as the model asks find_tools
        Case("search_words.words", "< never closed", search_words.words, repeated("<")),
        Case("search_words.words", "phrases and tags", search_words.words, repeated("who am I logged in as <b>")),
        Case("search_words.implied_verb", "question words", search_words.implied_verb, repeated("which who ")),
        # a provider's refusal of a too-long request, read for the window and the prompt size it states
        Case(
            "overflow_wording.stated_window",
            "'total number of tokens', no '.'",
            overflow_wording.stated_window,
            repeated("total number of tokens "),
        ),
        Case("overflow_wording.reported_prompt", "digits", overflow_wording.reported_prompt, repeated("1")),
        Case(
            "overflow_wording.is_overflow_text",
            "'token count of ' + digits",
            overflow_wording.is_overflow_text,
            repeated("1", prefix="token count of "),
        ),
        # a summarizer's notes: their headings, and the source tag of each line
        Case("summarizer.read_notes", "- lines, no heading", _notes, repeated("-\n")),
        Case("summary_text.attributed_facts", "[1 + spaces", _attributed, repeated(" ", prefix="- [1", suffix="x")),
        # a configuration's values: `${env:NAME:-default}` references
        Case("config.model (env references)", "${env:A:- never closed", _environment, repeated("${env:A:-")),
        # a structured-output reply, read for the first JSON object or array in it
        Case(
            "structured_output.read_json",
            "[ then a // comment line holding [, repeated",
            structured_output.read_json,
            repeated("//[\n", prefix="["),
        ),
        # the HTTP API: a chat answer streamed back piece by piece
        Case("chat.stream_pieces", "spaces", stream_pieces, repeated(" ")),
        Case("chat.stream_pieces", "words", stream_pieces, repeated("word ")),
        # patterns others write (`\s+$`, quadratic under Python's `re`), searched in caller and model text
        Case("guardrails.check_text (a deny pattern)", _SPACES, foreign_patterns.deny_rule, _spaces),
        Case("intent.keywords.KeywordMatcher (a rule's pattern)", _SPACES, foreign_patterns.keyword_rule, _spaces),
        Case("evals.check_outcome (answer_matches)", _SPACES, foreign_patterns.eval_matcher, _spaces),
        Case("ScriptedChatModel (a scenario's match)", _SPACES, foreign_patterns.scripted_scenario, _spaces),
        Case("ToolInvoker.invoke (a schema's pattern)", _SPACES, foreign_patterns.tool_argument, _spaces),
        Case("structured_output.schema_violation (pattern)", _SPACES, foreign_patterns.answer_schema, _spaces),
        Case("schema_violation (patternProperties)", _SPACES, foreign_patterns.property_names, _spaces),
    ]
    return cases


# The input worst for trailing white space searched by backtracking: a long run of it, then a letter.
_SPACES = "spaces, then x"
_spaces = repeated(" ", suffix="x")


def _refused(function: Callable[[str], Any]) -> Callable[[str], object]:
    """`function`, with the ValueError it answers invalid input with counted as its answer."""

    def run(text: str) -> object:
        try:
            return function(text)
        except ValueError as exc:
            return exc

    return run


CASES = _cases()
