"""The OpenAI-compatible routes: `POST /v1/chat/completions` (answered whole, streamed as server-sent
events, or started for the streaming function) and `GET /v1/models`, the profiles as models."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Path

from stepwise.models.chat_api import ChatCompletion, ChatCompletionRequest, ChatStreamStart, ModelCard, ModelList
from stepwise.models.openai_fields import IGNORED_FIELDS_HEADER
from stepwise.steps.api.openapi_schemas import CHUNK_EVENT_SCHEMA, EVENT_STREAM, error_responses, success_response
from stepwise.steps.api.ownership import request_owner
from stepwise.steps.api.request_checks import require_json
from stepwise.steps.api.services import LazyServices


def register_chat_routes(app: APIGatewayRestResolver, services: LazyServices) -> None:
    """Register the chat-completions facade on `app`; each route imports its logic when first asked for."""

    @app.post(
        "/v1/chat/completions",
        summary="OpenAI-compatible chat completion",
        description="Start a run on the conversation and wait for its answer; `stream: true` answers with "
        "server-sent `chat.completion.chunk` events ending with `[DONE]`.",
        responses={
            200: {
                "description": "The agent's answer.",
                "content": {
                    content_types.APPLICATION_JSON: {"model": ChatCompletion},
                    EVENT_STREAM: {"schema": CHUNK_EVENT_SCHEMA},
                },
            },
            **error_responses(400, 401, 413, 415, 422, 429, 502, 503, 504),
        },
        tags=["chat"],
    )
    def post_chat_completion(body: ChatCompletionRequest) -> Response[ChatCompletion | ChatStreamStart | str]:
        from stepwise.steps.api.chat import complete_chat, completion_events
        from stepwise.steps.api.chat_stream import start_chat_stream, streams_as_it_runs

        event = app.current_event
        owner = request_owner(event)
        require_json(event)
        ignored = {IGNORED_FIELDS_HEADER: ", ".join(body.ignored_fields)} if body.ignored_fields else {}
        if body.stream and streams_as_it_runs(event, services.get()):
            start = start_chat_stream(services.get(), owner=owner, request=body, request_body=event.json_body)
            return Response(status_code=202, content_type=content_types.APPLICATION_JSON, body=start)
        completion = complete_chat(services.get(), owner=owner, request=body, request_body=event.json_body)
        if not body.stream:
            return Response(
                status_code=200, content_type=content_types.APPLICATION_JSON, body=completion, headers=ignored
            )
        include_usage = body.stream_options is not None and body.stream_options.include_usage
        return Response(
            status_code=200,
            content_type=EVENT_STREAM,
            body=completion_events(completion, include_usage=include_usage),
            headers={"Cache-Control": "no-cache", **ignored},
        )

    @app.get(
        "/v1/models",
        summary="The agent profiles, as OpenAI models",
        description="Each profile a chat completion's `model` may name to select it.",
        responses={**success_response(200, "The profiles.", ModelList), **error_responses(400, 401)},
        tags=["chat"],
    )
    def get_models() -> ModelList:
        from stepwise.steps.api.chat import list_models

        request_owner(app.current_event)
        return list_models(services.get().config)

    @app.get(
        "/v1/models/<model_id>",
        summary="One agent profile, as an OpenAI model",
        description="The profile a chat completion's `model` names (`client.models.retrieve(id)`); 404 for another.",
        responses={**success_response(200, "The profile.", ModelCard), **error_responses(401, 404, 422)},
        tags=["chat"],
    )
    def get_model(
        model_id: Annotated[str, Path(min_length=1, max_length=128, description="A profile's name.")],
    ) -> ModelCard:
        from stepwise.steps.api.chat import describe_model

        request_owner(app.current_event)
        return describe_model(services.get().config, model_id)
