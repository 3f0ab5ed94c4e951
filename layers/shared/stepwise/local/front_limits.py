"""The limits of `stepwise serve`'s HTTP front (`http_front.py`), and the uvicorn protocol that bounds the
time a request head may take."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


@dataclass(frozen=True)
class FrontLimits:
    """The limits of the HTTP front (see `http_front`); `stepwise serve` takes the defaults but
    for `max_body_bytes` (`api.max_body_bytes`) and the workers (its API function instances).

    - `max_body_bytes`: larger bodies are 413 (262,144).
    - `read_timeout_seconds`: for a request head from the connection's opening (or the previous answer),
      and for its whole body from the end of the head (10 s).
    - `idle_timeout_seconds`: a kept-alive connection with no request (5 s).
    - `workers`: threads running the API function (8); `waiting_workers`: slots for requests that wait
      for a run, chat completions (8, 503 past them).
    - `max_connections`: open connections and requests in progress (512, 503 past them).
    - `max_streams`: streams open at once, run events as SSE and streamed chat completions (32; 503 past
      them). Each polls the store five times a second on a thread of its own: on DynamoDB Local 32 make
      a request that reads the store about 40% slower and leave `GET /v1/models` under 0.2 s, where 64
      pass seconds (docs/performance.md, "Streams under `stepwise serve`").
    - `max_streams_per_owner`: streams of one caller (8), so one key cannot take them all.
    """

    max_body_bytes: int = 262_144
    read_timeout_seconds: float = 10.0
    idle_timeout_seconds: float = 5.0
    workers: int = 8
    waiting_workers: int = 8
    max_connections: int = 512
    max_streams: int = 32
    max_streams_per_owner: int = 8


class HeadTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request head has not arrived in time.

    uvicorn times out idle keep-alive connections, but any byte received cancels that timer, so a client
    that connects and sends nothing first, or sends its head byte by byte, would hold a connection slot
    forever. Here a timer runs from the moment a connection opens (and again after each response); if
    the parser is still waiting for a whole request head when it fires, the connection is closed.
    """

    head_timeout_seconds = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm_head_timer()

    def _arm_head_timer(self) -> None:
        previous: asyncio.TimerHandle | None = getattr(self, "_head_timer", None)
        if previous is not None:
            previous.cancel()
        self._head_timer = self.loop.call_later(self.head_timeout_seconds, self._head_timed_out)

    def _head_timed_out(self) -> None:
        waiting_for_head = self.conn.their_state is h11.IDLE and (self.cycle is None or self.cycle.response_complete)
        if waiting_for_head and not self.transport.is_closing():
            self.timeout_keep_alive_handler()
