"""Format and FormatFailure: record how a run ended, with an answer that is never empty."""

from __future__ import annotations

from typing import Any

from stepwise.models.run import RunError, RunMeta, StopReason, StoredMessage
from stepwise.models.state import FailureEvent, FormatResult, StatePayload, parse_event
from stepwise.steps.agent import RunAgent, agent_for
from stepwise.steps.best_answer import best_available_answer, final_answer_text
from stepwise.steps.budgets import priced_usage
from stepwise.steps.context_state import latest_summary_ref
from stepwise.steps.context_window import rendered_history
from stepwise.steps.run_metrics import record_run_ended
from stepwise.steps.run_outcomes import MODEL_ERROR_STOPS, failure_message, record_failure
from stepwise.steps.runtime import StepRuntime
from stepwise.steps.structured_output import StructuredOutput, produce_structured_output, split_formatting_replies
from stepwise.store.trace import RunRecord
from stepwise.telemetry.observability import logger, metrics


def _stop_reason(payload: StatePayload, meta: RunMeta) -> StopReason:
    # the payload carries the reason since IterationGuard stopped writing it to META for every iteration
    reason = payload.final_round_reason or meta.final_round_reason
    if payload.final_round and reason is not None:
        return reason
    if payload.next == "limit_hit":
        return "parse_errors"
    return "final_answer"


def _as_last_sent(meta: RunMeta, record: RunRecord, runtime: StepRuntime) -> list[StoredMessage]:
    """The conversation as the run's model calls last sent it: with the latest summary in place of the
    iterations it covers, so the formatting call fits the window the loop's calls fitted."""
    found = latest_summary_ref(record.steps)
    summary = runtime.store.summaries.get(meta.run_id, found[0].iteration, found[0].n) if found else None
    if summary is None:
        return record.messages
    language = runtime.profile(meta.profile).language
    budget = runtime.config.context_limits(meta.profile).summary_tokens
    return rendered_history(record.messages, summary, language=language, summary_tokens=budget).messages


def format_run(payload: StatePayload, runtime: StepRuntime) -> FormatResult:
    """Store the answer and why the run stopped; the run is SUCCEEDED whether the model or a limit ended it.

    With a `response_schema` in the profile the answer is also stored as validated JSON (`output`), or
    the reason it could not be (`output_error`).
    """
    # one read of the run serves the answer, the structured output and the usage
    meta, decision, record = runtime.store.final_record(payload.run_id, payload.iteration)
    if meta.is_terminal:
        return FormatResult(
            run_id=meta.run_id,
            status="SUCCEEDED" if meta.status == "SUCCEEDED" else "FAILED",
            stop_reason=meta.stop_reason,
        )
    stop_reason = _stop_reason(payload, meta)
    if payload.next == "final_answer" and decision is not None and decision.calls:
        # The model called tools the client sent: the client runs them and continues the conversation.
        stop_reason = "tool_calls"
        answer = decision.thought or f"Calling the client's tools: {decision.action}."
    elif payload.next == "final_answer" and decision is not None and decision.answer is not None:
        answer = decision.answer
    else:
        # A retried Format may find its own formatting replies stored; they are not the model's answer.
        conversation, _ = split_formatting_replies(record.messages, payload.iteration)
        agent = agent_for(meta, runtime)
        answer = best_available_answer(conversation, agent.protocol, stop_reason, agent.profile.language)
    structured = (
        StructuredOutput()
        if stop_reason == "tool_calls"
        else produce_structured_output(meta, payload.iteration, answer, _as_last_sent(meta, record, runtime), runtime)
    )
    usage = priced_usage(meta.profile, record.steps + structured.calls, runtime)
    finished = runtime.store.finish_run(
        meta,
        "SUCCEEDED",
        stop_reason=stop_reason,
        answer=answer,
        output=structured.output,
        output_error=structured.error,
        usage=usage,
        iteration=payload.iteration,
    )
    metrics.add_metric(name="RunsSucceeded", unit="Count", value=1)
    if finished.status == "SUCCEEDED":
        record_run_ended(finished.status, finished.stop_reason, usage, payload.iteration)
    logger.info(
        "run finished",
        extra={
            "run_id": meta.run_id,
            "stop_reason": stop_reason,
            "iterations": payload.iteration,
            "has_output": structured.output is not None,
        },
    )
    return FormatResult(run_id=finished.run_id, status="SUCCEEDED", stop_reason=finished.stop_reason)


