"""The guarded invoker: one tool call in, one observation out, whatever happens in between."""

from __future__ import annotations

import contextvars
import functools
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stepwise.config.redaction import Redactor
from stepwise.errors import ToolError
from stepwise.inputs.text_policy import clean_text, count_unencodable, replacement_note
from stepwise.models.messages import ToolCall
from stepwise.telemetry.observability import logger
from stepwise.tools.base import NO_CONTEXT, CallContext, Tool, ToolResult
from stepwise.tools.call_threads import CallThreads
from stepwise.tools.function_tool import as_tool_result
from stepwise.tools.observation import ToolObservation, truncate_text
from stepwise.tools.registry import ToolRegistry
from stepwise.tools.strict_schema import without_left_out_nulls
from stepwise.tools.tool_budget import checked_spec

if TYPE_CHECKING:
    # jsonschema (a third of ToolInvoke's import) is loaded when a call's arguments are first checked: a
    # ToolInvoke that waits for an approval, replays a stored observation or records a denied call never
    # checks any, and neither does a handler that only builds the tool list (LLMCall, the API).
    from jsonschema import Draft202012Validator

DEFAULT_MAX_OBSERVATION_CHARS = 4000
DEFAULT_MAX_CALL_SECONDS = 60.0
MAX_REPORTED_ARGUMENT_ERRORS = 3
_MIN_OBSERVATION_CHARS = 64
CALL_THREADS = CallThreads()
"""The process's threads for tool calls: one per call in flight, kept between calls."""


@dataclass
class _Outcome:
    result: object = None
    failure: BaseException | None = None


@functools.lru_cache(maxsize=1024)
def _validator_for(schema_text: str) -> Draft202012Validator | None:
    """A validator for the parameter schema `schema_text` (JSON), or None when it is not a valid schema.

    Kept for the container's life: a ToolInvoke step builds a new invoker per call, and checking the schema
    against the metaschema at every call was 6% of a `stepwise serve` burst's CPU (docs/performance.md).
    """
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    from stepwise.patterns.metaschema import TOOL_SCHEMA_FORMATS
    from stepwise.patterns.schema_keywords import linear_validator

    schema = json.loads(schema_text)
    try:
        Draft202012Validator.check_schema(schema, format_checker=TOOL_SCHEMA_FORMATS)
    except SchemaError:
        return None
    # the schema is a server's and the arguments a model's: its patterns search in linear time
    validator: Draft202012Validator = linear_validator(schema, Draft202012Validator)
    return validator


