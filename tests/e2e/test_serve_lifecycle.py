"""`stepwise serve`: listing a caller's runs and cancelling them, over real HTTP on loopback."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepwise.local.embedded_dynamodb import EmbeddedDynamoDB
from stepwise.local.server import LocalApi
from stepwise.steps.runtime import dynamodb_client
from stepwise.store import ConversationStore
from tests.e2e.conftest import serve
from tests.integration.test_api_handler import api_config
from tests.support.polling import CROSS_PROCESS_SECONDS, run_seen, wait_for

TERMINAL = {"SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED"}
SLOW_TURN_MS = 1500


def react(action: str, action_input: Any) -> dict[str, Any]:
    block = json.dumps({"action": action, "action_input": action_input})
    return {"content": f"Thought: go.\n```json\n{block}\n```"}


CONFIG = api_config(
    models={
        "m": {
            "provider": "scripted",
            "scenarios": [
                {
                    "match": "slow",
                    "turns": [{**react("calculator", {"expression": "1+1"}), "latency_ms": SLOW_TURN_MS}],
                },
                {
                    "match": "follow",
                    "turns": [
                        react("calculator", {"expression": "6*7"}),
                        {**react("Final Answer", "42."), "latency_ms": SLOW_TURN_MS},
                    ],
                },
                {"turns": [react("Final Answer", "Done.")]},
            ],
        }
    },
    tools={"builtin": ["calculator"]},
)


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalApi]:
    # The steps run in Lambda worker processes, as `stepwise serve` runs them by default
    with serve(CONFIG, tmp_path_factory.mktemp("lifecycle"), lambda_workers=2) as served:
        yield served


def caller(api: LocalApi, key: str) -> httpx.Client:
    return httpx.Client(base_url=api.url, headers={"x-api-key": key}, timeout=30)


def finished(client: httpx.Client, run_id: str) -> dict[str, Any]:
    """The run once it ended (polled as a client would); fails naming its last status if it does not end."""

    def read() -> dict[str, Any]:
        body: dict[str, Any] = client.get(f"/v1/runs/{run_id}").json()
        return body

    return wait_for(read, lambda run: run["status"] in TERMINAL, what=f"run {run_id} ended", shown=run_seen)


def post(client: httpx.Client, question: str, **fields: Any) -> str:
    response = client.post("/v1/runs", json={"input": question, **fields})
    assert response.status_code == 202
    return str(response.json()["run_id"])


def test_the_list_holds_the_callers_runs_newest_first(api: LocalApi) -> None:
    # Given three runs of one caller and one of another
    client = caller(api, "list-owner")
    run_ids = [post(client, f"question {index}") for index in range(3)]
    post(caller(api, "list-stranger"), "not yours")
    # When the caller lists their runs
    response = client.get("/v1/runs")
    # Then they are exactly the caller's three, newest first, on one page
    assert response.status_code == 200
    assert [run["run_id"] for run in response.json()["runs"]] == run_ids[::-1]
    assert response.json().get("next_cursor") is None


def test_pages_follow_the_cursor_without_repeating_or_missing_a_run(api: LocalApi) -> None:
    # Given five runs of one caller
    client = caller(api, "pager")
    run_ids = [post(client, f"question {index}") for index in range(5)]
    # When they are read two at a time, following next_cursor
    pages: list[list[str]] = []
    params: dict[str, Any] = {"limit": 2}
    while True:
        body = client.get("/v1/runs", params=params).json()
        pages.append([run["run_id"] for run in body["runs"]])
        if not body.get("next_cursor"):
            break
        params = {"limit": 2, "cursor": body["next_cursor"]}
    # Then the pages are 2, 2 and 1 runs, newest first, each run once
    assert pages == [run_ids[4:2:-1], run_ids[2:0:-1], run_ids[:1]]


def test_the_list_filters_by_status(api: LocalApi) -> None:
    # Given a run that ended and one cancelled while running
    client = caller(api, "status-filter")
    done = post(client, "quick")
    finished(client, done)
    slow = post(client, "slow one")
    assert client.post(f"/v1/runs/{slow}/cancel").status_code == 200
    # When the caller lists each status
    succeeded = client.get("/v1/runs", params={"status": "SUCCEEDED"}).json()["runs"]
    cancelled = client.get("/v1/runs", params={"status": "CANCELLED"}).json()["runs"]
    # Then each list holds the one run of that status
    assert [(run["run_id"], run["status"]) for run in succeeded] == [(done, "SUCCEEDED")]
    assert [(run["run_id"], run["status"]) for run in cancelled] == [(slow, "CANCELLED")]


def test_the_list_filters_by_session_and_shows_no_other_callers_session_runs(api: LocalApi) -> None:
    # Given runs of one session by two callers, and a run of the first caller outside it
    client = caller(api, "session-owner")
    in_session = [post(client, f"turn {index}", session_id="support-1") for index in range(2)]
    post(client, "elsewhere")
    post(caller(api, "session-stranger"), "same session id", session_id="support-1")
    # When the first caller lists the session
    runs = client.get("/v1/runs", params={"session_id": "support-1"}).json()["runs"]
    # Then it holds their two runs of that session, newest first
    assert [(run["run_id"], run["session_id"]) for run in runs] == [
        (in_session[1], "support-1"),
        (in_session[0], "support-1"),
    ]


# base64 of a non-JSON text, and of JSON documents that are not objects: `[1]` and `1`
@pytest.mark.parametrize("cursor", ["bm90LWEtY3Vyc29y", "WzFd", "MQ"])
def test_a_cursor_the_api_did_not_hand_out_is_refused_naming_it(api: LocalApi, cursor: str) -> None:
    # When the list is asked for with a made-up cursor
    response = caller(api, "alice").get("/v1/runs", params={"cursor": cursor})
    # Then it is 422 naming the cursor
    assert response.status_code == 422
    assert response.json()["error"]["details"]["errors"][0]["field"] == "cursor (query parameter)"


def test_cancelling_a_running_run_records_who_and_when(api: LocalApi) -> None:
    # Given a run whose model is still thinking
    client = caller(api, "canceller")
    run_id = post(client, "slow one")
    # When its owner cancels it
    response = client.post(f"/v1/runs/{run_id}/cancel")
    # Then it is CANCELLED, by them, with the stop reason saying so
    body = response.json()
    assert response.status_code == 200
    assert (body["status"], body["stop_reason"], body["cancelled_by"]) == ("CANCELLED", "cancelled", "canceller")
    assert body["cancelled_at"] == body["updated_at"]


def test_cancelling_a_finished_run_is_409_saying_it_ended(api: LocalApi) -> None:
    # Given a run that ended
    client = caller(api, "late-canceller")
    run_id = post(client, "quick")
    finished(client, run_id)
    # When it is cancelled
    response = client.post(f"/v1/runs/{run_id}/cancel")
    # Then it is a conflict naming the status it ended with, and the run is unchanged
    error = response.json()["error"]
    assert (response.status_code, error["type"], error["details"]["status"]) == (409, "run_ended", "SUCCEEDED")
    assert client.get(f"/v1/runs/{run_id}").json()["status"] == "SUCCEEDED"


def test_another_caller_cannot_cancel_a_run(api: LocalApi) -> None:
    # Given a running run (its answer comes after a slow turn, so it has not ended when it is cancelled)
    owner = caller(api, "cancel-owner")
    run_id = post(owner, "follow this one")
    # When someone else cancels it
    response = caller(api, "cancel-stranger").post(f"/v1/runs/{run_id}/cancel")
    # Then it does not exist for them, and the run goes on to its answer
    assert response.status_code == 404
    assert finished(owner, run_id)["status"] == "SUCCEEDED"


def test_a_step_running_at_the_cancellation_writes_nothing_that_moves_the_run_on(tmp_path: Path) -> None:
    # Given a server on a store that outlives it, and a run whose model call is in flight
    with EmbeddedDynamoDB() as dynamodb:
        with serve(CONFIG, tmp_path, dynamodb_endpoint_url=dynamodb.endpoint_url) as served:
            client = caller(served, "in-flight")
            run_id = post(client, "slow one")
            in_first_iteration(client, run_id)
            table = served.environment.table_name
            # When it is cancelled, and the server stops (waiting for the execution to end)
            cancelled = client.post(f"/v1/runs/{run_id}/cancel").json()
        store = ConversationStore(dynamodb_client_for(dynamodb.endpoint_url), table)
        meta = store.require_run(run_id)
        steps = store.list_steps(run_id)
    # Then the run is as the cancellation left it, and no step after the one in flight ran
    assert (meta.status, meta.updated_at, meta.iteration) == ("CANCELLED", cancelled["updated_at"], 1)
    assert [(step.iteration, step.kind) for step in steps] in ([], [(1, "llm")])


def test_a_list_cursor_sent_with_other_filters_is_refused_and_with_another_limit_continues(api: LocalApi) -> None:
    # Given two runs of a session, and the cursor after the first page of that session's runs
    client = caller(api, "filter-switcher")
    in_session = [post(client, f"turn {index}", session_id="switch-1") for index in range(2)]
    cursor = client.get("/v1/runs", params={"session_id": "switch-1", "limit": 1}).json()["next_cursor"]
    # When the next page is asked with the same filters and a larger page, then without the session filter
    same = client.get("/v1/runs", params={"session_id": "switch-1", "limit": 5, "cursor": cursor})
    other = client.get("/v1/runs", params={"limit": 5, "cursor": cursor})
    # Then the first continues below the first page, and the second is refused naming the cursor and why
    assert [run["run_id"] for run in same.json()["runs"]] == [in_session[0]]
    assert other.status_code == 422
    [error] = other.json()["error"]["details"]["errors"]
    assert error["field"] == "cursor (query parameter)" and "other filters" in error["reason"]


def in_first_iteration(client: httpx.Client, run_id: str) -> None:
    """Wait until the run's first iteration began (its model call, slow, is then in flight)."""
    deadline = time.monotonic() + CROSS_PROCESS_SECONDS
    while client.get(f"/v1/runs/{run_id}").json()["iterations"] < 1:
        assert time.monotonic() < deadline, "the run never began its first iteration"
        time.sleep(0.05)


