"""The whole pipeline fuzzed: arbitrary model replies and tool responses through the real handlers.

Hypothesis writes what a model replies (any text, any Unicode category — lone surrogates and NUL
included —, tool calls with arguments that may not even be JSON) and what a tool answers (any bytes,
JSON or not, up to past the response cap, under assorted content types), with a configured secret (the
tool's API key) echoed inside the answer in one of its common encodings. Each example is a run of the
real state machine on the local engine, with the template's handlers and the store on moto's DynamoDB.

Half the replies carry any usage at all in place of the server's count (none, negative, absurd, floats,
NaN, strings, objects).

Invariants, for every run: it ends in a terminal status; its usage has no negative count and no part over
its total; its stored conversation starts with the question, has one message per key and one observation
per tool call id, each answering a call the model made; no encoding of the secret is in any stored item,
any state output, any request sent to the model, or any log line (every logger at DEBUG). The figures
are printed at the end of the session.

Deterministic and bounded: `STEPWISE_FUZZ_EXAMPLES` examples (a tenth of it, at least 10, by default
20; `make fuzz` sets 500, so 50 runs).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stepwise.config.settings import Settings
from stepwise.local.environment import LocalEnvironment
from stepwise.models.run import TERMINAL_STATUSES, RunUsage
from stepwise.steps.runtime import dynamodb_client
from tests.fuzz.pipeline_report import PROPERTY_NAME
from tests.support.openai_server import FakeOpenAIServer, chat_completion
from tests.support.tool_server import Raw, ScriptableToolServer
from tests.unit.test_secret_encodings import CANARY, ENCODINGS

PIPELINE_EXAMPLES = max(10, int(os.environ.get("STEPWISE_FUZZ_EXAMPLES", "200")) // 10)
MAX_RESPONSE_BYTES = 2048
CONTENT_TYPES = ("application/json", "text/plain", "text/plain", "text/html; charset=latin-1", "image/png", "")

# Every Unicode category, surrogates (Cs) and controls (Cc) included.
ANY_CHARACTER = st.characters(categories=["L", "M", "N", "P", "S", "Z", "Cc", "Cf", "Cs", "Co", "Cn"])
ANY_TEXT = st.text(ANY_CHARACTER, max_size=300)


@dataclass
class Tally:
    """What the examples produced."""

    examples: int = 0
    runs: int = 0
    terminal: int = 0
    lost: list[str] = field(default_factory=list)
    leaks: list[tuple[str, str]] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    redacted: int = 0
    estimated: int = 0


# What a server may put where a token count belongs: counts, negative and absurd ones, floats (NaN
# included), numeric and other strings, null, booleans, objects.
ANY_COUNT = st.one_of(
    st.integers(0, 5000),
    st.integers(-(10**15), 10**15),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-100, 5000).map(str),
    ANY_TEXT,
    st.none(),
    st.booleans(),
    st.dictionaries(st.sampled_from(["value", "n"]), st.integers(), max_size=1),
)
USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")
DETAILS = {"prompt_tokens_details": "cached_tokens", "completion_tokens_details": "reasoning_tokens"}


@st.composite
def usages(draw: st.DrawFn) -> Any:
    """Any usage a server may send: none, a non-object, or an object of arbitrary counts and details."""
    if draw(st.integers(0, 5)) == 0:
        return draw(st.one_of(st.none(), ANY_COUNT))
    usage = {name: draw(ANY_COUNT) for name in USAGE_FIELDS if draw(st.booleans())}
    for details, name in DETAILS.items():
        if draw(st.booleans()):
            usage[details] = draw(st.one_of(st.none(), ANY_COUNT, st.fixed_dictionaries({name: ANY_COUNT})))
    return usage


@st.composite
def model_replies(draw: st.DrawFn) -> dict[str, Any]:
    """A chat completion: plain text, or a tool call whose arguments may be any text or a JSON object; now and
    then with any usage at all in place of the server's count."""
    # Now and then a long reply (up to some 60,000 characters), past the caps on what is stored.
    content = draw(st.one_of(st.none(), ANY_TEXT, ANY_TEXT.map(lambda text: text * 200)))
    if draw(st.integers(0, 3)) == 0:
        reply = chat_completion(content=content or "")
    else:
        # Mostly calls the tool can run, so that its answers reach the store; sometimes anything at all.
        arguments = draw(st.one_of(st.fixed_dictionaries({"q": ANY_TEXT}), ANY_TEXT))
        name = draw(st.sampled_from(["lookup", "lookup", "lookup", "no_such_tool", "look\ud800up"]))
        reply = chat_completion(content=content, tool_calls=[{"name": name, "arguments": arguments}])
    if draw(st.booleans()):
        reply["usage"] = draw(usages())
    return reply


