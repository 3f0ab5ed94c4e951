"""How tools are offered to a model and how its output is read back into one `Decision`.

``resolve_protocol`` picks a protocol from a profile's strategy, ``get_protocol`` gives it; a protocol
builds the `ChatRequest` for a model call and parses the `Completion` into tool calls, a final answer or
a parse error. ``parse_completion`` reads any completion (text, `Completion`, provider response dict),
detecting the protocol when asked to, and never raises.
"""

from stepwise.protocols.base import TEXT_PROTOCOLS, Protocol, ProtocolName
from stepwise.protocols.lenient_json import load_lenient
from stepwise.protocols.parse import detect_protocol, parse_completion
from stepwise.protocols.provider_responses import completion_from_response
from stepwise.protocols.registry import Strategy, get_protocol, resolve_protocol

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
