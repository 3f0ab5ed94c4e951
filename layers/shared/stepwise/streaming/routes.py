"""The two routes that stream, for `stepwise serve` and the streaming function alike.

- `GET /v1/runs/{run_id}/events` asked as `text/event-stream`: each step as it is stored, from the same
  store the API reads (`steps.api.events.event_stream`). Asked as JSON, the route passes it on.
- `POST /v1/chat/completions` with `stream: true`: the API function still checks the request (auth, body
  limits, validation) and starts the run; the request reaches it marked (`STREAM_MARK`, a key API Gateway
  never sets), so it answers 202 with the run instead of waiting, and the chunks follow as the run goes
  (`steps.api.chat_stream.chat_chunks`). Any other answer (an error, or the buffered stream of an Express
  run) is passed on as it is.

Both bodies wait between their reads of the store with their answer's `hangup`, so they stop as soon as the
front sees their client go. Given `slots` (`stepwise serve`), each stream claims one before it reads the store
or starts a run, and is answered 503 when none is left (`slots.StreamSlots`).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from stepwise.steps.api.events import CURSOR_FIELD, event_stream, follow_run
from stepwise.steps.api.ownership import request_owner
from stepwise.steps.api.problems import ApiError, InvalidRequest
from stepwise.steps.runtime import StepRuntime
from stepwise.streaming.answers import Event, Hangup, HttpResponse, StreamRoute, error_answer, proxy_response
from stepwise.streaming.slots import HeldStream, StreamSlots

EVENTS_RESOURCE = "/v1/runs/{run_id}/events"
CHAT_RESOURCE = "/v1/chat/completions"
EVENT_STREAM = "text/event-stream"
LAST_EVENT_ID_FIELD = "Last-Event-ID (header)"
# an SSE answer must reach the client as it is written: no caching, no proxy buffering
_SSE_HEADERS = [("content-type", EVENT_STREAM), ("cache-control", "no-cache"), ("x-accel-buffering", "no")]


def _header(event: Event, name: str) -> str:
    headers = event.get("headers") or {}
    return next((str(value) for key, value in headers.items() if key.lower() == name), "")


def _asks_to_stream(event: Event) -> bool:
    raw = event.get("body") or ""
    try:
        text = base64.b64decode(raw).decode("utf-8") if event.get("isBase64Encoded") else raw
        body = json.loads(text)
    except (ValueError, UnicodeError):
        return False  # the API function answers a body it cannot read
    return isinstance(body, dict) and body.get("stream") is True


def _claim(slots: StreamSlots | None, owner: str) -> Callable[[], None] | HttpResponse:
    """A stream slot of `owner` (nothing to give back without `slots`), or the 503 refusing one."""
    return slots.claim(owner) if slots is not None else (lambda: None)


def _streamed(
    body: Iterator[bytes],
    release: Callable[[], None],
    hangup: Hangup,
    closing: bytes = b"",
    headers: Sequence[tuple[str, str]] = (),
) -> HttpResponse:
    return HttpResponse(200, [*_SSE_HEADERS, *headers], HeldStream(body, release), closing=closing, hangup=hangup)


def _resumed_after(event: Event) -> tuple[str | None, str]:
    """Where a stream starts, and the name of what said so: after the `Last-Event-ID` a reconnecting client
    sends (each step's id is the cursor right after it), else after the `after` query parameter, else at the
    run's first step.

    The header wins: `EventSource` reconnects to the URL it first opened, whose `after` is older."""
    resumed = _header(event, "last-event-id")
    if resumed:
        return resumed, LAST_EVENT_ID_FIELD
    return (event.get("queryStringParameters") or {}).get("after") or None, CURSOR_FIELD


def events_stream_route(runtime: StepRuntime, slots: StreamSlots | None = None) -> StreamRoute:
    """The stream route serving run events as server-sent events from `runtime`'s store."""

    def takes(event: Event) -> bool:
        return (
            event.get("httpMethod") == "GET"
            and event.get("resource") == EVENTS_RESOURCE
            and EVENT_STREAM in _header(event, "accept")
        )

    def answer(event: Event) -> HttpResponse:
        try:
            owner = request_owner(event)
            given = event.get("multiValueQueryStringParameters") or {
                name: [value] for name, value in (event.get("queryStringParameters") or {}).items()
            }
            refused = InvalidRequest.of_query(given, ("after",), ("after",))
            if refused is not None:
                raise refused
        except ApiError as error:
            return error_answer(error.status, error.type, error.message, details=error.details)
        release = _claim(slots, owner)
        if isinstance(release, HttpResponse):
            return release
        hangup = Hangup()
        after, cursor_field = _resumed_after(event)
        try:
            reads = follow_run(
                runtime,
                owner=owner,
                run_reference=(event.get("pathParameters") or {}).get("run_id", ""),
                after=after,
                sleep=hangup.sleep,
                cursor_field=cursor_field,
            )
        except ApiError as error:
            release()
            return error_answer(error.status, error.type, error.message, details=error.details)
        except BaseException:
            release()
            raise
        return _streamed(event_stream(reads), release, hangup)

    return StreamRoute(takes, answer)


def chat_stream_route(
    runtime: StepRuntime, invoke: Callable[[Event], Any], slots: StreamSlots | None = None
) -> StreamRoute:
    """The stream route sending streamed chat completions as the run goes; `invoke` calls the API function."""

    def takes(event: Event) -> bool:
        return event.get("httpMethod") == "POST" and event.get("resource") == CHAT_RESOURCE

    def answer(event: Event) -> HttpResponse | None:
        if not _asks_to_stream(event):
            return None
        # loaded by the first streamed chat: an instance that only streams run events never needs the chat
        # facade (its models, the run start, the answer's chunks)
        from stepwise.models.chat_api import ChatStreamStart
        from stepwise.models.openai_fields import IGNORED_FIELDS_HEADER
        from stepwise.steps.api.chat_stream import chat_chunks, stream_cut_short
        from stepwise.steps.api.stream_mark import STREAM_MARK

        marked = {**event, "requestContext": {**(event.get("requestContext") or {}), STREAM_MARK: True}}
        try:
            owner = request_owner(event)
        except ApiError:
            return proxy_response(invoke(marked))  # refused by the API function as any request without identity
        # claimed before the run starts: a refused stream started nothing
        release = _claim(slots, owner)
        if isinstance(release, HttpResponse):
            return release
        try:
            queued = invoke(marked)
            if not isinstance(queued, dict) or queued.get("statusCode") != 202:
                release()
                return proxy_response(queued)
            start = ChatStreamStart.model_validate_json(queued.get("body") or "")
        except BaseException:
            release()
            raise
        hangup = Hangup()
        body = chat_chunks(runtime, owner=owner, start=start, sleep=hangup.sleep)
        ignored = [(IGNORED_FIELDS_HEADER.lower(), ", ".join(start.ignored_fields))] if start.ignored_fields else []
        return _streamed(body, release, hangup, closing=stream_cut_short(start.run_id), headers=ignored)

    return StreamRoute(takes, answer)
