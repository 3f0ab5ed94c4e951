"""The routes of the HTTP API on a Powertools `APIGatewayRestResolver`; each one is a thin adapter.

Request bodies are validated by Powertools against the pydantic models before a route runs, so the
OpenAPI document (`GET /v1/openapi.json`) is generated from the same models that check the requests.
"""

from __future__ import annotations

import functools
import json
from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Header, Path, Query
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent

from stepwise.models.api_requests import (
    IDEMPOTENCY_KEY_PATTERN,
    RUN_ID_PATTERN,
    SESSION_ID_PATTERN,
    ReplayRequest,
    RunRequest,
)
from stepwise.models.api_responses import (
    ReplayAccepted,
    RunAccepted,
    RunEvents,
    RunList,
    RunView,
)
from stepwise.models.overview import DEFAULT_DAYS, MAX_DAYS, MAX_RUNS, Overview
from stepwise.models.run import RunStatus
from stepwise.steps.api.chat_routes import register_chat_routes
from stepwise.steps.api.console_routes import register_console_routes
from stepwise.steps.api.errors import (
    register_error_handlers,
)
from stepwise.steps.api.openapi_schemas import (
    EVENT_STREAM,
    STEP_EVENT_SCHEMA,
    error_responses,
    openapi_document,
    success_response,
)
from stepwise.steps.api.ownership import request_owner
from stepwise.steps.api.redacted_answers import secrets_known_first
from stepwise.steps.api.request_checks import (
    refuse_unencodable_parameters,
    refuse_unknown_query_parameters,
    require_json,
)
from stepwise.steps.api.run_control_routes import register_run_control_routes
from stepwise.steps.api.run_list_params import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    CreatedAfterParam,
    CreatedBeforeParam,
    MetadataParam,
    ProfileParam,
    SearchParam,
    StopReasonParam,
    ToolParam,
    run_filter,
)
from stepwise.steps.api.services import LazyServices
from stepwise.steps.api.step_routes import register_step_routes


def _base_path(event: APIGatewayProxyEvent) -> str:
    """The stage or base-path mapping the caller used, so returned URLs work as they are."""
    context_path = str((event.get("requestContext") or {}).get("path") or "")
    path = event.path
    return context_path[: -len(path)] if path and context_path.endswith(path) else ""


