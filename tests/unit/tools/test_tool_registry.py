"""Building the registry: deployer Python modules from the config directory, built-ins, name clashes."""

from __future__ import annotations

import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from stepwise.config.tool_sources import parse_tools_config
from stepwise.errors import ConfigError
from stepwise.tools import ToolInvoker, build_tool_registry
from tests.unit.tools.config_builders import MakeInvoker, api_entry, call, endpoint

DEPLOYER_MODULE = '''
from stepwise.tools import tool
from stepwise.tools.builtin import builtin_tools

imported_elsewhere = builtin_tools()["calculator"]


@tool
def shout(text: str, times: int = 1) -> str:
    """Shout a text.

    Args:
        text: What to shout.
        times: How many times.
    """
    return " ".join([text.upper() + "!"] * times)


@tool
def explode() -> str:
    """Always fails."""
    raise RuntimeError("kaboom")
'''


@pytest.fixture
def config_dir(tmp_path: Path) -> Iterator[Path]:
    """A config directory; modules imported from it are forgotten afterwards."""
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        module_file = getattr(sys.modules[name], "__file__", None) or ""
        if module_file.startswith(str(tmp_path)):
            del sys.modules[name]
    if str(tmp_path.resolve()) in sys.path:
        sys.path.remove(str(tmp_path.resolve()))


def write_module(directory: Path, source: str) -> str:
    """Write a uniquely named module into ``directory`` and return its name."""
    name = f"deployer_tools_{uuid.uuid4().hex[:8]}"
    (directory / f"{name}.py").write_text(textwrap.dedent(source))
    return name


def test_a_deployer_module_in_the_config_directory_provides_tools(make_invoker: MakeInvoker, config_dir: Path) -> None:
    # Given a module in the config directory defining two tools and importing a third
    module = write_module(config_dir, DEPLOYER_MODULE)

    # When the configuration lists it
    invoker = make_invoker({"python": [module]}, config_dir=config_dir)

    # Then its own tools are called, failures become observations, and the imported tool is not its own
    assert invoker.invoke(call("shout", text="hi", times=2)).content == "HI! HI!"
    assert invoker.invoke(call("explode")).error == "the tool failed: RuntimeError: kaboom"
    assert (
        invoker.invoke(call("calculator", expression="1+1")).error
        == "unknown tool 'calculator'; known tools: shout, explode"
    )


def test_the_registry_offers_a_subset_of_specs_in_the_order_asked(config_dir: Path) -> None:
    # Given built-ins and a deployer module
    module = write_module(config_dir, DEPLOYER_MODULE)
    config = parse_tools_config({"builtin": ["current_time", "calculator"], "python": [module]})
    registry = build_tool_registry(config, config_dir=config_dir)

    # When a profile asks for some tools by name
    specs = registry.specs(["shout", "calculator"])

    # Then exactly those specs come back, and every tool is known by name
    assert [spec.name for spec in specs] == ["shout", "calculator"]
    assert registry.names() == ["current_time", "calculator", "shout", "explode"]
    assert registry.get("nothing") is None


def test_asking_for_an_unconfigured_tool_is_a_config_error(config_dir: Path) -> None:
    # Given only the calculator
    registry = build_tool_registry(parse_tools_config({"builtin": ["calculator"]}), config_dir=config_dir)

    # When a profile asks for weather, then the error names it and lists what exists
    with pytest.raises(ConfigError, match="unknown tool\\(s\\) weather; configured tools: calculator"):
        registry.specs(["weather"])


def test_an_unknown_builtin_is_a_config_error(config_dir: Path) -> None:
    # Given a built-in that does not exist, when the registry is built, then the error lists the real ones
    with pytest.raises(ConfigError, match="builtin: unknown tool 'web_search'; built-in tools: current_time"):
        build_tool_registry(parse_tools_config({"builtin": ["web_search"]}), config_dir=config_dir)


def test_a_python_tool_with_the_name_of_an_http_tool_is_a_config_error(config_dir: Path) -> None:
    # Given an API tool named shout and a deployer module that also defines shout
    module = write_module(config_dir, DEPLOYER_MODULE)
    raw = {"apis": [api_entry("https://api.example.com", [endpoint("shout", "/shout")])], "python": [module]}

    # When the registry is built, then the clash is named with both sources
    with pytest.raises(ConfigError, match=f"python module {module}: tool shout is already defined by api"):
        build_tool_registry(parse_tools_config(raw), config_dir=config_dir)


