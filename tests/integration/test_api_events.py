"""The sample API Gateway events in events/api_*.json, fed to the API function as `sam local invoke -e` would."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

from stepwise.config.settings import Settings
from stepwise.models.messages import ChatMessage
from stepwise.steps.runs import create_run
from stepwise.steps.runtime import StepRuntime
from tests.conftest import PROJECT_ROOT
from tests.integration.test_api_handler import ApiHandler, api_config, start_handler

EVENTS = PROJECT_ROOT / "events"
RUN_ID = "0123456789abcdef0123456789abcdef"


def event(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS / name).read_text(encoding="utf-8"))
    return loaded


def invoke(handler: ApiHandler, name: str) -> tuple[int, Any]:
    response = handler.invoker.invoke("ApiFunction", event(name))
    return response["statusCode"], json.loads(response["body"])


@pytest.fixture
def handler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiHandler]:
    with mock_aws():
        yield start_handler(tmp_path, monkeypatch, api_config())


def seed_the_events_run(owner: str) -> None:
    runtime = StepRuntime.from_settings(Settings.from_environ(os.environ))
    question = [ChatMessage(role="user", content="Weather in Paris?")]
    create_run(runtime, messages=question, owner=owner, profile="default", run_id=RUN_ID)


def test_every_api_event_file_is_fed_to_the_api_function_below() -> None:
    # Then the API events in events/ are the ones these tests feed
    assert {path.name for path in EVENTS.glob("api_*.json")} == {
        "api_post_run.json",
        "api_post_run_session.json",
        "api_post_run_invalid.json",
        "api_get_run.json",
        "api_get_run_trace.json",
    }


def test_the_post_run_event_starts_a_run_owned_by_its_api_key(handler: ApiHandler) -> None:
    # When the POST run event is handled
    status, body = invoke(handler, "api_post_run.json")
    # Then a run is accepted and its poll URL carries the stage the caller used
    assert (status, body["status"]) == (202, "QUEUED")
    assert body["poll_url"] == f"/prod/v1/runs/{body['run_id']}"


def test_the_session_event_starts_a_run_in_its_session(handler: ApiHandler) -> None:
    # When the POST-with-session event is handled
    status, body = invoke(handler, "api_post_run_session.json")
    # Then the run belongs to the session the event names
    assert (status, body["session_id"]) == (202, "trip-planning-42")


def test_the_invalid_event_is_refused_naming_its_unknown_fields(handler: ApiHandler) -> None:
    # When the invalid POST event is handled
    status, body = invoke(handler, "api_post_run_invalid.json")
    # Then it is a 422 that names each field it does not know, and nothing is stored
    assert (status, body["error"]["type"]) == (422, "invalid_request")
    assert {error["field"] for error in body["error"]["details"]["errors"]} == {"question", "max_iterations"}
    assert handler.items() == []


def test_the_get_events_read_the_run_they_name(handler: ApiHandler) -> None:
    # Given the run the GET events name, owned by the events' API key
    seed_the_events_run(owner=event("api_get_run.json")["requestContext"]["identity"]["apiKeyId"])
    # When both GET events are handled
    plain = invoke(handler, "api_get_run.json")
    traced = invoke(handler, "api_get_run_trace.json")
    # Then both show the run; only the second has a trace
    assert (plain[0], plain[1]["run_id"], plain[1]["trace"]) == (200, RUN_ID, None)
    assert (traced[0], traced[1]["trace"]) == (200, [])
