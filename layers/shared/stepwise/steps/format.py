"""Format and FormatFailure: record how a run ended, with its outcome, and an answer whenever it has one.

The outcome is decided by `stepwise.steps.outcome` and written here, for every end the loop reaches
(the model's answer, a limit, a model error); other failures are recorded by `run_outcomes`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

# The model catalog, which `StepwiseConfig` loads with the first model looked up: every first call of Format
# looks the run's model up (its context window, its prices), so it loads in the init, not inside that call.
import stepwise.config.model_catalog  # noqa: F401
from stepwise.models.run import Outcome, RunError, RunMeta, StopReason, StoredMessage
from stepwise.models.state import FailureEvent, FormatResult, OnlineEvalEvent, StatePayload, parse_event
from stepwise.models.step_record import StepRecord, tools_called
from stepwise.steps.budgets import priced_usage
from stepwise.steps.call_gate import never_sent
from stepwise.steps.child_ends import answer_parent
from stepwise.steps.context_state import latest_summary_ref
from stepwise.steps.guardrail_points import GuardedAnswer, guard_answer, record_answer_check
from stepwise.steps.online_eval_sample import online_eval_due
from stepwise.steps.outcome import decide_outcome, status_of
from stepwise.steps.reply_problems import is_filtered
from stepwise.steps.run_metrics import record_run_ended
from stepwise.steps.run_outcomes import MODEL_ERROR_STOPS, record_failure, run_error
from stepwise.steps.runtime import StepRuntime
from stepwise.steps.structured_output import StructuredOutput, produce_structured_output, split_formatting_replies
from stepwise.store.keys import observation_slot
from stepwise.store.trace import RunRecord
from stepwise.telemetry.observability import logger, metrics

NO_ANSWER = "NoAnswer"
"""The error of a run a limit stopped before the model answered or any tool returned anything."""


@dataclass(frozen=True)
class RunEnd:
    """How Format or FormatFailure ends a run: why it stopped, what it produced, and the error kept."""

    stop_reason: StopReason
    outcome: Outcome
    answer: str | None
    iteration: int | None
    error: RunError | None = None

    def with_error(self, error: RunError) -> RunEnd:
        """This end, with `error` as what ended it."""
        return replace(self, error=error)

    def guarded(self, meta: RunMeta, runtime: StepRuntime) -> tuple[RunEnd, GuardedAnswer | None]:
        """This end after the profile's output guardrails: its answer redacted, or replaced by the profile's
        message with stop reason `guardrail` when a rule blocked it (the outcome stays what the work gave);
        and the check, for `record_answer_check`."""
        if self.answer is None:
            return self, None
        guarded = guard_answer(runtime, meta, self.answer)
        if guarded.blocked:
            return replace(self, answer=guarded.text, stop_reason="guardrail"), guarded
        return replace(self, answer=guarded.text), guarded


def _stop_reason(payload: StatePayload, meta: RunMeta) -> StopReason:
    # the payload carries the reason since IterationGuard stopped writing it to META for every iteration
    reason = payload.final_round_reason or meta.final_round_reason
    if payload.final_round and reason is not None:
        return reason
    if payload.next == "limit_hit":
        return "parse_errors"
    return "final_answer"


def _filtered_at(record: RunRecord, iteration: int) -> bool:
    """True when the provider's guardrail or content filter stopped the model's reply of `iteration`."""
    calls = [step for step in record.steps if step.kind == "llm" and step.iteration == iteration]
    return bool(calls) and is_filtered(calls[-1])


def _as_last_sent(
    meta: RunMeta, record: RunRecord, runtime: StepRuntime, learned_window: int | None
) -> list[StoredMessage]:
    """The conversation as the run's model calls last sent it: with the latest summary in place of the
    iterations it covers, so the formatting call fits the window the loop's calls fitted."""
    found = latest_summary_ref(record.steps)
    summary = runtime.store.summaries.get(meta.run_id, found[0].iteration, found[0].n) if found else None
    if summary is None:
        return record.messages
    # only a run that was compacted renders its history again: the rendering (and its wordings) load then
    from stepwise.steps.context_window import rendered_history

    language = runtime.profile(meta.profile).language
    budget = runtime.config.context_limits(meta.profile, learned_window=learned_window).summary_tokens
    return rendered_history(record.messages, summary, language=language, summary_tokens=budget).messages


