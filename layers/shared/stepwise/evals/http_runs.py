"""Running a suite's attempts through a deployed stack's HTTP API (`stepwise eval --against URL`).

Each attempt is what a client would do: `POST /v1/runs` (or `POST /v1/runs/{run_id}/replay` for a case
that replays a stored run) with the case's question, profile, response schema and the eval's tags as
metadata, then `GET /v1/runs/{run_id}` until the run ends, and once more with `?trace=true` for the
tool calls. The key goes as `x-api-key`.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx

from stepwise.errors import UsageError
from stepwise.evals.outcome import RunOutcome, outcome_from_api
from stepwise.evals.runner import CaseNotRun
from stepwise.evals.suite import Case
from stepwise.models.run import OPEN_STATUSES

DEFAULT_TIMEOUT_SECONDS = 600.0
POLL_SECONDS = 0.2


class ApiAttempts:
    """Runs attempts as runs of the API at `base_url`, with `key` as the caller's API key."""

    def __init__(
        self,
        base_url: str,
        key: str,
        *,
        profile: str | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        client: httpx.Client | None = None,
    ) -> None:
        self._base = base_url.rstrip("/")
        self._profile = profile
        self._timeout = timeout_seconds
        self._client = client or httpx.Client(timeout=30.0)
        self._headers = {"x-api-key": key}

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()

    def _send(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        try:
            response = self._client.request(method, f"{self._base}{path}", json=body, headers=self._headers)
        except httpx.HTTPError as exc:
            raise UsageError(f"--against {self._base}: {type(exc).__name__}: {exc}") from None
        if response.status_code in (401, 403):
            raise UsageError(f"--against {self._base}: the API refused the key ({response.status_code})")
        if response.status_code >= 400:
            raise CaseNotRun(f"{method} {path}: {response.status_code} {_error_message(response)}")
        document: dict[str, Any] = response.json()
        return document

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
        return str(self._send("POST", "/v1/runs", body)["run_id"])

    def _ended(self, run_id: str) -> dict[str, Any]:
        deadline = time.monotonic() + self._timeout
        while True:
            view = self._send("GET", f"/v1/runs/{run_id}")
            if view["status"] not in OPEN_STATUSES:
                return self._send("GET", f"/v1/runs/{run_id}?trace=true")
            if time.monotonic() > deadline:
                raise CaseNotRun(f"run {run_id} was still {view['status']} after {self._timeout:g} s")
            time.sleep(POLL_SECONDS)

    def __call__(self, case: Case, number: int, tags: dict[str, str]) -> RunOutcome:
        """Run attempt `number` of `case` through the API and read its outcome."""
        started = time.perf_counter()
        if case.replay is not None:
            body: dict[str, Any] = {"from_iteration": case.replay.from_iteration, "metadata": tags}
            profile = case.replay.profile or self._profile
            if profile is not None:
                body["profile"] = profile
            run_id = str(self._send("POST", f"/v1/runs/{case.replay.run_id}/replay", body)["run_id"])
        else:
            assert case.input is not None
            session_id = f"eval-{uuid.uuid4().hex}" if case.input.session else None
            for earlier in case.input.session:
                self._ended(self._start(earlier, case, tags, session_id))
            run_id = self._start(case.input.question, case, tags, session_id)
        view = self._ended(run_id)
        return outcome_from_api(view, seconds=time.perf_counter() - started)


def _error_message(response: httpx.Response) -> str:
    try:
        error = response.json().get("error") or {}
        return str(error.get("message") or response.text[:200])
    except ValueError:
        return response.text[:200]
