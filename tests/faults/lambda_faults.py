"""Lambda-level faults, as invokers the local engine calls instead of the plain one.

`CrashAfterWriteInvoker` lets the handler run to its end (so everything it writes is written) and then
reports `Lambda.ServiceException` instead of the handler's result, as when the service loses an
invocation's response: Step Functions retries the step, which meets its own first attempt in the store.
`DuplicateDeliveryInvoker` delivers an invocation twice at the same moment, on two threads, as an
at-least-once delivery may: the two attempts race on the store's conditional writes.

Both subclass `LocalLambdaInvoker` with the wrapped invoker's module prefix, so they run the very same
handler instances (and so the same runtime and clients) as the environment's own invoker.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from stepwise.local.asl import TaskError
from stepwise.local.lambda_runtime import LocalLambdaInvoker

SERVICE_EXCEPTION = "Lambda.ServiceException"


def _event_key(logical_id: str, event: Any) -> tuple[str, str]:
    # A retried step is invoked with the same event; distinct steps (iterations, Map items) differ.
    return logical_id, json.dumps(event, sort_keys=True)


class CrashAfterWriteInvoker(LocalLambdaInvoker):
    """Raises `Lambda.ServiceException` after the handler ran, `crashes_per_event` times per distinct event.

    `crashes_per_event=None` crashes every invocation (a step that can never succeed); `functions`
    limits the crashes to those logical ids (all functions when None).
    """

    def __init__(
        self,
        wrapped: LocalLambdaInvoker,
        *,
        crashes_per_event: int | None = 1,
        functions: frozenset[str] | None = None,
    ) -> None:
        super().__init__(
            wrapped.template, function_arn_prefix=wrapped.function_arn_prefix, module_prefix=wrapped.module_prefix
        )
        self._crashes_per_event = crashes_per_event
        self._functions = functions
        self._crashes: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    @property
    def crashes(self) -> int:
        """How many invocations were reported as crashed so far."""
        with self._lock:
            return sum(self._crashes.values())

    def invoke(self, logical_id: str, event: Any) -> Any:
        """Run the handler; then either return its result or report that the invocation crashed."""
        result = super().invoke(logical_id, event)
        if self._functions is not None and logical_id not in self._functions:
            return result
        key = _event_key(logical_id, event)
        with self._lock:
            if self._crashes_per_event is not None and self._crashes[key] >= self._crashes_per_event:
                return result
            self._crashes[key] += 1
        cause = {
            "errorMessage": f"{logical_id} ran but its response was lost (injected fault)",
            "errorType": "ServiceException",
        }
        raise TaskError(SERVICE_EXCEPTION, json.dumps(cause))


class DuplicateDeliveryInvoker(LocalLambdaInvoker):
    """Invokes each of `functions` twice concurrently with the same event; returns the first result.

    Both attempts are released together from a barrier, so both read the store before either writes
    whenever the handler does anything slow in between (a tool call). An error of either attempt is
    raised, as Step Functions would see it from the attempt it got.
    """

    def __init__(self, wrapped: LocalLambdaInvoker, *, functions: frozenset[str]) -> None:
        super().__init__(
            wrapped.template, function_arn_prefix=wrapped.function_arn_prefix, module_prefix=wrapped.module_prefix
        )
        self._functions = functions
        self._deliveries = 0
        self._lock = threading.Lock()

    @property
    def deliveries(self) -> int:
        """How many duplicated invocations (pairs) were delivered so far."""
        with self._lock:
            return self._deliveries

    def invoke(self, logical_id: str, event: Any) -> Any:
        """Deliver `event` twice at once to a duplicated function, once to any other."""
        if logical_id not in self._functions:
            return super().invoke(logical_id, event)
        barrier = threading.Barrier(2)

        def attempt() -> Any:
            barrier.wait()
            return super(DuplicateDeliveryInvoker, self).invoke(logical_id, event)

        with ThreadPoolExecutor(max_workers=2, thread_name_prefix=f"duplicate-{logical_id}") as pool:
            first, second = pool.submit(attempt), pool.submit(attempt)
            results = [first.result(), second.result()]
        with self._lock:
            self._deliveries += 1
        return results[0]