@st.composite
def tool_answers(draw: st.DrawFn) -> Raw:
    """Any bytes (or text, or JSON of any text) with one encoding of the secret somewhere in them."""
    kind = draw(st.sampled_from(["json", "json", "text", "text", "invalid utf-8", "bytes"]))
    text = draw(ANY_TEXT)
    if kind == "json":
        before = json.dumps({"text": text}).encode()
    elif kind == "text":
        before = text.encode("utf-8", "replace")
    elif kind == "invalid utf-8":
        before = text.encode("utf-8", "surrogatepass")
    else:
        before = draw(st.binary(max_size=MAX_RESPONSE_BYTES))
    secret = draw(st.sampled_from(sorted(ENCODINGS.values()))).encode("utf-8")
    after = draw(st.one_of(st.just(b""), st.just(b'"}'), st.binary(max_size=64)))
    # Sometimes far past the cap, so the secret may be cut in two by it.
    padding = draw(st.sampled_from([b"", b"", b"", b"x" * (MAX_RESPONSE_BYTES - 8)]))
    return Raw(padding + before + secret + after, content_type=draw(st.sampled_from(CONTENT_TYPES)))


@contextmanager
def every_log_line() -> Iterator[list[str]]:
    """Every record of every logger at DEBUG, formatted, for the duration."""
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(self.format(record))

    root = logging.getLogger()
    handler = Collect(level=logging.DEBUG)
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield lines
    finally:
        root.setLevel(previous)
        root.removeHandler(handler)


