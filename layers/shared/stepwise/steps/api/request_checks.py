"""What every request is checked for before its route runs: a JSON body within the size and depth limits whose
strings can be stored, parameters without lone surrogates and none a route does not take, and a JSON content
type where a body is read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent

from stepwise.inputs.json_limits import JsonLimitExceeded, load_json
from stepwise.inputs.text_policy import clean_text, find_unencodable, locate_unencodable
from stepwise.steps.api.errors import (
    InvalidJson,
    InvalidRequest,
    PayloadTooLarge,
    UnsupportedMediaType,
    is_json_content_type,
)
from stepwise.steps.api.services import LazyServices

# The deepest request is a message's list of content parts (4 levels); anything far deeper is an attack.
MAX_BODY_DEPTH = 32


def json_body_reader(services: LazyServices) -> Callable[[str], Any]:
    """The resolver's body parser: 413 over `api.max_body_bytes`, 400 for anything but strict JSON within
    the depth limit, 422 naming the field for a string that cannot be encoded (a lone surrogate; a NUL
    is valid JSON and UTF-8, and the store replaces it).

    Everything here is refused before a route runs, so a hostile body costs one parse, never a store call.
    """

    def read(text: str) -> Any:
        limit = services.get().config.api.max_body_bytes
        try:
            body = load_json(text, max_bytes=limit, max_depth=MAX_BODY_DEPTH, what="the body")
        except JsonLimitExceeded as exc:
            details = {"limit": exc.limit, "maximum": exc.maximum, "actual": exc.actual}
            if exc.limit == "size":
                raise PayloadTooLarge(
                    str(exc), details={"limit_bytes": exc.maximum, "size_bytes": exc.actual}
                ) from None
            raise InvalidJson(str(exc), details=details) from None
        except ValueError:
            raise InvalidJson("the body is not valid JSON") from None
        problem = locate_unencodable(body, include_nul=False)
        if problem is not None:
            raise InvalidRequest.of(*problem)
        return body

    return read


def refuse_unencodable_parameters(app: APIGatewayRestResolver, next_middleware: NextMiddleware) -> Response[Any]:
    """Middleware: a header, query or path parameter holding a lone surrogate is a 422 naming it."""
    event = app.current_event
    sources = (
        ("header", event.headers),
        ("query parameter", event.query_string_parameters),
        ("path parameter", event.path_parameters),
    )
    for source, parameters in sources:
        for name, value in (parameters or {}).items():
            for text in (name, value):
                reason = find_unencodable(str(text), include_nul=False)
                if reason is not None:
                    raise InvalidRequest.of(f"{clean_text(str(name))} ({source})", reason)
    return next_middleware(app)


def refuse_unknown_query_parameters(app: APIGatewayRestResolver, next_middleware: NextMiddleware) -> Response[Any]:
    """Middleware: on a route that takes query parameters, one it does not take is a 422 naming it (a misspelled
    filter, `stauts=FAILED`, would otherwise be ignored and the answer hold what it meant to leave out). Routes
    that take none let any through: a client's own (a cache buster, Azure's `api-version`) changes nothing there.
    One of its own given twice is refused by the validation that runs first (`errors._validation_reason`)."""
    route = app.context.get("_route")
    dependant = getattr(route, "dependant", None)
    known = [field.alias for field in dependant.query_params] if dependant is not None else []
    if known:
        given = app.current_event.query_string_parameters or {}
        refused = InvalidRequest.of_query({name: [value] for name, value in given.items()}, known)
        if refused is not None:
            raise refused
    return next_middleware(app)


def require_json(event: APIGatewayProxyEvent) -> None:
    """415 unless the request says its body is JSON."""
    content_type = event.headers.get("content-type") or ""
    if not is_json_content_type(content_type):
        raise UnsupportedMediaType(content_type)