def _ended(meta: RunMeta, runtime: StepRuntime) -> FormatResult:
    """What a retried Format or FormatFailure returns for a run whose end is already recorded."""
    return FormatResult(
        run_id=meta.run_id,
        status="SUCCEEDED" if meta.status == "SUCCEEDED" else "FAILED",
        stop_reason=meta.stop_reason,
        online_eval=online_eval_due(meta, runtime),
    )


def format_run(payload: StatePayload, runtime: StepRuntime) -> FormatResult:
    """Store the answer, the outcome and why the run stopped.

    A run the model ended (`answered`), or a limit stopped after work was done (`partial`, with the best
    answer that work gives), is SUCCEEDED; a limit before any work leaves nothing to answer with, and the
    run is FAILED (`none`, error `NoAnswer`). With a `response_schema` in the profile the answer is also
    stored as validated JSON (`output`), or the reason it could not be (`output_error`).
    """
    # one read of the run serves the answer, the structured output and the usage
    meta, decision, record = runtime.store.final_record(payload.run_id, payload.iteration)
    if meta.is_terminal:
        return _ended(meta, runtime)
    stop_reason = _stop_reason(payload, meta)
    if payload.next == "final_answer" and _filtered_at(record, payload.iteration):
        # the provider's guardrail or content filter stopped the model's reply: its message is the answer
        stop_reason = "guardrail"
    answer: str | None
    answered = True
    if payload.next == "final_answer" and decision is not None and decision.calls:
        # The model called tools the client sent: the client runs them and continues the conversation.
        stop_reason = "tool_calls"
        answer = decision.thought or f"Calling the client's tools: {decision.action}."
    elif payload.next == "final_answer" and decision is not None and decision.answer is not None:
        answer = decision.answer
    else:
        answered = False
        # A retried Format may find its own formatting replies stored; they are not the model's answer.
        conversation, _ = split_formatting_replies(record.messages, payload.iteration)
        answer = _best_answer(conversation, record, meta, stop_reason, runtime)
    end, checked = RunEnd(
        stop_reason=stop_reason,
        outcome=decide_outcome(answered=answered, best_answer=answer),
        answer=answer,
        iteration=payload.iteration,
    ).guarded(meta, runtime)
    answer = end.answer
    if answer is None:
        message = f"the run stopped ({stop_reason}) before the model gave an answer, and no tool returned anything"
        return _record_end(meta, record, end.with_error(RunError(type=NO_ANSWER, message=message)), runtime)
    structured = (
        StructuredOutput()
        if end.stop_reason in ("tool_calls", "guardrail")
        else produce_structured_output(
            meta,
            payload.iteration,
            answer,
            _as_last_sent(meta, record, runtime, payload.run.learned_window if payload.run else None),
            runtime,
        )
    )
    # after the formatting steps, which a follower of the run's events must not find behind its cursor
    record_answer_check(runtime, meta, payload.iteration, checked)
    return _record_end(meta, record, end, runtime, structured)


def _best_answer(
    messages: list[StoredMessage], record: RunRecord, meta: RunMeta, stop_reason: StopReason, runtime: StepRuntime
) -> str | None:
    """The best answer the run's work gives when the model gave none, read with the run's protocol.

    A notice standing in for a tool's result (`_notices`) is not something a tool returned: a run whose
    tools returned nothing else has no answer, whatever it asked for. Imported here: the protocols' parsers
    (and the profile's tools) load only for a run that ended without the model's answer, not with Format's
    import or an answered run's first call.
    """
    from stepwise.steps.agent import agent_for
    from stepwise.steps.best_answer import best_available_answer

    notices = _notices(record)
    returned = [each for each in messages if each.role != "tool" or (each.iteration, each.slot) not in notices]
    agent = agent_for(meta, runtime)
    return best_available_answer(returned, agent.protocol, stop_reason, agent.profile.language)


def _notices(record: RunRecord) -> set[tuple[int, int]]:
    """The (iteration, slot) of each observation that is Stepwise's notice rather than a tool's result: of a
    call never sent (the policy refused it, nobody approved it), or of a result a guardrail withheld."""

    def withheld(step: StepRecord) -> bool:
        note = step.guardrail
        return note is not None and note.point == "tool_results" and note.blocked and note.mode == "enforce"

    return {
        (step.iteration, observation_slot(step.n or 0))
        for step in record.steps
        if never_sent(step) or (step.kind == "guardrail" and withheld(step))
    }


