"""The API `stepwise eval --against URL` talks to, and how it talks to it without trusting it.

- Every URL is built here, from the checked base URL and path segments that each match the API's run-id
  pattern (`/v1/runs/{run_id}` included), each percent-encoded as one segment; no URL the server sends
  (`poll_url`, a `Location`) is ever followed.
- Redirects are not followed at all: the API never answers one, and following one would send the key
  to wherever it points. A 3xx is a bad server, named with where it pointed.
- Every answer is read as a stream, at most `MAX_ANSWER_BYTES` of it (counted decoded, a compressed
  body inflated only as far as the cap) and within `ANSWER_SECONDS` overall, so neither a huge body nor
  one dripped slowly holds the eval.
- A successful answer is validated (`stepwise.evals.api_answers`); 401 and 403 mean the key was
  refused; any other 4xx or 5xx fails that attempt only (`CaseNotRun`), with the API's message.

A bad server stops the eval: `BadServer`, one line, exit 2. The first one is remembered, and every later
request of any attempt fails with it at once instead of asking the same server again.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from stepwise.config.url_checks import validated_http_url
from stepwise.errors import ToolError, UsageError
from stepwise.evals.api_answers import BadServer, error_message, parsed_answer, shown
from stepwise.evals.runner import CaseNotRun
from stepwise.models.api_requests import RUN_ID_PATTERN
from stepwise.tools.guards import is_loopback_host
from stepwise.tools.http_response import DeadlinePassed, read_capped_body

# The deployed API answers through Lambda, whose synchronous answers are at most 6 MB; `stepwise serve`
# answers the same documents. Ten MiB is above any answer of either.
MAX_ANSWER_BYTES = 10 * 1024 * 1024
ANSWER_SECONDS = 60.0
# Each wait (connect, a read, a write): a stalled server fails the request within this.
WAIT_SECONDS = 30.0

_SEGMENT = re.compile(RUN_ID_PATTERN)
_KEY = re.compile(r"[\x21-\x7e]+")

Answer = TypeVar("Answer", bound=BaseModel)


@dataclass(frozen=True)
class Exchange:
    """One request and its answer: what was asked (`POST /v1/runs`), the status, the body and `Location`."""

    what: str
    status: int
    body: bytes
    location: str | None


class ApiEndpoint:
    """The API at ``base_url``, called with ``key`` as `x-api-key`; `UsageError` for a URL or key unfit to use."""

    def __init__(
        self,
        base_url: str,
        key: str,
        *,
        client: httpx.Client | None = None,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
        answer_seconds: float = ANSWER_SECONDS,
    ) -> None:
        try:
            self._shown_base = validated_http_url(base_url, what="--against")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if not _KEY.fullmatch(key):
            raise UsageError("the API key holds what no header carries (a control character, space or non-ASCII)")
        self._base = httpx.URL(self._shown_base)
        self._base_path = self._base.raw_path.decode("ascii").rstrip("/")
        # Compressed answers would need inflating before the cap could count them; ask for them as they are.
        self._headers = {"x-api-key": key, "accept": "application/json", "accept-encoding": "identity"}
        self._client = client or httpx.Client(timeout=WAIT_SECONDS, follow_redirects=False)
        self._max_answer_bytes = max_answer_bytes
        self._answer_seconds = answer_seconds
        self._refusal: str | None = None

    def plain_http_warning(self) -> str | None:
        """What to warn about when the key and the runs would cross a network unencrypted, else None."""
        if self._base.scheme != "http" or is_loopback_host(self._base.host):
            return None
        return (
            f"--against {self._shown_base} is plain http to a host that is not loopback: the API key and every "
            "question and answer cross the network unencrypted; use https"
        )

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()

    def call(
        self, model: type[Answer], method: str, segments: tuple[str, ...], *, body: Any = None, trace: bool = False
    ) -> Answer:
        """Send the request and return its answer read as ``model``.

        `BadServer` when the answer is not what the API answers, `UsageError` when the key is refused or the
        server cannot be reached, `CaseNotRun` for an error answer of the API (a 422, a 500).
        """
        exchange = self._exchange(method, segments, body=body, trace=trace)
        status, what = exchange.status, exchange.what
        if 200 <= status < 300:
            try:
                return parsed_answer(model, exchange.body, what=f"{what} answered {status}")
            except BadServer as exc:
                self.refuse(str(exc))
        if status in (401, 403):
            raise UsageError(f"--against {self._shown_base}: the API refused the key ({status})")
        if 400 <= status < 600:
            raise CaseNotRun(f"{what}: {status} {error_message(exchange.body)}")
        if 300 <= status < 400:
            target = f" to {shown(exchange.location)}" if exchange.location else ""
            self.refuse(
                f"{what} answered {status}, a redirect{target}; --against follows none: give the URL the API answers at"
            )
        self.refuse(f"{what} answered {status}, a status the API never answers")

    def refuse(self, reason: str) -> NoReturn:
        """Stop the eval: the server answered what no Stepwise API answers (every later request fails too)."""
        message = f"--against {self._shown_base}: {reason}"
        self._refusal = message
        raise BadServer(message)

    def _exchange(self, method: str, segments: tuple[str, ...], *, body: Any, trace: bool) -> Exchange:
        if self._refusal is not None:
            raise BadServer(self._refusal)
        url = self._url(segments, trace=trace)
        what = f"{method} {url.raw_path.decode('ascii')}"
        deadline = time.monotonic() + self._answer_seconds
        try:
            with self._client.stream(method, url, json=body, headers=self._headers, follow_redirects=False) as answer:
                content, longer = read_capped_body(answer, max_bytes=self._max_answer_bytes, deadline=deadline)
                status, location = answer.status_code, answer.headers.get("location")
        except DeadlinePassed:
            self.refuse(f"{what}: the answer was still arriving after {self._answer_seconds:g} s")
        except ToolError as exc:
            self.refuse(f"{what}: {exc}")
        except httpx.HTTPError as exc:
            raise UsageError(f"--against {self._shown_base}: {what}: {type(exc).__name__}: {shown(str(exc))}") from None
        if longer:
            self.refuse(f"{what} answered {status} with a body longer than {self._max_answer_bytes} bytes")
        return Exchange(what, status, content, location)

    def _url(self, segments: tuple[str, ...], *, trace: bool) -> httpx.URL:
        """The base URL's path followed by ``segments``, each checked and percent-encoded as one segment."""
        for segment in segments:
            if not _SEGMENT.fullmatch(segment):
                raise UsageError(f"refused to put {shown(repr(segment))} in a URL of --against {self._shown_base}")
        path = "/".join([self._base_path, *(quote(segment, safe="") for segment in segments)])
        return self._base.copy_with(raw_path=(path + ("?trace=true" if trace else "")).encode("ascii"))
