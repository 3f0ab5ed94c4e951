"""Reading a run's conversation for the model: only the attributes a request needs, and only what is new.

Messages never change once written (every put is conditional on a new key), and the loop writes them in
key order: when LLMCall reads the conversation of iteration n, every message of iterations before n is
already stored. So a warm function that has read a run's conversation up to some key only needs the
items from that key on. The read starts AT the last cached key, not after it, and the item found there
must equal the cached one: a cache that no longer matches the table (the run's items expired and the id
was reused, or anything else unexpected) is dropped and the whole conversation read again.

A whole read starts at the run's META item, which sorts just before the messages: the request options
it holds (sampling, client tools) come with the conversation in the same Query, and never change.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from stepwise.errors import RunNotFound
from stepwise.models.run import StoredMessage
from stepwise.store import keys
from stepwise.store.items import to_message

MESSAGE_ATTRIBUTES = ("sk", "role", "content", "tool_calls", "tool_call_id", "name", "images", "reasoning")
"""What a model request needs of a message item: not its trace, partition key or expiry (the reasoning goes
back to providers that require it)."""

# `options` is META's; `posted_by`/`posted_at`/`message_id` are those of a posted message still waiting
_CONVERSATION_ATTRIBUTES = (*MESSAGE_ATTRIBUTES, "options", "posted_by", "posted_at", "message_id")

# every message key starts with "MSG#", and the messages posted to the run and not yet delivered with
# "MSG$" ("$" is the character after "#", "%" the one after "$"): this bounds them all
_END_OF_MESSAGES = "MSG%"

QueryPages = Callable[[dict[str, Any]], Iterator[dict[str, Any]]]
"""Runs one Query (its parameters besides the table) and yields its items, deserialized, across pages."""


def message_projection(attributes: tuple[str, ...] = MESSAGE_ATTRIBUTES) -> dict[str, Any]:
    """Query parameters that read only `attributes` (several are DynamoDB reserved words)."""
    names = {f"#a{index}": name for index, name in enumerate(attributes)}
    return {"ProjectionExpression": ", ".join(names), "ExpressionAttributeNames": names}


def messages_from(pk: str, first_sk: str) -> dict[str, Any]:
    """Query parameters for the messages of partition `pk` whose key is `first_sk` or after it."""
    projection = message_projection(_CONVERSATION_ATTRIBUTES)
    return {
        "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :first AND :end",
        "ExpressionAttributeNames": projection["ExpressionAttributeNames"] | {"#pk": "pk", "#sk": "sk"},
        "ExpressionAttributeValues": {":pk": {"S": pk}, ":first": {"S": first_sk}, ":end": {"S": _END_OF_MESSAGES}},
        "ProjectionExpression": projection["ProjectionExpression"],
        "ConsistentRead": True,
    }


@dataclass(frozen=True)
class PostedMessage:
    """A message a person posted to the run that no model call has seen yet (its item's sort key, text,
    author and time)."""

    sk: str
    message_id: str
    content: str
    posted_by: str
    posted_at: str


@dataclass
class Conversation:
    """A run's messages in order, the request options its META holds (JSON text), if any, and the messages
    posted to it that wait for its next model call."""

    messages: list[StoredMessage] = field(default_factory=list)
    options: str | None = None
    posted: list[PostedMessage] = field(default_factory=list)


def _split_posted(items: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[PostedMessage]]:
    """The conversation's items, and the posted messages that sort after them (never cached: they move)."""
    kept = [item for item in items if not item["sk"].startswith(keys.INBOX_PREFIX)]
    posted = [
        PostedMessage(
            sk=item["sk"],
            message_id=item.get("message_id", ""),
            content=item.get("content", ""),
            posted_by=item.get("posted_by", ""),
            posted_at=item.get("posted_at", ""),
        )
        for item in items
        if item["sk"].startswith(keys.INBOX_PREFIX)
    ]
    return kept, posted


@dataclass
class _CachedConversation:
    last_item: dict[str, Any]
    messages: list[StoredMessage] = field(default_factory=list)
    options: str | None = None


class HistoryCache:
    """The conversations of the last few runs this container read, each up to its last stored message."""

    def __init__(self, query: QueryPages, *, max_runs: int = 16) -> None:
        self._query = query
        self._max_runs = max_runs
        self._runs: OrderedDict[str, _CachedConversation] = OrderedDict()
        self._lock = threading.Lock()

    def conversation(self, run_id: str) -> Conversation:
        """The whole conversation of `run_id`, in order, reading only the items not cached yet;
        `RunNotFound` if the run has no META."""
        with self._lock:
            cached = self._runs.pop(run_id, None)
        pk = keys.run_pk(run_id)
        posted: list[PostedMessage] = []
        if cached is not None:
            items, posted = _split_posted(list(self._query(messages_from(pk, cached.last_item["sk"]))))
            if items and items[0] == cached.last_item:
                cached.messages.extend(to_message(item) for item in items[1:])
                cached.last_item = items[-1]
            else:
                cached = None
        if cached is None:
            items, posted = _split_posted(list(self._query(messages_from(pk, keys.META_SK))))
            if not items or items[0]["sk"] != keys.META_SK:
                raise RunNotFound(f"run {run_id} not found")
            cached = _CachedConversation(
                last_item=items[-1],
                messages=[to_message(item) for item in items[1:]],
                options=items[0].get("options"),
            )
        with self._lock:
            self._runs[run_id] = cached
            while len(self._runs) > self._max_runs:
                self._runs.popitem(last=False)
        return Conversation(list(cached.messages), cached.options, posted)
