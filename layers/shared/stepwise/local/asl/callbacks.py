"""Task tokens of the callback pattern (`.waitForTaskToken`): issued by the engine, answered by
SendTaskSuccess, SendTaskFailure and SendTaskHeartbeat.

The answers follow the service's: a token this machine never issued in that shape is `InvalidToken`; a
well-formed one it does not know (issued by an earlier process) is `TaskDoesNotExist`; one whose task
has already ended (answered, timed out, its execution stopped) is `TaskTimedOut`, which is what AWS
answers to a second SendTaskSuccess with the same token.
"""

from __future__ import annotations

import re
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from stepwise.local.asl.errors import StatesFailure

TOKEN_PREFIX = "stepwise-local-task-"
_TOKEN = re.compile(rf"^{TOKEN_PREFIX}[A-Za-z0-9_-]{{64}}$")
MAX_TOKEN_CHARS = 2048
MAX_ERROR_CHARS = 256
MAX_CAUSE_CHARS = 32768


class CallbackError(Exception):
    """A SendTask* call the service would refuse; `code` is the service's error name."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class CallbackOutcome:
    """How a waiting task was answered: an output, or an error and cause."""

    succeeded: bool
    output: Any = None
    error: str | None = None
    cause: str | None = None


@dataclass
class _Waiting:
    execution_arn: str
    last_beat: datetime
    outcome: CallbackOutcome | None = None
    answered: threading.Event = field(default_factory=threading.Event)


class TaskTokens:
    """The tokens of the tasks waiting for a callback, for one state machine; thread-safe."""

    def __init__(self) -> None:
        self._waiting: dict[str, _Waiting] = {}
        self._ended: set[str] = set()
        self._lock = threading.Lock()

    def issue(self, execution_arn: str, now: datetime) -> str:
        """A new token for a task of `execution_arn` that starts waiting `now`."""
        token = TOKEN_PREFIX + secrets.token_urlsafe(48)
        with self._lock:
            self._waiting[token] = _Waiting(execution_arn=execution_arn, last_beat=now)
        return token

    def _require(self, token: Any) -> _Waiting:
        """The waiting task of `token`; the service's error when there is none. Call with the lock held."""
        if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_CHARS:
            raise CallbackError("InvalidToken", "Invalid token: the task token must be 1-2048 characters")
        if token in self._ended:
            raise CallbackError("TaskTimedOut", "Task Timed Out: 'Provided task does not exist anymore'")
        waiting = self._waiting.get(token)
        if waiting is None:
            if _TOKEN.fullmatch(token):
                raise CallbackError("TaskDoesNotExist", "Task Does Not Exist: the token's task is not known")
            raise CallbackError("InvalidToken", "Invalid token")
        if waiting.outcome is not None:
            raise CallbackError("TaskTimedOut", "Task Timed Out: 'Provided task does not exist anymore'")
        return waiting

    def succeed(self, token: Any, output: Any) -> None:
        """SendTaskSuccess: the task's result is `output` (already parsed from its JSON text)."""
        with self._lock:
            waiting = self._require(token)
            waiting.outcome = CallbackOutcome(succeeded=True, output=output)
            waiting.answered.set()

    def fail(self, token: Any, error: str | None, cause: str | None) -> None:
        """SendTaskFailure: the task fails with `error` (States.TaskFailed's place when absent) and `cause`."""
        with self._lock:
            waiting = self._require(token)
            waiting.outcome = CallbackOutcome(succeeded=False, error=error, cause=cause)
            waiting.answered.set()

    def beat(self, token: Any, now: datetime) -> None:
        """SendTaskHeartbeat: the task is still being worked on."""
        with self._lock:
            self._require(token).last_beat = now

    def last_beat(self, token: str) -> datetime:
        """When the task last showed life: when it began waiting, or its latest heartbeat."""
        with self._lock:
            return self._waiting[token].last_beat

    def wait(self, token: str, seconds: float) -> CallbackOutcome | None:
        """The task's outcome, waiting up to `seconds` for one; None if it is still unanswered."""
        with self._lock:
            waiting = self._waiting[token]
        waiting.answered.wait(max(seconds, 0))
        return waiting.outcome

    def end(self, token: str) -> None:
        """The task is over, whatever ended it: any later answer is TaskTimedOut."""
        with self._lock:
            self._waiting.pop(token, None)
            self._ended.add(token)

    def end_execution(self, execution_arn: str) -> None:
        """StopExecution: the execution's waiting tasks can no longer be answered; their waits wake up."""
        with self._lock:
            for token, waiting in self._waiting.items():
                if waiting.execution_arn == execution_arn:
                    self._ended.add(token)
                    waiting.answered.set()

    def pending(self) -> int:
        """How many tasks are waiting for an answer."""
        with self._lock:
            return sum(1 for waiting in self._waiting.values() if waiting.outcome is None)


# How often a waiting task looks at its execution (stopped? past its deadline?) while no answer comes.
WAIT_SLICE_SECONDS = 0.2


def await_outcome(
    tokens: TaskTokens,
    token: str,
    *,
    started: datetime,
    timeout_seconds: int | None,
    heartbeat_seconds: int | None,
    now: Callable[[], datetime],
    check: Callable[[], None],
) -> CallbackOutcome:
    """Wait for `token`'s answer; `States.Timeout` past `timeout_seconds` since `started`,
    `States.HeartbeatTimeout` past `heartbeat_seconds` since the last sign of life.

    `check` runs between slices of waiting and raises to abandon the wait (the execution was stopped
    or reached its own timeout).
    """
    while True:
        check()
        moment = now()
        limits: list[float] = [WAIT_SLICE_SECONDS]
        if timeout_seconds is not None:
            left = timeout_seconds - (moment - started).total_seconds()
            if left <= 0:
                raise StatesFailure("States.Timeout", f"The task was not answered within {timeout_seconds} seconds")
            limits.append(left)
        if heartbeat_seconds is not None:
            left = heartbeat_seconds - (moment - tokens.last_beat(token)).total_seconds()
            if left <= 0:
                raise StatesFailure("States.HeartbeatTimeout", f"No heartbeat was sent for {heartbeat_seconds} seconds")
            limits.append(left)
        outcome = tokens.wait(token, min(limits))
        if outcome is not None:
            return outcome
