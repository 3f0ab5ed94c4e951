"""The mark a streaming front puts on a chat request it streams itself (`stepwise.streaming.routes`).

Kept apart from the chat stream (`chat_stream`), which loads the chat facade, so the request's span can
read the mark without it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# a key API Gateway never sets in `requestContext`
STREAM_MARK = "stepwiseStreamsChat"


def is_marked(event: Mapping[str, Any]) -> bool:
    """Whether a streaming front sent this request, and answers its client itself."""
    context = event.get("requestContext") or {}
    return isinstance(context, Mapping) and context.get(STREAM_MARK) is True
