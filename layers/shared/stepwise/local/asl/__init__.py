"""A local Step Functions engine for Amazon States Language (JSONPath) definitions.

`LocalStateMachine(definition, invoker)` validates a definition and runs executions of it in process,
calling Lambda handlers through `invoker`. See `engine.py` for what is supported.
"""

from stepwise.local.asl.engine import LocalStateMachine
from stepwise.local.asl.errors import (
    AslDefinitionError,
    AslUnsupportedError,
    InvalidExecutionInput,
    TaskError,
)
from stepwise.local.asl.lambda_integration import LambdaInvoker
from stepwise.local.asl.results import ExecutionResult, StateEvent

__all__ = [
    "AslDefinitionError",
    "AslUnsupportedError",
    "ExecutionResult",
    "InvalidExecutionInput",
    "LambdaInvoker",
    "LocalStateMachine",
    "StateEvent",
    "TaskError",
]
