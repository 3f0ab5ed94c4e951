"""Starting runs: the logic of `POST /v1/runs` (reading them back is `run_views`).

A request is checked whole before anything is written (`plan_run`); only then is its intent
classified, its META and opening messages stored (QUEUED), and its execution started under the run id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from stepwise.config.model import TOOL_CHOICE_MODES, StepwiseConfig
from stepwise.intent import extract_question, route_profile
from stepwise.models.api_requests import ImagePart, InputMessage, RunRequest
from stepwise.models.api_responses import RunAccepted
from stepwise.models.messages import ChatMessage, ToolCall
from stepwise.models.run import IntentOutcome, RunBudget, RunError, RunMeta, RunOptions
from stepwise.steps.api.images import check_images_accepted, image_input
from stepwise.steps.api.problems import InvalidRequest
from stepwise.steps.api.services import ApiServices
from stepwise.steps.executions import ExecutionStartFailed
from stepwise.steps.runs import create_run, start_input
from stepwise.telemetry.observability import logger, metrics


@dataclass(frozen=True)
class RunPlan:
    """A request to run the agent that passed every check; nothing is stored yet."""

    owner: str
    messages: list[ChatMessage]
    request_body: dict[str, Any]
    profile: str | None = None
    session_id: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    options: RunOptions | None = None
    budget: RunBudget | None = None


def _call_arguments(text: str, field: str) -> dict[str, Any]:
    try:
        arguments = json.loads(text) if text.strip() else {}
    except ValueError:
        raise InvalidRequest.of(field, "must be a JSON object as text") from None
    if not isinstance(arguments, dict):
        raise InvalidRequest.of(field, "must be a JSON object as text")
    return arguments


def chat_messages(messages: list[InputMessage]) -> list[ChatMessage]:
    """The caller's messages as stored conversation messages; tool results carry the name of their call.

    Raises `InvalidRequest` when a tool call's arguments are not a JSON object.
    """
    names: dict[str, str] = {}
    converted: list[ChatMessage] = []
    for index, message in enumerate(messages):
        calls = [
            ToolCall(
                id=call.id,
                name=call.function.name,
                arguments=_call_arguments(
                    call.function.arguments, f"messages[{index}].tool_calls[{position}].function.arguments"
                ),
            )
            for position, call in enumerate(message.tool_calls or [])
        ]
        names |= {call.id: call.name for call in calls}
        parts = message.content if isinstance(message.content, list) else []
        images = [
            image_input(part, f"messages[{index}].content[{position}].image_url.url")
            for position, part in enumerate(parts)
            if isinstance(part, ImagePart)
        ]
        converted.append(
            ChatMessage(
                role="system" if message.role == "developer" else message.role,
                content=message.text,
                images=images,
                tool_calls=calls,
                tool_call_id=message.tool_call_id,
                name=names.get(message.tool_call_id or "") if message.role == "tool" else None,
            )
        )
    return converted


def plan_run(
    config: StepwiseConfig,
    *,
    owner: str,
    messages: list[ChatMessage],
    request_body: dict[str, Any],
    input_field: str = "messages",
    profile: str | None = None,
    session_id: str | None = None,
    metadata: dict[str, str] | None = None,
    options: RunOptions | None = None,
    budget: RunBudget | None = None,
) -> RunPlan:
    """Check the limits of `config.api` and the profile; 422 naming every problem found."""
    limits = config.api
    problems: list[tuple[str, str]] = []
    if len(messages) > limits.max_messages:
        problems.append(("messages", f"at most {limits.max_messages} messages are accepted, got {len(messages)}"))
    characters = sum(len(message.content) for message in messages)
    if characters > limits.max_input_chars:
        problems.append((input_field, f"at most {limits.max_input_chars} characters in all, got {characters}"))
    if profile is not None and profile not in config.profiles:
        problems.append(("profile", f"unknown profile; the profiles are {', '.join(sorted(config.profiles))}"))
    if problems:
        raise InvalidRequest(problems)
    return RunPlan(
        owner=owner,
        messages=messages,
        request_body=request_body,
        profile=profile,
        session_id=session_id,
        metadata=dict(metadata or {}),
        options=options,
        budget=budget,
    )


def _classify(services: ApiServices, request_body: dict[str, Any]) -> tuple[dict[str, str], IntentOutcome | None]:
    intent_config = services.config.intent
    if services.classifier is None or intent_config is None:
        return {}, None
    question = extract_question(request_body, intent_config.key_from.request_body) or ""
    result = services.classifier.classify(question)
    outcome = IntentOutcome(
        source=result.source, model=result.model, latency_ms=round(result.latency_ms, 1), error=result.error
    )
    return result.values, outcome


def _check_client_tools(services: ApiServices, profile: str, options: RunOptions) -> None:
    """A client tool may not take the name of one of the profile's tools: a call would be ambiguous. A tool
    choice that names a tool must name one the run offers: the model's provider would refuse the call, and
    the run would fail after it started.

    The profile's tools are listed only when one of these needs them: listing asks each MCP server of the
    profile for its tools, which a chat completion without client tools or a named choice must not pay for.
    """
    choice = options.tool_choice
    sent = {tool.name for tool in options.client_tools}
    names_another_tool = choice is not None and choice not in TOOL_CHOICE_MODES and choice not in sent
    if not sent and not names_another_tool:
        return
    own = {spec.name for spec in services.runtime.tools().specs(services.config.profiles[profile].tools)}
    clashes = sorted(own.intersection(sent))
    if clashes:
        raise InvalidRequest.of(
            "tools", f"the profile {profile} has tools of the same names: {', '.join(clashes)}; rename yours"
        )
    if names_another_tool and choice not in own:
        field = "function_call.name" if options.legacy_functions else "tool_choice.function.name"
        raise InvalidRequest.of(field, f"names {choice}, which is neither a tool sent nor one of profile {profile}'s")


def create_queued_run(services: ApiServices, plan: RunPlan) -> RunMeta:
    """Classify the question, choose the profile (an explicit one wins over routing) and store the run."""
    intent, outcome = _classify(services, plan.request_body)
    config = services.config
    profile = plan.profile or route_profile(intent, config.routes, config.default_profile)
    if plan.options is not None:
        _check_client_tools(services, profile, plan.options)
    check_images_accepted(config, profile, plan.messages)
    if plan.budget is not None and plan.budget.max_cost_usd is not None and config.model_prices(profile) is None:
        raise InvalidRequest.of(
            "budget.max_cost_usd", f"the model of profile {profile} has no prices configured to count a cost"
        )
    meta = create_run(
        services.runtime,
        messages=plan.messages,
        owner=plan.owner,
        profile=profile,
        session_id=plan.session_id,
        intent=intent,
        intent_outcome=outcome,
        metadata=plan.metadata,
        options=plan.options,
        budget=plan.budget,
        ttl_days=services.ttl_days,
        workflow_type=services.workflow_type,
    )
    logger.info("run created", extra={"run_id": meta.run_id, "profile": profile, "intent": intent})
    return meta


def record_start_failure(services: ApiServices, meta: RunMeta, exc: ExecutionStartFailed) -> None:
    """Record a run whose execution could not be started as FAILED, so it never stays QUEUED."""
    error = RunError(type="ExecutionStartFailed", message=str(exc))
    services.runtime.store.finish_run(meta, "FAILED", stop_reason="error", outcome="none", error=error)
    metrics.add_metric(name="RunStartFailures", unit="Count", value=1)


def start_queued_run(services: ApiServices, meta: RunMeta) -> None:
    """Start the run's execution (asynchronously); a failure to start is recorded on the run and raised. A
    run that ended as it was created (its input blocked by a guardrail) is not started."""
    if meta.is_terminal:
        return
    try:
        services.executions.start(meta.run_id, start_input(meta))
    except ExecutionStartFailed as exc:
        record_start_failure(services, meta, exc)
        raise
    metrics.add_metric(name="RunsStarted", unit="Count", value=1)


def accept_run(
    services: ApiServices,
    *,
    owner: str,
    request: RunRequest,
    request_body: dict[str, Any],
    idempotency_key: str | None,
    base_path: str = "",
    lambda_context: Any = None,
) -> RunAccepted:
    """`POST /v1/runs`: store and start the run, once per Idempotency-Key when one is given."""
    messages = (
        chat_messages(request.messages)
        if request.messages is not None
        else [ChatMessage(role="user", content=request.input or "")]
    )
    plan = plan_run(
        services.config,
        owner=owner,
        messages=messages,
        request_body=request_body,
        input_field="messages" if request.messages is not None else "input",
        profile=request.profile,
        session_id=request.session_id,
        metadata=request.metadata,
        options=RunOptions(response_schema=request.response_schema) if request.response_schema else None,
        budget=request.budget,
    )

    def start() -> dict[str, Any]:
        meta = create_queued_run(services, plan)
        start_queued_run(services, meta)
        accepted = RunAccepted(
            run_id=meta.run_id,
            status=meta.status,
            profile=meta.profile,
            intent=meta.intent,
            session_id=meta.session_id,
            poll_url=f"{base_path}/v1/runs/{meta.run_id}",
        )
        return accepted.model_dump(mode="json")

    if idempotency_key is None:
        return RunAccepted.model_validate(start())
    response = services.idempotency.run_once(
        owner=owner, key=idempotency_key, body=request_body, start=start, lambda_context=lambda_context
    )
    return RunAccepted.model_validate(response)
