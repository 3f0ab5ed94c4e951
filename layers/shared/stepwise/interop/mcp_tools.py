"""MCP tools from profiles, and a tool call as a run: started, followed and answered through the API.

Nothing here decides about runs: a call is `POST /v1/runs` with the profile, then `GET /v1/runs/{id}/events`
polled until the run ends (each step read is a progress notification, when the client asked for them),
then `GET /v1/runs/{id}` for its answer; a call the client gives up cancels the run
(`POST /v1/runs/{id}/cancel`). The API calls are synchronous and run on worker threads.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.to_thread
from mcp.types import CallToolResult, TextContent, Tool
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stepwise.config.model import AgentProfile, StepwiseConfig
from stepwise.inputs.validation_problems import describe_problems
from stepwise.interop.api_calls import ApiAnswer, ApiCaller

# How often a followed run's new steps are read (each read is two queries of the store).
POLL_SECONDS = 0.5
# How long a call follows its run: under API Gateway's 15 minutes for a streamed answer, so a call on AWS
# ends with words rather than a cut connection. A run still going then goes on; the result names it.
MAX_FOLLOW_SECONDS = 14 * 60
# Where a result names its run (`_meta` keys of the form prefix/name).
RUN_ID_META = "stepwise/run_id"
OUTCOME_META = "stepwise/outcome"

Progress = Callable[[float, str], Awaitable[None]]


class ToolArguments(BaseModel):
    """What a profile's tool takes."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, description="The question or task for the agent.")
    session_id: str | None = Field(
        default=None,
        min_length=1,
        description="Continue this conversation: the run starts from the earlier turns of this session.",
    )


def profile_tools(config: StepwiseConfig) -> list[Tool]:
    """Each profile as a tool: its name, its description, the arguments above, and its response schema
    (when that is an object, as MCP's `outputSchema` must be) as the tool's output schema."""
    input_schema = ToolArguments.model_json_schema()
    input_schema.pop("title", None)
    return [
        Tool(
            name=name,
            description=_description(name, profile, default=name == config.default_profile),
            input_schema=input_schema,
            output_schema=_object_schema(profile),
        )
        for name, profile in sorted(config.profiles.items())
    ]


def _description(name: str, profile: AgentProfile, *, default: bool) -> str:
    said = profile.description or f"Ask the Stepwise agent profile '{name}'."
    return f"{said} (the default profile)" if default else said


def _object_schema(profile: AgentProfile) -> dict[str, Any] | None:
    schema = profile.response_schema
    return schema if schema is not None and schema.get("type") == "object" else None


def tool_arguments(arguments: dict[str, Any] | None) -> ToolArguments | str:
    """The call's arguments, or what is wrong with them (each field and reason)."""
    try:
        return ToolArguments.model_validate(arguments or {})
    except ValidationError as exc:
        return f"invalid arguments: {describe_problems(exc)}"


async def call_profile(
    caller: ApiCaller, profile_name: str, profile: AgentProfile, arguments: ToolArguments, progress: Progress
) -> CallToolResult:
    """Run `arguments.question` with the profile and answer with the run's outcome.

    When the surrounding scope is cancelled (the client cancelled the request, or closed it), the run is
    cancelled before the cancellation goes on.
    """
    body: dict[str, Any] = {"input": arguments.question, "profile": profile_name}
    if arguments.session_id is not None:
        body["session_id"] = arguments.session_id
    # shielded: a cancellation arriving while the run starts is delivered below, once its id is known
    with anyio.CancelScope(shield=True):
        started = await _api(caller, "POST", "/v1/runs", body)
    if not started.ok:
        return error_result(f"the run could not be started: {_api_error(started)}")
    run_id = str(started.body["run_id"])
    try:
        view = await _follow(caller, run_id, progress)
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await _api(caller, "POST", f"/v1/runs/{run_id}/cancel")
        raise
    if view is None:
        text = (
            f"run {run_id} had not ended after {MAX_FOLLOW_SECONDS} s; it goes on: GET /v1/runs/{run_id} "
            "with the same key reads it"
        )
        return error_result(text, run_id=run_id)
    return run_result(view, structured=_object_schema(profile) is not None)


