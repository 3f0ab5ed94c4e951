"""How messages, trace steps and META are laid out as DynamoDB items, and read back."""

from __future__ import annotations

import json
from typing import Any

from stepwise.models.messages import ChatMessage, ImageInput, ToolCall
from stepwise.models.run import RunMeta, StepRecord, StoredMessage
from stepwise.store import keys


def message_item(run_id: str, iteration: int, slot: int, message: ChatMessage, expires_at: int) -> dict[str, Any]:
    """The item of one message, under the key its (iteration, slot) gives."""
    return {
        "pk": keys.run_pk(run_id),
        "sk": keys.message_sk(iteration, slot),
        "role": message.role,
        "content": message.content,
        "tool_calls": json.dumps([call.model_dump() for call in message.tool_calls]) if message.tool_calls else None,
        "tool_call_id": message.tool_call_id,
        "name": message.name,
        # as JSON text, as tool calls are: one attribute, read back whole
        "images": json.dumps([image.model_dump(exclude_none=True) for image in message.images])
        if message.images
        else None,
        "expires_at": expires_at,
    }


def step_item(run_id: str, step: StepRecord, expires_at: int) -> dict[str, Any]:
    """The item of one trace step."""
    return {
        "pk": keys.run_pk(run_id),
        "sk": keys.step_sk(step.iteration, step.kind, step.n),
        "data": step.model_dump_json(exclude_none=True),
        "expires_at": expires_at,
    }


def to_message(item: dict[str, Any]) -> StoredMessage:
    """A message item read back, with the (iteration, slot) of its key."""
    _, iteration, slot = item["sk"].split("#")
    calls = [ToolCall.model_validate(call) for call in json.loads(item.get("tool_calls") or "[]")]
    images = [ImageInput.model_validate(image) for image in json.loads(item.get("images") or "[]")]
    return StoredMessage(
        role=item["role"],
        content=item.get("content", ""),
        tool_calls=calls,
        images=images,
        tool_call_id=item.get("tool_call_id"),
        name=item.get("name"),
        iteration=int(iteration),
        slot=int(slot),
    )


def to_meta(item: dict[str, Any]) -> RunMeta:
    """A META item read back."""
    fields = {key: value for key, value in item.items() if key not in ("pk", "sk", "run_order")}
    if "output" in fields:
        fields["output"] = json.loads(fields["output"])
    if "options" in fields:
        fields["options"] = json.loads(fields["options"])
    return RunMeta.model_validate(fields)
