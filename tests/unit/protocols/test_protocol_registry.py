"""Choosing a protocol: strategy resolution and lookup by name."""

from __future__ import annotations

import pytest

from stepwise.protocols import ProtocolName, get_protocol, resolve_protocol


@pytest.mark.parametrize("native", [True, False])
def test_function_calling_strategy_is_always_native(native: bool) -> None:
    # Given the function_calling strategy / When resolved / Then it is function_calling
    assert resolve_protocol("function_calling", None, native) == "function_calling"


def test_react_strategy_defaults_to_react_json() -> None:
    # Given the react strategy and no protocol / When resolved / Then react_json
    assert resolve_protocol("react", None, True) == "react_json"


@pytest.mark.parametrize("protocol", ["react_json", "react_text", "xml", "markers"])
def test_react_strategy_uses_the_named_text_protocol(protocol: ProtocolName) -> None:
    # Given the react strategy and a text protocol / When resolved / Then that protocol, even for a native model
    assert resolve_protocol("react", protocol, True) == protocol


def test_react_strategy_rejects_function_calling() -> None:
    # Given the react strategy with the native protocol / When resolved / Then a ValueError says why
    with pytest.raises(ValueError, match="text protocol"):
        resolve_protocol("react", "function_calling", False)


def test_auto_strategy_is_native_when_the_model_supports_tools() -> None:
    # Given auto and a model declaring tool support / When resolved / Then function_calling
    assert resolve_protocol("auto", None, True) == "function_calling"


def test_auto_strategy_falls_back_to_react_json() -> None:
    # Given auto and a model without tool support / When resolved / Then react_json
    assert resolve_protocol("auto", None, False) == "react_json"


def test_auto_strategy_falls_back_to_the_named_text_protocol() -> None:
    # Given auto, a model without tool support and a text protocol / When resolved / Then that protocol
    assert resolve_protocol("auto", "xml", False) == "xml"


def test_unknown_strategy_is_rejected() -> None:
    # Given a strategy that does not exist / When resolved / Then a ValueError names it
    with pytest.raises(ValueError, match="plan_and_execute"):
        resolve_protocol("plan_and_execute", None, False)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["function_calling", "react_json", "react_text", "xml", "markers"])
def test_every_protocol_is_available_by_name(name: ProtocolName) -> None:
    # Given a protocol name / When looked up / Then the protocol has that name
    assert get_protocol(name).name == name


def test_unknown_protocol_name_is_rejected() -> None:
    # Given a name that is no protocol / When looked up / Then a ValueError lists the known names
    with pytest.raises(ValueError, match="react_json"):
        get_protocol("json_mode")  # type: ignore[arg-type]