class ToolInvoker:
    """Runs tool calls for the ToolInvoke step and never raises.

    Every failure — unknown tool, invalid arguments, an HTTP error, a timeout, a refused target, an
    exception inside a Python tool — becomes an observation with ``ok=False`` that says what happened,
    so the model can react and the run goes on. Content and errors are scrubbed of known secrets, then
    cut to ``max_observation_chars`` (the whole text, scrubbed the same way, rides along as ``whole_content``
    for ToolInvoke to keep apart). Each call runs in its own thread, held to ``max_call_seconds``
    overall, so even a Python tool that never returns cannot hold the step past that. With
    ``strict_nulls`` (the model is sent its tools in strict mode), a null for an optional argument whose
    schema takes no null is read as the argument left out, as strict mode makes the model write it.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        max_observation_chars: int = DEFAULT_MAX_OBSERVATION_CHARS,
        redactor: Redactor | None = None,
        max_call_seconds: float = DEFAULT_MAX_CALL_SECONDS,
        strict_nulls: bool = False,
    ) -> None:
        if max_observation_chars < _MIN_OBSERVATION_CHARS:
            raise ValueError(f"max_observation_chars must be at least {_MIN_OBSERVATION_CHARS}")
        if max_call_seconds <= 0:
            raise ValueError("max_call_seconds must be positive")
        self._registry = registry
        self._max_observation_chars = max_observation_chars
        self._redactor = redactor if redactor is not None else registry.redactor
        self._max_call_seconds = max_call_seconds
        # A model sent tools in strict mode sends null for an optional argument it leaves out.
        self._strict_nulls = strict_nulls

    def invoke(self, call: ToolCall, context: CallContext = NO_CONTEXT) -> ToolObservation:
        """Run one call (the tool told `context`: its idempotency key) and describe its outcome; never raises."""
        started = time.perf_counter()
        try:
            result = self._run(call, context)
        except ToolError as exc:
            result = ToolResult(content="", ok=False, error=str(exc))
        except Exception as exc:
            result = ToolResult(content="", ok=False, error=f"the tool failed: {type(exc).__name__}: {exc}")
        latency_ms = round((time.perf_counter() - started) * 1000, 1)
        try:
            return self._observation(call, result, latency_ms)
        except Exception as exc:
            # Only a broken redactor or result could land here; still an observation, never a raise.
            logger.warning("tool observation could not be built", extra={"tool": call.name, "kind": type(exc).__name__})
            return ToolObservation(
                call_id=call.id,
                name=call.name,
                ok=False,
                content="Error: the tool's output could not be processed",
                error="the tool's output could not be processed",
                latency_ms=latency_ms,
            )

    def _run(self, call: ToolCall, context: CallContext) -> ToolResult:
        found = self._registry.get(call.name)
        if found is None:
            known = ", ".join(self._registry.names()) or "none"
            raise ToolError(f"unknown tool {call.name!r}; known tools: {known}")
        arguments = call.arguments
        if self._strict_nulls:
            arguments = without_left_out_nulls(arguments, checked_spec(found).parameters)
        self._check_arguments(call.name, found, arguments)
        return self._call_with_cap(found, arguments, context)

    def _check_arguments(self, name: str, found: Tool, arguments: dict[str, Any]) -> None:
        from jsonschema.exceptions import relevance

        from stepwise.tools.argument_problems import describe_argument_error

        errors = sorted(self._validator(name, found).iter_errors(arguments), key=relevance, reverse=True)
        if not errors:
            return
        problems = "; ".join(describe_argument_error(error) for error in errors[:MAX_REPORTED_ARGUMENT_ERRORS])
        raise ToolError(f"invalid arguments for {name}: {problems}")

    def _validator(self, name: str, found: Tool) -> Draft202012Validator:
        # a tool offered with a reduced schema is checked against its full one
        validator = _validator_for(json.dumps(checked_spec(found).parameters, sort_keys=True))
        if validator is None:
            raise ToolError(f"tool {name} has an invalid parameter schema")
        return validator

    def _call_with_cap(self, found: Tool, arguments: dict[str, Any], context: CallContext) -> ToolResult:
        outcome = _Outcome()

        def run() -> None:
            try:
                outcome.result = found.call(arguments, context)
            except BaseException as exc:  # a tool calling sys.exit() must become an observation too
                outcome.failure = exc

        # On a daemon thread (`call_threads`): a tool that never returns must not keep the process alive;
        # the context carries tracing.
        variables = contextvars.copy_context()
        finished = CALL_THREADS.start(lambda: variables.run(run))
        if not finished.wait(self._max_call_seconds):
            raise ToolError(f"timed out after {self._max_call_seconds:.1f} s")
        if isinstance(outcome.failure, ToolError):
            raise outcome.failure
        if outcome.failure is not None:
            failure = outcome.failure
            raise ToolError(f"the tool failed: {type(failure).__name__}: {failure}")
        return as_tool_result(outcome.result)

    def _observation(self, call: ToolCall, result: ToolResult, latency_ms: float) -> ToolObservation:
        # Text that cannot be stored or sent (lone surrogates, NUL) is replaced, never a failed run.
        replaced = count_unencodable(result.content) + count_unencodable(result.error or "")
        if result.ok:
            content = self._redactor.redact(clean_text(result.content))
            error = None
        else:
            error = self._redactor.redact(clean_text(result.error or result.content or "the tool failed"))
            detail = self._redactor.redact(clean_text(result.content)) if result.content else error
            content = f"Error: {detail}"
        note = f"\n{replacement_note(replaced)}" if replaced else ""
        output_chars = len(content)
        whole = content
        content, shortened = truncate_text(content, self._max_observation_chars - len(note))
        content += note
        if error is not None:
            error, _ = truncate_text(error, self._max_observation_chars)
        return ToolObservation(
            call_id=call.id,
            name=call.name,
            ok=result.ok,
            content=content,
            status_code=result.status_code,
            error=error,
            latency_ms=latency_ms,
            truncated=result.truncated or shortened,
            output_chars=output_chars if shortened else None,
            whole_content=whole + note if shortened else None,
        )
