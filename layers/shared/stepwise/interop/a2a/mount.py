"""The A2A protocol app as the fronts mount it, its SDK loaded by the first A2A request.

The SDK and its Starlette routes take a second or more to import: neither `stepwise serve` nor the
streaming function pays for them unless A2A is used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from stepwise.interop.a2a.paths import A2A_PREFIX, AGENT_CARD_PATH
from stepwise.interop.mounts import AsgiApp, ProtocolApp

if TYPE_CHECKING:
    from stepwise.config.model import StepwiseConfig


def a2a_protocol_app(config: Callable[[], StepwiseConfig]) -> ProtocolApp:
    """The A2A protocol, mounted on `/a2a` and the root's Agent Card."""
    return ProtocolApp("a2a", _LoadedOnFirstRequest(config), prefixes=(A2A_PREFIX,), paths=(AGENT_CARD_PATH,))


class _LoadedOnFirstRequest:
    """The A2A app (`stepwise.interop.a2a.app`), built when the first request needs it."""

    def __init__(self, config: Callable[[], StepwiseConfig]) -> None:
        self._config = config
        self._app: AsgiApp | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self._app is None:
            from stepwise.interop.a2a.app import a2a_app

            self._app = a2a_app(self._config)
        await self._app(scope, receive, send)
