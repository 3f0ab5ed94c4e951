"""Choosing a protocol: a profile's strategy and the model's abilities name one; names give instances."""

from __future__ import annotations

from typing import Literal

from stepwise.protocols.base import TEXT_PROTOCOLS, Protocol, ProtocolName
from stepwise.protocols.function_calling import FunctionCallingProtocol
from stepwise.protocols.markers import MarkersProtocol
from stepwise.protocols.react_json import ReactJsonProtocol
from stepwise.protocols.react_text import ReactTextProtocol
from stepwise.protocols.xml_tags import XmlTagsProtocol

Strategy = Literal["function_calling", "react", "auto"]
DEFAULT_TEXT_PROTOCOL: ProtocolName = "react_json"

# Protocols hold no state, so one instance of each serves every call.
_PROTOCOLS: dict[str, Protocol] = {
    protocol.name: protocol
    for protocol in (
        FunctionCallingProtocol(),
        ReactJsonProtocol(),
        ReactTextProtocol(),
        XmlTagsProtocol(),
        MarkersProtocol(),
    )
}


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
    try:
        return _PROTOCOLS[name]
    except KeyError:
        raise ValueError(f"unknown protocol {name!r}: expected one of {', '.join(_PROTOCOLS)}") from None


def find_protocol(name: str) -> Protocol | None:
    """The protocol called `name`, or None when there is none."""
    return _PROTOCOLS.get(name)
