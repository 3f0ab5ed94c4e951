"""Choosing the agent profile for a classified question."""

from __future__ import annotations

from collections.abc import Sequence

from stepwise.config.intent import Category, Route, RoutingConfig


def _routes(routing: RoutingConfig | Sequence[Route]) -> Sequence[Route]:
    return routing.routes if isinstance(routing, RoutingConfig) else routing


def route_profile(values: dict[str, str], routing: RoutingConfig | Sequence[Route], default_profile: str) -> str:
    """The profile of the first route whose every `when` pair matches `values`, else `default_profile`.

    `routing` is the `routes:` section, wrapped in `RoutingConfig` or as the list of routes itself.
    Options are compared ignoring case, as the classifier compares the model's answers.
    """
    folded = {use_for: option.casefold() for use_for, option in values.items()}
    for route in _routes(routing):
        if all(folded.get(use_for) == option.casefold() for use_for, option in route.when.items()):
            return route.profile
    return default_profile


def check_routes(routing: RoutingConfig | Sequence[Route], categories: Sequence[Category]) -> list[str]:
    """Problems with routes that could never match these categories (unknown use_for or option).

    Empty when every route can match. Meant for the config loader, which owns how problems are reported.
    """
    by_name = {category.use_for: category for category in categories}
    problems: list[str] = []
    for index, route in enumerate(_routes(routing)):
        for use_for, option in route.when.items():
            category = by_name.get(use_for)
            if category is None:
                problems.append(f"routes.{index}.when: {use_for!r} is not a configured category")
            elif option.casefold() not in {known.casefold() for known in category.options}:
                problems.append(
                    f"routes.{index}.when.{use_for}: {option!r} is not one of the options {category.options}"
                )
    return problems
