"""One step of a run whole: the logic of `GET /v1/runs/{run_id}/steps/{iteration}/{call_id}`.

A trace step keeps a preview of its observation (`tools/observation.py`); the observation the model received
is the call's message item, which this reads. It is shown as the trace shows observations: through the
output's pii rules (`step_screen`), and, as every JSON answer, with known secrets redacted.
"""

from __future__ import annotations

from stepwise.models.api_responses import StepObservation
from stepwise.steps.api.ownership import parse_run_reference, visible_run
from stepwise.steps.api.problems import NotFound
from stepwise.steps.api.services import ApiServices
from stepwise.steps.guardrail_points import model_text_redactor, shown_guardrails
from stepwise.store.keys import observation_slot
from stepwise.tools.observation import utf8_bytes


def step_observation(
    services: ApiServices, *, owner: str, run_reference: str, iteration: int, call_id: str
) -> StepObservation:
    """The whole observation of call `call_id` of `iteration`; 404 unless `owner` owns the run and the call
    is stored. Requests: META, the iteration's trace (its decisions and message traces), then one GetItem."""
    store = services.runtime.store
    run_id = parse_run_reference(run_reference)
    meta = visible_run(store, run_id, owner)
    step = next(
        (
            found
            for found in store.list_steps(run_id, iteration=iteration)
            if found.kind == "tool" and found.call_id == call_id and found.n is not None
        ),
        None,
    )
    stored = store.stored_message(run_id, iteration, observation_slot(step.n)) if step and step.n is not None else None
    if step is None or step.n is None or stored is None:
        raise NotFound(f"no tool call {call_id} in iteration {iteration} of run {run_id}")
    content = stored[0].content
    redact = model_text_redactor(shown_guardrails(services.runtime, meta.profile))
    shown = redact(content) if redact is not None and content else content
    return StepObservation(
        run_id=run_id,
        iteration=iteration,
        call_id=call_id,
        n=step.n,
        tool=step.action,
        ok=step.ok,
        observation=shown,
        observation_chars=len(shown),
        observation_bytes=utf8_bytes(shown),
        output_chars=step.output_chars,
    )
