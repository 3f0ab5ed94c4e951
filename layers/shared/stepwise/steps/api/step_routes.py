"""The route that reads one step of a run whole: `GET /v1/runs/{run_id}/steps/{iteration}/{call_id}`."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.openapi.params import Path

from stepwise.models.api_requests import RUN_ID_PATTERN
from stepwise.models.api_responses import StepObservation
from stepwise.steps.api.openapi_schemas import error_responses, success_response
from stepwise.steps.api.ownership import request_owner
from stepwise.steps.api.services import LazyServices

MAX_ITERATION = 100_000


def register_step_routes(app: APIGatewayRestResolver, services: LazyServices) -> None:
    """Register the step route on `app`; its logic is imported when it is first asked for."""

    @app.get(
        "/v1/runs/<run_id>/steps/<iteration>/<call_id>",
        summary="Read one tool call's whole observation",
        description="The observation of tool call `call_id` of `iteration` (the trace keeps its first 500 "
        "characters and its size), redacted as the trace is. When the tool answered more than the profile's "
        "`max_observation_chars`, the model received only the start, and this returns the whole result kept apart "
        "(up to `max_stored_output_chars`, 2,000,000 characters by default; `source: stored_output`), else what the "
        "model received (`source: message`); `whole` says whether nothing was left out. One answer carries at "
        "most about 5 MB of encoded text (within Lambda's 6 MB response). 404 unless the caller owns the run and "
        "the call is stored.",
        responses={
            **success_response(200, "The call's whole observation and its size.", StepObservation),
            **error_responses(400, 401, 404, 422),
        },
        tags=["runs"],
    )
    def get_run_step(
        run_id: Annotated[str, Path(pattern=RUN_ID_PATTERN, description="The run's id.")],
        iteration: Annotated[int, Path(ge=0, le=MAX_ITERATION, description="The iteration of the call.")],
        call_id: Annotated[
            str, Path(min_length=1, max_length=128, description="The call's id, as its trace step names it.")
        ],
    ) -> StepObservation:
        from stepwise.steps.api.step_views import step_observation

        owner = request_owner(app.current_event)
        return step_observation(services.get(), owner=owner, run_reference=run_id, iteration=iteration, call_id=call_id)
