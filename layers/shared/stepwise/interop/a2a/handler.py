"""The A2A methods over the HTTP API: the SDK's request-handler interface, answered by calls of the API.

The SDK's own handler keeps tasks in a task store and runs an `AgentExecutor` in the serving process. A
Stepwise run already is a durable task: stored in DynamoDB, executed by Step Functions (or the local
engine), cancellable, owned by its caller. On AWS each request may reach another instance, and a run
outlives the request that started it, so this handler keeps nothing: every method reads or changes the
run through the API, as the caller (`ApiCaller`), and the API's ownership, validation, limits and
idempotency apply unchanged.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import AsyncGenerator, Callable
from typing import Any
from urllib.parse import quote

import anyio
import anyio.to_thread
from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    ContentTypeNotSupportedError,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    InternalError,
    InvalidParamsError,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    PushNotificationNotSupportedError,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskNotCancelableError,
    TaskNotFoundError,
    TaskPushNotificationConfig,
    TaskState,
    UnsupportedOperationError,
)
from a2a.utils.errors import ExtendedAgentCardNotConfiguredError
from google.protobuf.json_format import MessageToDict

from stepwise.config.model import StepwiseConfig
from stepwise.interop.a2a import tasks
from stepwise.interop.api_calls import ApiAnswer, ApiCaller
from stepwise.models.api_requests import RUN_ID_PATTERN, SESSION_ID_PATTERN

# Where the app's context builder puts the request's caller and the profile its path names.
CALLER_STATE = "stepwise_api"
PROFILE_STATE = "stepwise_profile"
# How often a waiting send or a stream reads the run (the API's own event stream reads every 0.2 s).
POLL_SECONDS = 0.25

_RUN_ID = re.compile(RUN_ID_PATTERN)
_SESSION_ID = re.compile(SESSION_ID_PATTERN)
_CONTEXTS = uuid.UUID("6f1d2a52-3c1e-4e8a-9a55-a2a0c0a7e31d")


class RunsRequestHandler(RequestHandler):
    """Each A2A method as calls of the API on the profile the request's path names."""

    def __init__(self, config: Callable[[], StepwiseConfig]) -> None:
        self._config = config

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task | Message:
        """Start a run; unless told to return at once, wait for it to end (or wait for a person) within the
        API's `sync_timeout_seconds`, and answer its task as it then is."""
        caller, accepted = await self._start(params, context)
        if params.configuration.return_immediately:
            return await self._task(caller, accepted["run_id"])
        with anyio.move_on_after(self._config().api.sync_timeout_seconds):
            while True:
                task = await self._task(caller, accepted["run_id"])
                if tasks.settled(task):
                    return task
                await anyio.sleep(POLL_SECONDS)
        return await self._task(caller, accepted["run_id"])

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """Start a run, then send its task, a status update per step it stores, its artifacts and its status."""
        caller, accepted = await self._start(params, context)
        async for event in self._follow(caller, accepted["run_id"], context):
            yield event

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """Follow a task from its first step, as a streamed send does; a task that ended is refused (the spec's
        `UnsupportedOperationError`: nothing more will happen to it; get-task reads it), before any event."""
        caller = _caller(context)
        task = await self._task(caller, params.id, context)
        if task.status.state in tasks.TERMINAL:
            raise UnsupportedOperationError(
                f"task {params.id} has ended ({TaskState.Name(task.status.state)}): there is nothing to subscribe "
                "to; get the task to read it"
            )
        async for event in self._follow(caller, params.id, context, task):
            yield event

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        """The run, read from the store through the API."""
        return await self._task(_caller(context), params.id, context)

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        """Cancel the run (its execution is stopped); a run that already ended cannot be."""
        caller = _caller(context)
        await self._task(caller, params.id, context)
        answer = await _call(caller, "POST", f"/v1/runs/{params.id}/cancel")
        if answer.status == 409:
            raise TaskNotCancelableError(f"task {params.id} has already ended")
        _raise_unless_ok(answer, params.id)
        return await self._task(caller, params.id, context)

    async def on_list_tasks(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """Not offered: `GET /v1/runs` of the HTTP API lists a caller's runs."""
        raise UnsupportedOperationError("listing tasks is not offered; GET /v1/runs of the HTTP API lists runs")

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        """Push notifications are not offered."""
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        """Push notifications are not offered."""
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        """Push notifications are not offered."""
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        """Push notifications are not offered."""
        raise PushNotificationNotSupportedError

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        """The public card is the whole card."""
        raise ExtendedAgentCardNotConfiguredError

    async def _start(self, params: SendMessageRequest, context: ServerCallContext) -> tuple[ApiCaller, dict[str, Any]]:
        """`POST /v1/runs` for the message; its id is the idempotency key, so a resent message starts no
        second run."""
        caller = _caller(context)
        profile = context.state[PROFILE_STATE]
        message = params.message
        if message.task_id:
            raise InvalidParamsError(
                f"message.taskId: task {message.task_id} cannot take another message (a task is one run); "
                "send a new message with its contextId to continue the conversation"
            )
        body = {
            "input": _input_of(message),
            "profile": profile,
            "session_id": _session_of(message, profile),
            "metadata": {"a2a.message_id": message.message_id[:256]},
        }
        key = hashlib.sha256(f"a2a\n{profile}\n{message.message_id}".encode()).hexdigest()
        answer = await _call(caller, "POST", "/v1/runs", body, headers=[("idempotency-key", key)])
        _raise_unless_ok(answer, None)
        accepted: dict[str, Any] = answer.body
        return caller, accepted

    async def _task(self, caller: ApiCaller, run_id: str, context: ServerCallContext | None = None) -> Task:
        """The run's task; not found when it is no run of this caller, or (asked through an agent's
        endpoint) a run of another profile."""
        if not _RUN_ID.fullmatch(run_id):
            # a task id is a run id: anything else names no task (and must not reach the API's paths)
            raise TaskNotFoundError(f"no task {run_id[:80]!r}: a task id is a run id")
        answer = await _call(caller, "GET", f"/v1/runs/{run_id}")
        _raise_unless_ok(answer, run_id)
        if context is not None and answer.body["profile"] != context.state[PROFILE_STATE]:
            raise TaskNotFoundError(f"no task {run_id} of agent {context.state[PROFILE_STATE]}")
        return tasks.task_of(answer.body)

    async def _follow(
        self, caller: ApiCaller, run_id: str, context: ServerCallContext, task: Task | None = None
    ) -> AsyncGenerator[Event]:
        """The task (read now unless given), then its steps as they are stored; at its end its artifacts and
        final status. A run that waits for a person ends the stream with that status (subscribe again to
        follow it on)."""
        task = task or await self._task(caller, run_id, context)
        yield task
        cursor = ""
        index = 0
        while True:
            after = f"?after={quote(cursor)}" if cursor else ""
            answer = await _call(caller, "GET", f"/v1/runs/{run_id}/events{after}")
            _raise_unless_ok(answer, run_id)
            page = answer.body
            for step in page["events"]:
                index += 1
                yield tasks.step_update(run_id, task.context_id, step, index)
            cursor = page["next_cursor"]
            if page["done"] or page["status"] in tasks.WAITING:
                break
            await anyio.sleep(POLL_SECONDS)
        task = await self._task(caller, run_id, context)
        for update in tasks.artifact_updates(task):
            yield update
        yield tasks.status_update(task)


def _caller(context: ServerCallContext) -> ApiCaller:
    caller = context.state[CALLER_STATE]
    if not isinstance(caller, ApiCaller):
        raise InternalError("the request has no caller of the API")
    return caller


async def _call(
    caller: ApiCaller, method: str, target: str, body: Any = None, *, headers: list[tuple[str, str]] | None = None
) -> ApiAnswer:
    """One call of the API, off the event loop (the API function is synchronous)."""
    return await anyio.to_thread.run_sync(lambda: caller.request(method, target, body, headers=headers or []))


def _raise_unless_ok(answer: ApiAnswer, task_id: str | None) -> None:
    """The A2A error for an API error: not found stays not found, a refused request is invalid params (with
    the API's message, which names the field), anything else an internal error."""
    if answer.ok:
        return
    error = (answer.body.get("error") or {}) if isinstance(answer.body, dict) else {}
    message = str(error.get("message") or f"the API answered {answer.status}")
    if answer.status == 404 and task_id is not None:
        raise TaskNotFoundError(f"no task {task_id}")
    if answer.status in (400, 409, 413, 415, 422):
        raise InvalidParamsError(message, data={"status": answer.status, "error": error})
    raise InternalError(message, data={"status": answer.status, "error": error})


def _input_of(message: Message) -> str:
    """The question: the message's text parts, and its data parts as JSON, in order."""
    pieces = []
    for index, part in enumerate(message.parts):
        kind = part.WhichOneof("content")
        if kind == "text":
            pieces.append(part.text)
        elif kind == "data":
            pieces.append(json.dumps(MessageToDict(part.data), ensure_ascii=False))
        else:
            raise ContentTypeNotSupportedError(
                f"message.parts[{index}]: only text and data parts are taken, not {kind}"
            )
    text = "\n".join(pieces)
    if not text.strip():
        raise InvalidParamsError("message.parts: the message holds no text")
    return text


def _session_of(message: Message, profile: str) -> str:
    """The run's session: the message's context, else a new one derived from the message's id (so a
    resent message names the same session, and its idempotency key finds the first run)."""
    if not message.context_id:
        return str(uuid.uuid5(_CONTEXTS, f"{profile}\n{message.message_id}"))
    if not _SESSION_ID.fullmatch(message.context_id):
        raise InvalidParamsError("message.contextId: must be 1-128 of A-Z a-z 0-9 _ . : - (it is the run's session id)")
    return message.context_id