def register_routes(app: APIGatewayRestResolver, services: LazyServices) -> None:
    """Register the API's routes and its error handling on `app`; `services` are built on first use.

    Each route imports its logic when it is first asked for: a container that serves only polls never
    loads how runs are started, approved or cancelled, nor the chat facade. The models stay imported, as
    the routes' OpenAPI description and validation are declared with them.
    """
    register_error_handlers(app)
    app.use([secrets_known_first(services), refuse_unencodable_parameters, refuse_unknown_query_parameters])

    @app.post(
        "/v1/runs",
        status_code=202,
        summary="Start a run",
        description="Classify the question, store the run (QUEUED) and start its execution; poll `poll_url`.",
        responses={
            **success_response(202, "The run is stored and its execution started.", RunAccepted),
            **error_responses(400, 401, 409, 413, 415, 422, 503),
        },
        tags=["runs"],
    )
    def post_run(
        body: RunRequest,
        idempotency_key: Annotated[
            str | None,
            Header(
                alias="Idempotency-Key",
                pattern=IDEMPOTENCY_KEY_PATTERN,
                description="Send the same key again to get the same run; another body with it is 409.",
            ),
        ] = None,
    ) -> Response[RunAccepted]:
        from stepwise.steps.api.runs import accept_run

        event = app.current_event
        owner = request_owner(event)
        require_json(event)
        accepted = accept_run(
            services.get(),
            owner=owner,
            request=body,
            request_body=event.json_body,
            idempotency_key=idempotency_key,
            base_path=_base_path(event),
            lambda_context=app.lambda_context,
        )
        return Response(status_code=202, content_type=content_types.APPLICATION_JSON, body=accepted)

    @app.get(
        "/v1/runs/<run_id>",
        summary="Read a run",
        description="The run's status and, once it ended, its answer; `trace=true` adds its steps. "
        "`run_id` may also be the execution ARN.",
        responses={
            **success_response(200, "The run as stored: status, and its outcome once it ended.", RunView),
            **error_responses(400, 401, 404, 422),
        },
        tags=["runs"],
    )
    def get_run(
        run_id: str,
        trace: Annotated[bool, Query(description="Add the run's steps (thoughts, tool calls, observations).")] = False,
    ) -> RunView:
        from stepwise.steps.api.run_views import describe_run

        owner = request_owner(app.current_event)
        return describe_run(services.get(), owner=owner, run_reference=run_id, trace=trace)

    @app.get(
        "/v1/runs",
        summary="List the caller's runs",
        description="The caller's runs, newest first, with what the list shows of each (question, usage, cost); "
        "filtered by status, profile, session, tool, stop reason, creation time, a metadata pair and words of the "
        "question or answer. A page holds `limit` runs unless the runs end or the request's read budget ran out; "
        "pass `next_cursor` back as `cursor` for the next page.",
        responses={
            **success_response(200, "A page of runs; `next_cursor` is absent on the last page.", RunList),
            **error_responses(400, 401, 422),
        },
        tags=["runs"],
    )
    def get_runs(
        status: Annotated[RunStatus | None, Query(description="Only runs with this status.")] = None,
        session_id: Annotated[
            str | None, Query(pattern=SESSION_ID_PATTERN, description="Only the runs of this session.")
        ] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE, description="Runs per page.")] = DEFAULT_PAGE_SIZE,
        cursor: Annotated[
            str | None, Query(min_length=1, max_length=512, description="`next_cursor` of the previous page.")
        ] = None,
        profile: ProfileParam = None,
        tool: ToolParam = None,
        stop_reason: StopReasonParam = None,
        created_after: CreatedAfterParam = None,
        created_before: CreatedBeforeParam = None,
        metadata: MetadataParam = None,
        q: SearchParam = None,
    ) -> RunList:
        from stepwise.steps.api.lifecycle import list_runs

        owner = request_owner(app.current_event)
        filters = run_filter(
            profile=profile,
            tool=tool,
            stop_reason=stop_reason,
            created_after=created_after,
            created_before=created_before,
            metadata=metadata,
            q=q,
        )
        return list_runs(
            services.get(),
            owner=owner,
            limit=limit,
            status=status,
            session_id=session_id,
            cursor=cursor,
            filters=filters,
        )

    @app.get(
        "/v1/runs/<run_id>/events",
        summary="Follow a run",
        description="The run's steps (model calls, decisions, tool calls, formatting) stored after `after`, in "
        "the order they happened; poll again with `next_cursor` until `done`.",
        responses={
            200: {
                "description": "The steps since the cursor, and whether the run has ended; asked with "
                "`Accept: text/event-stream` where the server streams (stepwise serve), each step as an "
                "`event: step` as it is stored, then `event: end`.",
                "content": {
                    content_types.APPLICATION_JSON: {"model": RunEvents},
                    EVENT_STREAM: {"schema": STEP_EVENT_SCHEMA},
                },
            },
            **error_responses(400, 401, 404, 422),
        },
        tags=["runs"],
    )
    def get_run_events(
        run_id: Annotated[str, Path(pattern=RUN_ID_PATTERN, description="The run's id.")],
        after: Annotated[
            str | None, Query(min_length=1, max_length=256, description="`next_cursor` of the previous answer.")
        ] = None,
    ) -> RunEvents:
        from stepwise.steps.api.events import run_events

        owner = request_owner(app.current_event)
        current = services.get()
        return run_events(
            current.runtime,
            owner=owner,
            run_reference=run_id,
            after=after,
            grace_seconds=current.lost_run_grace_seconds,
        )

    @app.post(
        "/v1/runs/<run_id>/cancel",
        summary="Cancel a run",
        description="Record the run CANCELLED (who, when) and stop its execution; a step already running "
        "finishes, but nothing it produces moves the run on. 409 when the run had already ended.",
        responses={
            **success_response(200, "The run, now CANCELLED.", RunView),
            **error_responses(400, 401, 404, 409, 422),
        },
        tags=["runs"],
    )
    def post_cancel(run_id: Annotated[str, Path(pattern=RUN_ID_PATTERN, description="The run's id.")]) -> RunView:
        from stepwise.steps.api.lifecycle import cancel_run

        owner = request_owner(app.current_event)
        return cancel_run(services.get(), owner=owner, run_reference=run_id)

    @app.post(
        "/v1/runs/<run_id>/replay",
        status_code=202,
        summary="Replay a run",
        description="Run the caller's ended run again under a profile (by default its own), each tool call "
        "answered from the run's recorded observations (a call it never made is answered 'not recorded' "
        "unless `live_tools` lets a read-only tool run); `from_iteration` keeps its first iterations as "
        "stored. The new run's `replay` names the original; poll `poll_url`.",
        responses={
            **success_response(202, "The replay is stored and its execution started.", ReplayAccepted),
            **error_responses(400, 401, 404, 413, 415, 422, 503),
        },
        tags=["runs"],
    )
    def post_replay(
        run_id: Annotated[str, Path(pattern=RUN_ID_PATTERN, description="The run to replay.")],
        body: ReplayRequest,
    ) -> Response[ReplayAccepted]:
        from stepwise.steps.api.replays import replay_run

        event = app.current_event
        owner = request_owner(event)
        require_json(event)
        accepted = replay_run(
            services.get(), owner=owner, run_reference=run_id, request=body, base_path=_base_path(event)
        )
        return Response(status_code=202, content_type=content_types.APPLICATION_JSON, body=accepted)

    register_run_control_routes(app, services)

    @app.get(
        "/v1/overview",
        summary="Count the caller's recent runs",
        description="The caller's runs created in the last `days` days (UTC, today included): runs, failures, "
        f"tokens, cost and p50/p95 latency (creation to end), in all and by profile, model and day. At most the "
        f"newest {MAX_RUNS} runs of the window are counted; `truncated` says when there were more.",
        responses={
            **success_response(200, "The counts, in all and by profile, model and day.", Overview),
            **error_responses(400, 401, 422),
        },
        tags=["runs"],
    )
    def get_overview(
        days: Annotated[int, Query(ge=1, le=MAX_DAYS, description="Days back, today included.")] = DEFAULT_DAYS,
    ) -> Overview:
        from stepwise.steps.api.overview import describe_overview

        owner = request_owner(app.current_event)
        return describe_overview(services.get(), owner=owner, days=days)

    register_step_routes(app, services)

    register_chat_routes(app, services)

    @app.get(
        "/v1/openapi.json",
        summary="This OpenAPI document",
        responses={
            200: {
                "description": "The OpenAPI 3.1 document of this API.",
                "content": {content_types.APPLICATION_JSON: {"schema": {"type": "object"}}},
            }
        },
        tags=["meta"],
    )
    def get_openapi() -> Response[str]:
        return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=document_text())

    # the routes are all registered before the first request, so their document is built once per process
    # (75 ms of CPU each time)
    @functools.cache
    def document_text() -> str:
        return json.dumps(openapi_document(app))

    register_console_routes(app)
