"""Isolation between callers: two owners, 100 interleaved runs each, through `stepwise serve` on loopback.

Every run carries its own marker, `[run 042]`: in its question, in the model's thoughts and in its
answer, and its calculator call is `42+1000`, so the observation `1042` belongs to that run alone. The
scripted model picks the turns of a run by its marker. Once every run ended, nothing of a run may be
visible to the other owner, and no run's conversation or trace may hold another run's marker.

The 200 runs are one test: split into several, each pytest-xdist worker would run all 200 again.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from stepwise.local.server import LocalApi
from tests.e2e.conftest import serve
from tests.support.polling import run_seen, wait_for

OWNERS = ("alice", "bob")
RUNS_PER_OWNER = 100
TOTAL_RUNS = RUNS_PER_OWNER * len(OWNERS)
# Markers past the interleaved runs, for the session test.
SESSION_MARKERS = range(TOTAL_RUNS, TOTAL_RUNS + 3)
CLIENT_THREADS = 16
TERMINAL = {"SUCCEEDED", "FAILED", "TIMED_OUT"}
MARKER = re.compile(r"\[run (\d{3})\]")


def marker(number: int) -> str:
    """The tag that only run `number` carries."""
    return f"[run {number:03d}]"


def question(number: int) -> str:
    """The question of run `number`."""
    return f"{marker(number)} What is {number} plus 1000?"


def react_turn(thought: str, action: str, action_input: Any) -> dict[str, str]:
    """A scripted turn in the ReAct JSON protocol."""
    block = json.dumps({"action": action, "action_input": action_input})
    return {"content": f"Thought: {thought}\n```json\n{block}\n```"}


def scenario(number: int) -> dict[str, Any]:
    """Run `number`'s script: one calculator call with its own numbers, then an answer naming the run."""
    tag = marker(number)
    return {
        "match": re.escape(tag),
        "turns": [
            react_turn(f"{tag} I need the calculator.", "calculator", {"expression": f"{number}+1000"}),
            react_turn(f"{tag} I have the sum.", "Final Answer", f"{tag} {number} plus 1000 is {number + 1000}."),
        ],
    }


CONFIG = {
    "models": {"m": {"provider": "scripted", "scenarios": [scenario(n) for n in range(TOTAL_RUNS + 3)]}},
    "tools": {"builtin": ["calculator"]},
    "profiles": {"default": {"model": "m", "strategy": "react", "protocol": "react_json"}},
}


@dataclass(frozen=True)
class PostedRun:
    """A run as its owner posted it, and the owner's reading of it (with its trace) once it ended."""

    number: int
    owner: str
    run_id: str
    status_code: int
    final: dict[str, Any]


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory, dynamodb_local: str) -> Iterator[LocalApi]:
    """`stepwise serve` with the per-run scripts, retrying without sleeping, on the session's DynamoDB Local.

    Not on moto: its Query reads every item of the table, so each of the 200 runs' reads would cost more
    than the one before (most of this module's time was moto's scans)."""
    table_name = f"isolation-{uuid.uuid4().hex[:12]}"
    with serve(
        CONFIG, tmp_path_factory.mktemp("isolation"), dynamodb_endpoint_url=dynamodb_local, table_name=table_name
    ) as served:
        yield served


@pytest.fixture(scope="module")
def clients(api: LocalApi) -> Iterator[dict[str, httpx.Client]]:
    """One HTTP client per owner, sending that owner's API key."""
    opened = {owner: httpx.Client(base_url=api.url, headers={"x-api-key": owner}, timeout=60) for owner in OWNERS}
    yield opened
    for client in opened.values():
        client.close()


def read_when_ended(client: httpx.Client, run_id: str) -> dict[str, Any]:
    """The run with its trace once it ended, polled as a client would; fails naming its last status if it does not."""

    def read() -> dict[str, Any]:
        body: dict[str, Any] = client.get(f"/v1/runs/{run_id}", params={"trace": "true"}).json()
        return body

    return wait_for(
        read, lambda run: run.get("status") in TERMINAL, what=f"run {run_id} ended", shown=run_seen, interval=0.1
    )


def post(client: httpx.Client, number: int, **fields: Any) -> str:
    """Post run `number`'s question; its run id."""
    response = client.post("/v1/runs", json={"input": question(number), **fields})
    assert response.status_code == 202, response.text
    run_id: str = response.json()["run_id"]
    return run_id


def wait_until_all_ended(runs: list[tuple[httpx.Client, str]]) -> None:
    """Poll (client, run id) pairs, oldest first, until each ended or is not readable; fails after 150 s, naming
    how many runs were still open and the oldest of them.

    One poller walks the runs in the order they were started: many pollers would load the embedded
    DynamoDB endpoint as much as the runs themselves do.
    """
    pending = list(runs)
    deadline = time.monotonic() + 150
    while pending and time.monotonic() < deadline:
        client, run_id = pending[0]
        response = client.get(f"/v1/runs/{run_id}")
        if response.status_code != 200 or response.json()["status"] in TERMINAL:
            pending.pop(0)
        else:
            time.sleep(0.25)
    if pending:
        pytest.fail(f"{len(pending)} of {len(runs)} runs had not ended after 150 s, the oldest {pending[0][1]}")


