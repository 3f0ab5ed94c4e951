"""The three points where a profile's guardrails check a run, and how each records what they did.

- the input: the caller's user messages, as the run is created and before anything of it is stored;
- each tool result: the observation, before its span, trace step or message is written or sent;
- the output: the answer, as Format records it (and before a chat stream sends any of it).

Every point that some rule acted on writes a `guardrail` step (its point, rules, actions and counts, never
a value they found) and counts metric `GuardrailInterventions` (and `GuardrailBlocks` for a block).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from stepwise.models.guardrail import GuardrailAction, GuardrailNote
from stepwise.models.messages import ChatMessage
from stepwise.models.run import RunError, RunMeta, RunUsage
from stepwise.models.step_record import StepRecord
from stepwise.steps.run_metrics import record_run_ended
from stepwise.steps.runtime import StepRuntime
from stepwise.store import RunRef
from stepwise.telemetry.observability import logger, metrics

if TYPE_CHECKING:
    # The checks (their detectors and the Bedrock call) are loaded when a profile first has a rule to apply:
    # ToolInvoke, Format and the API import this module whether or not any profile has guardrails. Likewise
    # the guardrails' configuration (`lazy_section`), and the API's view of a step, which only the API shows.
    from stepwise.config.guardrails import GuardrailPoint, Guardrails, PiiKind
    from stepwise.guardrails import Checked
    from stepwise.models.api_responses import TraceStep

# What the conversation keeps of a user message a guardrail blocked: never its text.
BLOCKED_INPUT = "[withheld: blocked by a guardrail]"
# The error of a run whose input a guardrail blocked.
INPUT_BLOCKED = "GuardrailBlocked"
# The error kept for a failed tool call whose result a guardrail withheld.
WITHHELD_ERROR = "the tool's error was withheld by a guardrail"

# A step as the API shows it or as it is stored (what `stepwise run` prints): both carry the model's text
# under the same names.
ShownStep = TypeVar("ShownStep", "TraceStep", StepRecord)


def profile_guardrails(runtime: StepRuntime, profile: str) -> Guardrails | None:
    """The named profile's guardrails, None when it has none."""
    return runtime.profile(profile).guardrails


def check(runtime: StepRuntime, profile: str, guardrails: Guardrails, point: GuardrailPoint, text: str) -> Checked:
    """Run `point`'s rules on `text`; a Bedrock rule without a Region of its own takes the profile's."""
    from stepwise.guardrails import check_text

    profile_region = runtime.profile(profile).region

    def client_for(region: str | None) -> Any:
        return runtime.guardrail_client(region or profile_region)

    checked = check_text(text, guardrails, point, bedrock=client_for)
    if checked.skipped:
        logger.info(
            "guardrail not asked: the text is empty", extra={"point": point, "rules": ", ".join(checked.skipped)}
        )
    return checked


def record_interventions(
    runtime: StepRuntime,
    run: RunRef,
    guardrails: Guardrails,
    point: GuardrailPoint,
    checks: list[Checked],
    *,
    iteration: int,
    n: int | None = None,
) -> GuardrailNote | None:
    """Write the point's `guardrail` step and count its metrics, when some rule acted; None when none did."""
    actions = [
        GuardrailAction(rule=item.rule, action=item.action, detail=item.detail)
        for checked in checks
        for item in checked.interventions
    ]
    if not actions:
        return None
    blocked = any(action.action == "blocked" for action in actions)
    note = GuardrailNote(point=point, mode=guardrails.mode, blocked=blocked, actions=actions)
    summary = "; ".join(f"{action.rule} {action.action}" for action in actions)
    step = StepRecord(
        iteration=iteration,
        kind="guardrail",
        n=n,
        decision="blocked" if blocked else "changed",
        note=summary,
        started_at=runtime.clock(),
    )
    runtime.store.record_step(run, step.model_copy(update={"guardrail": note}))
    metrics.add_metric(name="GuardrailInterventions", unit="Count", value=len(actions))
    if blocked:
        metrics.add_metric(name="GuardrailBlocks", unit="Count", value=1)
    logger.info(
        "guardrail acted",
        extra={"run_id": run.run_id, "point": point, "mode": guardrails.mode, "blocked": blocked, "rules": summary},
    )
    return note


