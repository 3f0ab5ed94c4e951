"""What an MCP server's or A2A agent's configuration may say about the requests Stepwise sends it: fixed
headers that neither smuggle framing nor override the protocol client's own, and a key never in the URL.
"""

from __future__ import annotations

from collections.abc import Callable

from stepwise.config.control_chars import without_control_characters
from stepwise.config.http_api import ApiKeyConfig
from stepwise.config.tool_call_rules import HEADER_NAME, RESERVED_HEADERS


def checked_remote_headers(
    headers: dict[str, str], *, client: str, client_owns: Callable[[str], bool]
) -> dict[str, str]:
    """`headers` unchanged when each is a valid, unreserved name with a printable value; `ValueError` naming
    the header otherwise. `client_owns` says which lower-cased names the `client` protocol client sets."""
    for name, value in headers.items():
        if not HEADER_NAME.fullmatch(name):
            raise ValueError(f"headers: {name!r} is not a valid HTTP header name")
        if name.lower() in RESERVED_HEADERS or client_owns(name.lower()):
            raise ValueError(f"headers: the {name} header is set by the {client} client")
        without_control_characters(value, what=f"headers: the value of {name}")
    return headers


def key_outside_url(key: ApiKeyConfig | None, *, source: str) -> ApiKeyConfig | None:
    """`key` unless it would travel in the query string, where HTTP clients' logs of request URLs keep it."""
    if key is not None and key.location == "query":
        raise ValueError(f"apiKey.in must be 'header' or 'bearer' for {source}")
    return key
