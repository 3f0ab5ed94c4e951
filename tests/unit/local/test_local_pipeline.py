"""The template, the in-process runtime and the engine together, as `stepwise demo` uses them."""

from __future__ import annotations

import json
from typing import Any

from stepwise.local.asl import LocalStateMachine
from stepwise.local.lambda_runtime import LocalLambdaInvoker
from stepwise.local.template import SamTemplate

from .support import FIXTURES, FakeClock, RecordingSleep


def _pipeline(sleep: RecordingSleep) -> LocalStateMachine:
    template = SamTemplate.load(FIXTURES / "template.yaml")
    invoker = LocalLambdaInvoker(template)

    def resolve(value: Any) -> str:
        function = template.function_for_reference(value)
        return invoker.function_arn(function) if function else "local-conversations"

    definition = template.render_definition(template.state_machine(), resolve)
    return LocalStateMachine(definition, invoker, sleep=sleep, clock=FakeClock())


def test_real_handlers_run_through_the_engine_and_a_raising_handler_is_reported_like_lambda() -> None:
    # Given the fixture template's state machine, rendered with function ARNs, on real handler files
    sleep = RecordingSleep()
    machine = _pipeline(sleep)

    # When an execution runs (Echo succeeds, Fail raises LLMTransientError every time)
    result = machine.start_execution("run-1", {"question": "why?"})

    # Then the echo result went through ResultSelector, the failure was retried 2 s then 6 s and caught
    assert result.status == "SUCCEEDED"
    assert result.output["echo"] == {
        "echo": {"question": "why?", "table": "local-conversations"},
        "identity": "echo",
    }
    assert sleep.calls == [2.0, 6.0]
    assert result.output["error"]["Error"] == "LLMTransientError"
    cause = json.loads(result.output["error"]["Cause"])
    assert cause["errorType"] == "LLMTransientError"
    assert cause["errorMessage"] == "upstream said 503 for why?"
    assert any("fail/app.py" in line for line in cause["stackTrace"])