def dynamodb_client_for(endpoint_url: str) -> Any:
    from stepwise.config.settings import Settings

    settings = Settings.from_environ(
        {"TABLE_NAME": "unused", "DYNAMODB_ENDPOINT_URL": endpoint_url, "AWS_REGION": "us-east-1"}
    )
    return dynamodb_client(settings)


def follow(client: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    """Every answer of the events route, polled with its cursor until the run is done; fails if it is not done."""
    answers: list[dict[str, Any]] = []
    params: dict[str, str] = {}
    deadline = time.monotonic() + CROSS_PROCESS_SECONDS
    while True:
        answer = client.get(f"/v1/runs/{run_id}/events", params=params).json()
        answers.append(answer)
        if answer["done"]:
            return answers
        assert time.monotonic() < deadline, f"run {run_id}'s events were not done after {len(answers)} answers"
        params = {"after": answer["next_cursor"]}
        time.sleep(0.05)


def test_following_a_run_delivers_each_step_once_in_order_and_the_first_before_the_run_ends(api: LocalApi) -> None:
    # Given a run whose answer takes a while after its tool call
    client = caller(api, "follower")
    run_id = post(client, "follow me")
    # When its events are polled with the cursor until it is done
    answers = follow(client, run_id)
    delivered = [(event["iteration"], event["kind"]) for answer in answers for event in answer["events"]]
    # Then some steps arrived in an answer that said the run was still going
    assert any(answer["events"] and not answer["done"] for answer in answers)
    # ...and every step came once, in the order it happened, the same as the run's trace
    assert delivered == [(1, "llm"), (1, "parse"), (1, "tool"), (2, "llm"), (2, "parse")]
    trace = client.get(f"/v1/runs/{run_id}", params={"trace": "true"}).json()["trace"]
    assert sorted(delivered) == sorted((step["iteration"], step["kind"]) for step in trace)


def test_the_events_of_an_ended_run_after_its_last_cursor_are_none(api: LocalApi) -> None:
    # Given a run that ended and all its events read
    client = caller(api, "late-follower")
    run_id = post(client, "quick")
    finished(client, run_id)
    everything = client.get(f"/v1/runs/{run_id}/events").json()
    # When the events after the last cursor are asked for
    rest = client.get(f"/v1/runs/{run_id}/events", params={"after": everything["next_cursor"]}).json()
    # Then there are none, and the run is done
    assert (len(everything["events"]) > 0, rest["events"], rest["done"], rest["status"]) == (
        True,
        [],
        True,
        "SUCCEEDED",
    )


def test_another_callers_run_has_no_events_for_them(api: LocalApi) -> None:
    # Given a run of one caller
    run_id = post(caller(api, "events-owner"), "quick")
    # When another caller asks for its events / Then it does not exist for them
    assert caller(api, "events-stranger").get(f"/v1/runs/{run_id}/events").status_code == 404


def test_an_events_cursor_the_api_did_not_hand_out_is_refused_naming_it(api: LocalApi) -> None:
    # Given a run
    client = caller(api, "cursor-forger")
    run_id = post(client, "quick")
    # When its events are asked for after a made-up cursor
    response = client.get(f"/v1/runs/{run_id}/events", params={"after": "eyJ2IjoxLCJwIjpbMV19"})
    # Then it is 422 naming the cursor
    assert response.status_code == 422
    assert response.json()["error"]["details"]["errors"][0]["field"] == "after (query parameter)"


def test_an_events_cursor_the_api_did_not_hand_out_is_refused_naming_it_when_streamed(api: LocalApi) -> None:
    # Given a run
    client = caller(api, "stream-cursor-forger")
    run_id = post(client, "quick")
    # When its events are asked for as a stream after a made-up cursor
    response = client.get(
        f"/v1/runs/{run_id}/events", params={"after": "eyJ2IjoxLCJwIjpbMV19"}, headers={"accept": "text/event-stream"}
    )
    # Then it is 422 naming the cursor, as the JSON answer does
    assert response.status_code == 422
    assert response.json()["error"]["details"]["errors"][0]["field"] == "after (query parameter)"


def sse_events(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event name, decoded data) of each server-sent event, as the lines arrive."""
    name, data = "message", ""
    for line in lines:
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            data = line.removeprefix("data: ")
        elif line == "" and data:
            yield name, json.loads(data)
            name, data = "message", ""


def test_streamed_events_arrive_as_steps_are_stored_and_end_with_the_run(api: LocalApi) -> None:
    # Given a run whose answer takes a while after its tool call
    client = caller(api, "streamer")
    run_id = post(client, "follow me")
    received: list[tuple[str, dict[str, Any], str]] = []
    # When its events are asked for as a stream, noting the run's status as each one arrives
    with client.stream("GET", f"/v1/runs/{run_id}/events", headers={"accept": "text/event-stream"}) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        for name, data in sse_events(response.iter_lines()):
            received.append((name, data, client.get(f"/v1/runs/{run_id}").json()["status"]))
    # Then the first step arrived while the run was still going, each step came once in order, and the stream
    # ended with the run, saying how
    assert received[0][2] in ("QUEUED", "RUNNING")
    steps = [(data["iteration"], data["kind"]) for name, data, _ in received if name == "step"]
    assert steps == [(1, "llm"), (1, "parse"), (1, "tool"), (2, "llm"), (2, "parse")]
    assert (received[-1][0], received[-1][1]["status"], received[-1][1]["outcome"]) == ("end", "SUCCEEDED", "answered")


def test_an_events_cursor_of_another_run_is_refused_naming_it(api: LocalApi) -> None:
    # Given two runs of one caller, and a cursor the first one's events returned
    client = caller(api, "cursor-mixer")
    first, second = post(client, "quick"), post(client, "quick")
    cursor = client.get(f"/v1/runs/{first}/events").json()["next_cursor"]
    # When the second run's events are asked after it, as JSON and as a stream resumed with Last-Event-ID
    polled = client.get(f"/v1/runs/{second}/events", params={"after": cursor})
    streamed = client.get(f"/v1/runs/{second}/events", headers={"accept": "text/event-stream", "last-event-id": cursor})
    # Then both are refused, naming where the cursor came and why, instead of skipping the run's steps
    refusals = [answer.json()["error"]["details"]["errors"][0] for answer in (polled, streamed)]
    assert (polled.status_code, streamed.status_code) == (422, 422)
    assert [refusal["field"] for refusal in refusals] == ["after (query parameter)", "Last-Event-ID (header)"]
    assert all("another run" in refusal["reason"] for refusal in refusals)


def sse_steps_with_ids(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(id, decoded data) of each `step` event, as the lines arrive."""
    name, event_id, data = "message", "", ""
    for line in lines:
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("id: "):
            event_id = line.removeprefix("id: ")
        elif line.startswith("data: "):
            data = line.removeprefix("data: ")
        elif line == "" and data:
            if name == "step":
                yield event_id, json.loads(data)
            name, data = "message", ""


@pytest.mark.parametrize("dropped_after", [1, 3])
def test_a_stream_resumed_with_last_event_id_delivers_each_step_exactly_once(api: LocalApi, dropped_after: int) -> None:
    # Given a run, and a client that drops its event stream after a few steps
    client = caller(api, f"resumer-{dropped_after}")
    run_id = post(client, "follow me")
    stream = {"accept": "text/event-stream"}
    first: list[tuple[str, dict[str, Any]]] = []
    with client.stream("GET", f"/v1/runs/{run_id}/events", headers=stream) as response:
        for received in sse_steps_with_ids(response.iter_lines()):
            first.append(received)
            if len(first) == dropped_after:
                break
    # When it reconnects to the same URL, as EventSource does, sending the id of the last step it received
    resumed = {**stream, "last-event-id": first[-1][0]}
    with client.stream("GET", f"/v1/runs/{run_id}/events", headers=resumed) as response:
        rest = list(sse_steps_with_ids(response.iter_lines()))
    # Then every step of the run arrived once, in order, across the two connections
    steps = [(data["iteration"], data["kind"]) for _, data in first + rest]
    assert steps == [(1, "llm"), (1, "parse"), (1, "tool"), (2, "llm"), (2, "parse")]


def test_a_stream_of_another_callers_run_is_not_found(api: LocalApi) -> None:
    # Given a run of one caller
    run_id = post(caller(api, "stream-owner"), "quick")
    # When another caller asks for its event stream
    response = caller(api, "stream-stranger").get(f"/v1/runs/{run_id}/events", headers={"accept": "text/event-stream"})
    # Then it does not exist for them
    assert (response.status_code, response.json()["error"]["type"]) == (404, "not_found")
