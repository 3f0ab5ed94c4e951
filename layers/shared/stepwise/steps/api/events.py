"""Following a run step by step: the logic of `GET /v1/runs/{run_id}/events`.

A run's steps come back in the order they happen — per iteration a compaction (when there is one), the
model call, its parse decision, its tool calls, and the final formatting — after an opaque cursor naming
the last step delivered. Tool calls of one iteration run in parallel and may be stored in any order, so
they are delivered only once all the calls the decision named are stored: a step is never skipped by a
cursor that moved past it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import time
from collections.abc import Callable, Iterator

from stepwise.models.api_responses import RunEvents
from stepwise.models.run import OPEN_STATUSES
from stepwise.models.step_record import StepRecord
from stepwise.steps.api.ownership import parse_run_reference, visible_run
from stepwise.steps.api.problems import InvalidRequest
from stepwise.steps.api.run_views import reported_outcome, reported_status, trace_step
from stepwise.steps.api.services import LOST_RUN_GRACE_SECONDS
from stepwise.steps.guardrail_points import shown_guardrails, step_screen
from stepwise.steps.runtime import StepRuntime
from stepwise.store.trace import step_order

# Version 3 names the run a cursor was returned for: a cursor of another run is refused, not read as a place in
# this one (it would skip this run's steps before it). Versions 1 and 2 named no run; nothing stores them.
CURSOR_VERSION = 3
STREAM_POLL_SECONDS = 0.2
# An SSE comment line sent when nothing was stored for this long: API Gateway closes a streamed answer idle
# for 30 s (edge-optimized endpoint; 5 min regional), and a model call can take longer than that.
KEEPALIVE_SECONDS = 10.0
KEEPALIVE_FRAME = b": keep-alive\n\n"
CURSOR_FIELD = "after (query parameter)"
_NOT_A_CURSOR = "not a cursor this API returned"
_ANOTHER_RUNS = "a cursor of another run: a cursor continues only the events of the run it was returned for"

Position = tuple[int, int, int]
_START: Position = (0, -1, -1)


def _position(step: StepRecord) -> Position:
    return step_order(step)


def _run_tag(run_id: str) -> str:
    """What a cursor keeps of its run: enough to tell it from another, short enough for a URL."""
    return hashlib.sha256(run_id.encode("utf-8")).hexdigest()[:16]


def encode_events_cursor(run_id: str, position: Position) -> str:
    """The opaque cursor that continues after the step at `position` of run `run_id`."""
    document = json.dumps({"v": CURSOR_VERSION, "r": _run_tag(run_id), "p": list(position)}, separators=(",", ":"))
    return base64.urlsafe_b64encode(document.encode("utf-8")).decode("ascii").rstrip("=")


def decode_events_cursor(cursor: str, run_id: str, *, field: str = CURSOR_FIELD) -> Position:
    """The position a cursor of run `run_id` names; 422 naming `field` for anything this API did not hand out,
    and for a cursor it handed out for another run."""
    try:
        document = json.loads(base64.urlsafe_b64decode((cursor + "=" * (-len(cursor) % 4)).encode("ascii")))
    except (ValueError, binascii.Error, UnicodeError):
        raise InvalidRequest.of(field, _NOT_A_CURSOR) from None
    if not isinstance(document, dict):
        raise InvalidRequest.of(field, _NOT_A_CURSOR)
    position = document.get("p")
    tag = document.get("r")
    valid = (
        document.get("v") == CURSOR_VERSION
        and isinstance(tag, str)
        and isinstance(position, list)
        and len(position) == 3
        and all(isinstance(part, int) and not isinstance(part, bool) and -1 <= part <= 100_000 for part in position)
    )
    if not valid or position is None:
        raise InvalidRequest.of(field, _NOT_A_CURSOR)
    if tag != _run_tag(run_id):
        raise InvalidRequest.of(field, _ANOTHER_RUNS)
    return (position[0], position[1], position[2])


def deliverable_steps(steps: list[StepRecord], *, ended: bool) -> list[StepRecord]:
    """The steps in the order they happen, up to the first one that may still have a gap before it.

    Two gaps are held back while the run goes on: an iteration whose tool calls are not all stored (they
    run in parallel), and everything after a model call whose decision the read did not find (the trace
    reads decisions before messages, so messages stored between its two Queries can follow a decision it
    missed). Once the run ended nothing more will be stored, so every step is deliverable.
    """
    ordered = sorted(steps, key=_position)
    if ended:
        return ordered
    decided = {step.iteration: len(step.calls or []) for step in ordered if step.kind == "parse"}
    stored: dict[int, int] = {}
    for step in ordered:
        if step.kind == "tool":
            stored[step.iteration] = stored.get(step.iteration, 0) + 1
    delivered: list[StepRecord] = []
    for step in ordered:
        if step.kind == "tool" and stored.get(step.iteration, 0) < decided.get(step.iteration, 0):
            break
        # after a model call whose decision was not found, only its reasoning may follow
        last = delivered[-1] if delivered else None
        undecided = last is not None and last.kind in ("llm", "reasoning") and last.iteration not in decided
        if undecided and step.kind != "reasoning":
            break
        delivered.append(step)
    return delivered


def run_events(
    runtime: StepRuntime,
    *,
    owner: str,
    run_reference: str,
    after: str | None,
    grace_seconds: float = LOST_RUN_GRACE_SECONDS,
    cursor_field: str = CURSOR_FIELD,
) -> RunEvents:
    """`GET /v1/runs/{run_id}/events`: the steps stored after the cursor, and whether the run has ended.

    `cursor_field` is where the request carried `after` (the stream's `Last-Event-ID` header), for its error."""
    store = runtime.store
    run_id = parse_run_reference(run_reference)
    start = decode_events_cursor(after, run_id, field=cursor_field) if after else _START
    # META first: a step stored after this read is delivered next time, never lost between the two reads
    meta = visible_run(store, run_id, owner)
    status, _ = reported_status(meta, now=runtime.clock(), grace_seconds=grace_seconds)
    ended = status not in OPEN_STATUSES
    # Steps before the cursor's iteration were delivered; its own iteration may still hold some that were not
    stored = store.list_steps(run_id, since_iteration=start[0])
    fresh = [step for step in deliverable_steps(stored, ended=ended) if _position(step) > start]
    last = _position(fresh[-1]) if fresh else start
    # the model's text is stored as it wrote it: the output's pii rules apply to it as it is shown
    screen = step_screen(shown_guardrails(runtime, meta.profile))
    return RunEvents(
        run_id=run_id,
        status=status,
        done=ended,
        outcome=reported_outcome(meta, status),
        events=[screen(trace_step(step)) for step in fresh],
        next_cursor=encode_events_cursor(run_id, last),
    ).with_cursors([encode_events_cursor(run_id, _position(step)) for step in fresh])


def follow_run(
    runtime: StepRuntime,
    *,
    owner: str,
    run_reference: str,
    after: str | None,
    poll_seconds: float = STREAM_POLL_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
    cursor_field: str = CURSOR_FIELD,
) -> Iterator[RunEvents]:
    """Each read of the run's new steps, polling the store until the run has ended (the last read is `done`).

    The first read happens here, so a run the caller may not see (404) or a bad cursor (422, naming
    `cursor_field`) raises before the iterator is handed out.
    """
    first = run_events(runtime, owner=owner, run_reference=run_reference, after=after, cursor_field=cursor_field)

    def reads() -> Iterator[RunEvents]:
        answer = first
        while True:
            yield answer
            if answer.done:
                return
            sleep(poll_seconds)
            answer = run_events(runtime, owner=owner, run_reference=run_reference, after=answer.next_cursor)

    return reads()


class Keepalive:
    """Says when a stream that sent nothing for `every_seconds` should send a keep-alive comment."""

    def __init__(self, every_seconds: float = KEEPALIVE_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self._every = every_seconds
        self._clock = clock
        self._last = clock()

    def sent(self) -> None:
        """Something was just sent."""
        self._last = self._clock()

    def due(self) -> bool:
        """Nothing was sent for long enough: the caller sends `KEEPALIVE_FRAME` (and this counts as sent)."""
        if self._clock() - self._last < self._every:
            return False
        self.sent()
        return True


def event_stream(answers: Iterator[RunEvents], keepalive: Keepalive | None = None) -> Iterator[bytes]:
    """The reads of `follow_run` as server-sent events, each step sent as soon as it is stored.

    `follow_run` makes its first read before handing out its iterator, so a run the caller may not see
    (404) or a bad cursor (422) raises before any byte is sent. Each step is an `event: step` whose
    `data` is the step as JSON and whose `id` is the cursor right after it, so a client that reconnects
    with `Last-Event-ID` (as `EventSource` does) continues after the last step it received, missing none
    and receiving none twice; an `event: end` says how the run ended. While nothing is stored, a
    `: keep-alive` comment (which SSE clients ignore) goes out every `KEEPALIVE_SECONDS`.
    """
    idle = keepalive or Keepalive()

    def frames() -> Iterator[bytes]:
        for answer in answers:
            if answer.events:
                idle.sent()
            elif not answer.done and idle.due():
                yield KEEPALIVE_FRAME
            for step, cursor in zip(answer.events, answer.cursors, strict=True):
                yield f"event: step\nid: {cursor}\ndata: {step.model_dump_json(exclude_none=True)}\n\n".encode()
            if answer.done:
                end = json.dumps({"run_id": answer.run_id, "status": answer.status, "outcome": answer.outcome})
                yield f"event: end\ndata: {end}\n\n".encode()

    return frames()
