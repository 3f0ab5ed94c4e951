"""A synchronous face over the official A2A SDK's client (`a2a-sdk`, protocol 1.0): read a card, ask an agent.

Each operation runs in an event loop of its own (`stepwise.tools.own_loop`) with its own `httpx.AsyncClient`,
whose transport guards every request (`stepwise.tools.a2a.transport`). A card is read once per process (per
Lambda container) and kept; one that could not be read is read again at the next use.

A call sends one message, its id the call's idempotency key, so a retried or resumed ToolInvoke sends the
message its first attempt sent and an agent that remembers message ids can tell the repeat. To an agent whose
card says it streams, the message is streamed and the task's updates followed until it completes, fails or
waits for input, then the whole task is read once (its artifacts); to any other, the agent is asked to answer
at once with the task (``returnImmediately``), which is then polled. All of it within ``timeoutSeconds``; a
task still running then is asked to cancel.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar, cast

import anyio
import httpx
from google.protobuf.json_format import MessageToDict

from stepwise.config.a2a_source import A2aAgentConfig
from stepwise.errors import ToolError
from stepwise.tools.a2a.card import SPOKEN_BINDINGS, CardSummary
from stepwise.tools.a2a.outcome import RemoteMessage, RemoteTask, message_result, read_remote, task_result
from stepwise.tools.a2a.transport import GuardedTransport
from stepwise.tools.base import ToolResult
from stepwise.tools.guards import Origin
from stepwise.tools.own_loop import innermost, run_in_own_loop
from stepwise.tools.remote_source import RemoteSourceClient

if TYPE_CHECKING:
    from a2a.client import Client
    from a2a.types.a2a_pb2 import AgentCard, SendMessageRequest, StreamResponse

Result = TypeVar("Result")

FIRST_POLL_SECONDS = 0.1
LONGEST_POLL_SECONDS = 2.0
# How long a task that outlived its call is given to accept being canceled, after the call's own bound.
CANCEL_SECONDS = 2.0
# Each agent's card, by its configuration: read once per process (per Lambda container).
_CARDS: dict[str, LoadedCard] = {}
_CARDS_LOCK = threading.Lock()


@dataclass(frozen=True)
class LoadedCard:
    """An Agent Card as the SDK read it (its interfaces cut to those Stepwise may call) and as validated."""

    card: AgentCard
    summary: CardSummary


@dataclass
class _Progress:
    """The task as last seen, so that a call cut short by its bound can say where it stood."""

    task: RemoteTask | None = None


class A2aAgentClient(RemoteSourceClient[A2aAgentConfig]):
    """Reads the card of one remote agent and sends it messages; failures raise `ToolError` saying what failed."""

    source = "A2A agent"

    @property
    def _origin(self) -> Origin:
        """The agent's origin, where its card and every request go."""
        return Origin.of(httpx.URL(self.config.url))

    def card(self) -> LoadedCard:
        """The agent's card, read once per process and kept; `ToolError` when it cannot be read or used."""
        cached = self._cached()
        if cached is not None:
            return cached

        async def read() -> LoadedCard:
            with anyio.fail_after(self.config.timeout_seconds):
                async with self._http() as http:
                    return await self._load_card(http)

        return self._run(read)

    def ask(self, text: str, *, message_id: str | None, skill: str | None = None) -> ToolResult:
        """Send `text` as one message (with `skill` as a hint in its metadata) and follow the task to its end."""
        from a2a.client import ClientConfig, ClientFactory
        from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageConfiguration, SendMessageRequest

        message = Message(
            message_id=message_id or str(uuid.uuid4()),
            role=Role.ROLE_USER,
            parts=[Part(text=text)],
            metadata={"skill": skill} if skill is not None else None,
        )
        request = SendMessageRequest(message=message, configuration=SendMessageConfiguration(return_immediately=True))

        async def run() -> ToolResult:
            # One bound for the whole call, a card read again included; only a cancel may take longer.
            deadline = anyio.current_time() + self.config.timeout_seconds
            async with self._http() as http:
                with anyio.fail_at(deadline):
                    loaded = self._cached() or await self._load_card(http)
                agent = loaded.summary.name
                # The SDK streams when the card says the agent can, and sends a plain request otherwise.
                factory = ClientFactory(
                    ClientConfig(streaming=True, httpx_client=http, supported_protocol_bindings=list(SPOKEN_BINDINGS))
                )
                client = factory.create(loaded.card)
                progress = _Progress()
                try:
                    with anyio.fail_at(deadline):
                        return await self._follow(client, request, progress, agent=agent)
                except TimeoutError:
                    return await self._timed_out(client, progress, agent=agent)

        return self._run(run)

    async def _follow(
        self, client: Client, request: SendMessageRequest, progress: _Progress, *, agent: str
    ) -> ToolResult:
        from a2a.client import A2AClientTimeoutError
        from a2a.types.a2a_pb2 import GetTaskRequest

        # Whether `progress.task` is the task as the agent last sent it whole (artifacts included), not only
        # its status from a stream's update.
        whole = True
        try:
            # An async generator (the SDK types it as an iterator): closed when left early, so is its stream.
            stream = cast("AsyncGenerator[StreamResponse, None]", client.send_message(request))
            async with aclosing(stream) as events:
                async for event in events:
                    if event.HasField("message"):
                        reply = read_remote(RemoteMessage, MessageToDict(event.message), what="message")
                        return message_result(reply, agent=agent)
                    if event.HasField("task"):
                        progress.task, whole = read_remote(RemoteTask, MessageToDict(event.task), what="task"), True
                    elif event.HasField("status_update"):
                        update = event.status_update
                        seen = {"id": update.task_id, "status": MessageToDict(update.status)}
                        progress.task, whole = read_remote(RemoteTask, seen, what="task status"), False
                    if progress.task is not None and progress.task.finished:
                        break
            if progress.task is None:
                raise ToolError(f"the A2A agent {agent} answered with neither a task nor a message")
            delay = FIRST_POLL_SECONDS
            while not progress.task.finished or not whole:
                if not progress.task.finished:
                    await anyio.sleep(delay)
                    delay = min(delay * 2, LONGEST_POLL_SECONDS)
                polled = await client.get_task(GetTaskRequest(id=progress.task.id))
                progress.task, whole = read_remote(RemoteTask, MessageToDict(polled), what="task"), True
        except A2AClientTimeoutError:
            # The HTTP client's own timeout (the same bound) met first: the call is out of time either way.
            raise TimeoutError from None
        return task_result(progress.task, agent=agent)

    async def _timed_out(self, client: Client, progress: _Progress, *, agent: str) -> ToolResult:
        from a2a.types.a2a_pb2 import CancelTaskRequest

        seconds = f"{self.config.timeout_seconds:g} s"
        task = progress.task
        if task is None:
            content = f"the agent {agent} did not answer within {seconds}"
        else:
            content = f"the agent {agent}'s task {task.id} was still {task.status.name} after {seconds}"
            with anyio.move_on_after(CANCEL_SECONDS):
                try:
                    await client.cancel_task(CancelTaskRequest(id=task.id))
                    content += "; it was asked to cancel"
                except Exception:  # canceling is a courtesy; the observation says it timed out either way
                    content += "; it could not be asked to cancel"
        return ToolResult(content=content, ok=False, error=f"timed out after {seconds}")

    async def _load_card(self, http: httpx.AsyncClient) -> LoadedCard:
        from a2a.client import A2ACardResolver, AgentCardResolutionError

        where = self.config.card_url()
        resolver = A2ACardResolver(http, self.config.url, agent_card_path=self.config.card_path)
        try:
            card = await resolver.get_agent_card()
        except AgentCardResolutionError as exc:
            raise ToolError(f"the Agent Card at {where} could not be read: {exc.message}") from None
        summary = read_remote(CardSummary, MessageToDict(card), what=f"Agent Card at {where}")
        usable = [
            interface
            for interface in card.supported_interfaces
            if interface.protocol_binding in SPOKEN_BINDINGS and self._on_our_origin(interface.url)
        ]
        if not usable:
            listed = ", ".join(f"{each.protocol_binding} at {each.url}" for each in summary.supported_interfaces)
            raise ToolError(
                f"the Agent Card at {where} offers no JSON-RPC or HTTP+JSON interface on {self._origin} "
                f"(it lists {listed}); only the configured origin is called"
            )
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(usable)
        loaded = LoadedCard(card=card, summary=summary)
        with _CARDS_LOCK:
            _CARDS[self._cache_key()] = loaded
        return loaded

    def _on_our_origin(self, url: str) -> bool:
        try:
            return Origin.of(httpx.URL(url)) == self._origin
        except httpx.InvalidURL:
            return False

    def _cached(self) -> LoadedCard | None:
        with _CARDS_LOCK:
            return _CARDS.get(self._cache_key())

    def _cache_key(self) -> str:
        return self.config.model_dump_json()

    def _http(self) -> httpx.AsyncClient:
        transport = GuardedTransport(
            self._origin,
            internal=self.config.internal,
            host_resolver=self._host_resolver,
            address_policy=self._address_policy,
        )
        return httpx.AsyncClient(
            headers=self._headers(("Accept-Encoding", "identity")),
            timeout=httpx.Timeout(self.config.timeout_seconds),
            transport=transport,
            follow_redirects=False,
            trust_env=False,
        )

    def _run(self, operation: Callable[[], Awaitable[Result]]) -> Result:
        try:
            return run_in_own_loop(operation, thread_name="a2a-call")
        except BaseException as exc:  # anyio wraps task failures in exception groups
            raise self._as_tool_error(innermost(exc)) from None

    def _as_tool_error(self, failure: BaseException) -> BaseException:
        if isinstance(failure, ToolError) or not isinstance(failure, Exception):
            return failure
        url = self.config.url
        if isinstance(failure, TimeoutError):
            return ToolError(f"the A2A agent at {url} did not answer within {self.config.timeout_seconds:g} s")
        from a2a.client import A2AClientError
        from a2a.utils.errors import A2AError

        if isinstance(failure, A2AClientError):
            return ToolError(f"the A2A request to {url} failed: {failure}")
        if isinstance(failure, A2AError):
            return ToolError(f"the A2A agent at {url} answered with an error: {type(failure).__name__}: {failure}")
        return ToolError(f"the A2A request to {url} failed: {type(failure).__name__}: {failure}")
