"""Streams opened and left at once, over raw sockets: what a client that goes away sends to `stepwise serve`.

Shared by the held-connections test and `bench/abandoned_streams.py`, so both abandon the same requests.
"""

from __future__ import annotations

import asyncio
import json

from stepwise.local.server import LocalApi
from stepwise.models.messages import ChatMessage
from stepwise.steps.runs import create_run


def open_run(api: LocalApi, owner: str, profile: str) -> str:
    """A run of `owner` that stays open: stored QUEUED, never started."""
    messages = [ChatMessage(role="user", content="Hold on.")]
    return create_run(api.environment.runtime, messages=messages, owner=owner, profile=profile).run_id


def follow_request(run_id: str, key: str) -> bytes:
    """`GET /v1/runs/{run_id}/events` as server-sent events, for the caller `key`."""
    return (
        f"GET /v1/runs/{run_id}/events HTTP/1.1\r\nHost: x\r\nx-api-key: {key}\r\nAccept: text/event-stream\r\n\r\n"
    ).encode()


def chat_request(key: str, model: str) -> bytes:
    """A streamed chat completion of `model`, for the caller `key`."""
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "Hi?"}], "stream": True})
    return (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nx-api-key: {key}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n{body}"
    ).encode()


def port_of(api: LocalApi) -> int:
    """The loopback port `api` serves on."""
    return int(api.url.rsplit(":", 1)[1])


def status_of(answer: bytes) -> int:
    """The HTTP status of an answer's head."""
    return int(answer.split(b" ", 2)[1])


async def read_once_and_leave(port: int, request: bytes, timeout: float = 60) -> bytes:
    """Send `request`, read what first comes back (at least the answer's head), and close the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    first = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
    writer.close()
    return first
