"""Running the template's Lambda handlers in this process, as `sam local invoke` does in a container.

Environment: handlers read `os.environ` once, when their module is imported. This module sets no
environment variables; whoever drives it (the CLI) sets them for the whole process before the first
invoke. Handlers are imported without their folder on `sys.path`, so they may import installed
packages (`stepwise`, the layers) but not sibling modules of their own folder.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from stepwise.local.asl.errors import TaskError
from stepwise.local.template import SamTemplate
from stepwise.telemetry.metric_scopes import invocation_metrics

DEFAULT_FUNCTION_ARN_PREFIX = "arn:aws:lambda:us-east-1:000000000000:function:"
_DEFAULT_TIMEOUT_SECONDS = 3  # Lambda's own defaults when the template sets none
_DEFAULT_MEMORY_MB = 128


class HandlerLoadError(TaskError):
    """The handler's module could not be imported, or has no such function (Lambda's `Runtime.*`)."""


class UnknownFunctionError(TaskError):
    """No function of the template has that name or ARN."""

    def __init__(self, function_name: str, known: list[str]) -> None:
        super().__init__(
            "Lambda.ResourceNotFoundException",
            f"Function not found: {function_name}; the template has {sorted(known)}",
        )


@dataclass
class LocalLambdaContext:
    """The `context` argument of a handler, with the attributes of the real Lambda context."""

    function_name: str
    invoked_function_arn: str
    memory_limit_in_mb: int
    timeout_seconds: int
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_stream_name: str = "local"
    identity: Any = None
    client_context: Any = None
    monotonic: Callable[[], float] = time.monotonic
    started_at: float = field(init=False)

    def __post_init__(self) -> None:
        self.started_at = self.monotonic()

    @property
    def log_group_name(self) -> str:
        """The log group Lambda would write to."""
        return f"/aws/lambda/{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before the function's timeout (not enforced locally, but reported)."""
        elapsed = self.monotonic() - self.started_at
        return max(0, int((self.timeout_seconds - elapsed) * 1000))


_handlers: dict[tuple[Path, str, str], Callable[[Any, Any], Any]] = {}
_handlers_lock = threading.Lock()
# The same handlers by the arguments as given, for the lock-free lookup of `load_handler`.
_loaded: dict[tuple[Path, str, str], Callable[[Any, Any], Any]] = {}