def write_config(config_dir: Path, model_url: str, tool_url: str) -> None:
    tool = {
        "toolName": "lookup",
        "description": "Look something up.",
        "method": "GET",
        "path": "/lookup",
        "parameter": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
    api = {
        "url": tool_url,
        "internal": True,
        "maxExecutionTime": 2000,
        "maxResponseBytes": MAX_RESPONSE_BYTES,
        "apiKey": {"in": "query", "name": "key", "value": CANARY},
        "tools": [tool],
    }
    config = {
        "models": {"m": {"provider": "openai", "base_url": model_url, "model": "fake-model", "timeout_seconds": 5}},
        "tools": {"apis": [api]},
        "profiles": {"default": {"model": "m", "strategy": "function_calling", "limits": {"max_iterations": 2}}},
    }
    (config_dir / "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


def usage_problems(usage: RunUsage) -> list[str]:
    """What is wrong with a run's usage: a negative count, or a part larger than the total it is part of."""
    problems = [f"{name} is {value}" for name, value in usage.model_dump().items() if (value or 0) < 0]
    if usage.cache_read_tokens + usage.cache_write_tokens > usage.input_tokens:
        problems.append("more cached tokens than input tokens")
    if usage.reasoning_tokens > usage.output_tokens:
        problems.append("more reasoning tokens than output tokens")
    return problems


def conversation_problems(messages: list[Any]) -> list[str]:
    """What is wrong with a stored conversation: missing question, duplicate keys or observations, orphans."""
    problems: list[str] = []
    if not messages or messages[0].role != "user":
        problems.append("does not start with the question")
    keys = [(message.iteration, message.slot) for message in messages]
    if len(keys) != len(set(keys)):
        problems.append("two messages under one key")
    answered = [message.tool_call_id for message in messages if message.role == "tool"]
    if len(answered) != len(set(answered)):
        problems.append("two observations for one tool call")
    asked = {call.id for message in messages if message.role == "assistant" for call in message.tool_calls}
    if set(answered) - asked:
        problems.append("an observation answers no call")
    return problems


def leaked(place: str, text: str) -> list[tuple[str, str]]:
    return [(place, name) for name, form in ENCODINGS.items() if form in text]


def test_arbitrary_model_replies_and_tool_answers_always_end_runs_whole_and_never_leak_the_secret(
    tmp_path: Path, record_property: Any
) -> None:
    tally = Tally()
    with ScriptableToolServer() as tool_api, FakeOpenAIServer() as model, every_log_line() as log_lines:
        write_config(tmp_path, model.base_url, tool_api.url)
        with LocalEnvironment(config_dir=tmp_path, retry_interval_scale=0.0) as environment:
            store = environment.runtime.store

            @settings(
                max_examples=PIPELINE_EXAMPLES,
                deadline=None,
                derandomize=True,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            @given(first=model_replies(), then=model_replies(), answer=tool_answers())
            def run_once(first: dict[str, Any], then: dict[str, Any], answer: Raw) -> None:
                tally.examples += 1
                tool_api.on("/lookup", answer)
                model.enqueue(body=first)
                model.default(body=then)
                sent_before = len(model.requests)
                meta, execution = environment.ask("look it up")
                tally.runs += 1
                final = store.require_run(meta.run_id)
                if execution.status in {"SUCCEEDED", "FAILED", "TIMED_OUT"} and final.status in TERMINAL_STATUSES:
                    tally.terminal += 1
                else:
                    tally.lost.append(f"{meta.run_id}: execution {execution.status}, run {final.status}")
                messages = store.list_messages(meta.run_id)
                tally.broken.extend(f"{meta.run_id}: {problem}" for problem in conversation_problems(messages))
                tally.broken.extend(f"{meta.run_id}: {problem}" for problem in usage_problems(final.usage))
                tally.estimated += final.usage.estimated_calls > 0
                stored = json.dumps(
                    [
                        final.model_dump(mode="json"),
                        [message.model_dump(mode="json") for message in messages],
                        [step.model_dump(mode="json") for step in store.list_steps(meta.run_id)],
                        execution.model_dump(mode="json"),
                    ],
                    ensure_ascii=False,
                )
                tally.leaks.extend(leaked(f"run {meta.run_id}", stored))
                tally.redacted += any("***" in m.content for m in messages if m.role == "tool")
                sent = json.dumps([request.body for request in model.requests[sent_before:]], ensure_ascii=False)
                tally.leaks.extend(leaked(f"model requests of {meta.run_id}", sent))

            run_once()
            tally.leaks.extend(leaked("the table", json.dumps(environment_items(environment), ensure_ascii=False)))
    tally.leaks.extend(leaked("the logs", "\n".join(log_lines)))

    record_property(
        PROPERTY_NAME,
        {
            "examples": tally.examples,
            "runs": tally.runs,
            "terminal": tally.terminal,
            "lost": len(tally.lost),
            "leaks": len(tally.leaks),
        },
    )
    assert tally.examples == tally.runs >= PIPELINE_EXAMPLES
    assert tally.lost == []
    assert tally.broken == []
    assert tally.leaks == []
    # And the search meant something: the secret did reach observations (redacted), some runs' usage had to
    # be estimated, and the logs were written
    assert tally.redacted > 0
    assert tally.estimated > 0
    assert len(log_lines) > 0


def environment_items(environment: LocalEnvironment) -> list[dict[str, Any]]:
    """Every item of the environment's table, as DynamoDB returns it."""
    client = dynamodb_client(Settings.from_environ(os.environ))
    items: list[dict[str, Any]] = []
    for page in client.get_paginator("scan").paginate(TableName=environment.table_name):
        items.extend(page["Items"])
    return items
