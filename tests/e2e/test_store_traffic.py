"""What a run costs in DynamoDB traffic grows linearly with its iterations: the loop appends, never rewrites."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from bench.dynamodb_meter import DynamoDBMeter
from stepwise.local.example_api import ExampleToolApi
from tests.e2e.conftest import ConfigWriter, get_tool, http_api, react_action, react_answer, scripted_model


@pytest.fixture
def meter() -> Iterator[DynamoDBMeter]:
    """Counts the DynamoDB requests of clients created while it is installed (at the wire, botocore events)."""
    installed = DynamoDBMeter().install()
    yield installed
    installed.uninstall()


def traffic_of_a_run(
    iterations: int, write_config: ConfigWriter, local_run: Callable[..., Any], meter: DynamoDBMeter
) -> tuple[int, int]:
    with ExampleToolApi() as api:
        turns = [react_action("get_weather", {"city": "Paris"}) for _ in range(iterations - 1)]
        config = write_config(
            scripted_model(*turns, react_answer("done")),
            limits={"max_iterations": iterations + 1},
            apis=[http_api(api.url, get_tool("get_weather", "/weather/{city}", city="string"))],
        )
        environment, _ = local_run(config)
        environment.ask("warm-up")
        meter.reset()
        meta, _ = environment.ask("weather?")
    assert meta.iteration == iterations
    return meter.total_calls, meter.bytes_written


def test_each_iteration_costs_the_same_requests_and_bytes_however_long_the_run(
    write_config: ConfigWriter, local_run: Callable[..., Any], meter: DynamoDBMeter
) -> None:
    # Given runs of 3, 6 and 12 iterations (one tool call each but the last)
    calls_3, written_3 = traffic_of_a_run(3, write_config, local_run, meter)
    calls_6, written_6 = traffic_of_a_run(6, write_config, local_run, meter)
    calls_12, written_12 = traffic_of_a_run(12, write_config, local_run, meter)
    # Then every extra iteration adds the same number of requests, and about the same bytes written
    assert (calls_6 - calls_3) / 3 == (calls_12 - calls_6) / 6
    per_iteration_early = (written_6 - written_3) / 3
    per_iteration_late = (written_12 - written_6) / 6
    assert abs(per_iteration_late - per_iteration_early) <= 0.05 * per_iteration_early
