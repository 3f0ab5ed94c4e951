"""Protocol apps mounted beside the API: which paths each takes, and how a front hands a request to one."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from stepwise.interop.api_calls import API_CALLER_STATE, ApiCaller

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
# Loose on purpose: Starlette's and the SDKs' apps each type scope, receive and send their own way.
AsgiApp = Callable[[Any, Any, Any], Awaitable[None]]


@dataclass(frozen=True)
class ProtocolApp:
    """An ASGI app serving one protocol on the paths under `prefixes` (and the exact `paths`)."""

    name: str
    app: AsgiApp
    prefixes: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()

    def takes(self, path: str) -> bool:
        """True when a request for `path` is this protocol's."""
        return path in self.paths or any(path == prefix or path.startswith(prefix + "/") for prefix in self.prefixes)


def mounted_app(apps: list[ProtocolApp], path: str) -> ProtocolApp | None:
    """The protocol app that takes `path`, None when the API itself does."""
    return next((each for each in apps if each.takes(path)), None)


async def serve_mounted(
    mounted: ProtocolApp, scope: Scope, receive: Receive, send: Send, caller: ApiCaller, *, max_body_bytes: int
) -> None:
    """Hand one request to `mounted`, with its `ApiCaller` in the scope's state and its body bounded.

    A body over `max_body_bytes` (declared or as it arrives) is answered 413 before the app sees it whole,
    as the API's own routes are.
    """
    declared = next((value for name, value in scope.get("headers", []) if name.lower() == b"content-length"), None)
    if declared is not None and declared.isdigit() and int(declared) > max_body_bytes:
        await _too_large(send, max_body_bytes)
        return
    received = 0

    async def bounded_receive() -> MutableMapping[str, Any]:
        nonlocal received
        message = await receive()
        received += len(message.get("body", b""))
        if received > max_body_bytes:
            raise _BodyTooLarge
        return message

    state = {**(scope.get("state") or {}), API_CALLER_STATE: caller}
    try:
        await mounted.app({**scope, "state": state}, bounded_receive, send)
    except _BodyTooLarge:
        await _too_large(send, max_body_bytes)


class _BodyTooLarge(Exception):
    """A mounted app's request body passed the front's limit while the app read it."""


async def _too_large(send: Send, limit: int) -> None:
    body = b'{"error":{"type":"payload_too_large","message":"the body is over ' + str(limit).encode() + b' bytes"}}'
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json"), (b"connection", b"close")],
        }
    )
    await send({"type": "http.response.body", "body": body})
