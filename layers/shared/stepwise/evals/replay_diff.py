"""A replay beside its original: what changed in the answer, the tool calls and what the run spent.

Each compared field is `{"original", "replay", "changed"}`. Tool calls are compared as lists of
`{iteration, tool, arguments}` and, ignoring where they happened, as multisets of (tool, canonical JSON
arguments) — the match `stepwise.steps.replay_tools` uses: `only_in_original` are calls the replay did
not make, `only_in_replay` calls the original did not make (answered "not recorded" unless live tools
made them), each as many times as it is missing from the other side.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from stepwise.evals.outcome import RunOutcome, ToolCallMade
from stepwise.steps.replay_tools import NOT_RECORDED, call_key

COMPARED_FIELDS = ("status", "stop_reason", "answer", "iterations", "input_tokens", "output_tokens", "cost_usd")


def _call(call: ToolCallMade) -> dict[str, Any]:
    return {"iteration": call.iteration, "tool": call.tool, "arguments": call.arguments}


def _missing_from(calls: list[ToolCallMade], others: list[ToolCallMade]) -> list[dict[str, Any]]:
    """The calls of `calls` that `others` lacks, counting repeats."""
    spare = Counter(call_key(call.tool, call.arguments) for call in others)
    missing: list[dict[str, Any]] = []
    for call in calls:
        key = call_key(call.tool, call.arguments)
        if spare[key]:
            spare[key] -= 1
        else:
            missing.append({"tool": call.tool, "arguments": call.arguments})
    return missing


def replay_diff(original: RunOutcome, replay: RunOutcome) -> dict[str, Any]:
    """The side-by-side diff of a replay and its original (see the module's docstring)."""
    diff: dict[str, Any] = {}
    for field in COMPARED_FIELDS:
        before, after = getattr(original, field), getattr(replay, field)
        diff[field] = {"original": before, "replay": after, "changed": before != after}
    before_calls = [_call(call) for call in original.tool_calls]
    after_calls = [_call(call) for call in replay.tool_calls]
    diff["tool_calls"] = {
        "original": before_calls,
        "replay": after_calls,
        "changed": before_calls != after_calls,
        "only_in_original": _missing_from(original.tool_calls, replay.tool_calls),
        "only_in_replay": _missing_from(replay.tool_calls, original.tool_calls),
        "not_recorded": [
            _call(call)
            for call in replay.tool_calls
            if call.note is not None and call.note.startswith(f"{NOT_RECORDED}:")
        ],
    }
    diff["changed"] = [name for name, entry in diff.items() if isinstance(entry, dict) and entry["changed"]]
    return diff
