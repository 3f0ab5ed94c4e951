"""Reading a run's trace: the steps its model calls, decisions and tool calls recorded, in order.

The model's and the tools' steps are carried by their messages (attribute `trace`); a model message's
reasoning (attribute `reasoning`) is shown as the `reasoning` step after its call; Parse decisions are
`STEP#` items. Format, which needs the whole run, reads its partition in one Query: META, the messages
with their steps and the decisions together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from stepwise.models.messages import ReasoningBlock
from stepwise.models.run import StoredMessage
from stepwise.models.step_record import STEP_KIND_ORDER, StepRecord
from stepwise.store import keys
from stepwise.store.codec import serialize_value
from stepwise.store.history import MESSAGE_ATTRIBUTES, message_projection
from stepwise.store.items import to_message, to_reasoning

QueryItems = Callable[[dict[str, Any]], Iterator[dict[str, Any]]]
"""Runs one Query (its parameters besides the table) and yields its items, deserialized, across pages."""

GetItem = Callable[[dict[str, Any]], dict[str, Any] | None]
"""Reads one item (GetItem parameters besides the table), deserialized; None when it is not stored."""

_TRACE = {
    "ProjectionExpression": "#sk, #trace, #reasoning",
    "ExpressionAttributeNames": {"#sk": "sk", "#trace": "trace", "#reasoning": "reasoning"},
}
_DECISIONS = {"ProjectionExpression": "#data", "ExpressionAttributeNames": {"#data": "data"}}
_MESSAGES_WITH_TRACE = message_projection((*MESSAGE_ATTRIBUTES, "trace"))


@dataclass
class RunRecord:
    """A run's messages and its trace, as one read found them."""

    messages: list[StoredMessage] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)


@dataclass
class RunPartition:
    """Every item of a run as one Query found them: its META item (None when not stored), its decisions by
    sort key, and its messages and trace."""

    meta: dict[str, Any] | None
    decisions: dict[str, StepRecord]
    record: RunRecord


def _between(pk: str, start: str, end: str, attributes: dict[str, Any]) -> dict[str, Any]:
    """Query parameters for the items of `pk` whose sort key is from `start` to `end` (only `attributes`)."""
    whole = items_between(pk, start, end)
    return whole | {
        "ExpressionAttributeNames": whole["ExpressionAttributeNames"] | attributes["ExpressionAttributeNames"],
        "ProjectionExpression": attributes["ProjectionExpression"],
    }


def items_between(pk: str, start: str, end: str) -> dict[str, Any]:
    """Query parameters for the whole items of `pk` whose sort key is from `start` to `end`."""
    return {
        "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :start AND :end",
        "ExpressionAttributeValues": {
            ":pk": serialize_value(pk),
            ":start": serialize_value(start),
            ":end": serialize_value(end),
        },
        "ExpressionAttributeNames": {"#pk": "pk", "#sk": "sk"},
        "ConsistentRead": True,
    }


def _from(pk: str, prefix: str, start: str, attributes: dict[str, Any]) -> dict[str, Any]:
    # "~" sorts after every character a key of this table uses after its prefix
    return _between(pk, start, f"{prefix}~", attributes)


def _ordered(message_items: Iterable[dict[str, Any]], step_items: Iterable[dict[str, Any]]) -> list[StepRecord]:
    return _in_order(message_items, [StepRecord.model_validate_json(item["data"]) for item in step_items])


def _in_order(message_items: Iterable[dict[str, Any]], decisions: Iterable[StepRecord]) -> list[StepRecord]:
    steps: list[StepRecord] = []
    for item in message_items:
        if "trace" in item:
            step = StepRecord.model_validate_json(item["trace"])
            steps.append(step)
            if step.kind == "llm" and "reasoning" in item:
                steps.append(reasoning_step(step.iteration, to_reasoning(item)))
    return sorted([*steps, *decisions], key=step_order)


def step_order(step: StepRecord) -> tuple[int, int, int]:
    """Where a step comes in its run: by iteration, then the model call, its reasoning, the decision, the
    tool calls (by `n`) and the formatting."""
    return step.iteration, STEP_KIND_ORDER[step.kind], -1 if step.n is None else step.n


