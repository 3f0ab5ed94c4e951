"""One step of a run whole: the logic of `GET /v1/runs/{run_id}/steps/{iteration}/{call_id}`.

A trace step keeps a preview of its observation (`tools/observation.py`); the observation the model received
is the call's message item; when the model received only the start of a longer result, the whole result
kept apart (`stepwise.store.tool_outputs`) is read instead. It is shown as the trace shows observations:
through the output's pii rules (`step_screen`), and, as every JSON answer, with known secrets redacted.
"""

from __future__ import annotations

import json

from stepwise.models.api_responses import ObservationCut, StepObservation
from stepwise.steps.api.ownership import parse_run_reference, visible_run
from stepwise.steps.api.problems import NotFound
from stepwise.steps.api.services import ApiServices
from stepwise.steps.guardrail_points import model_text_redactor, shown_guardrails
from stepwise.store.keys import observation_slot
from stepwise.tools.observation import carried_chars, truncate_text, utf8_bytes

MAX_ANSWER_TEXT_BYTES = 5_000_000
"""The most an observation takes in the Lambda response that answers it: below Lambda's 6 MB response limit
(API Gateway's 10 MB payload limit is further still), with room for the rest of the answer."""


def step_observation(
    services: ApiServices, *, owner: str, run_reference: str, iteration: int, call_id: str
) -> StepObservation:
    """The whole observation of call `call_id` of `iteration`; 404 unless `owner` owns the run and the call
    is stored. Requests: META, the iteration's trace (its decisions and message traces), then one GetItem, and
    one BatchGetItem of the whole result's parts when it was kept apart."""
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
    received = stored[0].content
    kept = (
        store.tool_outputs.read(run_id, iteration, step.n, step.stored_output_parts)
        if step.stored_output_parts
        else None
    )
    content = received if kept is None else kept
    redact = model_text_redactor(shown_guardrails(services.runtime, meta.profile))
    shown, fits = fit_answer(redact(content) if redact is not None and content else content)
    cut: ObservationCut | None = None
    if not fits:
        cut = "answer_size"
    elif step.output_chars is not None and kept is None:
        cut = "not_kept"
    elif step.output_chars is not None and step.stored_output_cut:
        cut = "stored_limit"
    whole = cut is None
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
        source="message" if kept is None else "stored_output",
        whole=whole,
        cut=cut,
        result_chars=len(shown) if whole else carried_chars(shown),
        received_chars=len(received),
    )


def fit_answer(text: str, limit: int = MAX_ANSWER_TEXT_BYTES) -> tuple[str, bool]:
    """`text` as one answer can carry it, and whether it is all there: measured as it travels in a Lambda
    response (JSON with non-ASCII escaped, inside the proxy result's JSON), and cut with the truncation
    marker when over `limit`."""
    size = _payload_bytes(text)
    if size <= limit:
        return text, True
    keep, cut = len(text), text
    while size > limit and keep > 0:
        # shrink by what the text is over, in proportion, until the cut text fits
        keep = max(0, min(keep - 1, int(keep * limit / size * 0.98)))
        cut, _ = truncate_text(text, keep)
        size = _payload_bytes(cut)
    return cut, False


def _payload_bytes(text: str) -> int:
    return len(json.dumps(json.dumps(text)))
