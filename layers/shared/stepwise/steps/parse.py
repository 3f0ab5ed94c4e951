"""Parse: turn the iteration's model message into one decision and route the loop on it."""

from __future__ import annotations

from typing import Any

from stepwise.errors import InvalidStateEvent
from stepwise.models.decision import Decision, FinalAnswer, ParseError, ToolCalls
from stepwise.models.messages import ChatMessage, Completion, ToolCall
from stepwise.models.run import RunMeta
from stepwise.models.state import CallRef, NextStep, RunContext, RunSpend, StatePayload, parse_event
from stepwise.models.step_record import StepRecord
from stepwise.protocols.reading import read_reply
from stepwise.steps.agent import RunAgent, agent_for
from stepwise.steps.approvals import approval_timeout
from stepwise.steps.call_gate import policy_steps, policy_verdicts, verdict_of
from stepwise.steps.delegation import allotment_of, allotments, child_wait_seconds
from stepwise.steps.reply_problems import filtered_reply, reply_problem
from stepwise.steps.run_end import refuse_ended
from stepwise.steps.runtime import StepRuntime
from stepwise.telemetry.observability import logger, metrics


def _next_from_record(payload: StatePayload, record: StepRecord, meta: RunMeta, runtime: StepRuntime) -> StatePayload:
    """The payload a stored decision leads to; the same whether it was just made or is being replayed.

    A call of a tool that requires approval, or that the tool policy sends for approval, carries how long it
    waits for it (cut to the run's deadline); a call the policy refused waits for nothing. A call of an agent
    that may start a child run waits for that run (its share's deadline and a margin).
    """
    next_step: NextStep = record.decision  # type: ignore[assignment]
    now = runtime.clock()
    calls = (
        [
            CallRef(
                call_id=call["id"],
                name=call["name"],
                approval_timeout_seconds=approval_timeout(meta, call["name"], runtime, verdict_of(record, index)),
                child_timeout_seconds=child_wait_seconds(allotment_of(record, index), now),
            )
            for index, call in enumerate(record.calls or [])
        ]
        if next_step == "tool_calls"
        else []
    )
    # META is read here every iteration anyway: a pause asked through the API reaches the loop from here
    pause = meta.pause is not None and not meta.is_terminal
    return payload.model_copy(
        update={
            "next": next_step,
            "calls": calls,
            "parse_errors": record.parse_errors or 0,
            "context": payload.context.model_copy(update={"pause": pause}),
        }
    )


def _corrective_messages(decision: ParseError, agent: RunAgent, assistant: ChatMessage) -> list[ChatMessage]:
    text = agent.protocol.corrective_message(decision, agent.profile.language)
    if assistant.tool_calls:
        # a native assistant message with tool calls must be followed by one tool message per call
        return [
            ChatMessage(role="tool", content=text, tool_call_id=call.id, name=call.name)
            for call in assistant.tool_calls
        ]
    return [ChatMessage(role="user", content=text)]


def _client_calls_record(record: StepRecord, decision: ToolCalls, handed: list[ToolCall]) -> StepRecord:
    """The run ends here: the calls of the client's tools go back to the client, which runs them.

    Calls of the profile's tools in the same reply are not run (the client's next request starts a new
    run, where the model may ask for them again); the note says so.
    """
    dropped = len(decision.calls) - len(handed)
    notes = [decision.note] if decision.note else []
    notes.append("calls of the client's tools are handed back to the client")
    if dropped:
        notes.append(f"{dropped} calls of the profile's tools in the same reply were not run")
    record.thought = decision.thought or None
    record.action = ", ".join(call.name for call in handed)
    record.calls = [call.model_dump() for call in handed]
    record.note = "; ".join(notes)
    record.decision = "final_answer"
    return record


