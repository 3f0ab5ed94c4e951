"""The routes that answer a run while it runs: approve or deny a waiting call (and list those waiting), raise a
budget it waits at, tell it something, pause and resume it. Each is a thin adapter; its logic is imported when it
is first asked for."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Path, Query

from stepwise.models.api_requests import RUN_ID_PATTERN, ApprovalRequest, BudgetRequest, MessageRequest
from stepwise.models.api_responses import ApprovalList, MessageAccepted, RunView
from stepwise.steps.api.openapi_schemas import error_responses, success_response
from stepwise.steps.api.ownership import request_owner
from stepwise.steps.api.request_checks import require_json
from stepwise.steps.api.run_list_params import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from stepwise.steps.api.services import LazyServices


def register_run_control_routes(app: APIGatewayRestResolver, services: LazyServices) -> None:
    """Register the routes that answer a running run on `app`; `services` are built on first use."""

    @app.post(
        "/v1/runs/<run_id>/approvals/<call_id>",
        summary="Approve or deny a tool call",
        description="Answer a tool call the run paused for approval (status WAITING_APPROVAL, listed in the "
        "run's `pending_approvals`): approved, the tool runs; denied, it does not and the model reads the "
        "reason. 409 when the call is not waiting (already answered, timed out) or the run ended.",
        responses={
            **success_response(200, "The run, going on (RUNNING once no call waits).", RunView),
            **error_responses(400, 401, 404, 409, 413, 415, 422, 503),
        },
        tags=["runs"],
    )
    def post_approval(
        run_id: Annotated[str, Path(pattern=RUN_ID_PATTERN, description="The run's id.")],
        call_id: Annotated[
            str, Path(min_length=1, max_length=128, description="The call's id, as `pending_approvals` lists it.")
        ],
        body: ApprovalRequest,
    ) -> RunView:
        from stepwise.steps.api.approvals import answer_approval

        event = app.current_event
        owner = request_owner(event)
        require_json(event)
        return answer_approval(services.get(), owner=owner, run_reference=run_id, call_id=call_id, request=body)

    @app.get(
        "/v1/approvals",
        summary="List the calls waiting for the caller's approval",
        description="The tool calls of all the caller's runs that wait for approval, oldest first, each with its "
        "run, arguments (raw, and escaped for display), their hash and when its wait ends; pass `next_cursor` "
        "back as `cursor` for the next page.",
        responses={
            **success_response(200, "A page of waiting calls; `next_cursor` is absent on the last page.", ApprovalList),
            **error_responses(400, 401, 422),
        },
        tags=["runs"],
    )
    def get_approvals(
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE, description="Calls per page.")] = DEFAULT_PAGE_SIZE,
        cursor: Annotated[
            str | None, Query(min_length=1, max_length=512, description="`next_cursor` of the previous page.")
        ] = None,
    ) -> ApprovalList:
        from stepwise.steps.api.approval_views import list_approvals

        owner = request_owner(app.current_event)
        return list_approvals(services.get(), owner=owner, limit=limit, cursor=cursor)

    @app.post(
        "/v1/runs/<run_id>/budget",
        summary="Raise the budget of a run waiting at it, or end the run",
        description="Answer a run that reached its token or cost budget under `on_budget: ask` (status "
        "WAITING_BUDGET, its `budget_wait` says which budget and what was spent): `add_tokens` and/or `add_usd` "
        'raise the caps by that much and the run goes on; `{"end": true}` ends it with its best answer '
        "(stop_reason `token_budget` or `cost_budget`). 409 when the run is not waiting at its budget or ended.",
        responses={
            **success_response(200, "The run, going on (RUNNING), or on its way to its end.", RunView),
            **error_responses(400, 401, 404, 409, 413, 415, 422, 503),
        },
        tags=["runs"],
    )
    def post_budget(
        run_id: Annotated[str, Path(pattern=RUN_ID_PATTERN, description="The run's id.")],
        body: BudgetRequest,
    ) -> RunView:
        from stepwise.steps.api.budgets import answer_budget

        event = app.current_event
        owner = request_owner(event)
        require_json(event)
        return answer_budget(services.get(), owner=owner, run_reference=run_id, request=body)

    @app.post(
        "/v1/runs/<run_id>/messages",
        status_code=202,
        summary="Tell a running run something",
        description="Store a user message for the run's next model call (checked as a run's input: at most "
        "`max_input_chars` characters, the profile's input guardrails). The call that sees it shows it in the "
        "trace as a `message` step. 409 when the run ended.",
        responses={
            **success_response(202, "The message, stored for the run's next model call.", MessageAccepted),
            **error_responses(400, 401, 404, 409, 413, 415, 422, 503),
        },
        tags=["runs"],
    )
    def post_message(
        run_id: Annotated[str, Path(pattern=RUN_ID_PATTERN, description="The run's id.")],
        body: MessageRequest,
    ) -> Response[MessageAccepted]:
        from stepwise.steps.api.steering import post_message

        event = app.current_event
        owner = request_owner(event)
        require_json(event)
        accepted = post_message(services.get(), owner=owner, run_reference=run_id, request=body)
        return Response(status_code=202, content_type=content_types.APPLICATION_JSON, body=accepted)

    @app.post(
        "/v1/runs/<run_id>/pause",
        summary="Pause a run at its next iteration boundary",
        description="The run waits (status PAUSED), without compute, before its next iteration, until resumed, "
        "cancelled or its deadline (then it ends with its best answer, stop_reason `deadline`). Asking again "
        "is harmless. 409 when the run ended, or runs on an Express workflow (`cannot_pause`).",
        responses={
            **success_response(200, "The run, with its `pause`.", RunView),
            **error_responses(401, 404, 409, 503),
        },
        tags=["runs"],
    )
    def post_pause(run_id: Annotated[str, Path(pattern=RUN_ID_PATTERN, description="The run's id.")]) -> RunView:
        from stepwise.steps.api.steering import pause_run

        return pause_run(services.get(), owner=request_owner(app.current_event), run_reference=run_id)

    @app.post(
        "/v1/runs/<run_id>/resume",
        summary="Resume a paused run",
        description="A run waiting (PAUSED) goes on; a pause not reached yet is withdrawn. 409 when the run ended "
        "or is not paused (`not_paused`); 503 when Step Functions could not be told (the run stays PAUSED).",
        responses={
            **success_response(200, "The run, going on.", RunView),
            **error_responses(401, 404, 409, 503),
        },
        tags=["runs"],
    )
    def post_resume(run_id: Annotated[str, Path(pattern=RUN_ID_PATTERN, description="The run's id.")]) -> RunView:
        from stepwise.steps.api.steering import resume_run

        return resume_run(services.get(), owner=request_owner(app.current_event), run_reference=run_id)