def post_interleaved_runs(clients: dict[str, httpx.Client]) -> list[PostedRun]:
    """200 runs posted alternately by the two owners from concurrent clients, each read by its owner once ended."""
    owner_of = [OWNERS[number % len(OWNERS)] for number in range(TOTAL_RUNS)]
    with ThreadPoolExecutor(max_workers=CLIENT_THREADS) as pool:
        run_ids = list(pool.map(lambda number: post(clients[owner_of[number]], number), range(TOTAL_RUNS)))
        wait_until_all_ended([(clients[owner], run_id) for owner, run_id in zip(owner_of, run_ids, strict=True)])
        finals = list(
            pool.map(
                lambda number: clients[owner_of[number]].get(f"/v1/runs/{run_ids[number]}", params={"trace": "true"}),
                range(TOTAL_RUNS),
            )
        )
    return [
        PostedRun(number, owner_of[number], run_ids[number], finals[number].status_code, finals[number].json())
        for number in range(TOTAL_RUNS)
    ]


def read_by_the_other_owner(
    runs: list[PostedRun], clients: dict[str, httpx.Client], *, trace: bool
) -> list[httpx.Response]:
    """What the owner who did not post each run gets when asking for it."""
    params = {"trace": "true"} if trace else {}

    def read(run: PostedRun) -> httpx.Response:
        other = next(owner for owner in OWNERS if owner != run.owner)
        return clients[other].get(f"/v1/runs/{run.run_id}", params=params)

    with ThreadPoolExecutor(max_workers=CLIENT_THREADS) as pool:
        return list(pool.map(read, runs))


def markers_in(value: Any) -> set[int]:
    """The run numbers whose markers appear anywhere in `value` (serialised as JSON)."""
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return {int(found) for found in MARKER.findall(text)}


def answer_of(number: int) -> str:
    """What run `number` answers."""
    return f"{marker(number)} {number} plus 1000 is {number + 1000}."


def test_two_owners_interleaved_runs_are_each_seen_only_by_their_owner_and_never_mixed(
    api: LocalApi, clients: dict[str, httpx.Client]
) -> None:
    store = api.environment.runtime.store
    # Given 100 runs per owner, posted interleaved and concurrently, each read by its owner once ended
    runs = post_interleaved_runs(clients)
    # When the other owner asks for each run, with and without its trace, and the store is read
    plain = read_by_the_other_owner(runs, clients, trace=False)
    traced = read_by_the_other_owner(runs, clients, trace=True)
    stored = {
        run.number: (
            getattr(store.get_run(run.run_id), "owner", None),
            markers_in([message.model_dump() for message in store.list_messages(run.run_id)]),
            markers_in([step.model_dump() for step in store.list_steps(run.run_id)]),
        )
        for run in runs
    }

    # Then all 200 are distinct runs, each read by its owner as SUCCEEDED with the answer to its own question
    assert len({run.run_id for run in runs}) == TOTAL_RUNS
    assert {(run.owner, run.status_code, run.final.get("status"), run.final.get("answer")) for run in runs} == {
        (run.owner, 200, "SUCCEEDED", answer_of(run.number)) for run in runs
    }
    # ...to the other owner each is 404, exactly as a run that does not exist, and nothing of it leaks
    for responses in (plain, traced):
        answered = {(response.status_code, (response.json().get("error") or {}).get("type")) for response in responses}
        assert answered == {(404, "not_found")}
        assert set().union(*(markers_in(response.text) for response in responses)) == set()
    # ...the store records each run as its poster's, and its conversation and trace hold its marker alone
    assert stored == {run.number: (run.owner, {run.number}, {run.number}) for run in runs}
    # ...and the trace each owner read holds that run alone, its one tool call observing its own sum
    assert {run.number: markers_in(run.final.get("trace")) for run in runs} == {
        run.number: {run.number} for run in runs
    }
    assert {
        run.number: [step["observation"] for step in run.final.get("trace") or [] if step["kind"] == "tool"]
        for run in runs
    } == {run.number: [str(run.number + 1000)] for run in runs}


def test_a_session_id_reused_by_another_owner_starts_without_the_first_owners_turns(
    api: LocalApi, clients: dict[str, httpx.Client]
) -> None:
    store = api.environment.runtime.store
    first, own_next, intruder = SESSION_MARKERS
    alice, bob = clients["alice"], clients["bob"]
    # Given a finished first turn of alice's session "shared"
    alice_first = post(alice, first, session_id="shared")
    assert read_when_ended(alice, alice_first)["status"] == "SUCCEEDED"
    # When bob starts a run with the same session id, and alice continues her session
    bob_run = post(bob, intruder, session_id="shared")
    alice_next = post(alice, own_next, session_id="shared")
    statuses = [read_when_ended(client, run_id)["status"] for client, run_id in ((bob, bob_run), (alice, alice_next))]
    # Then bob's conversation holds his question alone, while alice's next run starts from her first turn
    assert statuses == ["SUCCEEDED", "SUCCEEDED"]
    assert markers_in([message.model_dump() for message in store.list_messages(bob_run)]) == {intruder}
    alice_messages = store.list_messages(alice_next)
    assert [(message.role, message.content) for message in alice_messages[:2]] == [
        ("user", question(first)),
        ("assistant", answer_of(first)),
    ]
    assert intruder not in markers_in([message.model_dump() for message in alice_messages])
