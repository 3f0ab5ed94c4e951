"""How messages, trace steps and META are laid out as DynamoDB items, and read back."""

from __future__ import annotations

import json
from typing import Any

from stepwise.models.messages import ChatMessage, ImageInput, ReasoningBlock, ToolCall
from stepwise.models.run import RunMeta, StoredMessage
from stepwise.models.step_record import StepRecord
from stepwise.store import keys


def message_item(run_id: str, iteration: int, slot: int, message: ChatMessage, expires_at: int) -> dict[str, Any]:
    """The item of one message, under the key its (iteration, slot) gives; an assistant message's reasoning,
    signatures included, is its `reasoning` attribute (JSON text, as the blocks must come back unchanged)."""
    return {
        "pk": keys.run_pk(run_id),
        "sk": keys.message_sk(iteration, slot),
        "role": message.role,
        "content": message.content,
        # unescaped: a call's arguments in other scripts take their UTF-8 size, not six bytes a character
        "tool_calls": json.dumps([call.model_dump() for call in message.tool_calls], ensure_ascii=False)
        if message.tool_calls
        else None,
        "tool_call_id": message.tool_call_id,
        "name": message.name,
        # as JSON text, as tool calls are: one attribute, read back whole
        "images": json.dumps([image.model_dump(exclude_none=True) for image in message.images])
        if message.images
        else None,
        # the blocks must come back as they were signed: JSON text too
        "reasoning": json.dumps(
            [block.model_dump(exclude_none=True) for block in message.reasoning], ensure_ascii=False
        )
        if message.reasoning
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


def meta_item(meta: RunMeta) -> dict[str, Any]:
    """The META item of a run; its request options and structured output as JSON text (client schemas may
    hold nulls and keys DynamoDB maps would not keep as sent)."""
    item = meta.model_dump(exclude_none=True, exclude={"options", "output"}) | {
        "pk": keys.run_pk(meta.run_id),
        "sk": keys.META_SK,
        "run_order": keys.run_order(meta.created_at, meta.run_id),
    }
    if meta.options is not None:
        item["options"] = meta.options.model_dump_json()
    if meta.output is not None:
        item["output"] = json.dumps(meta.output)
    return item


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
        reasoning=to_reasoning(item),
        iteration=int(iteration),
        slot=int(slot),
    )


def to_reasoning(item: dict[str, Any]) -> list[ReasoningBlock]:
    """The reasoning blocks a message item holds (none for most)."""
    return [ReasoningBlock.model_validate(block) for block in json.loads(item.get("reasoning") or "[]")]


def to_meta(item: dict[str, Any]) -> RunMeta:
    """A META item read back."""
    fields = {key: value for key, value in item.items() if key not in ("pk", "sk", "run_order")}
    if "output" in fields:
        fields["output"] = json.loads(fields["output"])
    if "options" in fields:
        fields["options"] = json.loads(fields["options"])
    return RunMeta.model_validate(fields)