@dataclass(frozen=True)
class GuardedInput:
    """The opening messages as they may be stored, and the input's checks (None: no input rules)."""

    messages: list[ChatMessage]
    checks: list[Checked]
    blocked: bool


def guard_input(runtime: StepRuntime, profile: str, messages: list[ChatMessage]) -> GuardedInput:
    """Check each user message of `messages` (what the caller typed) with the profile's input rules: the
    messages come back redacted, a blocked one replaced by `BLOCKED_INPUT`."""
    guardrails = profile_guardrails(runtime, profile)
    if guardrails is None or not guardrails.input:
        return GuardedInput(messages, [], blocked=False)
    guarded: list[ChatMessage] = []
    checks: list[Checked] = []
    blocked = False
    for message in messages:
        if message.role != "user" or not message.content:
            guarded.append(message)
            continue
        checked = check(runtime, profile, guardrails, "input", message.content)
        checks.append(checked)
        blocked = blocked or checked.blocked
        content = BLOCKED_INPUT if checked.blocked else checked.text
        guarded.append(message.model_copy(update={"content": content}))
    return GuardedInput(guarded, checks, blocked)


def blocked_text(guardrails: Guardrails, checked: Checked) -> str:
    """What stands for a blocked answer: a blocking Bedrock guardrail's own message, else the profile's."""
    return checked.replacement or guardrails.message


def end_blocked_input(runtime: StepRuntime, meta: RunMeta, guarded: GuardedInput) -> RunMeta:
    """End the just-stored run whose input a guardrail blocked: FAILED, outcome `none` (the model was never
    asked), stop reason `guardrail`, the profile's message as its answer. Its execution is never started."""
    guardrails = profile_guardrails(runtime, meta.profile)
    assert guardrails is not None  # only a profile with input rules blocks
    rules = sorted({item.rule for checked in guarded.checks if checked.blocked for item in checked.interventions})
    error = RunError(type=INPUT_BLOCKED, message=f"the input was blocked by a guardrail ({', '.join(rules)})")
    finished = runtime.store.finish_run(
        meta,
        "FAILED",
        stop_reason="guardrail",
        outcome="none",
        answer=guardrails.message,
        error=error,
        usage=RunUsage(),
        iteration=0,
    )
    metrics.add_metric(name="RunsFailed", unit="Count", value=1)
    if finished.status == "FAILED":
        record_run_ended(finished.status, finished.stop_reason, finished.usage, 0)
    return finished


def guard_input_of_run(runtime: StepRuntime, meta: RunMeta, guarded: GuardedInput) -> RunMeta:
    """After the run `meta` is stored with the guarded messages: its `guardrail` step, and its end when the
    input was blocked (the META returned is then terminal, and no execution may start)."""
    guardrails = profile_guardrails(runtime, meta.profile)
    if guardrails is None or not guarded.checks:
        return meta
    record_interventions(runtime, meta, guardrails, "input", guarded.checks, iteration=0)
    return end_blocked_input(runtime, meta, guarded) if guarded.blocked else meta


def guard_observation(
    runtime: StepRuntime, run: RunMeta, iteration: int, index: int, content: str, error: str | None
) -> tuple[str, str | None]:
    """A tool result's content and error as they may be stored and sent to the model: redacted, or the
    profile's `tool_notice` when a rule blocked it. Runs before the observation is written anywhere."""
    guardrails = profile_guardrails(runtime, run.profile)
    if guardrails is None or not guardrails.tool_results:
        return content, error
    checks = [check(runtime, run.profile, guardrails, "tool_results", content)]
    if error:
        checks.append(check(runtime, run.profile, guardrails, "tool_results", error))
    record_interventions(runtime, run, guardrails, "tool_results", checks, iteration=iteration, n=index)
    if any(checked.blocked for checked in checks):
        return guardrails.tool_notice, (WITHHELD_ERROR if error else None)
    return checks[0].text, (checks[1].text if error else None)


