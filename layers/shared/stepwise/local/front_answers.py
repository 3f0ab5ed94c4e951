"""The answers `stepwise serve`'s HTTP front gives on its own, before or instead of the API function's: a 405 for
a method no route of the path takes, the 401 of a key the server does not accept, and the 503 of a chat
completion whose run the stopping server no longer waits for; and which routes wait for a run to end."""

from __future__ import annotations

from stepwise.steps.api.route_table import CONSOLE_ROUTES, ROUTES
from stepwise.streaming.answers import HttpResponse, error_answer
from stepwise.streaming.proxy_event import resource_of

# What a 401 of the front asks for: the key, as `Authorization: Bearer` (or `x-api-key`).
UNACCEPTED_KEY_CHALLENGE = 'Bearer realm="stepwise", error="invalid_token"'

_SERVED = (*ROUTES, *CONSOLE_ROUTES)
_ROUTE_METHODS = sorted({method for method, _ in _SERVED})
_METHODS_OF_RESOURCE = {
    resource: sorted(method for method, path in _SERVED if path == resource) for _, resource in _SERVED
}


def method_not_allowed(method: str, path: str) -> HttpResponse | None:
    """405 naming the methods of `path` (of every route, when no route has `path`); None when one takes `method`."""
    resource, _ = resource_of(path)
    allowed = _METHODS_OF_RESOURCE.get(resource)
    if allowed is None:
        if method in _ROUTE_METHODS:
            return None  # an unknown path: the API function answers 404
        return error_answer(405, "method_not_allowed", f"no route takes {method}", allow=", ".join(_ROUTE_METHODS))
    if method in allowed:
        return None
    message = f"{resource} takes {' or '.join(allowed)}, not {method}"
    return error_answer(405, "method_not_allowed", message, allow=", ".join(allowed))


def unaccepted_key() -> HttpResponse:
    """The 401 of a key that is not one of the server's accepted keys (RFC 6750's challenge: the key may be
    sent as a bearer token)."""
    return error_answer(
        401,
        "unauthorized",
        "the API key is not one this server accepts",
        www_authenticate=UNACCEPTED_KEY_CHALLENGE,
    )


def stopped_while_waiting(run_id: str | None) -> HttpResponse:
    """The 503 of a chat completion whose run the stopping server no longer waits for, naming that run
    (`error.details.run_id`, as the 504 of a run that did not finish in time does)."""
    if run_id is None:
        message = "the server is stopping before the run started; send the request again once it is back"
        return error_answer(503, "unavailable", message, x_should_retry="false")
    message = (
        f"the server is stopping before run {run_id} ended; the run goes on when the server starts again: "
        f"GET /v1/runs/{run_id}"
    )
    return error_answer(503, "unavailable", message, x_should_retry="false", details={"run_id": run_id})


def chat_is_waiting(method: str, resource: str) -> bool:
    """The routes that wait for a run to end: chat completions (synchronous mode)."""
    return (method, resource) == ("POST", "/v1/chat/completions")
