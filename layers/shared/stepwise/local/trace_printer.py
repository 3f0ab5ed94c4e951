"""Prints a run's steps as they happen, reading each finished step's trace from the store.

What a model or a tool wrote is printed with its invisible and control characters escaped
(`stepwise.inputs.display_text`): a bidi override cannot reorder an argument on the screen, nor a carriage
return or an escape sequence rewrite the terminal's line.

The model's own text (thoughts, reasoning, errors) and the observations pass the output's `pii` rules of the
run's profile, as the API's run views show them (`step_screen`); a call's arguments are printed as the tool
received them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TextIO

from stepwise.inputs.display_text import arguments_display, visible
from stepwise.local.asl import StateEvent
from stepwise.models.approval import ApprovalNote
from stepwise.models.step_record import StepRecord
from stepwise.steps.guardrail_points import shown_guardrails, step_screen
from stepwise.steps.runtime import StepRuntime

_OBSERVATION_CHARS = 240


def _short(text: str, limit: int) -> str:
    # escaped first: str.split() takes some of those characters (U+2028, U+001C...) for spaces
    flat = " ".join(visible(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def describe_step(step: StepRecord) -> list[str]:
    """The lines a person reads for one trace step."""
    prefix = f"[{step.iteration}]"
    if step.kind == "llm":
        tokens = f"{step.input_tokens or 0} in / {step.output_tokens or 0} out tokens"
        final = ", final round" if step.final_round else ""
        return [f"{prefix} model     {step.latency_ms or 0:.0f} ms, {tokens}{final}"]
    if step.kind == "reasoning":
        shown = _short(step.thought, 200) if step.thought else "(not shown by the provider)"
        return [f"{prefix} reasoning {shown}"] + ([f"{prefix} note      {visible(step.note)}"] if step.note else [])
    if step.kind == "parse":
        lines = [f"{prefix} thought   {_short(step.thought, 200)}"] if step.thought else []
        for call in step.calls or []:
            arguments = arguments_display(call.get("arguments", {}))
            lines.append(f"{prefix} action    {visible(str(call['name']))} {arguments}")
        if step.note:
            lines.append(f"{prefix} note      {visible(step.note)}")
        if step.error:
            lines.append(f"{prefix} unreadable model output: {_short(step.error, 200)}")
        if step.decision == "final_answer":
            lines.append(f"{prefix} final answer reached")
        return lines
    if step.kind == "compaction" and step.compaction is not None:
        note = step.compaction
        by = f"by {note.model}" if note.source == "model" else "digest (the summarizer's notes were unusable)"
        return [
            f"{prefix} compact   iterations {note.first_iteration}-{note.through_iteration} summarized, "
            f"about {note.tokens_before} -> {note.tokens_after} tokens, {by}"
        ]
    if step.kind == "policy":
        return [f"{prefix} policy    {step.action}: {step.note}"]
    if step.kind == "tool":
        status, latency = "ok" if step.ok else "failed", step.latency_ms or 0
        lines = [f"{prefix} approval  {_answer(step.approval)}"] if step.approval is not None else []
        observed = f"{_short(step.observation or '', _OBSERVATION_CHARS)}"
        return [*lines, f"{prefix} observe   {visible(step.action or '')} ({status}, {latency:.0f} ms): {observed}"]
    if step.kind == "guardrail" and step.guardrail is not None:
        checked = step.guardrail
        mode = " (log_only: nothing changed)" if checked.mode == "log_only" else ""
        acted = "; ".join(f"{a.rule} {a.action}" + (f" {a.detail}" if a.detail else "") for a in checked.actions)
        return [f"{prefix} guardrail {checked.point}: {acted}{mode}"]
    return []


def _answer(note: ApprovalNote) -> str:
    """How a call's approval was answered, in one line: status, by whom and when, and why."""
    by = f" by {visible(note.answered_by)}" if note.answered_by else ""
    at = f" at {note.answered_at}" if note.answered_at else ""
    why = f": {_short(note.reason, 200)}" if note.reason else ""
    return f"{note.status.replace('_', ' ')}{by}{at}{why}"


class LiveTracePrinter:
    """An engine listener: when Compact, LLMCall, Parse or a tool call exits, print what that step stored."""

    _STATES = {"Compact": "compaction", "LLMCall": "llm", "Parse": "parse", "InvokeTool": "tool"}

    def __init__(self, runtime_factory: Callable[[], StepRuntime], out: TextIO) -> None:
        self._runtime_factory = runtime_factory
        self._out = out
        self._printed: set[tuple[str, int, str, int | None]] = set()
        self._screens: dict[str, Callable[[StepRecord], StepRecord]] = {}
        self._lock = threading.Lock()

    def _screen(self, runtime: StepRuntime, run_id: str) -> Callable[[StepRecord], StepRecord]:
        """The run's profile's screen, read once per run."""
        if run_id not in self._screens:
            profile = runtime.store.require_run(run_id).profile
            self._screens[run_id] = step_screen(shown_guardrails(runtime, profile))
        return self._screens[run_id]

    def __call__(self, event: StateEvent) -> None:
        kind = self._STATES.get(event.state)
        if event.type != "exited" or kind is None or not isinstance(event.output, dict):
            return
        if not isinstance(event.input, dict) or "run_id" not in event.input or "iteration" not in event.input:
            return
        run_id, iteration = str(event.input["run_id"]), int(event.input["iteration"])
        runtime = self._runtime_factory()
        with self._lock:
            screen = self._screen(runtime, run_id)
            # only the iteration that just moved on: re-reading the whole trace at every step would grow with the run
            for step in runtime.store.list_steps(run_id, iteration=iteration):
                key = (run_id, step.iteration, step.kind, step.n)
                # the model's reasoning comes with its call, the tool policy's verdicts with the decision, a
                # tool result's guardrail with the result
                shown_now = step.kind == kind or (kind, step.kind) in (
                    ("llm", "reasoning"),
                    ("parse", "policy"),
                    ("tool", "guardrail"),
                )
                if shown_now and key not in self._printed:
                    self._printed.add(key)
                    for line in describe_step(screen(step)):
                        print(line, file=self._out, flush=True)