@dataclass(frozen=True)
class GuardedAnswer:
    """The answer as the caller may see it, whether a guardrail blocked the one the run had, and the check
    to record (None: the profile has no output rules)."""

    text: str
    blocked: bool
    checked: Checked | None = None


def guard_answer(runtime: StepRuntime, run: RunMeta, answer: str) -> GuardedAnswer:
    """The run's answer after the profile's output rules: redacted or masked, or replaced by the profile's
    message (a blocking Bedrock guardrail's own) when a rule blocked it. Nothing is written: Format records
    the check (`record_answer_check`) after its formatting steps, which come before it in the trace."""
    guardrails = profile_guardrails(runtime, run.profile)
    if guardrails is None or not guardrails.output:
        return GuardedAnswer(answer, blocked=False)
    checked = check(runtime, run.profile, guardrails, "output", answer)
    if checked.blocked:
        return GuardedAnswer(blocked_text(guardrails, checked), blocked=True, checked=checked)
    return GuardedAnswer(checked.text, blocked=False, checked=checked)


def record_answer_check(runtime: StepRuntime, run: RunMeta, iteration: int, guarded: GuardedAnswer | None) -> None:
    """Write the output's `guardrail` step and metrics, when some rule acted on the answer."""
    guardrails = profile_guardrails(runtime, run.profile)
    if guarded is None or guarded.checked is None or guardrails is None:
        return
    record_interventions(runtime, run, guardrails, "output", [guarded.checked], iteration=iteration)


def model_text_redactor(guardrails: Guardrails | None) -> Callable[[str], str] | None:
    """How the model's own text is shown to a person while it is stored raw: with the values of every kind the
    output's `pii` rules name replaced by their markers (local, no request); None when nothing applies (no
    such rule, or `mode: log_only`). `deny` and `bedrock` rules are not applied: they act on the answer."""
    if guardrails is None or guardrails.mode != "enforce":
        return None
    from stepwise.config.guardrails import PiiRule

    kinds: list[PiiKind] = [kind for rule in guardrails.output if isinstance(rule, PiiRule) for kind in rule.pii]
    if not kinds:
        return None
    from stepwise.guardrails.detectors import redact_pii

    return lambda text: redact_pii(text, kinds)[0]


def shown_guardrails(runtime: StepRuntime, profile: str) -> Guardrails | None:
    """The guardrails of a stored run's profile, for showing its steps; None as well when the configuration no
    longer has that profile (its runs are still read)."""
    agent = runtime.config.profiles.get(profile)
    return agent.guardrails if agent is not None else None


def step_screen(guardrails: Guardrails | None) -> Callable[[ShownStep], ShownStep]:
    """What a run's steps show a person (`GET /v1/runs/{id}?trace=true`, the events route, chat streams, the
    trace `stepwise run` prints): the model's text as stored — a decision's thought, answer and error, a
    `reasoning` step's thought — and the observations, passed through `model_text_redactor`. Arguments (a
    decision's `calls`, a call's `arguments`) are shown as the tools receive them, never changed."""
    found = model_text_redactor(guardrails)
    if found is None:
        return lambda step: step
    # named again: mypy does not carry the narrowing into a function generic over the step's type
    redact: Callable[[str], str] = found

    def screened(step: ShownStep) -> ShownStep:
        texts = {"thought": step.thought, "answer": step.answer, "error": step.error, "observation": step.observation}
        return step.model_copy(update={name: redact(text) for name, text in texts.items() if text})

    return screened


def stream_screen(guardrails: Guardrails | None) -> Callable[[TraceStep], TraceStep]:
    """What a chat stream applies to each step it sends while the run goes on, before Format has checked the
    answer: with output rules (enforced), a decision's `answer` is left out (the answer itself follows, once
    checked whole), and the rest passes `step_screen`."""
    if guardrails is None or guardrails.mode != "enforce" or not guardrails.output:
        return lambda step: step
    screen = step_screen(guardrails)
    return lambda step: screen(step).model_copy(update={"answer": None})
