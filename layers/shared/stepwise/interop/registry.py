"""The protocol apps served beside the API, in the order a request's path is matched against them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from stepwise.interop.a2a.mount import a2a_protocol_app
from stepwise.interop.mcp_server import mcp_protocol
from stepwise.interop.mounts import ProtocolApp

if TYPE_CHECKING:
    from stepwise.config.model import StepwiseConfig


def protocol_apps(config: Callable[[], StepwiseConfig]) -> list[ProtocolApp]:
    """Every protocol app, built on the configuration `config` gives (read when a request needs it)."""
    return [a2a_protocol_app(config), mcp_protocol(config)]
