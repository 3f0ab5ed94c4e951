"""A tool's whole result, when it was longer than what the model received: `TOOLOUT#<iteration>#<n>#<part>`.

The call's message item holds the observation the model read, cut to the profile's `max_observation_chars`.
What the tool answered past that is kept here, apart, so the step endpoint can show all of it: the text split
into parts of at most `PART_BYTES` (well under DynamoDB's 400 KB item limit, measured as `item_limit`
measures), written with BatchWriteItem before the message item, which stays the call's commit record. The
keys derive from the call, so a retried ToolInvoke that calls the tool again overwrites the same items; the
reader takes as many parts as the call's trace step counts, so leftovers of a longer earlier attempt are
never read (TTL removes them with the run).

Sort keys start with `TOOLOUT#`, after every other kind of a run's items (`META`, `MSG#`, `STEP#`,
`SUMMARY#`...): the one Query that reads a run's partition (`TraceReader.partition`) stops before them.
"""

from __future__ import annotations

from typing import Any

from stepwise.store import keys
from stepwise.store.codec import serialize_item
from stepwise.store.table import Table
from stepwise.store.views import RunRef

PART_BYTES = 300_000
"""The most UTF-8 bytes of text one part holds: with its key and expiry, far from the item limit."""

_BATCH_WRITE_LIMIT = 25  # items per BatchWriteItem request


def tool_output_sk(iteration: int, index: int, part: int) -> str:
    """Sort key of part `part` of the whole result of the `index`-th call of `iteration`."""
    return f"{keys.TOOL_OUTPUT_PREFIX}{iteration:04d}#{index:02d}#{part:03d}"


def split_parts(text: str, part_bytes: int = PART_BYTES) -> list[str]:
    """`text` in pieces of at most `part_bytes` UTF-8 bytes each, never splitting a character."""
    encoded = text.encode("utf-8", "surrogatepass")
    parts: list[str] = []
    start = 0
    while start < len(encoded):
        end = min(start + part_bytes, len(encoded))
        # back up to the first byte of a character (continuation bytes are 0b10xxxxxx)
        while end < len(encoded) and encoded[end] & 0xC0 == 0x80:
            end -= 1
        parts.append(encoded[start:end].decode("utf-8", "surrogatepass"))
        start = end
    return parts


class ToolOutputStore:
    """Whole tool results kept apart from their message items, on the conversation table."""

    def __init__(self, table: Table) -> None:
        self._db = table

    def put(self, run: RunRef, iteration: int, index: int, text: str) -> int:
        """Store `text` as the whole result of call `index` of `iteration`, overwriting the same keys on a
        retry; the number of parts. One BatchWriteItem per 25 parts (a 2,000,000-character text is 7)."""
        items = [
            serialize_item(
                {
                    "pk": keys.run_pk(run.run_id),
                    "sk": tool_output_sk(iteration, index, number),
                    "text": part,
                    "expires_at": run.expires_at,
                }
            )
            for number, part in enumerate(split_parts(text))
        ]
        for first in range(0, len(items), _BATCH_WRITE_LIMIT):
            self._write([{"PutRequest": {"Item": item}} for item in items[first : first + _BATCH_WRITE_LIMIT]])
        return len(items)

    def _write(self, requests: list[dict[str, Any]]) -> None:
        pending: dict[str, Any] = {self._db.name: requests}
        while pending:
            response = self._db.call("batch_write_item", RequestItems=pending)
            pending = response.get("UnprocessedItems") or {}

    def read(self, run_id: str, iteration: int, index: int, parts: int) -> str | None:
        """The whole result stored in `parts` parts, joined (one BatchGetItem); None when a part is missing."""
        sort_keys = [tool_output_sk(iteration, index, number) for number in range(parts)]
        found = self._db.batch_get(keys.run_pk(run_id), sort_keys)
        if any(sk not in found for sk in sort_keys):
            return None
        return "".join(str(found[sk].get("text", "")) for sk in sort_keys)