def reasoning_step(iteration: int, blocks: list[ReasoningBlock]) -> StepRecord:
    """The trace step showing what the model thought before its message: the text it showed, and how many
    blocks the provider encrypted (shown as such, never as text)."""
    text = "\n\n".join(block.text for block in blocks if block.text)
    redacted = sum(1 for block in blocks if block.redacted)
    signed = sum(1 for block in blocks if block.signature)
    notes = [f"{redacted} redacted block(s), encrypted by the provider" if redacted else ""]
    notes.append(f"{signed} signed block(s), sent back with the turn's tool results" if signed else "")
    return StepRecord(
        iteration=iteration, kind="reasoning", thought=text or None, note="; ".join(filter(None, notes)) or None
    )


class TraceReader:
    """The trace reads of one table, through the store's own Query and GetItem."""

    def __init__(self, query: QueryItems, get_item: GetItem) -> None:
        self._query = query
        self._get_item = get_item

    def list_steps(
        self, run_id: str, *, iteration: int | None = None, since_iteration: int | None = None
    ) -> list[StepRecord]:
        """The trace of a run in order; only the steps of one `iteration`, or of `since_iteration` and after.

        The decisions are read before the messages. A run stores each iteration's model message before its
        decision, so a decision this read finds always comes with its model message; what was stored between
        the two Queries can only add messages that follow a decision not found (see `events.deliverable_steps`).
        """
        pk = keys.run_pk(run_id)
        if iteration is not None:
            message_prefix, step_prefix = keys.message_prefix(iteration), keys.step_prefix(iteration)
        else:
            message_prefix, step_prefix = keys.MESSAGE_PREFIX, keys.STEP_PREFIX
        message_start, step_start = message_prefix, step_prefix
        if since_iteration is not None:
            # a follower that delivered earlier iterations reads what is new, not the whole trace again
            message_start, step_start = keys.message_prefix(since_iteration), keys.step_prefix(since_iteration)
        step_items = list(self._query(_from(pk, step_prefix, step_start, _DECISIONS)))
        message_items = self._query(_from(pk, message_prefix, message_start, _TRACE))
        return _ordered(message_items, step_items)

    def partition(self, run_id: str) -> RunPartition:
        """Every item of the run, in one Query (no projection: META and the messages are read whole), but the
        whole tool results kept apart (`stepwise.store.tool_outputs`), whose keys sort after all the others."""
        parameters = {
            "KeyConditionExpression": "#pk = :pk AND #sk < :outputs",
            "ExpressionAttributeNames": {"#pk": "pk", "#sk": "sk"},
            "ExpressionAttributeValues": {
                ":pk": serialize_value(keys.run_pk(run_id)),
                ":outputs": serialize_value(keys.TOOL_OUTPUT_PREFIX),
            },
            "ConsistentRead": True,
        }
        meta: dict[str, Any] | None = None
        message_items: list[dict[str, Any]] = []
        decisions: dict[str, StepRecord] = {}
        for item in self._query(parameters):
            sort_key = item["sk"]
            if sort_key == keys.META_SK:
                meta = item
            elif sort_key.startswith(keys.MESSAGE_PREFIX):
                message_items.append(item)
            elif sort_key.startswith(keys.STEP_PREFIX):
                decisions[sort_key] = StepRecord.model_validate_json(item["data"])
        record = RunRecord([to_message(item) for item in message_items], _in_order(message_items, decisions.values()))
        return RunPartition(meta, decisions, record)

    def stored_message(self, run_id: str, iteration: int, slot: int) -> tuple[StoredMessage, StepRecord | None] | None:
        """One stored message and the step it carries, in one GetItem; None when it is not stored."""
        item = self._get_item(
            {
                "Key": {
                    "pk": serialize_value(keys.run_pk(run_id)),
                    "sk": serialize_value(keys.message_sk(iteration, slot)),
                },
                "ProjectionExpression": _MESSAGES_WITH_TRACE["ProjectionExpression"],
                "ExpressionAttributeNames": _MESSAGES_WITH_TRACE["ExpressionAttributeNames"],
                "ConsistentRead": True,
            }
        )
        if item is None:
            return None
        step = StepRecord.model_validate_json(item["trace"]) if "trace" in item else None
        return to_message(item), step
