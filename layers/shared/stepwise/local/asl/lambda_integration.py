"""The shapes of the optimised Lambda integration (`arn:aws:states:::lambda:invoke`)."""

from __future__ import annotations

import json
import traceback
from typing import Any, Protocol

from stepwise.local.asl.errors import StatesFailure, TaskError


class LambdaInvoker(Protocol):
    """Invokes a function synchronously and returns what its handler returned.

    Raising reports a function error: under the exception's class name, or under `TaskError.error`.
    """

    def __call__(self, function_name: str, payload: Any) -> Any:
        """Invoke `function_name` (an ARN or a name) with `payload`."""
        ...


def invoke_result(payload: Any, request_id: str, date: str) -> dict[str, Any]:
    """The task result Step Functions builds from a successful invocation; `Payload` is the return value."""
    length = str(len(json.dumps(payload)))
    headers = {
        "Connection": "keep-alive",
        "Content-Length": length,
        "Content-Type": "application/json",
        "Date": date,
        "X-Amz-Executed-Version": "$LATEST",
        "x-amzn-Remapped-Content-Length": "0",
        "x-amzn-RequestId": request_id,
    }
    return {
        "ExecutedVersion": "$LATEST",
        "Payload": payload,
        "SdkHttpMetadata": {
            "AllHttpHeaders": {name: [value] for name, value in headers.items()},
            "HttpHeaders": headers,
            "HttpStatusCode": 200,
        },
        "SdkResponseMetadata": {"RequestId": request_id},
        "StatusCode": 200,
    }


def function_error(exc: Exception) -> StatesFailure:
    """The error a failed invocation becomes: the exception's class name, and a cause in the JSON
    shape the Lambda runtime reports (`errorMessage`, `errorType`, `stackTrace`)."""
    if isinstance(exc, TaskError):
        return StatesFailure(exc.error, exc.cause)
    name = type(exc).__name__
    cause = {
        "errorMessage": str(exc),
        "errorType": name,
        "stackTrace": traceback.format_tb(exc.__traceback__),
    }
    return StatesFailure(name, json.dumps(cause))


def call_function(invoker: LambdaInvoker, function_name: str, payload: Any) -> Any:
    """Invoke, turning any exception into the `StatesFailure` Step Functions would report."""
    try:
        return invoker(function_name, payload)
    except Exception as exc:
        raise function_error(exc) from exc
