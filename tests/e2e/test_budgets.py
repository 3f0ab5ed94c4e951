"""Token and cost budgets end a run through the forced final round, whatever set them: profile or request."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from bench.dynamodb_meter import DynamoDBMeter
from stepwise.config.model import StepwiseConfig
from stepwise.errors import ConfigError
from stepwise.local.server import LocalApi
from tests.e2e.conftest import ConfigWriter, react_action, react_answer, serve
from tests.support.polling import run_seen, wait_for

# Each model call spends 60 input and 40 output tokens: 100 tokens, $0.00014 at these prices.
SPEND = {"usage": {"input_tokens": 60, "output_tokens": 40}}
PRICES = {"input_per_million": 1.0, "output_per_million": 2.0}


def looping_model(**extra: Any) -> dict[str, Any]:
    """A scripted model that asks for the calculator at every turn, spending the same tokens each time."""
    return {
        "provider": "scripted",
        "scenarios": [{"turns": [{**react_action("calculator", {"expression": "1+1"}), **SPEND}]}],
        **extra,
    }


def test_a_profile_token_budget_forces_the_final_round_once_spent(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given a profile capped at 250 tokens and a model that never stops calling tools
    config = write_config(looping_model(), builtin=["calculator"], limits={"max_total_tokens": 250})
    environment, _ = local_run(config)
    # When a question is asked
    meta, execution = environment.ask("loop")
    steps = environment.runtime.store.list_steps(meta.run_id)
    # Then three calls spent 300 tokens, the fourth was the final round, and the run says why it stopped
    final_rounds = [step.final_round for step in steps if step.kind == "llm"]
    assert final_rounds == [False, False, False, True]
    assert (execution.status, meta.status, meta.stop_reason) == ("SUCCEEDED", "SUCCEEDED", "token_budget")
    assert meta.answer and meta.answer.strip()


def test_a_profile_cost_budget_forces_the_final_round_and_the_cost_is_recorded(
    write_config: ConfigWriter, local_run: Callable[..., Any]
) -> None:
    # Given a profile capped at $0.00025 and a priced model that never stops calling tools
    config = write_config(looping_model(prices=PRICES), builtin=["calculator"], limits={"max_cost_usd": 0.00025})
    environment, _ = local_run(config)
    # When a question is asked
    meta, _ = environment.ask("loop")
    # Then two calls spent $0.00028, the third was the final round, and the three calls' cost is stored
    assert (meta.stop_reason, meta.iteration) == ("cost_budget", 3)
    assert (meta.usage.input_tokens, meta.usage.output_tokens, meta.usage.cost_usd) == (180, 120, 0.00042)


def test_a_budget_the_run_does_not_reach_costs_no_dynamodb_request(
    write_config: ConfigWriter, local_run: Callable[..., Any], meter: DynamoDBMeter
) -> None:
    # Given the same looping run of 8 iterations twice: once capped on tokens and cost (caps it does not
    # reach), once uncapped
    def requests_of_a_run(limits: dict[str, Any]) -> int:
        config = write_config(looping_model(prices=PRICES), builtin=["calculator"], limits=limits)
        environment, _ = local_run(config)
        meter.reset()
        meta, _ = environment.ask("loop")
        assert (meta.stop_reason, meta.iteration) == ("max_iterations", 8)
        return meter.total_calls

    # When each runs
    uncapped = requests_of_a_run({"max_iterations": 8})
    capped = requests_of_a_run({"max_iterations": 8, "max_total_tokens": 1_000_000, "max_cost_usd": 1.0})
    # Then the capped run made no more DynamoDB requests: its spend travels in the state payload
    assert capped == uncapped


def test_a_cost_budget_on_a_model_without_prices_is_a_configuration_error() -> None:
    # Given a profile with a cost cap on a model that has no prices
    raw = {
        "models": {"m": looping_model()},
        "profiles": {"default": {"model": "m", "limits": {"max_cost_usd": 1.0}}},
    }
    # When the configuration is read / Then it is refused naming the field
    with pytest.raises(ConfigError, match=r"limits.max_cost_usd: model 'm' has no prices"):
        StepwiseConfig.from_mapping(raw)


# Asked "ask ...", the model calls the calculator twice, then answers: 300 tokens in all.
ASKING_SCENARIO = {
    "match": "^ask",
    "turns": [
        {**react_action("calculator", {"expression": "1+1"}), **SPEND},
        {**react_action("calculator", {"expression": "2+2"}), **SPEND},
        {**react_answer("Both sums are done."), **SPEND},
    ],
}
SERVE_CONFIG = {
    "models": {"m": looping_model(prices=PRICES) | {"scenarios": [ASKING_SCENARIO, *looping_model()["scenarios"]]}},
    "tools": {"builtin": ["calculator"]},
    "profiles": {
        "default": {"model": "m", "strategy": "react", "protocol": "react_json"},
        # at 150 tokens the run waits for a person, rather than ending through a final round
        "asking": {
            "model": "m",
            "strategy": "react",
            "protocol": "react_json",
            "limits": {"max_total_tokens": 150, "on_budget": "ask", "budget_wait_seconds": 120},
        },
    },
}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalApi]:
    with serve(SERVE_CONFIG, tmp_path_factory.mktemp("budgets")) as served:
        yield served


def read_run(client: httpx.Client, run_id: str) -> dict[str, Any]:
    body: dict[str, Any] = client.get(f"/v1/runs/{run_id}").json()
    return body


def ended(client: httpx.Client, run_id: str) -> dict[str, Any]:
    """The run once it is no longer QUEUED or RUNNING; fails naming its last status if it stays so."""
    return wait_for(
        lambda: read_run(client, run_id),
        lambda run: run["status"] not in ("QUEUED", "RUNNING"),
        what=f"run {run_id} left QUEUED and RUNNING",
        shown=run_seen,
    )


def test_a_request_budget_ends_its_run_with_the_reason_and_the_cost_reported(api: LocalApi) -> None:
    client = httpx.Client(base_url=api.url, headers={"x-api-key": "budgeted"}, timeout=30)
    # When a run is posted with a 150-token budget
    accepted = client.post("/v1/runs", json={"input": "loop", "budget": {"max_total_tokens": 150}})
    run = ended(client, accepted.json()["run_id"])
    # Then its third call was the final round, and GET reports why it stopped and what it cost
    assert (run["status"], run["stop_reason"], run["iterations"]) == ("SUCCEEDED", "token_budget", 3)
    assert (run["usage"]["input_tokens"] + run["usage"]["output_tokens"], run["usage"]["cost_usd"]) == (300, 0.00042)


def test_a_request_budget_with_an_unknown_field_is_refused_naming_it(api: LocalApi) -> None:
    client = httpx.Client(base_url=api.url, headers={"x-api-key": "budgeted"}, timeout=30)
    # When a budget names a cap that does not exist
    response = client.post("/v1/runs", json={"input": "loop", "budget": {"max_dollars": 1}})
    # Then it is 422 naming the field
    assert response.status_code == 422
    assert response.json()["error"]["details"]["errors"][0]["field"] == "budget.max_dollars"


def until(client: httpx.Client, run_id: str, statuses: set[str]) -> dict[str, Any]:
    """The run once its status is one of `statuses` or it ended (polled as a client would)."""
    return wait_for(
        lambda: read_run(client, run_id),
        lambda run: run["status"] in statuses | {"SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED"},
        what=f"run {run_id} reached {sorted(statuses)} or ended",
        shown=run_seen,
    )


def waiting_at_budget(client: httpx.Client) -> str:
    """A run of the asking profile, once it waits at its budget (two calls spent 200 of its 150 tokens)."""
    accepted = client.post("/v1/runs", json={"input": "ask for two sums", "profile": "asking"})
    assert accepted.status_code == 202, accepted.text
    run_id: str = accepted.json()["run_id"]
    run = until(client, run_id, {"WAITING_BUDGET"})
    assert run["status"] == "WAITING_BUDGET", run
    assert (run["budget_wait"]["reason"], run["budget_wait"]["spent_tokens"]) == ("token_budget", 200)
    return run_id


def test_a_run_that_asks_waits_at_its_budget_and_goes_on_once_raised(api: LocalApi) -> None:
    client = httpx.Client(base_url=api.url, headers={"x-api-key": "asker"}, timeout=30)
    # Given a run waiting at its 150-token budget
    run_id = waiting_at_budget(client)
    # When its owner adds 1000 tokens
    answered = client.post(f"/v1/runs/{run_id}/budget", json={"add_tokens": 1000})
    # Then the run goes on and ends with the model's own answer, the raise recorded with who gave it
    assert answered.status_code == 200, answered.text
    assert answered.json()["budget_wait"]["answer"] == "raised"
    # and an answer sent again finds the run no longer waiting (going on, or ended)
    again = client.post(f"/v1/runs/{run_id}/budget", json={"add_tokens": 1000})
    assert (again.status_code, again.json()["error"]["type"] in ("not_waiting_budget", "run_ended")) == (409, True)
    done = until(client, run_id, set())
    assert (done["status"], done["stop_reason"], done["outcome"]) == ("SUCCEEDED", "final_answer", "answered")
    assert done["answer"] == "Both sums are done."
    assert (done["budget_wait"]["answered_by"], done["budget_wait"]["added_tokens"]) == ("asker", 1000)


def test_a_run_that_asks_ends_at_its_budget_when_told_to(api: LocalApi) -> None:
    client = httpx.Client(base_url=api.url, headers={"x-api-key": "ender"}, timeout=30)
    # Given a run waiting at its budget
    run_id = waiting_at_budget(client)
    # When its owner ends it
    answered = client.post(f"/v1/runs/{run_id}/budget", json={"end": True})
    # Then it ends with its best answer, no further model call, and the budget as its stop reason
    assert answered.status_code == 200, answered.text
    done = until(client, run_id, set())
    assert (done["status"], done["stop_reason"], done["outcome"]) == ("SUCCEEDED", "token_budget", "partial")
    assert done["answer"] and done["iterations"] == 2
    # and a second answer finds nothing waiting
    again = client.post(f"/v1/runs/{run_id}/budget", json={"add_tokens": 10})
    assert (again.status_code, again.json()["error"]["type"]) == (409, "run_ended")
