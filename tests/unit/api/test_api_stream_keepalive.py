"""A stream that has nothing new to send says so with an SSE comment every KEEPALIVE_SECONDS, so API Gateway
(which closes a streamed answer idle for 30 s on an edge-optimized endpoint) and proxies keep it open."""

from __future__ import annotations

from itertools import islice

from stepwise.models.chat_api import ChatStreamStart
from stepwise.steps.api.chat_stream import chat_chunks
from stepwise.steps.api.events import KEEPALIVE_FRAME, Keepalive, event_stream, follow_run
from tests.unit.api.conftest import ApiWorld


def test_a_quiet_run_gets_a_keepalive_comment_every_ten_seconds_of_polling(world: ApiWorld) -> None:
    # Given a run that stays queued: nothing will be stored
    run = world.queued_run(owner="alice")
    # When its events are followed, polling every second, for three frames
    reads = follow_run(
        world.services.runtime,
        owner="alice",
        run_reference=run.run_id,
        after=None,
        poll_seconds=1.0,
        sleep=world.time.sleep,
    )
    frames = event_stream(reads, keepalive=Keepalive(10.0, clock=world.time.clock))
    first = list(islice(frames, 3))
    # Then each is a comment, sent after ten seconds without anything to send
    assert first == [KEEPALIVE_FRAME] * 3
    assert sum(world.time.slept) == 30.0


def test_a_quiet_streamed_chat_completion_gets_keepalive_comments_after_its_role_chunk(world: ApiWorld) -> None:
    # Given a chat completion whose run stays queued
    run = world.queued_run(owner="bob")
    start = ChatStreamStart(run_id=run.run_id, model="default", created=0, include_usage=False)
    # When its chunks are read, polling every second
    chunks = chat_chunks(
        world.services.runtime,
        owner="bob",
        start=start,
        poll_seconds=1.0,
        sleep=world.time.sleep,
        keepalive=Keepalive(10.0, clock=world.time.clock),
    )
    role, *quiet = list(islice(chunks, 3))
    # Then the role chunk comes first, and comments follow every ten seconds while nothing happens
    assert role.startswith(b"data: ") and b'"role":"assistant"' in role.replace(b" ", b"")
    assert quiet == [KEEPALIVE_FRAME] * 2
    assert sum(world.time.slept) == 20.0
