"""`stepwise run`'s answer to a run waiting at its budget (`on_budget: ask`).

The run's execution is in the command's own engine, whose task tokens no other process (`stepwise serve`
included) can answer, so the command asks on its standard input, as the API would be asked: a number adds
that many tokens, `$` and a number adds dollars, and an empty line, `end`, or the end of the input (a
command not run from a terminal) ends the run with its best answer. The question goes to stderr, so
stdout keeps the trace and answer (or the JSON of `--json`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from pydantic import ValidationError

from stepwise.local.asl.callbacks import CallbackError, TaskTokens
from stepwise.local.asl.results import StateEvent
from stepwise.models.api_requests import BudgetRequest
from stepwise.models.run import RunMeta
from stepwise.steps.api.budgets import deliver_budget_answer
from stepwise.steps.api.problems import ApiError
from stepwise.steps.executions import TaskTokenGone
from stepwise.store import ConversationStore

# How long the prompt waits for the wait task to store its token, once the engine entered it.
_STORED_WITHIN_SECONDS = 30.0


def budget_request(line: str) -> BudgetRequest:
    """The answer a line of input gives: `N` adds tokens, `$X` adds dollars, anything empty or `end` ends;
    `ValueError` for anything else."""
    text = line.strip().lower()
    if text in ("", "end", "e"):
        return BudgetRequest(end=True)
    try:
        if text.startswith("$"):
            return BudgetRequest(add_usd=float(text[1:]))
        return BudgetRequest(add_tokens=int(text.lstrip("+")))
    except (ValueError, ValidationError):
        raise ValueError(f"not an answer: {line.strip()!r}") from None


def _question(meta: RunMeta) -> str:
    wait = meta.budget_wait
    assert wait is not None
    if wait.reason == "cost_budget":
        spent = f"${wait.spent_usd} of its ${meta.limits.max_cost_usd} cost budget"
        how = "$ and a number adds dollars (e.g. $0.50)"
    else:
        spent = f"{wait.spent_tokens} of its {meta.limits.max_total_tokens} tokens"
        how = "a number adds tokens (e.g. 5000)"
    return (
        f"The run has spent {spent} and waits (on_budget: ask). Answer: {how}; "
        "an empty line or `end` ends it with its best answer: "
    )


class BudgetPrompt:
    """An engine listener: when a run enters AwaitBudget, ask on `stdin` (in a thread of its own, so the
    engine goes on waiting) and deliver the answer to the engine's task token."""

    def __init__(
        self,
        store_factory: Callable[[], ConversationStore],
        tokens: Callable[[], TaskTokens],
        stdin: TextIO,
        err: TextIO,
    ) -> None:
        self._store_factory = store_factory
        self._tokens = tokens
        self._stdin = stdin
        self._err = err

    def __call__(self, event: StateEvent) -> None:
        if event.state == "AwaitBudget" and event.type == "entered" and isinstance(event.input, dict):
            run_id = str(event.input.get("run_id"))
            threading.Thread(target=self._answer, args=(run_id,), name="budget-prompt", daemon=True).start()

    def _waiting(self, run_id: str) -> RunMeta | None:
        """The run once its wait is stored with its token, or None if it ended or did not wait in time."""
        store = self._store_factory()
        deadline = time.monotonic() + _STORED_WITHIN_SECONDS
        while time.monotonic() < deadline:
            meta = store.require_run(run_id)
            if meta.is_terminal:
                return None
            if meta.status == "WAITING_BUDGET" and meta.budget_wait is not None and meta.budget_wait.pending:
                return meta
            time.sleep(0.05)
        return None

    def _send(self, token: str, output: dict[str, Any]) -> None:
        try:
            self._tokens().succeed(token, output)
        except CallbackError as exc:
            raise TaskTokenGone(exc.message) from None

    def _answer(self, run_id: str) -> None:
        meta = self._waiting(run_id)
        if meta is None:
            return
        while True:
            print(_question(meta), end="", file=self._err, flush=True)
            line = self._stdin.readline()
            if not line:
                print("(no input: the run ends)", file=self._err, flush=True)
            try:
                request = budget_request(line)
            except ValueError as exc:
                print(exc, file=self._err, flush=True)
                continue
            try:
                deliver_budget_answer(self._store_factory(), meta, request, by=meta.owner, send=self._send)
            except ApiError as exc:
                print(exc.message, file=self._err, flush=True)
                if exc.status != 422:
                    return
                continue
            return
