"""How many streams a server follows at once: the slots, and the body that holds one."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

from stepwise.streaming.answers import HttpResponse
from stepwise.streaming.slots import HeldStream, StreamSlots


def claimed(slots: StreamSlots, owner: str) -> Callable[[], None]:
    release = slots.claim(owner)
    assert not isinstance(release, HttpResponse), "refused"
    return release


def refusal(answer: object) -> tuple[int, str | None, dict[str, object]]:
    assert isinstance(answer, HttpResponse) and isinstance(answer.body, bytes)
    error = json.loads(answer.body)["error"]
    return answer.status, dict(answer.headers).get("retry-after"), error["details"]


def test_a_caller_past_its_slots_is_refused_503_naming_the_limit_while_another_is_not() -> None:
    # Given a caller holding the two slots one caller may have
    slots = StreamSlots(total=10, per_owner=2)
    for _ in range(2):
        claimed(slots, "alice")
    # When she claims a third, and bob his first
    refused, bobs = slots.claim("alice"), slots.claim("bob")
    # Then hers is a 503 to retry, naming the caller's limit, and bob's is granted
    assert refusal(refused) == (503, "1", {"limit": "streams_per_caller", "maximum": 2})
    assert not isinstance(bobs, HttpResponse)


def test_past_the_servers_slots_every_caller_is_refused_until_one_is_given_back() -> None:
    # Given every slot of the server held, one each by three callers
    slots = StreamSlots(total=3, per_owner=2)
    releases = [claimed(slots, owner) for owner in ("a", "b", "c")]
    # When a fourth caller claims one, before and after one is given back twice
    refused = slots.claim("d")
    releases[0]()
    releases[0]()
    granted = slots.claim("d")
    # Then the first is refused naming the server's limit, the second granted, and a second give-back is nothing
    assert refusal(refused) == (503, "1", {"limit": "streams", "maximum": 3})
    assert not isinstance(granted, HttpResponse)
    assert slots.open_streams() == 3


def test_a_held_stream_gives_its_slot_back_at_its_end_and_when_closed_unstarted() -> None:
    # Given two streams holding a slot each: one read to its end, one closed before its first chunk
    slots = StreamSlots(total=2, per_owner=2)

    def chunks() -> Iterator[bytes]:
        yield b"one"

    read = HeldStream(chunks(), claimed(slots, "alice"))
    unstarted = HeldStream(chunks(), claimed(slots, "alice"))
    # When the first is read through and the second closed
    assert list(read) == [b"one"]
    unstarted.close()
    # Then both slots are free again
    assert slots.open_streams() == 0
