"""moto's Lambda service answering `Invoke` through the template's handlers, in this process.

moto runs Lambda functions in Docker; here each function created in moto is answered by the handler
`template.yaml` gives it, through `LocalLambdaInvoker`. Only moto's Lambda backend is replaced (an AWS
service, mocked at moto's boundary); the handlers and the `stepwise` code they call run unchanged.

A handler's exception is answered as the Lambda Python runtime answers an unhandled one: status 200,
header `X-Amz-Function-Error: Unhandled`, and a JSON body with `errorType` (the exception's class
name) and `errorMessage`, which is what Step Functions turns into the task's Error and Cause.
"""

from __future__ import annotations

import io
import json
import traceback
import uuid
import zipfile
from types import TracebackType
from typing import Any

from moto.awslambda.models import LambdaBackend, lambda_backends
from moto.core import DEFAULT_ACCOUNT_ID

from stepwise.local.asl import TaskError
from stepwise.local.lambda_runtime import LocalLambdaInvoker

REGION = "us-east-1"
_EXECUTION_ROLE = "stepwise-conformance-function"
_TRUST_POLICY = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}


def _placeholder_package() -> bytes:
    """A zip moto accepts as the function's code; the handler that answers is the one in the repo."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("app.py", "")
    return buffer.getvalue()


def _error_document(exc: Exception) -> dict[str, Any]:
    """The body the Lambda Python runtime returns for an unhandled exception."""
    if isinstance(exc, TaskError):
        error_type, message = exc.error, exc.cause
    else:
        error_type, message = type(exc).__name__, str(exc)
    return {
        "errorMessage": message,
        "errorType": error_type,
        "requestId": str(uuid.uuid4()),
        "stackTrace": traceback.format_tb(exc.__traceback__),
    }


class HandlerBackedLambda:
    """Creates the template's functions in moto and answers their invocations with the real handlers.

    Use inside an active `mock_aws()`, as a context manager: on entry the functions exist in moto
    (named by their logical ids) and `function_arns` maps each logical id to its ARN; on exit moto's
    Lambda backend answers as before.
    """

    def __init__(self, lambda_client: Any, iam_client: Any, invoker: LocalLambdaInvoker) -> None:
        self._lambda = lambda_client
        self._iam = iam_client
        self._invoker = invoker
        self._backend: LambdaBackend | None = None
        self.function_arns: dict[str, str] = {}

    def __enter__(self) -> HandlerBackedLambda:
        role = self._iam.create_role(RoleName=_EXECUTION_ROLE, AssumeRolePolicyDocument=json.dumps(_TRUST_POLICY))
        package = _placeholder_package()
        for logical_id, function in self._invoker.template.functions.items():
            created = self._lambda.create_function(
                FunctionName=logical_id,
                Runtime="python3.13",
                Role=role["Role"]["Arn"],
                Handler=function.handler,
                Code={"ZipFile": package},
                Timeout=function.timeout or 3,
                MemorySize=function.memory_size or 128,
            )
            self.function_arns[logical_id] = created["FunctionArn"]
        self._backend = lambda_backends[DEFAULT_ACCOUNT_ID][REGION]
        # An attribute of this backend instance only: moto's other backends and classes stay as they are.
        self._backend.invoke = self._invoke  # type: ignore[method-assign]
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback_: TracebackType | None
    ) -> None:
        if self._backend is not None:
            self._backend.__dict__.pop("invoke", None)

    def _invoke(
        self, function_name: str, qualifier: str | None, body: Any, headers: Any, response_headers: dict[str, str]
    ) -> bytes:
        """moto's `LambdaBackend.invoke` signature: find the function, run its handler, answer as Lambda."""
        assert self._backend is not None
        function = self._backend.get_function(function_name, qualifier)
        event = json.loads(body) if body else {}
        try:
            result = self._invoker.invoke(function.function_name, event)
        except Exception as exc:
            response_headers["x-amz-function-error"] = "Unhandled"
            payload = json.dumps(_error_document(exc)).encode()
        else:
            payload = json.dumps(result).encode()
        response_headers["Content-Length"] = str(len(payload))
        return payload