def load_handler(code_uri: Path, handler: str, *, module_prefix: str) -> Callable[[Any, Any], Any]:
    """Import `code_uri/<module>.py` and return its handler function (`handler` is "module.function").

    The module is registered as `<module_prefix>_<module>`, so that every function's `app.py` can be
    loaded side by side in one process; pass a prefix unique per function (e.g. with its logical id).
    Loaded handlers are cached per (code_uri, handler, module_prefix): a new prefix imports a fresh
    copy, which then reads the environment as it is now.
    """
    # Every step of every execution comes here: a loaded handler is found without a lock or a file system
    # call (resolving the path and taking the lock per invoke cost the engine's threads GIL hand-offs).
    given = (Path(code_uri), handler, module_prefix)
    loaded = _loaded.get(given)
    if loaded is not None:
        return loaded
    module_path, _, function_name = handler.rpartition(".")
    if not module_path or not function_name:
        raise HandlerLoadError("Runtime.MalformedHandlerName", f"Bad handler {handler!r}: expected module.function")
    folder = Path(code_uri).resolve()
    unique_name = f"{module_prefix}_{module_path.replace('.', '_')}"
    key = (folder, handler, unique_name)
    with _handlers_lock:
        if key in _handlers:
            _loaded[given] = _handlers[key]
            return _handlers[key]
        source = folder / (module_path.replace(".", "/") + ".py")
        spec = importlib.util.spec_from_file_location(unique_name, source)
        if spec is None or spec.loader is None or not source.is_file():
            raise HandlerLoadError("Runtime.ImportModuleError", f"Unable to import module {module_path!r}: no {source}")
        module = importlib.util.module_from_spec(spec)
        # Registered before running it, as a normal import does: pydantic and dataclasses look it up.
        sys.modules[unique_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[unique_name]
            raise HandlerLoadError(
                "Runtime.ImportModuleError", f"Unable to import module {module_path!r}: {type(exc).__name__}: {exc}"
            ) from exc
        function = getattr(module, function_name, None)
        if not callable(function):
            raise HandlerLoadError(
                "Runtime.HandlerNotFound", f"Handler {function_name!r} missing on module {module_path!r}"
            )
        _handlers[key] = function
        _loaded[given] = function
        return function


def unload_handlers(module_prefix: str) -> None:
    """Forget every handler loaded under a prefix that starts with `module_prefix`, and its module.

    Each prefix holds a whole copy of a function's module (its clients, its configuration); a process that
    starts local environments one after another (tests, evals) would otherwise keep every copy alive.
    """
    with _handlers_lock:
        for cache in (_handlers, _loaded):
            for key in [key for key in cache if key[2].startswith(module_prefix)]:
                del cache[key]
        # `list` copies sys.modules in one step: iterating it, another thread's import (a step's first use of a
        # deferred import) changed its size midway
        for name in [name for name in list(sys.modules) if name.startswith(module_prefix)]:
            del sys.modules[name]


def lambda_json(value: Any) -> Any:
    """The Lambda Python runtime serialises Decimal (as DynamoDB returns numbers) as a JSON number."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


class LocalLambdaInvoker:
    """Invokes the template's functions in process; the `LambdaInvoker` of the local engine.

    The event and the result each go through JSON, as they do on the real service: the handler gets
    its own copy, and a result that is not JSON fails with `Runtime.MarshalError`. Exceptions raised
    by a handler propagate unchanged (the engine reports them under their class name). Handler
    modules are imported as `<module_prefix><LogicalId>_<module>`; invokers with different prefixes
    import their own copies, which `close` forgets.
    """

    def __init__(
        self,
        template: SamTemplate,
        *,
        function_arn_prefix: str = DEFAULT_FUNCTION_ARN_PREFIX,
        module_prefix: str = "stepwise_local_",
    ) -> None:
        self.template = template
        self.function_arn_prefix = function_arn_prefix
        self.module_prefix = module_prefix

    def close(self) -> None:
        """Forget the handler modules this invoker loaded (`unload_handlers`)."""
        unload_handlers(self.module_prefix)

    def function_arn(self, logical_id: str) -> str:
        """The ARN under which the engine calls the function `logical_id`."""
        if logical_id not in self.template.functions:
            raise UnknownFunctionError(logical_id, list(self.template.functions))
        return self.function_arn_prefix + logical_id

    def __call__(self, function_name: str, payload: Any) -> Any:
        """Invoke by ARN (from `function_arn`, optionally with a `:qualifier`) or by logical id."""
        logical_id = function_name.removeprefix(self.function_arn_prefix).split(":", 1)[0]
        if logical_id not in self.template.functions:
            raise UnknownFunctionError(function_name, list(self.template.functions))
        return self.invoke(logical_id, payload)

    def invoke(self, logical_id: str, event: Any) -> Any:
        """Invoke the function `logical_id` with `event` and return what its handler returned."""
        function = self.template.functions.get(logical_id)
        if function is None:
            raise UnknownFunctionError(logical_id, list(self.template.functions))
        handler = load_handler(function.code_uri, function.handler, module_prefix=self.module_prefix + logical_id)
        try:
            event_copy = json.loads(json.dumps(event, default=lambda_json))
        except (TypeError, ValueError) as exc:
            raise TaskError("Lambda.InvalidRequestContentException", f"Could not parse request body: {exc}") from None
        context = LocalLambdaContext(
            function_name=logical_id,
            invoked_function_arn=self.function_arn_prefix + logical_id,
            memory_limit_in_mb=function.memory_size or _DEFAULT_MEMORY_MB,
            timeout_seconds=function.timeout or _DEFAULT_TIMEOUT_SECONDS,
        )
        # invocations run side by side here, where Lambda runs one a process: each has its own metrics
        with invocation_metrics():
            result = handler(event_copy, context)
        try:
            return json.loads(json.dumps(result, default=lambda_json))
        except (TypeError, ValueError) as exc:
            message = f"Unable to marshal response: {exc}"
            cause = {"errorMessage": message, "errorType": "Runtime.MarshalError", "stackTrace": []}
            raise TaskError("Runtime.MarshalError", json.dumps(cause)) from None