async def _follow(caller: ApiCaller, run_id: str, progress: Progress) -> dict[str, Any] | None:
    """The run once it ended (None past `MAX_FOLLOW_SECONDS`), each step and status read told to `progress`."""
    deadline = anyio.current_time() + MAX_FOLLOW_SECONDS
    cursor: str | None = None
    status: str | None = None
    told = 0
    while True:
        target = f"/v1/runs/{run_id}/events" + (f"?after={cursor}" if cursor else "")
        page = await _api(caller, "GET", target)
        if not page.ok:
            raise RuntimeError(f"reading run {run_id}'s steps failed: {_api_error(page)}")
        for event in page.body["events"]:
            told += 1
            await progress(told, step_summary(event))
        if page.body["status"] != status:
            status = page.body["status"]
            told += 1
            await progress(told, f"run {run_id} is {status}")
        cursor = page.body["next_cursor"]
        if page.body["done"]:
            break
        if anyio.current_time() > deadline:
            return None
        await anyio.sleep(POLL_SECONDS)
    view = await _api(caller, "GET", f"/v1/runs/{run_id}")
    if not view.ok:
        raise RuntimeError(f"reading run {run_id} failed: {_api_error(view)}")
    document: dict[str, Any] = view.body
    return document


def step_summary(event: dict[str, Any]) -> str:
    """One line for a step of the run: its iteration, its kind, and the tool it called."""
    words = [f"iteration {event.get('iteration')}: {event.get('kind')}"]
    if event.get("tool"):
        words.append(str(event["tool"]))
    if event.get("ok") is False:
        words.append("(failed)")
    return " ".join(words)


def run_result(view: dict[str, Any], *, structured: bool) -> CallToolResult:
    """The tool result of an ended run: its answer (and structured output) when it SUCCEEDED, else an
    error result saying how it ended and why."""
    run_id = str(view["run_id"])
    meta = {RUN_ID_META: run_id, OUTCOME_META: view.get("outcome")}
    answer = view.get("answer") or ""
    if view["status"] != "SUCCEEDED":
        error = view.get("error") or {}
        reason = f"{error['type']}: {error['message']}" if error else f"stop reason {view.get('stop_reason')}"
        text = f"run {run_id} ended {view['status']} ({reason})" + (f"\n\n{answer}" if answer else "")
        return error_result(text, run_id=run_id, outcome=view.get("outcome"))
    if not structured:
        return CallToolResult(content=[TextContent(text=answer)], meta=meta)
    output = view.get("output")
    if not isinstance(output, dict):
        reason = view.get("output_error") or "no structured output was produced"
        return error_result(f"run {run_id} answered without its structured output: {reason}\n\n{answer}", run_id=run_id)
    # the answer, and the structured output also as text for clients that read only text (as the spec asks)
    content = [TextContent(text=answer), TextContent(text=json.dumps(output, ensure_ascii=False))]
    return CallToolResult(content=content, structured_content=output, meta=meta)


def error_result(text: str, *, run_id: str | None = None, outcome: str | None = None) -> CallToolResult:
    """A tool result with `isError`: the model calling the tool reads `text`."""
    meta = {RUN_ID_META: run_id, OUTCOME_META: outcome} if run_id else None
    return CallToolResult(content=[TextContent(text=text)], is_error=True, meta=meta)


async def _api(caller: ApiCaller, method: str, target: str, body: Any = None) -> ApiAnswer:
    return await anyio.to_thread.run_sync(lambda: caller.request(method, target, body))


def _api_error(answer: ApiAnswer) -> str:
    error = answer.body.get("error") if isinstance(answer.body, dict) else None
    if isinstance(error, dict):
        return f"{answer.status} {error.get('type')}: {error.get('message')}"
    return f"HTTP {answer.status}"
