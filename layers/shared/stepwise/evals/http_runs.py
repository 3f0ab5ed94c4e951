"""Running a suite's attempts through a deployed stack's HTTP API (`stepwise eval --against URL`).

Each attempt is what a client would do: `POST /v1/runs` (or `POST /v1/runs/{run_id}/replay` for a case
that replays a stored run) with the case's question, profile, response schema and the eval's tags as
metadata, then `GET /v1/runs/{run_id}` until the run ends, and once more with `?trace=true` for the
tool calls. The key goes as `x-api-key`. The server is not trusted (`stepwise.evals.api_endpoint`): an
answer about another run than the one asked about is a bad server too.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from stepwise.evals.api_answers import RunAnswer, StartedReplay, StartedRun
from stepwise.evals.api_endpoint import ApiEndpoint
from stepwise.evals.outcome import RunOutcome, outcome_from_api
from stepwise.evals.runner import CaseNotRun
from stepwise.evals.suite import Case
from stepwise.models.run import OPEN_STATUSES

DEFAULT_TIMEOUT_SECONDS = 600.0
POLL_SECONDS = 0.2


class ApiAttempts:
    """Runs attempts as runs of the API behind ``endpoint``; a run may take up to ``timeout_seconds``."""

    def __init__(
        self, endpoint: ApiEndpoint, *, profile: str | None = None, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    ) -> None:
        self._endpoint = endpoint
        self._profile = profile
        self._timeout = timeout_seconds

    def _start(self, question: str, case: Case, tags: dict[str, str], session_id: str | None) -> str:
        assert case.input is not None
        body: dict[str, Any] = {"input": question, "metadata": tags}
        profile = case.input.profile or self._profile
        if profile is not None:
            body["profile"] = profile
        if session_id is not None:
            body["session_id"] = session_id
        if case.input.response_schema is not None:
            body["response_schema"] = case.input.response_schema
        return self._endpoint.call(StartedRun, "POST", ("v1", "runs"), body=body).run_id

    def _replay(self, case: Case, tags: dict[str, str]) -> str:
        assert case.replay is not None
        original = case.replay.run_id
        body: dict[str, Any] = {"from_iteration": case.replay.from_iteration, "metadata": tags}
        profile = case.replay.profile or self._profile
        if profile is not None:
            body["profile"] = profile
        started = self._endpoint.call(StartedReplay, "POST", ("v1", "runs", original, "replay"), body=body)
        if started.original_run_id != original:
            self._endpoint.refuse(f"POST /v1/runs/{original}/replay answered a replay of run {started.original_run_id}")
        return started.run_id

    def _view(self, run_id: str, *, trace: bool = False) -> RunAnswer:
        view = self._endpoint.call(RunAnswer, "GET", ("v1", "runs", run_id), trace=trace)
        if view.run_id != run_id:
            self._endpoint.refuse(f"GET /v1/runs/{run_id} answered about run {view.run_id}")
        return view

    def _ended(self, run_id: str) -> RunAnswer:
        deadline = time.monotonic() + self._timeout
        while True:
            view = self._view(run_id)
            if view.status not in OPEN_STATUSES:
                return self._view(run_id, trace=True)
            if time.monotonic() > deadline:
                raise CaseNotRun(f"run {run_id} was still {view.status} after {self._timeout:g} s")
            time.sleep(POLL_SECONDS)

    def __call__(self, case: Case, number: int, tags: dict[str, str]) -> RunOutcome:
        """Run attempt `number` of `case` through the API and read its outcome."""
        started = time.perf_counter()
        if case.replay is not None:
            run_id = self._replay(case, tags)
        else:
            assert case.input is not None
            session_id = f"eval-{uuid.uuid4().hex}" if case.input.session else None
            for earlier in case.input.session:
                self._ended(self._start(earlier, case, tags, session_id))
            run_id = self._start(case.input.question, case, tags, session_id)
        view = self._ended(run_id)
        return outcome_from_api(view, seconds=time.perf_counter() - started)