def _record_for(
    decision: Decision, payload: StatePayload, run: RunContext, agent: RunAgent, errors_before: int
) -> StepRecord:
    """The trace record of a decision, with the run's count of consecutive parse errors after it."""
    record = StepRecord(iteration=payload.iteration, kind="parse", parse_errors=0)
    if isinstance(decision, ToolCalls) and not payload.final_round and agent.client_tools:
        handed = [call for call in decision.calls if call.name in agent.client_tools]
        if handed:
            return _client_calls_record(record, decision, handed)
    if isinstance(decision, ToolCalls):
        limit = run.max_parallel_calls
        calls = decision.calls[:limit]
        notes = [decision.note] if decision.note else []
        if len(decision.calls) > limit:
            notes.append(f"{len(decision.calls) - limit} tool calls beyond max_parallel_calls={limit} were dropped")
        record.thought = decision.thought or None
        record.action = ", ".join(call.name for call in calls)
        record.calls = [call.model_dump() for call in calls]
        record.note = "; ".join(notes) or None
        record.decision = "limit_hit" if payload.final_round else "tool_calls"
        return record
    if isinstance(decision, FinalAnswer):
        record.thought = decision.thought or None
        record.answer = decision.text
        record.decision = "final_answer"
        return record
    record.parse_errors = errors_before + 1
    record.error = decision.message
    out_of_patience = record.parse_errors >= run.max_parse_errors
    record.decision = "limit_hit" if payload.final_round or out_of_patience else "parse_error"
    return record


def parse(payload: StatePayload, runtime: StepRuntime) -> StatePayload:
    """Read the model's message of this iteration and decide: tools, final answer, retry, or stop.

    Requests: one BatchGetItem of META (the run's request options, and whether it was cancelled), the
    model's message and the decision (stored if this is a retry), then the conditional put of the
    decision. A payload without the run's context (an execution started before it was carried) also
    reads the previous decision in the same batch, for the count of consecutive parse errors.
    """
    stored = runtime.store.read_iteration(
        payload.run_id,
        payload.iteration,
        meta=True,
        assistant=True,
        decision=True,
        previous_decision=payload.run is None,
    )
    assert stored.meta is not None  # read_iteration raises RunNotFound without it
    refuse_ended(stored.meta)
    if stored.decision is not None:
        return _next_from_record(payload, stored.decision, stored.meta, runtime)
    if stored.assistant is None:
        raise InvalidStateEvent(f"iteration {payload.iteration} of run {payload.run_id} has no model message")
    run = RunContext.from_meta(stored.meta)
    if payload.run is not None:
        errors_before = payload.parse_errors
    else:
        errors_before = (stored.previous_decision.parse_errors or 0) if stored.previous_decision else 0
    agent = agent_for(stored.meta, runtime)
    assistant = stored.assistant
    completion = Completion(content=assistant.content, tool_calls=assistant.tool_calls, reasoning=assistant.reasoning)
    decision = read_reply(agent.protocol, completion, agent.tools, call_id_prefix=f"call_{payload.iteration}")
    # a reply cut at the output cap, malformed, empty or with oversized arguments is told to the model, never run or
    # taken as the answer
    decision = (
        filtered_reply(stored.assistant_step, assistant.content)
        or reply_problem(stored.assistant_step, decision, completion.tool_calls)
        or decision
    )
    # the count is carried from decision to decision, so a retried Parse recomputes the same one
    record = _record_for(decision, payload, run, agent, errors_before)
    record.started_at = runtime.clock()
    if record.decision == "tool_calls" and isinstance(decision, ToolCalls):
        calls = [ToolCall.model_validate(call) for call in record.calls or []]
        spend = payload.run.spend if payload.run is not None else RunSpend()
        record.verdicts = policy_verdicts(stored.meta, calls, payload.iteration, spend, runtime)
        record.delegations = allotments(stored.meta, payload.run or run, calls, runtime)
    corrective = (
        _corrective_messages(decision, agent, stored.assistant)
        if isinstance(decision, ParseError) and record.decision == "parse_error"
        else []
    )
    runtime.store.record_decision(stored.meta, record, corrective, steps=policy_steps(record))
    metrics.add_metric(name="ParseErrors" if isinstance(decision, ParseError) else "Decisions", unit="Count", value=1)
    logger.info("parsed", extra={"run_id": payload.run_id, "iteration": payload.iteration, "decision": record.decision})
    return _next_from_record(payload, record, stored.meta, runtime)


def handle(event: Any, runtime: StepRuntime) -> dict[str, Any]:
    """Lambda entry: validate the state event, run the step, return the routed payload."""
    payload = parse_event(StatePayload, event)
    with runtime.spans.step("Parse", run_id=payload.run_id, trace=payload.trace):
        return parse(payload, runtime).model_dump()
