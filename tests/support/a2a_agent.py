"""A real A2A agent (the `a2a-sdk`'s own server plumbing behind uvicorn) on a free 127.0.0.1 port, for tool tests.

Its executor answers each message as the test scripted it, by the message's text: a reply (text and data
artifacts), a failure, a request for more input, or a wait before any of them, all in a task; or a message
instead of a task. Every message it receives
(id, text, metadata) and every HTTP request's headers are recorded.

    agent = ScriptedA2aAgent({"weather in Paris?": Reply("drizzle, 14 °C")})
    with agent.serving() as url:
        ...  # point an `a2a:` entry at url, with internal: true
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part, Role
from google.protobuf import json_format
from google.protobuf.struct_pb2 import Value
from starlette.applications import Starlette

from tests.support.polling import CROSS_PROCESS_SECONDS

# a bound for a failure only: a loaded machine starts a server thread many times slower than a quiet one
_START_TIMEOUT_SECONDS = CROSS_PROCESS_SECONDS
RPC_PATH = "/a2a"


@dataclass(frozen=True)
class Reply:
    """Complete the task with `text` as an artifact (and `data` as a data part of a second one)."""

    text: str
    data: Any = None
    wait_seconds: float = 0.0


@dataclass(frozen=True)
class Fail:
    """End the task in `state` (``failed``, ``rejected``, ``input-required``) with `reason` as its message."""

    reason: str
    state: str = "failed"
    wait_seconds: float = 0.0


@dataclass(frozen=True)
class Say:
    """Answer at once with a message holding `text`, no task."""

    text: str


@dataclass(frozen=True)
class Received:
    """A message as the agent received it."""

    message_id: str
    text: str
    metadata: dict[str, Any]


@dataclass
class ScriptedA2aAgent:
    """The agent's card and its script: what each message text is answered with (others: an echo)."""

    script: dict[str, Reply | Fail | Say] = field(default_factory=dict)
    name: str = "Weather Oracle"
    description: str = "Answers questions about the weather anywhere."
    received: list[Received] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    canceled: list[str] = field(default_factory=list)
    streaming: bool = True  # what the card says; without it the SDK's client polls
    url: str = ""  # the base URL while it is served

    def card(self, base_url: str) -> AgentCard:
        """The card served at the well-known path, naming the JSON-RPC endpoint on `base_url`."""
        return AgentCard(
            name=self.name,
            description=self.description,
            version="1.0.0",
            supported_interfaces=[
                AgentInterface(url=f"{base_url}{RPC_PATH}", protocol_binding="JSONRPC", protocol_version="1.0")
            ],
            capabilities=AgentCapabilities(streaming=self.streaming),
            default_input_modes=["text/plain"],
            default_output_modes=["text/plain", "application/json"],
            skills=[
                AgentSkill(
                    id="forecast",
                    name="Forecast",
                    description="The weather of a city, today or in the coming days.",
                    tags=["weather"],
                    examples=["Will it rain in Paris tomorrow?"],
                ),
                AgentSkill(
                    id="climate", name="Climate", description="Averages of a city's weather by month.", tags=["climate"]
                ),
            ],
        )

    @contextmanager
    def serving(self) -> Iterator[str]:
        """Serve the agent on 127.0.0.1 until the block ends; yields its base URL."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        base_url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        self.url = base_url
        card = self.card(base_url)
        handler = DefaultRequestHandler(agent_executor=_Executor(self), task_store=InMemoryTaskStore(), agent_card=card)
        app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, RPC_PATH)])
        recording = self._recording(app)
        config = uvicorn.Config(
            recording, log_level="warning", lifespan="off", log_config=None, timeout_graceful_shutdown=1
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, name="a2a-agent", daemon=True)
        thread.start()
        deadline = time.monotonic() + _START_TIMEOUT_SECONDS
        try:
            while not server.started:
                if time.monotonic() > deadline or not thread.is_alive():
                    raise RuntimeError("the A2A test agent did not start")
                time.sleep(0.01)
            yield base_url
        finally:
            server.should_exit = True
            thread.join(_START_TIMEOUT_SECONDS)
            listener.close()

    def _recording(self, app: Any) -> Any:
        async def recording(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                self.headers.append({k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]})
            await app(scope, receive, send)

        return recording


class _Executor(AgentExecutor):
    """Plays the agent's script through the SDK's `TaskUpdater`."""

    def __init__(self, agent: ScriptedA2aAgent) -> None:
        self._agent = agent

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        assert message is not None
        text = context.get_user_input()
        metadata = json_format.MessageToDict(message.metadata) if message.HasField("metadata") else {}
        self._agent.received.append(Received(message.message_id, text, metadata))
        step = self._agent.script.get(text, Reply(f"you said: {text}"))
        if isinstance(step, Say):
            await event_queue.enqueue_event(
                new_text_message(step.text, context_id=context.context_id, role=Role.ROLE_AGENT)
            )
            return
        task = context.current_task or new_task_from_user_message(message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        await asyncio.sleep(step.wait_seconds)
        if isinstance(step, Reply):
            await updater.add_artifact([Part(text=step.text)], name="answer")
            if step.data is not None:
                value = Value()
                json_format.ParseDict(step.data, value)
                await updater.add_artifact([Part(data=value)], name="details")
            await updater.complete()
            return
        said = updater.new_agent_message([Part(text=step.reason)])
        if step.state == "input-required":
            await updater.requires_input(message=said)
        elif step.state == "rejected":
            await updater.reject(message=said)
        else:
            await updater.failed(message=said)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        self._agent.canceled.append(context.task_id or "")
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()
