"""The console's routes: `GET /ui` and `GET /ui/{asset}`, the page and its files.

They are public (no key), as a login page is: the files hold no data, and each call the page makes is to
the API with the key the person types. They are left out of the OpenAPI document, which describes the API.
"""

from __future__ import annotations

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response

from stepwise.console.assets import SECURITY_HEADERS, console_asset
from stepwise.steps.api.problems import NotFound


def _asset_response(name: str) -> Response[str]:
    asset = console_asset(name)
    if asset is None:
        raise NotFound(f"the console has no file {name!r}")
    return Response(status_code=200, content_type=asset.content_type, body=asset.body, headers=SECURITY_HEADERS)


def register_console_routes(app: APIGatewayRestResolver) -> None:
    """Serve the console on `app`: `/ui/` is the page; `/ui` sends the browser there, so that the page's
    relative links resolve under `/ui/` (behind API Gateway, under the stage's path too)."""

    @app.get("/ui", include_in_schema=False)
    def get_console() -> Response[str]:
        event = app.current_event
        if event.path.endswith("/"):
            return _asset_response("")
        context_path = str((event.get("requestContext") or {}).get("path") or event.path)
        return Response(status_code=308, headers={"Location": f"{context_path}/"}, body="")

    @app.get("/ui/<asset>", include_in_schema=False)
    def get_console_asset(asset: str) -> Response[str]:
        return _asset_response(asset)
