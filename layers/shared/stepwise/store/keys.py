"""Key layout of the single table (see DESIGN.md, "Conversation state in DynamoDB").

Numbers are zero-padded so that sort-key order is conversation order.
"""

from __future__ import annotations

META_SK = "META"
MESSAGE_PREFIX = "MSG#"
STEP_PREFIX = "STEP#"
INBOX_PREFIX = "MSG$"
"""Messages posted to a running run, not yet seen by a model call: they sort after every `MSG#` key and
inside the range LLMCall's conversation Query reads anyway, so checking for one costs no request."""
TOOL_OUTPUT_PREFIX = "TOOLOUT#"
"""A tool's whole result, kept apart from its message (`stepwise.store.tool_outputs`): after every other kind of
a run's items, so the Query that reads a run's partition ends before them."""


def run_pk(run_id: str) -> str:
    """Partition key of everything that belongs to one run."""
    return f"RUN#{run_id}"


def message_sk(iteration: int, slot: int) -> str:
    """Sort key of a message; derived from the step that writes it, so a retry writes the same key."""
    return f"{MESSAGE_PREFIX}{iteration:04d}#{slot:03d}"


def message_prefix(iteration: int) -> str:
    """Sort-key prefix shared by the messages of one iteration."""
    return f"{MESSAGE_PREFIX}{iteration:04d}#"


def step_prefix(iteration: int) -> str:
    """Sort-key prefix shared by the trace steps of one iteration."""
    return f"{STEP_PREFIX}{iteration:04d}#"


def step_sk(iteration: int, kind: str, n: int | None = None) -> str:
    """Sort key of a trace step; `n` tells apart the tool calls of one iteration."""
    suffix = "" if n is None else f"#{n:02d}"
    return f"{step_prefix(iteration)}{kind}{suffix}"


OWNER_INDEX = "RunsByOwner"
"""The sparse global secondary index of META items: partition `owner`, sort key `run_order`."""


def run_order(created_at: str, run_id: str) -> str:
    """Sort key of a run among its owner's runs (`run_order` on META): creation time, then run id."""
    return f"{created_at}#{run_id}"


WAITING_INDEX = "WaitingApprovalsByOwner"
"""The sparse global secondary index of the calls waiting for approval: partition `waiting_owner`, sort key
`waiting_order`, both set on an `APPROVAL#` item only while it is pending."""


def waiting_order(requested_at: str, run_id: str, iteration: int, index: int) -> str:
    """Sort key of a waiting call among its owner's (`waiting_order`): when it was asked, then which call."""
    return f"{requested_at}#{run_id}#{iteration:04d}#{index:02d}"


def session_pk(owner: str, session_id: str) -> str:
    """Partition key of one owner's multi-turn session: `SESSION#<owner>#<session_id>`.

    Each owner's runs of a session id have a partition of their own, so reading one never reads another
    owner's. Both parts have '%' and '#' escaped (as `%25` and `%23`): neither then holds a '#', and no
    other (owner, session id) pair gives the same key, whatever characters an owner has.
    """
    return f"SESSION#{_key_part(owner)}#{_key_part(session_id)}"


def _key_part(text: str) -> str:
    return text.replace("%", "%25").replace("#", "%23")


SESSION_RUN_PREFIX = "RUN#"


def session_sk(created_at: str, run_id: str) -> str:
    """Sort key of one run in its session, ordered by creation time (the same order as `run_order`)."""
    return f"{SESSION_RUN_PREFIX}{run_order(created_at, run_id)}"


ASSISTANT_SLOT = 0
"""Slot of the model's message in an iteration; observations take slots 1..n."""

LAST_SLOT = 999
"""The largest slot a message key can hold (three digits)."""


def observation_slot(call_index: int) -> int:
    """Slot of the observation of the `call_index`-th tool call (or the corrective note) of an iteration."""
    return call_index + 1


STEER_FIRST_SLOT = 900
"""The first slot of the messages a person told the run after an iteration (`POST /v1/runs/{id}/messages`):
after every observation of that iteration (a reply's calls are capped far below), before the next one's."""


def inbox_sk(posted_at: str, message_id: str) -> str:
    """Sort key of a posted message waiting for the run's next model call, in the order they were posted."""
    return f"{INBOX_PREFIX}{posted_at}#{message_id}"
