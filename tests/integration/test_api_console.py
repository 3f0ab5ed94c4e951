"""The console's files, served by the API function as API Gateway invokes it: public, with a strict
Content-Security-Policy, only the files the console has, and out of the API's OpenAPI document."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

from stepwise.console.assets import CONTENT_SECURITY_POLICY
from stepwise.local.api_gateway import api_gateway_event
from tests.conftest import PROJECT_ROOT
from tests.integration.test_api_handler import ApiHandler, api_config, start_handler

CONSOLE_FILES = PROJECT_ROOT / "layers" / "shared" / "stepwise" / "console" / "static"


@pytest.fixture
def handler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiHandler]:
    with mock_aws():
        yield start_handler(tmp_path, monkeypatch, api_config())


def get(handler: ApiHandler, target: str, *, stage_path: str | None = None) -> dict[str, Any]:
    """The handler's response to `GET target` sent without any key, as a browser loads a page."""
    event = api_gateway_event(method="GET", target=target, headers=[], body=b"", host="api.test", source_ip="1.2.3.4")
    if stage_path is not None:
        event["requestContext"]["path"] = stage_path
    response: dict[str, Any] = handler.invoker.invoke("ApiFunction", event)
    return response


def header(response: dict[str, Any], name: str) -> str:
    """A response header, from either of the proxy response's header maps."""
    single = response.get("headers") or {}
    return str(single[name]) if name in single else str(response["multiValueHeaders"][name][0])


def test_the_page_is_served_without_a_key_with_a_policy_that_allows_only_its_own_files(handler: ApiHandler) -> None:
    # When the page is asked for without any key
    response = get(handler, "/ui/")
    # Then it is the console's HTML, with a policy that runs scripts and styles of its origin only
    assert response["statusCode"] == 200
    assert header(response, "Content-Type") == "text/html; charset=utf-8"
    policy = header(response, "Content-Security-Policy")
    assert "default-src 'none'" in policy and "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert "<title>Stepwise console</title>" in response["body"]


def test_the_bare_path_sends_the_browser_to_the_page_under_the_stage_it_used(handler: ApiHandler) -> None:
    # When /ui is asked for through API Gateway's prod stage
    response = get(handler, "/ui", stage_path="/prod/ui")
    # Then the browser is sent to /prod/ui/, where the page's relative links resolve
    assert response["statusCode"] == 308
    assert header(response, "Location") == "/prod/ui/"


@pytest.mark.parametrize(
    ("name", "content_type"),
    [("console.js", "text/javascript"), ("console.css", "text/css"), ("favicon.svg", "image/svg+xml")],
)
def test_each_file_of_the_console_is_served_with_its_type(handler: ApiHandler, name: str, content_type: str) -> None:
    # When one of the console's files is asked for
    response = get(handler, f"/ui/{name}")
    # Then it is that file, with its content type
    assert response["statusCode"] == 200
    assert response["body"] == (CONSOLE_FILES / name).read_text(encoding="utf-8")
    assert header(response, "Content-Type").startswith(content_type)


def test_the_pages_icon_is_a_file_of_its_own_that_its_policy_lets_it_load() -> None:
    # Given the console's page and the policy it is served with
    page = (CONSOLE_FILES / "index.html").read_text(encoding="utf-8")
    # Then the page names its icon, a file of the console (served above), by a path of its own origin,
    # which the policy's img-src admits
    assert '<link rel="icon" href="favicon.svg" type="image/svg+xml">' in page
    directives = dict(directive.strip().split(" ", 1) for directive in CONTENT_SECURITY_POLICY.split(";"))
    assert directives["img-src"] == "'self'"
    assert (CONSOLE_FILES / "favicon.svg").is_file()


@pytest.mark.parametrize("name", ["missing.js", "__init__.py", "assets.py", "..%2Fassets.py", "console.JS"])
def test_a_name_that_is_not_a_file_of_the_console_is_not_found(handler: ApiHandler, name: str) -> None:
    # When anything else is asked for under /ui/
    response = get(handler, f"/ui/{name}")
    # Then it is 404, whatever the name tries
    assert response["statusCode"] == 404


def test_the_console_is_not_part_of_the_apis_openapi_document(handler: ApiHandler) -> None:
    # When the API's OpenAPI document is read
    _, document = handler.call("GET", "/v1/openapi.json")
    # Then it describes the API alone
    assert not [path for path in document["paths"] if path.startswith("/ui")]


def test_the_consoles_script_never_parses_text_as_markup() -> None:
    # Given the console's JavaScript, all its files
    scripts = {path.name: path.read_text(encoding="utf-8") for path in CONSOLE_FILES.glob("*.js")}
    assert "console.js" in scripts
    # Then none hands a string to the HTML parser or to eval
    for name, script in scripts.items():
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert sink not in script, (name, sink)
