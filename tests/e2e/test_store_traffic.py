"""What a run costs in DynamoDB traffic: a fixed number of requests per tool iteration, and per-iteration
bytes that do not grow with the run (the loop appends, never rewrites, and a warm LLMCall reads only the
messages it has not read yet)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from bench.dynamodb_meter import DynamoDBMeter
from stepwise.local.example_api import ExampleToolApi
from tests.e2e.conftest import ConfigWriter, get_tool, http_api, react_action, react_answer, scripted_model
from tests.support.tool_server import ScriptableToolServer

MAX_REQUESTS_PER_TOOL_ITERATION = 6
BUDGET_PRICES = {"input_per_million": 1.0, "output_per_million": 2.0}
UNREACHED_BUDGET = {"max_total_tokens": 1_000_000_000, "max_cost_usd": 1000.0}


@dataclass(frozen=True)
class Traffic:
    requests: int
    bytes_written: int
    bytes_read: int


@pytest.fixture(scope="module")
def measured() -> dict[tuple[int, bool], Traffic]:
    """The traffic of each run length (and budget) measured in this module: the tests read different figures
    of the same runs, which count requests and bytes (the same in every measurement), so each is run once."""
    return {}


@pytest.fixture
def traffic_of_a_run(
    write_config: ConfigWriter,
    local_run: Callable[..., Any],
    meter: DynamoDBMeter,
    measured: dict[tuple[int, bool], Traffic],
) -> Callable[..., Traffic]:
    """The traffic of one run of `n` tool iterations then a final answer, in warm functions; `budgeted`,
    with a token and a cost cap the run does not reach."""

    def measure(tool_iterations: int, *, budgeted: bool = False) -> Traffic:
        if (tool_iterations, budgeted) not in measured:
            measured[tool_iterations, budgeted] = measure_afresh(tool_iterations, budgeted=budgeted)
        return measured[tool_iterations, budgeted]

    def measure_afresh(tool_iterations: int, *, budgeted: bool) -> Traffic:
        with ExampleToolApi() as api:
            turns = [react_action("get_weather", {"city": "Paris"}) for _ in range(tool_iterations)]
            model = scripted_model(*turns, react_answer("done"))
            limits: dict[str, Any] = {"max_iterations": tool_iterations + 2}
            if budgeted:
                model["prices"] = BUDGET_PRICES
                limits |= UNREACHED_BUDGET
            config = write_config(
                model,
                limits=limits,
                apis=[http_api(api.url, get_tool("get_weather", "/weather/{city}", city="string"))],
            )
            environment, _ = local_run(config)
            environment.ask("warm-up")
            meter.reset()
            meta, _ = environment.ask("weather?")
        assert meta.iteration == tool_iterations + 1
        return Traffic(meter.total_calls, meter.bytes_written, meter.bytes_read)

    return measure


@pytest.mark.parametrize("tool_iterations", [1, 10, 40])
def test_a_tool_iteration_costs_at_most_six_dynamodb_requests(
    traffic_of_a_run: Callable[[int], Traffic], tool_iterations: int
) -> None:
    # Given a run that answers at once, and one that first calls a tool `tool_iterations` times
    answer_only = traffic_of_a_run(0)
    with_tools = traffic_of_a_run(tool_iterations)
    # Then each tool iteration (IterationGuard, LLMCall, Parse, one ToolInvoke) made at most six requests
    per_tool_iteration = (with_tools.requests - answer_only.requests) / tool_iterations
    assert per_tool_iteration <= MAX_REQUESTS_PER_TOOL_ITERATION


def test_bytes_read_and_written_per_iteration_do_not_grow_with_the_run(
    traffic_of_a_run: Callable[[int], Traffic],
) -> None:
    # Given runs of 1, 10 and 40 tool iterations in warm functions
    short, medium, long = traffic_of_a_run(1), traffic_of_a_run(10), traffic_of_a_run(40)
    # Then the iterations 11 to 40 each read and wrote about what the iterations 2 to 10 did
    read_early = (medium.bytes_read - short.bytes_read) / 9
    read_late = (long.bytes_read - medium.bytes_read) / 30
    written_early = (medium.bytes_written - short.bytes_written) / 9
    written_late = (long.bytes_written - medium.bytes_written) / 30
    assert abs(read_late - read_early) <= 0.05 * read_early
    assert abs(written_late - written_early) <= 0.05 * written_early


def test_a_budgeted_run_makes_as_many_requests_per_iteration_late_in_the_run_as_early(
    traffic_of_a_run: Callable[..., Traffic],
) -> None:
    # Given runs capped on tokens and cost, of 1, 10 and 40 tool iterations in warm functions
    short, medium, long = (traffic_of_a_run(n, budgeted=True) for n in (1, 10, 40))
    # Then the iterations 11 to 40 each made as many requests as the iterations 2 to 10, at most six, and
    # read about as many bytes: the budget is checked from the payload, not from the trace
    requests_early = (medium.requests - short.requests) / 9
    requests_late = (long.requests - medium.requests) / 30
    read_early = (medium.bytes_read - short.bytes_read) / 9
    read_late = (long.bytes_read - medium.bytes_read) / 30
    assert requests_late == requests_early <= MAX_REQUESTS_PER_TOOL_ITERATION
    assert abs(read_late - read_early) <= 0.05 * read_early


@pytest.fixture
def requests_of_a_run(
    write_config: ConfigWriter, local_run: Callable[..., Any], meter: DynamoDBMeter
) -> Callable[[str, int], int]:
    """The DynamoDB requests of one run of `n` calls of a tool of `method` on loopback, then an answer."""

    def measure(method: str, tool_iterations: int) -> int:
        with ScriptableToolServer() as api:
            turns = [react_action("book", {"room": "A"}) for _ in range(tool_iterations)]
            tool = {**get_tool("book", "/book", room="string"), "method": method}
            config = write_config(
                scripted_model(*turns, react_answer("done")),
                limits={"max_iterations": tool_iterations + 2},
                apis=[http_api(api.url, tool)],
            )
            environment, _ = local_run(config)
            environment.ask("warm-up")
            meter.reset()
            environment.ask("book it")
        return meter.total_calls

    return measure


def test_a_call_that_may_change_something_costs_one_request_more_its_recorded_start(
    requests_of_a_run: Callable[[str, int], int],
) -> None:
    # Given runs of three GET calls and of three POST calls of the same tool
    get_calls, post_calls = requests_of_a_run("GET", 3), requests_of_a_run("POST", 3)
    # Then each POST call made exactly one request more than a GET call: the put of its start
    assert post_calls - get_calls == 3
