"""The demo's example API, called through the same configuration and guarded invoker as real APIs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from stepwise.config.tool_sources import parse_tools_config
from stepwise.local.example_api import ExampleToolApi, example_tools_config
from stepwise.tools import ToolInvoker, build_tool_registry
from tests.unit.tools.config_builders import MakeInvoker, call


@pytest.fixture
def example_invoker(make_invoker: MakeInvoker) -> Iterator[ToolInvoker]:
    """An invoker over the example API's two tools, with the API running on loopback."""
    with ExampleToolApi() as api:
        yield make_invoker({"apis": [example_tools_config(api.url)]})


def test_get_weather_returns_the_fixed_report_of_a_known_city(example_invoker: ToolInvoker) -> None:
    # Given the example API, when the weather in Paris is asked for in imperial units
    observation = example_invoker.invoke(call("get_weather", city="paris", units="imperial"))

    # Then the fixed report comes back converted
    assert observation.ok
    assert json.loads(observation.content) == {
        "city": "Paris",
        "condition": "light rain",
        "humidity": 82,
        "temperature_f": 57.2,
        "wind_mph": 10.6,
        "units": "imperial",
    }


def test_get_weather_for_an_unknown_city_is_a_404_observation(example_invoker: ToolInvoker) -> None:
    # Given the example API, when a city it does not know is asked for
    observation = example_invoker.invoke(call("get_weather", city="Atlantis"))

    # Then the observation is a 404 naming the cities it knows
    assert (observation.ok, observation.status_code) == (False, 404)
    assert "unknown city 'Atlantis'" in observation.content and "Tokyo" in observation.content


def test_convert_currency_uses_the_fixed_rates(example_invoker: ToolInvoker) -> None:
    # Given the example API, when 100 USD are converted to EUR
    observation = example_invoker.invoke(call("convert_currency", amount=100, **{"from": "usd", "to": "EUR"}))

    # Then the fixed rate applies
    assert json.loads(observation.content) == {
        "amount": 100.0,
        "from": "USD",
        "to": "EUR",
        "rate": 0.92,
        "result": 92.0,
    }


def test_the_example_tools_config_describes_both_tools(tmp_path: Path) -> None:
    # Given the example configuration for some URL
    config = parse_tools_config({"apis": [example_tools_config("http://127.0.0.1:9")]})

    # When a registry is built from it
    registry = build_tool_registry(config, config_dir=tmp_path)

    # Then it offers the two demo tools with their required arguments
    specs = {spec.name: spec for spec in registry.specs()}
    assert list(specs) == ["get_weather", "convert_currency"]
    assert specs["get_weather"].parameters["required"] == ["city"]
    assert specs["convert_currency"].parameters["required"] == ["amount", "from", "to"]
