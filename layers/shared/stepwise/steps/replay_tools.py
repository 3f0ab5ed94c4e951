"""A replay's tool calls, answered from the original run's recording instead of the tools.

DESIGN.md: a replayed run is an ordinary run whose ToolInvoke answers from the original run's recorded
observations. This module is that one branch point of ToolInvoke, kept apart from how tools are called.

How a call is matched: a call of the replay matches a recorded call when the tool's name is the same and
their arguments are the same as canonical JSON (keys sorted, no spaces, Unicode kept, a whole float
written as the integer it equals), so key order, spacing and `100` against `100.0` never matter while
every value does. The n-th call of a tool with the same arguments in the replay (counted over its
decisions, kept iterations included, in iteration and call order) gets the n-th recorded observation of
such a call, and past the last one, the last one.

A call that matches nothing is answered "not recorded" (an observation the model reads, `ok` false),
unless the replay allows live tools and the tool is read-only (`ToolRegistry.is_read_only`) and needs no
approval: only then is the tool called for real. So a side effect is never repeated by a replay.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from stepwise.errors import RunNotFound
from stepwise.models.messages import FIND_TOOLS, ToolCall
from stepwise.models.run import ReplayLink, RunMeta
from stepwise.steps.runtime import StepRuntime
from stepwise.store import ConversationStore
from stepwise.store.keys import observation_slot

NOT_RECORDED = "not recorded"
CALLED_LIVE = "called for real: the recording has no such call, live tools are allowed and the tool is read-only"


def canonical_json(value: Any) -> str:
    """`value` as canonical JSON text: sorted keys, no spaces, Unicode as is, whole floats as integers."""
    return json.dumps(_normalized(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _normalized(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {str(key): _normalized(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_normalized(item) for item in value]
    return value


def call_key(name: str, arguments: dict[str, Any] | None) -> str:
    """What two calls must share to match: the tool's name and the canonical JSON of the arguments."""
    return f"{name}\n{canonical_json(arguments or {})}"


@dataclass(frozen=True)
class RecordedCall:
    """One tool call of a stored run, with the observation it got."""

    iteration: int
    index: int
    name: str
    arguments: dict[str, Any]
    content: str
    ok: bool
    error: str | None

    @property
    def key(self) -> str:
        """The call's match key (`call_key`)."""
        return call_key(self.name, self.arguments)


@dataclass(frozen=True)
class ReplayAnswer:
    """The observation a replay stores for a call, and the trace note saying where it came from."""

    content: str
    ok: bool
    error: str | None
    note: str


def recorded_calls(store: ConversationStore, run_id: str) -> list[RecordedCall]:
    """Every tool call of the stored run `run_id`, in order, with its full observation (one Query of the
    run's partition); `RunNotFound` when the run is not stored."""
    _, _, record = store.final_record(run_id, 0)
    observations = {(message.iteration, message.slot): message for message in record.messages if message.role == "tool"}
    calls: list[RecordedCall] = []
    for step in record.steps:
        if step.kind != "tool":
            continue
        index = step.n or 0
        message = observations.get((step.iteration, observation_slot(index)))
        if message is None:
            continue
        calls.append(
            RecordedCall(
                iteration=step.iteration,
                index=index,
                name=step.action or message.name or "",
                arguments=step.arguments or {},
                content=message.content,
                ok=bool(step.ok),
                error=step.error,
            )
        )
    return calls


def _earlier_calls_alike(store: ConversationStore, run_id: str, iteration: int, index: int, key: str) -> int:
    """How many calls the run decided before call `index` of `iteration` had the match key `key`."""
    count = 0
    for step in store.list_steps(run_id):
        if step.kind != "parse" or not step.calls:
            continue
        for position, call in enumerate(step.calls):
            if (step.iteration, position) < (iteration, index) and call_key(call["name"], call.get("arguments")) == key:
                count += 1
    return count


def _refusal(call: ToolCall, link: ReplayLink, runtime: StepRuntime, *, held: bool) -> str:
    """Why a call the original did not make is not made now."""
    if not link.live_tools:
        return "this replay does not call tools (stepwise replay --live-tools allows read-only ones)"
    if held or (call.name != FIND_TOOLS and runtime.tools().approval_timeout(call.name) is not None):
        return f"{call.name} needs approval, which a replay never asks for"
    return f"{call.name} is not read-only, and a replay never repeats a side effect"


def may_call_live(call: ToolCall, link: ReplayLink, runtime: StepRuntime) -> bool:
    """True when a replay may call the tool for real: live tools allowed, a read-only tool, no approval."""
    if not link.live_tools:
        return False
    if call.name == FIND_TOOLS:
        # the search over the profile's own tools reads the configuration only
        return True
    registry = runtime.tools()
    return registry.is_read_only(call.name) and registry.approval_timeout(call.name) is None


def replay_answer(
    meta: RunMeta, iteration: int, index: int, call: ToolCall, runtime: StepRuntime, *, held: bool = False
) -> ReplayAnswer | None:
    """The answer a replay gives call `index` of `iteration`: the recorded observation, or "not recorded";
    None when the call is to be made for real (see the module's docstring). A call `held` for approval
    (by the tool policy) is never made for real, as a call of a tool that requires approval is not."""
    link = meta.replay
    if link is None:
        raise ValueError(f"run {meta.run_id} is not a replay")
    original = link.original_run_id
    try:
        recorded = recorded_calls(runtime.store, original)
    except RunNotFound:
        recorded = []
    key = call_key(call.name, call.arguments)
    matches = [each for each in recorded if each.key == key]
    if matches:
        earlier = _earlier_calls_alike(runtime.store, meta.run_id, iteration, index, key)
        chosen = matches[min(earlier, len(matches) - 1)]
        return ReplayAnswer(
            content=chosen.content,
            ok=chosen.ok,
            error=chosen.error,
            note=f"answered from run {original}'s recording (iteration {chosen.iteration}, call {chosen.index})",
        )
    if not held and may_call_live(call, link, runtime):
        return None
    refusal = _refusal(call, link, runtime, held=held)
    reason = f"run {original} made no call of {call.name} with these arguments, and {refusal}"
    return ReplayAnswer(
        content=f"Error: {NOT_RECORDED}: {reason}. Go on without its result.",
        ok=False,
        error=NOT_RECORDED,
        note=f"{NOT_RECORDED}: {reason}",
    )
