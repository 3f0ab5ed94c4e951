"""The in-process Lambda runtime: loading handlers side by side and invoking them like Lambda."""

from __future__ import annotations

import importlib
import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from stepwise.errors import LLMTransientError
from stepwise.local.asl import TaskError
from stepwise.local.lambda_runtime import (
    HandlerLoadError,
    LocalLambdaContext,
    LocalLambdaInvoker,
    UnknownFunctionError,
    load_handler,
)
from stepwise.local.template import SamTemplate

from .support import FIXTURES


@pytest.fixture(scope="module")
def invoker() -> LocalLambdaInvoker:
    return LocalLambdaInvoker(SamTemplate.load(FIXTURES / "template.yaml"))


def test_two_handlers_both_named_app_py_load_side_by_side(invoker: LocalLambdaInvoker) -> None:
    # Given two functions whose code is in an app.py each
    # When both are invoked in the same process
    echo = invoker.invoke("EchoFunction", {"q": 1})
    fail = invoker.invoke("FailFunction", {"return": "identity"})

    # Then each answered from its own module
    assert echo["identity"] == "echo"
    assert fail["identity"] == "fail"
    assert echo["module"] != fail["module"]


def test_handler_gets_a_lambda_like_context(invoker: LocalLambdaInvoker) -> None:
    # Given / When the echo function reports what its context says
    answer = invoker.invoke("EchoFunction", {})

    # Then the context names the function, its memory, and time left
    assert answer["function_name"] == "EchoFunction"
    assert answer["memory"] == 256
    assert answer["remaining_ms_positive"] is True


def test_invoke_by_arn_and_by_logical_id_reach_the_same_function(invoker: LocalLambdaInvoker) -> None:
    # Given the ARN the engine would use
    arn = invoker.function_arn("EchoFunction")

    # When the function is called by ARN and by logical id
    by_arn = invoker(arn, {"n": 1})
    by_id = invoker("EchoFunction", {"n": 1})

    # Then both answers come from the echo function
    assert arn == "arn:aws:lambda:us-east-1:000000000000:function:EchoFunction"
    assert by_arn["echo"] == by_id["echo"] == {"n": 1}


def test_the_handler_gets_a_json_copy_of_the_event(invoker: LocalLambdaInvoker) -> None:
    # Given an event with a tuple, which JSON turns into a list
    event: dict[str, Any] = {"pair": (1, 2)}

    # When it is invoked
    answer = invoker.invoke("EchoFunction", event)

    # Then the handler saw the JSON form
    assert answer["echo"] == {"pair": [1, 2]}


def test_an_exception_from_the_handler_propagates_unchanged(invoker: LocalLambdaInvoker) -> None:
    # Given / When / Then the fail function's own exception reaches the caller
    with pytest.raises(LLMTransientError, match="upstream said 503 for why"):
        invoker.invoke("FailFunction", {"question": "why"})


def test_a_result_that_is_not_json_fails_with_marshal_error(invoker: LocalLambdaInvoker) -> None:
    # Given / When the fail function returns an object that JSON cannot hold
    with pytest.raises(TaskError) as raised:
        invoker.invoke("FailFunction", {"return": "not-json"})

    # Then it fails as the Lambda runtime does
    assert raised.value.error == "Runtime.MarshalError"
    assert json.loads(raised.value.cause)["errorType"] == "Runtime.MarshalError"


def test_an_unknown_function_is_a_clear_error(invoker: LocalLambdaInvoker) -> None:
    # Given / When / Then an unknown name is refused with the known names
    with pytest.raises(UnknownFunctionError, match="EchoFunction") as raised:
        invoker("arn:aws:lambda:us-east-1:000000000000:function:Nope", {})
    assert raised.value.error == "Lambda.ResourceNotFoundException"


def test_a_missing_handler_function_is_a_handler_not_found_error(invoker: LocalLambdaInvoker) -> None:
    # Given / When / Then BrokenFunction's module has no `missing_handler`
    with pytest.raises(HandlerLoadError) as raised:
        invoker.invoke("BrokenFunction", {})
    assert raised.value.error == "Runtime.HandlerNotFound"


