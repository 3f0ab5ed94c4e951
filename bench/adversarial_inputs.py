"""Every regular expression and loop that reads caller, model or tool text, timed on its worst inputs.

`CASES` lists each function that runs a regular expression (or a hand-written scan) over text that came
from outside, with the inputs that are worst for it: unterminated strings full of escapes, long runs of
the characters a pattern repeats, nested or unclosed brackets and tags, many near-matches of a secret.
Each input is a pattern repeated to 10 KB, 100 KB and 1 MB. A linear function costs about 10 times more
at 1 MB than at 100 KB; one that rescans (a regex backtracking from every start) costs about 100 times
more. `tests/unit/test_linear_time.py` fails above `MAX_RATIO`; `make bench` prints the table.

Between 100 KB and 1 MB a text (and the regex engine's state over it) outgrows the CPU's caches, which
alone can make a fast linear function's 1 MB cost 20-40 times its 100 KB one on a busy machine. The
allocator adds its own step there (a string past its threshold is mapped afresh). So a case over
`MAX_RATIO` passes when its 1 MB costs at most `MAX_SCANS` plain scans of the text, or when, measured at
4 MB, four times the text costs it at most `MAX_GROWTH_4X` times more (a linear function 4, a quadratic
one 16). The garbage collector is off while a case runs, as `timeit` has it.

Functions that cap their input (a model reply past `MAX_PARSED_CHARS`, an intent answer past 20,000
characters) are timed below their cap: the parsers behind them are called directly, so a quadratic
reader cannot hide under a cap.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stepwise.config.intent import Category
from stepwise.config.redaction import Redactor, redact_known_secrets
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
)
from stepwise.protocols.markers import parse_markers
from stepwise.protocols.react_json import action_blocks, parse_react_json
from stepwise.protocols.react_text import parse_react_text, read_input_text
from stepwise.protocols.think_blocks import split_reasoning
from stepwise.protocols.xml_tags import parse_xml
from stepwise.steps.api.chat import stream_pieces
from stepwise.tools import http_response
from stepwise.tools.openapi.names import model_safe_name

SIZES = (10_000, 100_000, 1_000_000)
# A linear function's 1 MB costs ~10x its 100 KB (a little more once the text outgrows the CPU caches);
# a quadratic one's ~100x. The limit sits between, well clear of both.
MAX_RATIO = 15.0
# Above the caches and the allocator's thresholds, 4 times the text costs a linear function 4 times
# as much and a quadratic one 16 times.
LARGEST_SIZE = 4_000_000
MAX_GROWTH_4X = 8.0
# A 1 MB cost within this many plain scans of the text (`str.find`, at memory speed) is a few passes over
# it at most, whatever its ratio: a function of microseconds, whose ratio is the allocator's and the
# scheduler's. A quadratic function on 1 MB costs millions of scans.
MAX_SCANS = 1000.0
# From 10 KB to 100 KB (both within the caches) a linear function grows about 10 times, a quadratic one 100.
MAX_EARLY_RATIO = 50.0
REPEATS = 3
_SLOW_SECONDS = 0.05
_TOO_SLOW_TO_REPEAT = 1.0
# A run shorter than this is repeated in a batch and averaged: a timer's resolution and a scheduler's
# jitter would otherwise be most of what is measured.
_MIN_BATCH_SECONDS = 0.005

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
        Case("keywords.find_keywords", "Action: …", keywords.find_keywords, repeated("Action: ")),
        Case(
            "keywords.find_keywords",
            "label-like run without colon",
            keywords.find_keywords,
            repeated("*_ \t", prefix="- Action"),
        ),
        Case("keywords.clean_thought", "```json ```…", keywords.clean_thought, repeated("```json ")),
        Case("arguments.decode_arguments", '{"a":…', arguments.decode_arguments, repeated('{"a":')),
        Case("arguments.clean_tool_name", "spaces", arguments.clean_tool_name, repeated(" ")),
        Case("provider_responses.completion_from_response", '{"a":… as arguments', _native, repeated('{"a":')),
        Case("parse.detect_protocol", "<action + spaces, never closed", _detect, repeated(" ", prefix="<action")),
        Case("parse.detect_protocol", "/* spaces, never closed", _detect, repeated(" ", prefix="/*")),
        Case("shapes.has_action_key", "'action' without colon", shapes.has_action_key, repeated("'action' ")),
        # reasoning written into a reply, split off before anything reads it
        Case("think_blocks.split_reasoning", "<think> never closed", split_reasoning, repeated("<think>")),
        Case("think_blocks.split_reasoning", "</think> only", split_reasoning, repeated("</think>")),
        Case("think_blocks.split_reasoning", "closed blocks", split_reasoning, repeated("<think></think>\n")),
        Case("think_blocks.split_reasoning", "line openers", split_reasoning, repeated("x\n<think>")),
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
        Case("text_tool_calls.tool_calls_in_text", "<tool_call>…", _written_calls, repeated("<tool_call>")),
        Case(
            "text_tool_calls.tool_calls_in_text",
            "parameter + spaces",
            _written_calls,
            repeated(" ", prefix="<tool_call><function=f><parameter=p>"),
        ),
        Case(
            "react_text.parse_react_text",
            "one line, spaces before a label",
            _react_text,
            repeated(" ", prefix="Thought: x", suffix="Final Answer: 1"),
        ),
        Case("react_text.parse_react_text", "a fence around every line", _react_text, repeated("```\nThought: x\n")),
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
        # the HTTP API: a chat answer streamed back piece by piece
        Case("chat.stream_pieces", "spaces", stream_pieces, repeated(" ")),
        Case("chat.stream_pieces", "words", stream_pieces, repeated("word ")),
    ]
    return cases


def _refused(function: Callable[[str], Any]) -> Callable[[str], object]:
    """`function`, with the ValueError it answers invalid input with counted as its answer."""

    def run(text: str) -> object:
        try:
            return function(text)
        except ValueError as exc:
            return exc

    return run


CASES = _cases()


def seconds(case: Case, size: int, repeats: int = REPEATS) -> float:
    """The best of `repeats` runs of the case at `size` characters (of batches, for a case that fast)."""
    return _best(case.run, case.build(size), repeats)


def _best(run: Callable[[str], object], text: str, repeats: int) -> float:
    """The best time of `run` on `text`, with the cyclic garbage collector off while it runs (as `timeit`
    does): its full collections cost more the more objects are alive, which is the test's, not the case's.
    Nor is a collection forced first: in a test process with much alive, each would cost seconds."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        started = time.perf_counter()
        run(text)
        once = time.perf_counter() - started
        batch = max(1, int(_MIN_BATCH_SECONDS / once)) if once > 0 else 1
        best = once
        # a run this slow is far above any noise; one more would only make a failing test slower
        for _ in range(
            0 if once > _TOO_SLOW_TO_REPEAT else min(repeats, 2) - 1 if once > _SLOW_SECONDS else repeats - 1
        ):
            started = time.perf_counter()
            for _ in range(batch):
                run(text)
            best = min(best, (time.perf_counter() - started) / batch)
    finally:
        if collecting:
            gc.enable()
    return best