def test_a_module_missing_from_the_config_directory_is_a_config_error(config_dir: Path) -> None:
    # Given a module name with no file, when the registry is built, then the error names module and directory
    with pytest.raises(ConfigError, match="python tool module 'no_such_tools_module' was not found in"):
        build_tool_registry(parse_tools_config({"python": ["no_such_tools_module"]}), config_dir=config_dir)


def test_a_module_name_that_resolves_outside_the_config_directory_is_refused(config_dir: Path) -> None:
    # Given a module name that is a standard library module, when it is listed
    with pytest.raises(ConfigError, match=r"python tool module 'json' resolves to .*rename the module"):
        build_tool_registry(parse_tools_config({"python": ["json"]}), config_dir=config_dir)


def test_a_module_that_fails_to_import_is_a_config_error(config_dir: Path) -> None:
    # Given a module that raises while importing
    module = write_module(config_dir, "raise ValueError('bad deployment')\n")

    # When the registry is built, then the error names the module and the exception
    with pytest.raises(ConfigError, match=f"'{module}' failed to import: ValueError: bad deployment"):
        build_tool_registry(parse_tools_config({"python": [module]}), config_dir=config_dir)


def test_a_module_without_tools_is_a_config_error(config_dir: Path) -> None:
    # Given a module that defines no @tool function
    module = write_module(config_dir, "def helper() -> int:\n    return 1\n")

    # When the registry is built, then the error says so
    with pytest.raises(ConfigError, match=f"'{module}' defines no @tool function"):
        build_tool_registry(parse_tools_config({"python": [module]}), config_dir=config_dir)


def test_a_restricted_registry_only_invokes_the_allowed_tools(config_dir: Path) -> None:
    # Given a registry with both built-ins, restricted to the calculator as a profile would
    registry = build_tool_registry(
        parse_tools_config({"builtin": ["current_time", "calculator"]}), config_dir=config_dir
    )
    invoker = ToolInvoker(registry.restricted_to({"calculator"}))

    # When the model calls the tool it was not given
    observation = invoker.invoke(call("current_time"))

    # Then it is unknown to this invoker, while the allowed one works
    assert observation.error == "unknown tool 'current_time'; known tools: calculator"
    assert invoker.invoke(call("calculator", expression="6*7")).content == "42"


def test_restricting_to_an_unconfigured_tool_is_a_config_error(config_dir: Path) -> None:
    # Given only the calculator, when a profile allows web_search, then the error names it
    registry = build_tool_registry(parse_tools_config({"builtin": ["calculator"]}), config_dir=config_dir)
    with pytest.raises(ConfigError, match=r"unknown tool\(s\) web_search"):
        registry.restricted_to(["calculator", "web_search"])


def test_a_get_marked_with_side_effects_is_not_read_only_for_a_replay(tmp_path: Path) -> None:
    # Given an API with a plain GET and a GET its configuration marks as changing something
    config = parse_tools_config(
        {
            "apis": [
                api_entry(
                    "http://127.0.0.1:9",
                    [endpoint("lookup", "/lookup"), endpoint("ring_bell", "/ring", sideEffects=True)],
                )
            ]
        }
    )
    # When the registry is built
    registry = build_tool_registry(config, config_dir=tmp_path)
    # Then a replay's live tools may call the plain GET, never the one with side effects
    assert (registry.is_read_only("lookup"), registry.is_read_only("ring_bell")) == (True, False)


PAYMENTS_MODULE = '''
from stepwise.tools import tool


@tool
def {name}(amount: int) -> str:
    """Pay.

    Args:
        amount: How much.
    """
    return "paid {name}"
'''


def test_a_module_name_another_config_directory_loaded_first_is_this_directorys(tmp_path: Path) -> None:
    # Given two config directories of one process, each with its own module named alike
    first, second = tmp_path / "first", tmp_path / "second"
    name = f"payments_{uuid.uuid4().hex[:8]}"
    for directory, tool_name in ((first, "pay_first"), (second, "pay_second")):
        directory.mkdir()
        (directory / f"{name}.py").write_text(PAYMENTS_MODULE.format(name=tool_name))
    try:
        build_tool_registry(parse_tools_config({"python": [name]}), config_dir=first)

        # When the second directory's tools are built after the first's
        registry = build_tool_registry(parse_tools_config({"python": [name]}), config_dir=second)

        # Then its tools are those of its own module
        assert registry.names() == ["pay_second"]
    finally:
        sys.modules.pop(name, None)
        for directory in (first, second):
            if str(directory.resolve()) in sys.path:
                sys.path.remove(str(directory.resolve()))