def test_a_missing_module_file_is_an_import_module_error() -> None:
    # Given / When / Then a handler whose module file does not exist
    with pytest.raises(HandlerLoadError) as raised:
        load_handler(FIXTURES / "functions" / "echo", "nowhere.handler", module_prefix="test_missing")
    assert raised.value.error == "Runtime.ImportModuleError"


def test_loaded_handlers_are_cached_per_code_uri_and_handler() -> None:
    # Given the echo handler loaded once
    first = load_handler(FIXTURES / "functions" / "echo", "app.lambda_handler", module_prefix="test_cache")

    # When it is loaded again
    second = load_handler(FIXTURES / "functions" / "echo", "app.lambda_handler", module_prefix="test_cache")

    # Then the same function comes back, not a second import
    assert first is second


def test_a_new_module_prefix_imports_a_fresh_copy_that_reads_the_environment_anew(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the echo handler imported under one prefix while the mode variable is "first"
    folder = FIXTURES / "functions" / "echo"
    monkeypatch.setenv("STEPWISE_TEST_ECHO_MODE", "first")
    context = LocalLambdaContext("Echo", "arn:aws:lambda:us-east-1:000000000000:function:Echo", 128, 3)
    first = load_handler(folder, "app.lambda_handler", module_prefix="test_env_first")

    # When the variable changes and the handler is loaded under another prefix, and the first again
    monkeypatch.setenv("STEPWISE_TEST_ECHO_MODE", "second")
    second = load_handler(folder, "app.lambda_handler", module_prefix="test_env_second")
    first_again = load_handler(folder, "app.lambda_handler", module_prefix="test_env_first")

    # Then the new copy read the new value, and the cached one kept what it read at import
    assert second({}, context)["mode"] == "second"
    assert first_again({}, context)["mode"] == "first"
    assert first_again is first


def test_context_remaining_time_counts_down_from_the_timeout() -> None:
    # Given a context for a 3 s function on a clock that moves 1.25 s
    ticks = iter([100.0, 101.25])
    context = LocalLambdaContext(
        function_name="F",
        invoked_function_arn="arn:aws:lambda:us-east-1:000000000000:function:F",
        memory_limit_in_mb=128,
        timeout_seconds=3,
        monotonic=lambda: next(ticks),
    )

    # When / Then the remaining time is what is left of the 3 s
    assert context.get_remaining_time_in_millis() == 1750
    assert context.log_group_name == "/aws/lambda/F"


def test_a_closed_invoker_leaves_none_of_its_handler_modules_loaded() -> None:
    # Given an invoker of its own that has run a function
    closing = LocalLambdaInvoker(SamTemplate.load(FIXTURES / "template.yaml"), module_prefix="closing_test_")
    first = closing.invoke("EchoFunction", {})
    loaded = sys.modules[first["module"]]

    # When it is closed
    closing.close()

    # Then no module of its prefix is left in the process, and a new invoke loads a fresh copy
    assert not [name for name in sys.modules if name.startswith("closing_test_")]
    closing.invoke("EchoFunction", {})
    assert sys.modules[first["module"]] is not loaded
    closing.close()


IMPORTED_MEANWHILE = 300


def test_an_invoker_closed_while_another_thread_imports_forgets_its_modules(tmp_path: Path) -> None:
    # Given a thread importing module after module (as a step's first use of a deferred import does), switching
    # threads as often as it can
    names = [f"imported_meanwhile_{tmp_path.name}_{n}" for n in range(IMPORTED_MEANWHILE)]
    for name in names:
        (tmp_path / f"{name}.py").write_text("VALUE = 1\n")
    sys.path.insert(0, str(tmp_path))
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    importing = threading.Thread(target=lambda: [importlib.import_module(name) for name in names])
    closed = 0
    try:
        importing.start()
        # When invokers that loaded a handler are closed meanwhile
        while importing.is_alive():
            invoker = LocalLambdaInvoker(SamTemplate.load(FIXTURES / "template.yaml"), module_prefix="closing_")
            invoker.invoke("EchoFunction", {})
            invoker.close()
            closed += 1
    finally:
        importing.join()
        sys.setswitchinterval(interval)
        sys.path.remove(str(tmp_path))
        for name in names:
            sys.modules.pop(name, None)
    # Then each closed, and none of their handler modules stayed loaded
    assert closed > 0
    assert [name for name in list(sys.modules) if name.startswith("closing_")] == []
