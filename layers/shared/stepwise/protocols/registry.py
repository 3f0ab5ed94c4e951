"""Choosing a protocol: a profile's strategy and the model's abilities name one; names give instances."""

from __future__ import annotations

import functools
import importlib
from typing import Literal

from stepwise.protocols.base import TEXT_PROTOCOLS, Protocol, ProtocolName

Strategy = Literal["function_calling", "react", "auto"]
DEFAULT_TEXT_PROTOCOL: ProtocolName = "react_json"

# Each protocol's module and class. A function imports only the protocols its runs use (a profile of native
# tool calls never loads a text parser), each when first asked for; protocols hold no state, so one instance
# of each serves every call.
_PROTOCOL_CLASSES: dict[str, tuple[str, str]] = {
    "function_calling": ("stepwise.protocols.function_calling", "FunctionCallingProtocol"),
    "react_json": ("stepwise.protocols.react_json", "ReactJsonProtocol"),
    "react_text": ("stepwise.protocols.react_text", "ReactTextProtocol"),
    "xml": ("stepwise.protocols.xml_tags", "XmlTagsProtocol"),
    "markers": ("stepwise.protocols.markers", "MarkersProtocol"),
}


@functools.cache
def _instance(name: str) -> Protocol:
    module, cls = _PROTOCOL_CLASSES[name]
    protocol: Protocol = getattr(importlib.import_module(module), cls)()
    return protocol


def resolve_protocol(strategy: Strategy, protocol: ProtocolName | None, supports_native_tools: bool) -> ProtocolName:
    """The protocol a profile uses.

    ``function_calling`` uses the native tools API; ``react`` uses `protocol` (a text protocol,
    ``react_json`` when unset); ``auto`` uses the native API when the model supports tools, else the
    text protocol `protocol` names (``react_json`` when unset or when it names ``function_calling``).
    Raises ValueError for an unknown strategy or a ``react`` strategy given a non-text protocol.
    """
    if strategy == "function_calling":
        return "function_calling"
    if strategy == "react":
        if protocol is None:
            return DEFAULT_TEXT_PROTOCOL
        if protocol not in TEXT_PROTOCOLS:
            raise ValueError(f"strategy 'react' needs a text protocol ({', '.join(TEXT_PROTOCOLS)}), got {protocol!r}")
        return protocol
    if strategy == "auto":
        if supports_native_tools:
            return "function_calling"
        return protocol if protocol in TEXT_PROTOCOLS and protocol is not None else DEFAULT_TEXT_PROTOCOL
    raise ValueError(f"unknown strategy {strategy!r}: expected function_calling, react or auto")


def get_protocol(name: ProtocolName) -> Protocol:
    """The protocol called `name`; raises ValueError for an unknown name."""
    if name not in _PROTOCOL_CLASSES:
        raise ValueError(f"unknown protocol {name!r}: expected one of {', '.join(_PROTOCOL_CLASSES)}")
    return _instance(name)


def find_protocol(name: str) -> Protocol | None:
    """The protocol called `name`, or None when there is none."""
    return _instance(name) if name in _PROTOCOL_CLASSES else None
