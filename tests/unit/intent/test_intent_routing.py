"""route_profile and check_routes: from a classification to an agent profile."""

from __future__ import annotations

import pytest
import yaml

from stepwise.config.intent import Category, RoutingConfig
from stepwise.intent import check_routes, route_profile

ROUTES_YAML = """
routes:
  - when: {intent-route: Finance, disable-cache: Time-sensitive}
    profile: finance-live
  - when: {intent-route: Finance}
    profile: finance
  - when: {intent-route: Law}
    profile: legal
"""


@pytest.fixture
def routing() -> RoutingConfig:
    return RoutingConfig.model_validate(yaml.safe_load(ROUTES_YAML))


def test_a_classification_is_routed_to_its_profile(routing: RoutingConfig) -> None:
    # Given routes and a question classified as Law
    values = {"intent-route": "Law", "disable-cache": "Non-time-sensitive"}
    # When it is routed / Then the Law route's profile is chosen
    assert route_profile(values, routing, "default") == "legal"


def test_the_first_matching_route_wins(routing: RoutingConfig) -> None:
    # Given a classification both Finance routes match
    values = {"intent-route": "Finance", "disable-cache": "Time-sensitive"}
    # When it is routed / Then the earlier route wins
    assert route_profile(values, routing, "default") == "finance-live"


def test_a_route_matches_only_when_every_condition_holds(routing: RoutingConfig) -> None:
    # Given a Finance question that is not time-sensitive
    values = {"intent-route": "Finance", "disable-cache": "Non-time-sensitive"}
    # When it is routed / Then the two-condition route is skipped for the one-condition route
    assert route_profile(values, routing, "default") == "finance"


def test_no_matching_route_gives_the_default_profile(routing: RoutingConfig) -> None:
    # Given a classification no route names
    values = {"intent-route": "Others", "disable-cache": "Time-sensitive"}
    # When it is routed / Then the default profile is chosen
    assert route_profile(values, routing, "general") == "general"


def test_routes_can_be_given_as_the_list_in_the_config(routing: RoutingConfig) -> None:
    # Given the routes as the plain list the configuration file holds
    # When a classification is routed / Then the result is the same as through RoutingConfig
    assert route_profile({"intent-route": "Law"}, routing.routes, "default") == "legal"


def test_a_route_without_conditions_is_rejected() -> None:
    # Given a route with an empty when
    # When it is validated / Then the error names the field
    with pytest.raises(ValueError, match="when"):
        RoutingConfig.model_validate({"routes": [{"when": {}, "profile": "finance"}]})


def test_check_routes_names_routes_that_can_never_match(routing: RoutingConfig) -> None:
    # Given categories where Law is not an option and disable-cache is not configured
    categories = [Category(use_for="intent-route", options=["Finance", "Others"])]
    # When the routes are checked against them
    problems = check_routes(routing, categories)
    # Then each impossible condition is reported by its place in the config
    assert problems == [
        "routes.0.when: 'disable-cache' is not a configured category",
        "routes.2.when.intent-route: 'Law' is not one of the options ['Finance', 'Others']",
    ]
