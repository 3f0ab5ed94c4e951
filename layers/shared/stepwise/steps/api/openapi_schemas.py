"""OpenAPI schemas of the streamed answers, which no pydantic model describes: one server-sent event each."""

from __future__ import annotations

from typing import Any

# One server-sent event of a streamed completion, as an OpenAPI 3.1 `text/event-stream` schema describes it
# (each event, not the stream as a whole).
CHUNK_EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["data"],
    "properties": {
        "data": {"type": "string", "description": "A `chat.completion.chunk` as JSON; the last event is `[DONE]`."}
    },
}

STEP_EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["data"],
    "properties": {
        "event": {"type": "string", "enum": ["step", "end"]},
        "id": {"type": "string", "description": "The cursor after this step (on the last step of a read)."},
        "data": {"type": "string", "description": "The step as JSON; for `end`, the run id and final status."},
    },
}
