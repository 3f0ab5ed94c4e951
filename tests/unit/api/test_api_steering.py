"""Steering through the API, at the function boundary (moto table, Step Functions stubbed at the wire): what a
message is checked for, who may pause, and how a resume answers the wait or is undone."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from stepwise.models.api_requests import MessageRequest
from stepwise.models.state import PauseWaitEvent
from stepwise.steps.api.problems import CannotPause, InvalidRequest, NotFound, NotPaused
from stepwise.steps.api.steering import pause_run, post_message, resume_run
from stepwise.steps.steering import await_resume
from tests.conftest import PROJECT_ROOT
from tests.unit.api.conftest import ApiWorld


@pytest.fixture(scope="module")
def dynamodb_table() -> Iterator[tuple[Any, str]]:
    """One moto table for the module's runs (each test makes runs of its own): a table per test cost more
    than the tests."""
    import boto3
    from moto import mock_aws

    from stepwise.local.embedded_dynamodb import create_table_from_template
    from stepwise.local.template import SamTemplate

    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_table_from_template(client, SamTemplate.load(PROJECT_ROOT / "template.yaml"), "conversations")
        yield client, "conversations"


def test_a_message_longer_than_the_input_limit_is_refused_naming_the_field(world: ApiWorld) -> None:
    # Given a running run, and an API taking at most 20 characters of input
    meta = world.queued_run()
    # When a 21-character message is posted / Then it is 422 on `content`, and nothing is stored
    with pytest.raises(InvalidRequest) as refused:
        post_message(world.services, owner="owner", run_reference=meta.run_id, request=MessageRequest(content="x" * 21))
    assert refused.value.details["errors"] == [{"field": "content", "reason": "at most 20 characters, got 21"}]
    assert world.services.runtime.store.steering.waiting(meta.run_id) == []


def test_another_callers_run_cannot_be_told_or_paused(world: ApiWorld) -> None:
    # Given alice's run
    meta = world.queued_run(owner="alice")
    # When bob posts to it or pauses it / Then it is 404, as for a run that does not exist
    with pytest.raises(NotFound):
        post_message(world.services, owner="bob", run_reference=meta.run_id, request=MessageRequest(content="hi"))
    with pytest.raises(NotFound):
        pause_run(world.services, owner="bob", run_reference=meta.run_id)


def test_a_run_on_an_express_workflow_cannot_pause(world: ApiWorld) -> None:
    # Given a run on an Express deployment, which cannot wait for a callback
    meta = world.queued_run()
    express = dataclasses.replace(world.services, workflow_type="EXPRESS")
    # When it is paused / Then it is 409 cannot_pause, and no pause is stored
    with pytest.raises(CannotPause):
        pause_run(express, owner="owner", run_reference=meta.run_id)
    assert world.services.runtime.store.require_run(meta.run_id).pause is None


def paused_run(world: ApiWorld, token: str) -> str:
    """A run RUNNING, asked to pause, then waiting under `token`."""
    meta = world.queued_run()
    store = world.services.runtime.store
    store.begin_iteration(meta.run_id, 1)
    pause_run(world.services, owner="owner", run_reference=meta.run_id)
    event = PauseWaitEvent(pause=True, run_id=meta.run_id, iteration=1, seconds=60, task_token=token)
    await_resume(event, world.services.runtime)
    return meta.run_id


def test_resuming_a_waiting_run_answers_its_token_and_sets_it_running(world: ApiWorld) -> None:
    # Given a run waiting paused under token t-1
    run_id = paused_run(world, "t-1")
    world.stubber.add_response("send_task_success", {}, {"taskToken": "t-1", "output": '{"resumed": true}'})
    # When its owner resumes it
    view = resume_run(world.services, owner="owner", run_reference=run_id)
    # Then Step Functions was given the token, and the run is RUNNING without its pause
    world.stubber.assert_no_pending_responses()
    assert (view.status, view.pause) == ("RUNNING", None)


def test_a_resume_that_finds_the_wait_gone_is_undone(world: ApiWorld) -> None:
    # Given a run waiting paused whose wait Step Functions no longer knows (its deadline came first)
    run_id = paused_run(world, "t-2")
    world.stubber.add_client_error("send_task_success", "TaskTimedOut", "gone")
    # When its owner resumes it / Then it is 409, and the run is as it was: PAUSED under its token
    with pytest.raises(NotPaused):
        resume_run(world.services, owner="owner", run_reference=run_id)
    meta = world.services.runtime.store.require_run(run_id)
    assert meta.status == "PAUSED" and meta.pause is not None and meta.pause.token == "t-2"


def test_resuming_a_run_that_was_never_paused_is_refused(world: ApiWorld) -> None:
    # Given a running run nobody paused
    meta = world.queued_run()
    # When it is resumed / Then it is 409 not_paused
    with pytest.raises(NotPaused):
        resume_run(world.services, owner="owner", run_reference=meta.run_id)
