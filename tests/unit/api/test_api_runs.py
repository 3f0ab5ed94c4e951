"""Checking a run request before anything is stored, and reading a run back."""

from __future__ import annotations

import pytest

from stepwise.models.messages import ChatMessage
from stepwise.models.run import RunUsage
from stepwise.models.step_record import StepRecord
from stepwise.steps.api.errors import InvalidRequest
from stepwise.steps.api.lifecycle import list_runs
from stepwise.steps.api.run_views import OBSERVATION_SUMMARY_CHARS, describe_run, trace_step
from stepwise.steps.api.runs import plan_run
from stepwise.steps.api.services import LOST_RUN_GRACE_SECONDS
from stepwise.steps.best_answer import limit_summary
from tests.unit.api.conftest import ApiWorld, api_config


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def test_a_request_within_the_limits_is_planned_with_its_profile() -> None:
    # When a short request naming a known profile is checked
    plan = plan_run(api_config(), owner="o", messages=[user("hi")], request_body={}, profile="finance")
    # Then it is planned as asked
    assert (plan.owner, plan.profile, plan.messages) == ("o", "finance", [user("hi")])


def test_every_limit_broken_is_reported_at_once() -> None:
    # When a request breaks the message count, the size and names an unknown profile
    with pytest.raises(InvalidRequest) as refused:
        plan_run(api_config(), owner="o", messages=[user("x" * 10)] * 4, request_body={}, profile="nope")
    # Then all three problems are named
    fields = [error["field"] for error in refused.value.details["errors"]]
    assert fields == ["messages", "messages", "profile"]


def test_a_long_observation_is_shown_as_its_start() -> None:
    # Given a tool step whose observation is long
    step = StepRecord(iteration=1, kind="tool", action="search", observation="y" * 2000, ok=True)
    # When it is shown in a trace
    shown = trace_step(step)
    # Then the tool is named and the observation is cut, with a marker
    assert shown.tool == "search"
    assert shown.observation == "y" * OBSERVATION_SUMMARY_CHARS + "…"


def test_a_run_still_open_long_after_its_deadline_is_reported_timed_out(world: ApiWorld) -> None:
    # Given a run whose execution never recorded an outcome
    meta = world.queued_run()
    # When it is read just before and well after its deadline plus the grace period
    world.time.now = meta.deadline + LOST_RUN_GRACE_SECONDS - 1
    before = describe_run(world.services, owner="owner", run_reference=meta.run_id, trace=False)
    world.time.now = meta.deadline + LOST_RUN_GRACE_SECONDS + 1
    after = describe_run(world.services, owner="owner", run_reference=meta.run_id, trace=False)
    # Then it is QUEUED until then, and TIMED_OUT (with why) after
    assert before.status == "QUEUED"
    assert (after.status, after.error is not None and after.error.type) == ("TIMED_OUT", "RunLost")


def test_an_ended_run_keeps_its_status_however_late_it_is_read(world: ApiWorld) -> None:
    # Given a run that succeeded
    meta = world.queued_run()
    world.services.runtime.store.finish_run(meta, "SUCCEEDED", stop_reason="final_answer", answer="42")
    # When it is read long after its deadline
    world.time.now = meta.deadline + 10 * LOST_RUN_GRACE_SECONDS
    view = describe_run(world.services, owner="owner", run_reference=meta.run_id, trace=False)
    # Then it is still SUCCEEDED with its answer
    assert (view.status, view.answer, view.error) == ("SUCCEEDED", "42", None)


def test_the_list_and_a_run_show_its_outcome_and_a_run_stored_without_one_gets_it_from_its_answer(
    world: ApiWorld,
) -> None:
    # Given a run stored before outcomes were (SUCCEEDED at its deadline with nothing but the sentence saying
    # so), a run recorded partial, and a run still open
    store = world.services.runtime.store
    old = world.queued_run()
    store.finish_run(old, "SUCCEEDED", stop_reason="deadline", answer=limit_summary([], "deadline", "en"))
    partial = world.queued_run()
    store.finish_run(partial, "SUCCEEDED", stop_reason="max_iterations", outcome="partial", answer="- t: 42")
    running = world.queued_run()
    # When the owner lists their runs and reads the old one
    listed = list_runs(world.services, owner="owner", limit=10)
    view = describe_run(world.services, owner="owner", run_reference=old.run_id, trace=False)
    # Then each shows its outcome: none for the old one (its answer said nothing), none while open
    outcomes = {run.run_id: run.outcome for run in listed.runs}
    assert outcomes == {old.run_id: "none", partial.run_id: "partial", running.run_id: None}
    assert view.outcome == "none"


def test_the_list_shows_each_runs_question_cut_to_200_characters_and_its_usage_once_it_ended(
    world: ApiWorld,
) -> None:
    # Given a run asked a 250-character question that ended having spent tokens, and a run still open
    store = world.services.runtime.store
    ended = world.queued_run("Where " + "x" * 244)
    store.finish_run(ended, "SUCCEEDED", stop_reason="final_answer", usage=RunUsage(input_tokens=12, output_tokens=3))
    world.queued_run("What now?")
    # When the owner lists their runs
    listed = list_runs(world.services, owner="owner", limit=10)
    # Then each shows its question, the long one cut to 200 characters; the ended one its usage, the open one none
    shown = {run.question: run.usage and run.usage.input_tokens for run in listed.runs}
    assert shown == {"Where " + "x" * 194: 12, "What now?": None}
