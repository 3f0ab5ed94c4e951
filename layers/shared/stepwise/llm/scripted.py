"""A scripted chat model: replies read from scenarios, for demos, tests and benchmarks.

The model is stateless. The turn it plays is the number of assistant messages already in the request
(with those a summary stands for, `ChatRequest.turns_before`), so concurrent runs never share a position
and a retried call plays the same turn again.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stepwise.config.llm import ScriptScenario, ScriptTurn
from stepwise.errors import ConfigError, LLMPermanentError
from stepwise.inputs.validation_problems import describe_problems
from stepwise.models.messages import ChatRequest, Completion, ToolCall, Usage
from stepwise.patterns.linear import compiled

SCRIPTED_MODEL_NAME = "scripted"
_CHARS_PER_TOKEN = 4


class _ScriptFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scenarios: list[ScriptScenario] = Field(min_length=1)


class ScriptedChatModel:
    """Plays scripted turns; see `stepwise.config.llm.ScriptScenario` for the format.

    A scenario is chosen by searching its `match` regex (case-insensitive) in the first user message;
    the first scenario that matches wins, else the one without `match`. Past its last turn a scenario
    repeats the last one. Native tool call ids are `call_<turn>_<n>`, `turn` counting from 0.
    """

    def __init__(self, scenarios: list[ScriptScenario], *, sleep: Callable[[float], None] = time.sleep) -> None:
        """`sleep` is called with a turn's `latency_ms` in seconds (benchmarks inject a fake one)."""
        self._matchers = [
            (compiled(scenario.match, ignore_case=True), scenario)
            for scenario in scenarios
            if scenario.match is not None
        ]
        self._default = next((scenario for scenario in scenarios if scenario.match is None), None)
        self._sleep = sleep

    @classmethod
    def from_file(cls, path: Path, *, sleep: Callable[[float], None] = time.sleep) -> ScriptedChatModel:
        """Load scenarios from a YAML file, or a JSON one when the name ends in `.json`.

        Raises `ConfigError` naming the file, the field and the reason when the file is unreadable or
        malformed.
        """
        return cls(load_script(path), sleep=sleep)

    def complete(self, request: ChatRequest) -> Completion:
        """Return the scripted reply for this point of the conversation."""
        question = next((m.content for m in request.messages if m.role == "user"), "")
        scenario = self._scenario_for(question)
        turn_number = request.turns_before + sum(1 for message in request.messages if message.role == "assistant")
        turn = scenario.turns[min(turn_number, len(scenario.turns) - 1)]
        if turn.latency_ms:
            self._sleep(turn.latency_ms / 1000)
        tool_calls = [
            ToolCall(id=f"call_{turn_number}_{n}", name=call.name, arguments=call.arguments)
            for n, call in enumerate(turn.tool_calls)
        ]
        return Completion(
            content=turn.content,
            tool_calls=tool_calls,
            usage=_usage(turn, request, tool_calls),
            model=SCRIPTED_MODEL_NAME,
            finish_reason="tool_calls" if tool_calls else "stop",
        )

    def _scenario_for(self, question: str) -> ScriptScenario:
        for pattern, scenario in self._matchers:
            if pattern.search(question):
                return scenario
        if self._default is None:
            # Never the question itself: user text stays out of errors and logs.
            raise LLMPermanentError("scripted model: no scenario matches the question")
        return self._default


def load_script(path: Path) -> list[ScriptScenario]:
    """Read and validate the scenarios of a script file; malformed files raise `ConfigError`."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"{path}: cannot read the script: {reason}") from exc
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        kind = "JSON" if path.suffix.lower() == ".json" else "YAML"
        raise ConfigError(f"{path}: not valid {kind}: {exc}") from exc
    try:
        return _ScriptFile.model_validate(data).scenarios
    except ValidationError as exc:
        raise ConfigError(f"{path}: {describe_problems(exc)}") from None


def _usage(turn: ScriptTurn, request: ChatRequest, tool_calls: list[ToolCall]) -> Usage:
    if turn.usage is not None:
        return Usage(input_tokens=turn.usage.input_tokens, output_tokens=turn.usage.output_tokens)
    prompt_chars = sum(len(message.content) for message in request.messages)
    output_chars = len(turn.content) + sum(len(call.name) + len(json.dumps(call.arguments)) for call in tool_calls)
    return Usage(
        input_tokens=math.ceil(prompt_chars / _CHARS_PER_TOKEN),
        output_tokens=math.ceil(output_chars / _CHARS_PER_TOKEN),
    )
