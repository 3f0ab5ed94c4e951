"""Stdio MCP servers as long-lived processes: one per configured server per process, shared by every call.

Starting a stdio server costs about a second (an interpreter or Node starting up); started per call, it
made a run with four calls spend ten seconds starting servers. So each configured server (its command,
args, env and cwd) gets one process per Python process — one per Lambda container on AWS — started on
first use and reused by every listing and call, from any thread:

- the process and its MCP session live in a background thread's event loop; a call is a task on that
  loop, so parallel calls share the session (MCP requests carry their own ids);
- a process that exits (crashes, or is killed) is noticed when its output ends, and the next call starts
  a new one; a call in flight when it died fails saying so, and is not repeated (it may have acted);
- a process unused for ``idleTimeoutSeconds`` is stopped, and started again when next needed;
- every process is stopped when the Python process exits; if that is killed instead, the server's stdin
  ends with it, and an MCP stdio server exits at the end of its input.

Written here, not taken from the SDK: the SDK's ``stdio_client`` is a context manager scoped to one task,
and holding it open in such a task between calls is what a long-lived session needs; the transport, the
session and the protocol are the SDK's.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextvars
import os
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from stepwise.config.mcp_source import McpServerConfig

if TYPE_CHECKING:
    from mcp import Client

Result = TypeVar("Result")

MAX_STDERR_QUOTE = 500
_STOP_TIMEOUT_SECONDS = 5.0


class ServerStopped(Exception):
    """The server process ended while (or before) a call was using it."""


class _DeadBeforeCall(Exception):
    """The process was found gone before the call was sent."""


class StdioServer:
    """One stdio MCP server process and its session, kept open between calls (see the module docstring)."""

    def __init__(self, config: McpServerConfig, environment: Callable[[], dict[str, str]]) -> None:
        self.config = config
        self._environment = environment
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-stdio", daemon=True)
        self._thread.start()
        self._session: _Session | None = None
        self._in_flight = 0
        self._last_used = time.monotonic()
        self._idle_watch: asyncio.TimerHandle | None = None

    def run(self, operation: Callable[[Client], Awaitable[Result]], *, timeout: float) -> Result:
        """Run ``operation`` on the server's session, starting the server if it is not running.

        A server found dead before the call is sent (its process has exited) is started again, once.
        """
        deadline = time.monotonic() + timeout
        with self._lock:
            self._in_flight += 1
        try:
            for attempt in (1, 2):
                session = self._current_session()
                future = asyncio.run_coroutine_threadsafe(
                    _within(contextvars.copy_context(), session.call(operation)), self._loop
                )
                try:
                    return future.result(max(deadline - time.monotonic(), 0.0))
                except _DeadBeforeCall:
                    if attempt == 2:
                        raise ServerStopped("the stdio MCP server exited before it answered") from None
                except TimeoutError:
                    future.cancel()
                    raise
            raise AssertionError("unreachable")
        finally:
            with self._lock:
                self._in_flight -= 1
                self._last_used = time.monotonic()
            self._loop.call_soon_threadsafe(self._schedule_idle_stop)

    def _current_session(self) -> _Session:
        """The running session, or a new one (its process starting) when there is none or it ended."""
        with self._lock:
            session = self._session
            if session is None or session.ended:
                if session is not None:
                    asyncio.run_coroutine_threadsafe(session.close(), self._loop)
                session = self._session = _Session(self.config, self._environment())
                session.holder = asyncio.run_coroutine_threadsafe(session.open(), self._loop)
            return session

    def stderr_tail(self) -> str:
        """The end of what the current (or last) process wrote to stderr, bounded."""
        session = self._session
        return session.stderr_tail() if session is not None else ""

    def stop(self) -> None:
        """Stop the process (if any) and the loop thread, for good (`StdioServers` forgets the server)."""
        with self._lock:
            session, self._session = self._session, None
        if session is not None:
            asyncio.run_coroutine_threadsafe(session.close(), self._loop).result(_STOP_TIMEOUT_SECONDS)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(_STOP_TIMEOUT_SECONDS)

    def _schedule_idle_stop(self) -> None:
        if self._idle_watch is not None:
            self._idle_watch.cancel()
        self._idle_watch = self._loop.call_later(self.config.idle_timeout_seconds, self._stop_if_idle)

    def _stop_if_idle(self) -> None:
        with self._lock:
            idle = time.monotonic() - self._last_used >= self.config.idle_timeout_seconds
            if not idle or self._in_flight or self._session is None:
                return
            session, self._session = self._session, None
        self._loop.create_task(session.close())


async def _within(context: contextvars.Context, call: Coroutine[Any, Any, Result]) -> Result:
    """`call` run on the loop's thread in the caller's `context`, so what it records (the MCP SDK's spans)
    joins the caller's trace, under the tool call's span."""
    return await asyncio.get_running_loop().create_task(call, context=context)


class _Session:
    """One process's life: opened by a task that holds the SDK's context managers until `close`."""

    def __init__(self, config: McpServerConfig, environment: dict[str, str]) -> None:
        self._config = config
        self._environment = environment
        self.holder: concurrent.futures.Future[None] | None = None
        self.ended = False
        # the server's process id, where Linux's /proc tells it (None elsewhere: then a death is noticed
        # only when the server's output ends)
        self.pid: int | None = None
        self._client: Client | None = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._failure: BaseException | None = None
        # open for the life of the process, closed by close()
        self._stderr: TextIO = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115

    async def open(self) -> None:
        """Start the process and hold its session open until `close` (or until the process ends)."""
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters, stdio_client

        config = self._config
        parameters = StdioServerParameters(
            command=config.command or "", args=config.args, env=self._environment or None, cwd=config.cwd
        )
        try:
            async with AsyncExitStack() as stack:
                transport = _watched(stdio_client(parameters, errlog=self._stderr), self._mark_ended)
                client = Client(transport, read_timeout_seconds=config.timeout_seconds, cache=None)
                before = _children_of_this_thread()
                self._client = await stack.enter_async_context(client)
                started = _children_of_this_thread() - before
                self.pid = started.pop() if len(started) == 1 else None
                self._ready.set()
                await self._closing.wait()
        except Exception as exc:  # the process could not be started, or its session broke
            self._failure = exc
        finally:
            self._mark_ended()
            self._ready.set()

    def _mark_ended(self) -> None:
        self.ended = True
        self._client = None

    async def wait_ready(self) -> None:
        """Wait until the session is open; raise what prevented it."""
        await self._ready.wait()
        if self._client is None:
            raise self._failure or ServerStopped("the stdio MCP server exited before it answered")

    async def call(self, operation: Callable[[Client], Awaitable[Result]]) -> Result:
        """Run ``operation`` on the session; `ServerStopped` when the process is gone.

        The process is looked at first, to tell one that died since the last call (`_DeadBeforeCall`)
        from one that dies during this one: the first may be started again and the call sent, the second
        may have acted. (MCP's ping is gone from the protocol since 2026-07-28, so it cannot be asked.)
        """
        await self.wait_ready()
        client = self._client
        assert client is not None
        if self.pid is not None and not _running(self.pid):
            self._mark_ended()
            raise _DeadBeforeCall
        try:
            return await operation(client)
        except Exception:
            if self.ended:
                raise ServerStopped("the stdio MCP server exited during the call") from None
            raise

    async def close(self) -> None:
        """End the session: the SDK closes the server's stdin and ends the process."""
        self._closing.set()
        if self.holder is not None:
            await asyncio.wrap_future(self.holder)
        self._stderr.close()

    def stderr_tail(self) -> str:
        """The end of what the process wrote to stderr."""
        try:
            self._stderr.seek(0, 2)
            self._stderr.seek(max(self._stderr.tell() - 4 * MAX_STDERR_QUOTE, 0))
            return self._stderr.read().strip()[-MAX_STDERR_QUOTE:]
        except (OSError, ValueError):
            return ""


def _children_of_this_thread() -> set[int]:
    """The processes this thread started that have not been reaped (Linux /proc; empty elsewhere).

    Each `StdioServer` starts its processes from its own loop thread, so a new one here is its server.
    """
    try:
        text = Path(f"/proc/self/task/{threading.get_native_id()}/children").read_text(encoding="ascii")
    except OSError:
        return set()
    return {int(pid) for pid in text.split()}


def _running(pid: int) -> bool:
    """Whether process ``pid`` is still running (not gone, not a zombie waiting to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@asynccontextmanager
async def _watched(transport: Any, on_end: Callable[[], None]) -> AsyncIterator[tuple[Any, Any]]:
    """The transport's streams, its read stream telling ``on_end`` when the server's output ends."""
    async with transport as (read_stream, write_stream):
        yield _EndWatchingStream(read_stream, on_end), write_stream


class _EndWatchingStream:
    """A receive stream that calls ``on_end`` at its end (the process exited) before the session sees it."""

    def __init__(self, stream: Any, on_end: Callable[[], None]) -> None:
        self._stream = stream
        self._on_end = on_end

    async def __aenter__(self) -> _EndWatchingStream:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> Any:
        self._on_end()
        return await self._stream.__aexit__(*exc_info)

    def __aiter__(self) -> _EndWatchingStream:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self._stream.__anext__()
        except (StopAsyncIteration, anyio.EndOfStream, anyio.ClosedResourceError):
            self._on_end()
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class StdioServers:
    """The process's stdio servers, one per configured server, stopped when the process exits."""

    def __init__(self) -> None:
        self._servers: dict[str, StdioServer] = {}
        self._lock = threading.Lock()

    def server_for(self, config: McpServerConfig, environment: Callable[[], dict[str, str]]) -> StdioServer:
        """The server of ``config``'s command line, env and cwd; created (not yet started) on first use."""
        key = config.model_dump_json(include={"command", "args", "env", "cwd"})
        with self._lock:
            server = self._servers.get(key)
            if server is None:
                server = self._servers[key] = StdioServer(config, environment)
            return server

    def forget_after_fork(self) -> None:
        """In a forked child: the servers and their loop threads are the parent's, so start afresh."""
        self._servers = {}
        self._lock = threading.Lock()

    def stop_all(self) -> None:
        """Stop every server (at exit, and in tests)."""
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            server.stop()


STDIO_SERVERS = StdioServers()
atexit.register(STDIO_SERVERS.stop_all)
os.register_at_fork(after_in_child=STDIO_SERVERS.forget_after_fork)
