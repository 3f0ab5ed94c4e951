"""The invoker never raises: every way a call can go wrong becomes an observation that says so."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest

from stepwise.errors import ToolError
from stepwise.tools import ToolInvoker, ToolRegistry, ToolResult, tool
from tests.unit.tools.config_builders import MakeInvoker, call


@tool
def divide(numerator: float, denominator: float) -> float:
    """Divide two numbers.

    Args:
        numerator: The number to divide.
        denominator: The number to divide by.
    """
    return numerator / denominator


@tool
def refuse(reason: str) -> str:
    """Fail on purpose with a tool error."""
    raise ToolError(f"refused: {reason}")


@tool
def quit_process() -> str:
    """Call sys.exit, as a careless deployer tool might."""
    sys.exit(3)


@tool
def shout(text: str) -> ToolResult:
    """Answer with a ToolResult of the text in capitals."""
    return ToolResult(content=text.upper())


@pytest.fixture
def invoker() -> ToolInvoker:
    """An invoker over a few Python tools."""
    return ToolInvoker(ToolRegistry([divide, refuse, quit_process, shout]))


def test_a_successful_call_is_an_ok_observation_with_the_call_identity(invoker: ToolInvoker) -> None:
    # Given a tool that divides, when it is called
    observation = invoker.invoke(call("divide", numerator=7, denominator=2))

    # Then the observation carries the result and the call's id and name
    assert (observation.ok, observation.content, observation.error) == (True, "3.5", None)
    assert (observation.call_id, observation.name) == ("call-divide", "divide")
    assert observation.latency_ms >= 0


def test_an_unknown_tool_lists_the_known_tools(invoker: ToolInvoker) -> None:
    # Given no tool called weather, when the model calls it
    observation = invoker.invoke(call("weather", city="Paris"))

    # Then the observation says so and lists what exists
    assert not observation.ok
    assert observation.error == "unknown tool 'weather'; known tools: divide, refuse, quit_process, shout"
    assert observation.content == f"Error: {observation.error}"


def test_invalid_arguments_name_the_field_and_the_reason(invoker: ToolInvoker) -> None:
    # Given a call whose denominator is a string
    observation = invoker.invoke(call("divide", numerator=1, denominator="zero"))

    # Then the observation names the field and why it is wrong
    assert not observation.ok
    assert observation.error == "invalid arguments for divide: denominator: 'zero' is not of type 'number'"


def test_a_missing_argument_is_named(invoker: ToolInvoker) -> None:
    # Given a call without its denominator
    observation = invoker.invoke(call("divide", numerator=1))

    # Then the missing property is named
    assert observation.error == (
        "invalid arguments for divide: arguments: the required argument 'denominator' of this tool is missing"
    )


def test_an_unexpected_argument_is_named(invoker: ToolInvoker) -> None:
    # Given a call with an argument the function does not take
    observation = invoker.invoke(call("divide", numerator=1, denominator=2, precision=3))

    # Then the extra argument is named, and the function was never called with it
    assert observation.error == (
        "invalid arguments for divide: arguments: 'precision' is not an argument of this tool; "
        "the arguments are denominator, numerator"
    )


def test_an_exception_inside_a_tool_becomes_an_observation(invoker: ToolInvoker) -> None:
    # Given a division by zero inside the tool
    observation = invoker.invoke(call("divide", numerator=1, denominator=0))

    # Then the observation names the exception
    assert not observation.ok
    assert observation.error is not None
    assert observation.error.startswith("the tool failed: ZeroDivisionError: ")


def test_a_tool_error_is_passed_on_as_its_message(invoker: ToolInvoker) -> None:
    # Given a tool that raises ToolError on purpose
    observation = invoker.invoke(call("refuse", reason="closed on Sundays"))

    # Then its message is the error as written
    assert observation.error == "refused: closed on Sundays"


def test_a_tool_calling_sys_exit_does_not_end_anything(invoker: ToolInvoker) -> None:
    # Given a tool that calls sys.exit, when it is called
    observation = invoker.invoke(call("quit_process"))

    # Then the run goes on with an observation saying what happened
    assert not observation.ok
    assert observation.error == "the tool failed: SystemExit: 3"


def test_a_tool_result_returned_by_a_function_is_used_as_is(invoker: ToolInvoker) -> None:
    # Given a function that returns a ToolResult, when it is called
    observation = invoker.invoke(call("shout", text="hello"))

    # Then its content is the observation's
    assert (observation.ok, observation.content) == (True, "HELLO")


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """An event that lets a stuck tool finish once the test is over."""
    event = threading.Event()
    yield event
    event.set()


def test_a_tool_that_never_returns_is_cut_off_at_the_call_cap(release: threading.Event) -> None:
    # Given a tool that waits until the test ends, and an invoker capping calls at 0.2 s
    @tool
    def stuck() -> str:
        """Wait for the test to finish."""
        release.wait()
        return "finally"

    invoker = ToolInvoker(ToolRegistry([stuck]), max_call_seconds=0.2)

    # When it is called
    observation = invoker.invoke(call("stuck"))

    # Then the invoker gives up and says so
    assert not observation.ok
    assert observation.error == "timed out after 0.2 s"


def test_builtin_tools_are_invoked_through_configuration(make_invoker: MakeInvoker) -> None:
    # Given the calculator enabled by name
    invoker = make_invoker({"builtin": ["calculator"]})

    # When the model asks for an expression
    observation = invoker.invoke(call("calculator", expression="(2 + 3) * 4"))

    # Then the answer is the number
    assert (observation.ok, observation.content) == (True, "20")
