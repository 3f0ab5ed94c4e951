"""How tools are offered to a model and how its output is read back into one `Decision`.

``resolve_protocol`` picks a protocol from a profile's strategy, ``get_protocol`` gives it; a protocol
builds the `ChatRequest` for a model call and parses the `Completion` into tool calls, a final answer or
a parse error. ``parse_completion`` reads any completion (text, `Completion`, provider response dict),
detecting the protocol when asked to, and never raises.

The names below are imported from their modules when first used: importing one module of the package
(a Lambda handler's `think_blocks`, say) does not load every protocol's parser.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stepwise.protocols.base import TEXT_PROTOCOLS, Protocol, ProtocolName
    from stepwise.protocols.lenient_json import load_lenient
    from stepwise.protocols.parse import detect_protocol, parse_completion
    from stepwise.protocols.provider_responses import completion_from_response
    from stepwise.protocols.registry import Strategy, get_protocol, resolve_protocol

_EXPORTS = {
    "TEXT_PROTOCOLS": "base",
    "Protocol": "base",
    "ProtocolName": "base",
    "Strategy": "registry",
    "completion_from_response": "provider_responses",
    "detect_protocol": "parse",
    "get_protocol": "registry",
    "load_lenient": "lenient_json",
    "parse_completion": "parse",
    "resolve_protocol": "registry",
}

__all__ = [
    "TEXT_PROTOCOLS",
    "Protocol",
    "ProtocolName",
    "Strategy",
    "completion_from_response",
    "detect_protocol",
    "get_protocol",
    "load_lenient",
    "parse_completion",
    "resolve_protocol",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
