"""A tool's whole result, when the model received only its start: kept apart so a person can read all of it.

The invoker cuts a result to the profile's `max_observation_chars` for the model, after scrubbing known secrets
from the whole text; that whole text, scrubbed, comes with the observation (`whole_content`). Before it is
stored it passes the same tool-result guardrails as the model's copy (a result they block is not kept at all,
nor is one whose model copy they withheld), then it is cut to `max_stored_output_chars` with the same marker,
and written in parts (`stepwise.store.tool_outputs`) before the call's message, its commit record.
"""

from __future__ import annotations

from dataclasses import dataclass

from stepwise.models.run import RunMeta
from stepwise.steps.guardrail_points import check, profile_guardrails
from stepwise.steps.runtime import StepRuntime
from stepwise.tools.observation import truncate_text


@dataclass(frozen=True)
class KeptOutput:
    """What was kept of a whole result: its length (ending with the marker when cut), its parts, and whether
    `max_stored_output_chars` cut it."""

    chars: int
    parts: int
    cut: bool


def keep_whole_output(
    runtime: StepRuntime, run: RunMeta, iteration: int, index: int, whole: str | None, *, model_copy: str
) -> KeptOutput | None:
    """Store `whole`, the result of call `index` of `iteration` that the model received cut as `model_copy`;
    None when there is nothing to keep (the result was not cut, the profile keeps none, or a guardrail
    withheld it). Costs one BatchWriteItem for up to 25 parts, nothing for a result that was not cut."""
    limit = runtime.profile(run.profile).limits.max_stored_output_chars
    if whole is None or limit == 0:
        return None
    guardrails = profile_guardrails(runtime, run.profile)
    if guardrails is not None and guardrails.tool_results:
        if model_copy == guardrails.tool_notice:
            return None
        # the same rules as the model's copy; what they did is that copy's `guardrail` step, not repeated here
        checked = check(runtime, run.profile, guardrails, "tool_results", whole)
        if checked.blocked:
            return None
        whole = checked.text
    kept, cut = truncate_text(whole, limit)
    parts = runtime.store.tool_outputs.put(run, iteration, index, kept)
    return KeptOutput(chars=len(kept), parts=parts, cut=cut)