def _scan(text: str) -> int:
    return text.find("\0")


@dataclass(frozen=True)
class Growth:
    """How a case's cost grew from 100 KB to 1 MB; its 1 MB cost in plain scans of the text; and, when those
    were over their limits, how it grew from 1 MB to 4 MB."""

    ratio: float
    scans: float
    growth_4x: float | None = None
    # True when the growth from 10 KB to 100 KB was already quadratic: measuring again will not change it
    conclusive: bool = False

    @property
    def linear(self) -> bool:
        """True when the growth is that of a linear function."""
        return (
            self.ratio <= MAX_RATIO
            or self.scans <= MAX_SCANS
            or (self.growth_4x is not None and self.growth_4x <= MAX_GROWTH_4X)
        )


def growth(case: Case) -> Growth:
    """The case's 1 MB / 100 KB ratio, confirmed when it is over the limit. A case slower than
    `_SLOW_SECONDS` at 100 KB is run fewer times (its figures are far above the noise). A case that grows
    quadratically already from 10 KB to 100 KB (`MAX_EARLY_RATIO`) is not run at 1 MB, where it would take
    hours: its growth is reported as measured there."""
    small = _best(case.run, case.build(SIZES[0]), REPEATS)
    medium = _best(case.run, case.build(SIZES[1]), REPEATS)
    if medium / small > MAX_EARLY_RATIO:
        return Growth(medium / small, float("inf"), conclusive=True)
    large_text = case.build(SIZES[2])
    repeats = 1 if medium > _SLOW_SECONDS else 2
    large = _best(case.run, large_text, repeats)
    measured = Growth(large / medium, large / _best(_scan, large_text, REPEATS))
    if measured.linear:
        return measured
    largest = _best(case.run, case.build(LARGEST_SIZE), repeats)
    return Growth(measured.ratio, measured.scans, largest / large)


def main() -> None:
    """Print every case's time at each size, and its 1 MB / 100 KB ratio."""
    print(f"Time on adversarial inputs (best of {REPEATS}); linear is ~10x from 100 KB to 1 MB")
    print("| function | input (repeated) | 10 KB ms | 100 KB ms | 1 MB ms | 1 MB / 100 KB |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for case in CASES:
        small, medium, large = (seconds(case, size) for size in SIZES)
        print(
            f"| {case.function} | {case.input} | {small * 1000:.2f} | {medium * 1000:.1f} | {large * 1000:.0f} "
            f"| {large / medium:.1f} |"
        )


if __name__ == "__main__":
    main()
