"""Starting the agent state machine's executions, named by run id, through a boto3 `stepfunctions` client.

The same client talks to AWS or to `stepwise serve`'s local endpoint (`endpoint_url`), so the API has
no local special case.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from botocore.exceptions import BotoCoreError, ClientError, ReadTimeoutError

from stepwise.config.settings import Settings
from stepwise.errors import ConfigError, StepwiseError

# StartSyncExecution returns when the run ends; a failed attempt must not be repeated behind our back.
_SYNC_CONNECT_TIMEOUT_SECONDS = 5
# SendTaskSuccess/Failure must end well within the API function's 29 s timeout (template.yaml): an answer
# stored but neither sent nor undone when the Lambda is killed is lost. At most 2 x (3 + 5) s.
_CALLBACK_CONNECT_TIMEOUT_SECONDS = 3
_CALLBACK_READ_TIMEOUT_SECONDS = 5
_CALLBACK_MAX_ATTEMPTS = 2


class ExecutionStartFailed(StepwiseError):
    """Step Functions refused or could not be reached to start an execution."""


class ExecutionStopFailed(StepwiseError):
    """Step Functions refused or could not be reached to stop an execution."""


class TaskTokenGone(StepwiseError):
    """The task a token belonged to is no longer waiting (answered, timed out, its execution ended)."""


class CallbackFailed(StepwiseError):
    """Step Functions could not be reached, or refused for another reason, to answer a task token."""


# What SendTask* answers when the task the token belonged to is over (or never was one of this machine's).
_TOKEN_GONE_CODES = frozenset({"TaskTimedOut", "TaskDoesNotExist", "InvalidToken"})


class SyncExecutionTimedOut(StepwiseError):
    """A synchronous execution did not end within the time the caller can wait; it goes on running."""


@dataclass(frozen=True)
class SyncExecutionResult:
    """How a synchronous (Express) execution ended."""

    status: Literal["SUCCEEDED", "FAILED", "TIMED_OUT"]
    error: str | None = None
    cause: str | None = None


class StepFunctionsExecutions:
    """Starts executions of one state machine.

    `client` starts asynchronous executions; `sync_client` (by default `client`) runs synchronous ones
    and should have a read timeout no longer than the caller can wait; the client `callback_client_factory`
    builds (by default `client`) answers task tokens and should end sooner than the API function's timeout.
    """

    def __init__(
        self,
        client: Any,
        state_machine_arn: str | None,
        *,
        sync_client: Any = None,
        sync_client_factory: Callable[[], Any] | None = None,
        callback_client_factory: Callable[[], Any] | None = None,
    ) -> None:
        self._client = client
        self._sync_client = sync_client
        self._sync_client_factory = sync_client_factory
        self._callback_client_factory = callback_client_factory
        self._state_machine_arn = state_machine_arn

    @property
    def _sync(self) -> Any:
        # built on the first synchronous start: its read timeout comes from the configuration, which a
        # container that only reads runs never loads
        if self._sync_client is None:
            self._sync_client = self._sync_client_factory() if self._sync_client_factory else self._client
        return self._sync_client

    @functools.cached_property
    def _callbacks(self) -> Any:
        # built on the first answer: most containers never answer a token
        return self._callback_client_factory() if self._callback_client_factory else self._client

    @property
    def state_machine_arn(self) -> str:
        """The state machine; `ConfigError` when the deployment did not set one (reading runs needs none)."""
        if not self._state_machine_arn:
            raise ConfigError("STATE_MACHINE_ARN is not set: the API cannot start runs")
        return self._state_machine_arn

    @classmethod
    def from_settings(
        cls, settings: Settings, *, sync_timeout_seconds: float | Callable[[], float]
    ) -> StepFunctionsExecutions:
        """Clients for the configured endpoint (AWS when `stepfunctions_endpoint_url` is unset); the
        synchronous one is built when first used, with the timeout (or what `sync_timeout_seconds` returns),
        and so is the bounded one that answers task tokens."""
        import boto3  # deferred: keeps the handler module's import (cold start) light
        from botocore import UNSIGNED
        from botocore.config import Config

        from stepwise.steps.user_agent import fixed_user_agent

        endpoint = settings.stepfunctions_endpoint_url
        # StartSyncExecution is sent to a "sync-" host on AWS; a local endpoint has no such name.
        host_prefix = endpoint is None
        identity = settings.emulated_service_identity()
        # A fixed User-Agent, as the store's client has; locally no signature either: the local endpoint (the
        # placeholder identity's only counterpart) reads no Authorization header, and signing and the
        # User-Agent were most of a StartExecution's client-side CPU (docs/performance.md, item 11).
        lean = {"user_agent": fixed_user_agent()} | (
            {"signature_version": UNSIGNED} if settings.local_endpoints else {}
        )
        # A session of its own: boto3's process-wide default session keeps the AWS configuration it first read.
        session = boto3.session.Session()
        client = session.client(
            "stepfunctions",
            endpoint_url=endpoint,
            region_name=identity.region_name,
            aws_access_key_id=identity.aws_access_key_id,
            aws_secret_access_key=identity.aws_secret_access_key,
            config=Config(inject_host_prefix=host_prefix, retries={"mode": "standard"}, **lean),
        )

        def bounded_client(*, read_timeout: float, connect_timeout: float, attempts: int) -> Any:
            return session.client(
                "stepfunctions",
                endpoint_url=endpoint,
                region_name=identity.region_name,
                aws_access_key_id=identity.aws_access_key_id,
                aws_secret_access_key=identity.aws_secret_access_key,
                config=Config(
                    inject_host_prefix=host_prefix,
                    read_timeout=read_timeout,
                    connect_timeout=connect_timeout,
                    retries={"mode": "standard", "total_max_attempts": attempts},
                    **lean,
                ),
            )

        def sync_client() -> Any:
            timeout = sync_timeout_seconds() if callable(sync_timeout_seconds) else sync_timeout_seconds
            return bounded_client(
                read_timeout=timeout, connect_timeout=min(_SYNC_CONNECT_TIMEOUT_SECONDS, timeout), attempts=1
            )

        def callback_client() -> Any:
            return bounded_client(
                read_timeout=_CALLBACK_READ_TIMEOUT_SECONDS,
                connect_timeout=_CALLBACK_CONNECT_TIMEOUT_SECONDS,
                attempts=_CALLBACK_MAX_ATTEMPTS,
            )

        return cls(
            client,
            settings.state_machine_arn,
            sync_client_factory=sync_client,
            callback_client_factory=callback_client,
        )

    def start(self, run_id: str, execution_input: dict[str, Any]) -> str:
        """Start the execution named `run_id`; returns its ARN. `ExecutionStartFailed` when it cannot."""
        try:
            response = self._client.start_execution(
                stateMachineArn=self.state_machine_arn, name=run_id, input=json.dumps(execution_input)
            )
        except (ClientError, BotoCoreError) as exc:
            raise ExecutionStartFailed(_describe(exc)) from exc
        return str(response["executionArn"])

    def start_once(self, state_machine_arn: str, run_id: str, execution_input: dict[str, Any]) -> bool:
        """Start the execution named `run_id` on `state_machine_arn`; False when one of that name exists
        already (a retried start). `ExecutionStartFailed` when it cannot."""
        try:
            self._client.start_execution(
                stateMachineArn=state_machine_arn, name=run_id, input=json.dumps(execution_input)
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ExecutionAlreadyExists":
                return False
            raise ExecutionStartFailed(_describe(exc)) from exc
        except BotoCoreError as exc:
            raise ExecutionStartFailed(_describe(exc)) from exc
        return True

    def execution_arn(self, run_id: str) -> str:
        """The ARN of the execution named `run_id` (the state machine's ARN, `stateMachine` -> `execution`)."""
        prefix, _, machine_name = self.state_machine_arn.rpartition(":stateMachine:")
        return f"{prefix}:execution:{machine_name}:{run_id}"

    def stop(self, run_id: str, *, cause: str) -> bool:
        """Stop the execution named `run_id`; False when there is none to stop (never started, or ended).

        `ExecutionStopFailed` when Step Functions cannot be reached or refuses for another reason.
        """
        try:
            self._client.stop_execution(executionArn=self.execution_arn(run_id), error="Cancelled", cause=cause)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ExecutionDoesNotExist":
                return False
            raise ExecutionStopFailed(_describe(exc)) from exc
        except BotoCoreError as exc:
            raise ExecutionStopFailed(_describe(exc)) from exc
        return True

    def send_task_success(self, token: str, output: dict[str, Any]) -> None:
        """Answer a waiting callback task with `output`; `TaskTokenGone` or `CallbackFailed` when it fails."""
        with _callback_errors():
            self._callbacks.send_task_success(taskToken=token, output=json.dumps(output))

    def send_task_failure(self, token: str, *, error: str, cause: str) -> None:
        """Fail a waiting callback task with `error` and `cause` (what a Catch of the machine then sees)."""
        with _callback_errors():
            self._callbacks.send_task_failure(taskToken=token, error=error, cause=cause)

    def start_sync(self, run_id: str, execution_input: dict[str, Any]) -> SyncExecutionResult:
        """Run the execution named `run_id` to its end (Express workflows only).

        `SyncExecutionTimedOut` when the sync client's read timeout passes first; the execution then
        goes on, and its outcome is recorded in the store as usual.
        """
        try:
            response = self._sync.start_sync_execution(
                stateMachineArn=self.state_machine_arn, name=run_id, input=json.dumps(execution_input)
            )
        except ReadTimeoutError as exc:
            raise SyncExecutionTimedOut(f"execution {run_id} did not end in time") from exc
        except (ClientError, BotoCoreError) as exc:
            raise ExecutionStartFailed(_describe(exc)) from exc
        return SyncExecutionResult(status=response["status"], error=response.get("error"), cause=response.get("cause"))


@contextmanager
def _callback_errors() -> Iterator[None]:
    try:
        yield
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in _TOKEN_GONE_CODES:
            raise TaskTokenGone(_describe(exc)) from exc
        raise CallbackFailed(_describe(exc)) from exc
    except BotoCoreError as exc:
        raise CallbackFailed(_describe(exc)) from exc


def state_machine_of(execution_arn: str) -> str:
    """The ARN of the state machine an execution (by its ARN, `$$.Execution.Id`) belongs to."""
    prefix, _, rest = execution_arn.partition(":execution:")
    machine_name = rest.rpartition(":")[0]
    return f"{prefix}:stateMachine:{machine_name}"


def _describe(exc: ClientError | BotoCoreError) -> str:
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return f"Step Functions {error.get('Code', 'error')}: {error.get('Message', '')}".strip()
    return f"Step Functions unreachable: {type(exc).__name__}"