def format_failure(event: FailureEvent, runtime: StepRuntime) -> FormatResult:
    """Record how a failed step ended the run, so it never stays RUNNING.

    A model error (`MODEL_ERROR_STOPS`) after the run did work (a tool answered, or the model wrote an
    answer) ends it SUCCEEDED with the best answer it had (`partial`) and a stop reason naming the cause
    (`model_error`, `context_window`, `deadline`); before any work it ends FAILED (`none`) with that stop
    reason. The provider's error is kept either way. Any other failure is recorded FAILED (or TIMED_OUT)
    with its error and stop reason `error`.
    """
    stop_reason = MODEL_ERROR_STOPS.get(event.error.Error)
    if stop_reason is None:
        meta = runtime.store.require_run(event.run_id)
        record_failure(meta, event.error.Error, event.error.Cause, runtime, iteration=event.iteration)
        return FormatResult(
            run_id=meta.run_id, status="FAILED", stop_reason="error", online_eval=online_eval_due(meta, runtime)
        )
    meta, _, record = runtime.store.final_record(event.run_id, event.iteration or 0)
    if meta.is_terminal:
        return _ended(meta, runtime)
    answer = _best_answer(record.messages, record, meta, stop_reason, runtime)
    end, checked = RunEnd(
        stop_reason=stop_reason,
        outcome=decide_outcome(answered=False, best_answer=answer),
        answer=answer,
        iteration=event.iteration,
        error=run_error(event.error.Error, event.error.Cause),
    ).guarded(meta, runtime)
    record_answer_check(runtime, meta, event.iteration or 0, checked)
    return _record_end(meta, record, end, runtime)


def _record_end(
    meta: RunMeta,
    record: RunRecord,
    end: RunEnd,
    runtime: StepRuntime,
    structured: StructuredOutput | None = None,
) -> FormatResult:
    """Write the run's end once, with the status its outcome gives and what it spent."""
    structured = structured or StructuredOutput()
    usage = priced_usage(meta.profile, record.steps + structured.calls, runtime)
    status = status_of(end.outcome)
    finished = runtime.store.finish_run(
        meta,
        status,
        stop_reason=end.stop_reason,
        outcome=end.outcome,
        answer=end.answer,
        output=structured.output,
        output_error=structured.error,
        error=end.error,
        usage=usage,
        iteration=end.iteration,
        tools=tools_called(record.steps),
    )
    metrics.add_metric(name="RunsSucceeded" if status == "SUCCEEDED" else "RunsFailed", unit="Count", value=1)
    if end.error is not None and status == "SUCCEEDED":
        metrics.add_metric(name="RunsEndedOnModelError", unit="Count", value=1)
    if finished.status == status:
        record_run_ended(finished.status, finished.stop_reason, usage, finished.iteration)
    answer_parent(finished, runtime)
    log = logger.info if end.error is None else logger.warning
    log(
        "run finished",
        extra={
            "run_id": meta.run_id,
            "stop_reason": end.stop_reason,
            "outcome": end.outcome,
            "iterations": finished.iteration,
            "error_type": end.error.type if end.error else None,
            "has_output": structured.output is not None,
        },
    )
    return FormatResult(
        run_id=finished.run_id,
        status=status,
        stop_reason=finished.stop_reason,
        online_eval=online_eval_due(finished, runtime),
    )


def handle(event: Any, runtime: StepRuntime) -> dict[str, Any]:
    """Lambda entry for Format, FormatFailure (an event with `error`: a failure to record) and the online
    eval of an ended run (`online_eval_of`), which shares this function's code and settings."""
    if isinstance(event, dict) and "online_eval_of" in event:
        # loaded for an eval only: the checks and the judge are no part of recording an end
        from stepwise.steps.online_eval import evaluate_run

        run_id = parse_event(OnlineEvalEvent, event).online_eval_of
        result = evaluate_run(run_id, runtime)
        return {"run_id": run_id, "verdict": result.verdict if result is not None else None}
    if isinstance(event, dict) and "error" in event:
        failure = parse_event(FailureEvent, event)
        with runtime.spans.step("FormatFailure", run_id=failure.run_id, trace=failure.trace):
            return format_failure(failure, runtime).model_dump()
    payload = parse_event(StatePayload, event)
    with runtime.spans.step("Format", run_id=payload.run_id, trace=payload.trace):
        return format_run(payload, runtime).model_dump()