def format_failure(event: FailureEvent, runtime: StepRuntime) -> FormatResult:
    """Record how a failed step ended the run, so it never stays RUNNING.

    A model error after the run did work (a tool answered, or the model wrote an answer) ends it
    SUCCEEDED with the best answer it had and a stop reason naming the cause (`model_error`,
    `context_window`; `deadline` when the deadline left no time to retry, whatever was done); any other
    failure is recorded FAILED (or TIMED_OUT) with its error.
    """
    stop_reason = MODEL_ERROR_STOPS.get(event.error.Error)
    if stop_reason is not None:
        meta, _, record = runtime.store.final_record(event.run_id, event.iteration or 0)
        agent = agent_for(meta, runtime)
        conversation = record.messages
        work_done = any(m.role == "tool" and m.content.strip() for m in conversation) or any(
            m.role == "assistant" and final_answer_text(m, agent.protocol) for m in conversation
        )
        if stop_reason == "deadline" or work_done:
            return _end_on_model_error(meta, record, agent, event, stop_reason, runtime)
    meta = runtime.store.require_run(event.run_id)
    record_failure(meta, event.error.Error, event.error.Cause, runtime, iteration=event.iteration)
    return FormatResult(run_id=meta.run_id, status="FAILED", stop_reason="error")


def _end_on_model_error(
    meta: RunMeta,
    record: RunRecord,
    agent: RunAgent,
    event: FailureEvent,
    stop_reason: StopReason,
    runtime: StepRuntime,
) -> FormatResult:
    """Record the run SUCCEEDED with its best answer, the stop reason and the model's error kept."""
    if meta.is_terminal:
        return FormatResult(
            run_id=meta.run_id,
            status="SUCCEEDED" if meta.status == "SUCCEEDED" else "FAILED",
            stop_reason=meta.stop_reason,
        )
    answer = best_available_answer(record.messages, agent.protocol, stop_reason, agent.profile.language)
    usage = priced_usage(meta.profile, record.steps, runtime)
    error = RunError(type=event.error.Error, message=failure_message(event.error.Error, event.error.Cause))
    finished = runtime.store.finish_run(
        meta, "SUCCEEDED", stop_reason=stop_reason, answer=answer, error=error, usage=usage, iteration=event.iteration
    )
    metrics.add_metric(name="RunsSucceeded", unit="Count", value=1)
    metrics.add_metric(name="RunsEndedOnModelError", unit="Count", value=1)
    if finished.status == "SUCCEEDED":
        record_run_ended(finished.status, finished.stop_reason, usage, finished.iteration)
    logger.warning(
        "run ended on a model error",
        extra={"run_id": meta.run_id, "error_type": error.type, "stop_reason": stop_reason},
    )
    return FormatResult(run_id=meta.run_id, status="SUCCEEDED", stop_reason=finished.stop_reason)


def handle(event: Any, runtime: StepRuntime) -> dict[str, Any]:
    """Lambda entry for both Format and FormatFailure: an event with `error` is a failure to record."""
    if isinstance(event, dict) and "error" in event:
        failure = parse_event(FailureEvent, event)
        with runtime.spans.step("FormatFailure", run_id=failure.run_id, trace=failure.trace):
            return format_failure(failure, runtime).model_dump()
    payload = parse_event(StatePayload, event)
    with runtime.spans.step("Format", run_id=payload.run_id, trace=payload.trace):
        return format_run(payload, runtime).model_dump()
