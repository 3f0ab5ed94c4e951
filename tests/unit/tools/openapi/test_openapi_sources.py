"""Where an OpenAPI document comes from: the config directory, S3, or a URL fetched once at cold start."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from moto import mock_aws

from stepwise.config.tool_sources import parse_tools_config
from stepwise.errors import ConfigError
from stepwise.tools import ToolInvoker, build_tool_registry
from tests.support.tool_server import Json, Redirect, ScriptableToolServer, Status
from tests.unit.tools.config_builders import call
from tests.unit.tools.openapi.conftest import FIXTURES, ImportSource, specs_by_name

BUCKET = "stepwise-config"


def weather_document() -> dict[str, Any]:
    """The weather fixture as parsed data, to serve or upload."""
    document: dict[str, Any] = yaml.safe_load((FIXTURES / "weather-3.1.yaml").read_text(encoding="utf-8"))
    return document


@pytest.fixture
def s3_client() -> Iterator[Any]:
    """Moto's S3 with a bucket holding the weather document as JSON and YAML."""
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        client.put_object(Bucket=BUCKET, Key="specs/weather.yaml", Body=(FIXTURES / "weather-3.1.yaml").read_bytes())
        yield client


def test_a_document_is_read_from_s3(import_source: ImportSource, s3_client: Any) -> None:
    # Given the weather document in S3
    entry = {"source": f"s3://{BUCKET}/specs/weather.yaml", "baseUrl": "https://api.weather.example.com/v3"}
    # When it is imported
    names = list(specs_by_name(import_source(entry, s3_client=s3_client)))
    # Then its operations are tools
    assert names == ["get_weather_now", "get_weather_daily_json", "placeDetails", "subscribeAlerts"]


def test_a_missing_s3_object_is_a_config_error_naming_it(import_source: ImportSource, s3_client: Any) -> None:
    # Given a source naming an object that does not exist
    entry = {"source": f"s3://{BUCKET}/specs/missing.yaml", "baseUrl": "https://api.example.com"}
    # When it is imported
    with pytest.raises(ConfigError) as error:
        import_source(entry, s3_client=s3_client)
    # Then the error names the object and S3's reason
    assert str(error.value) == f"openapi s3://{BUCKET}/specs/missing.yaml: cannot read the S3 object: NoSuchKey"


def test_a_url_is_fetched_once_for_every_source_that_names_it(tool_server: ScriptableToolServer) -> None:
    # Given a server publishing the document, named by two sources with different filters
    tool_server.on("/specs/weather.json", Json(weather_document()))
    url = f"{tool_server.url}/specs/weather.json"
    config = parse_tools_config(
        {
            "openapi": [
                {"source": url, "internal": True, "include": {"tags": ["weather"]}},
                {"source": url, "internal": True, "include": {"tags": ["places"]}},
            ]
        }
    )
    # When the registry is built
    registry = build_tool_registry(config, config_dir=FIXTURES)
    # Then the document was fetched once and both sources' tools exist
    assert [request.path for request in tool_server.requests] == ["/specs/weather.json"]
    assert registry.names() == ["get_weather_now", "get_weather_daily_json", "placeDetails"]


def test_a_relative_server_url_is_resolved_against_the_document_url(
    import_source: ImportSource, tool_server: ScriptableToolServer
) -> None:
    # Given the weather document (server "/v3") published by a server
    tool_server.on("/specs/weather.json", Json(weather_document()))
    registry = import_source({"source": f"{tool_server.url}/specs/weather.json", "internal": True})
    # When an operation is called
    ToolInvoker(registry).invoke(call("placeDetails", **{"place-id": "louvre"}))
    # Then it went to /v3 on the document's server
    assert tool_server.requests[-1].path == "/v3/places/louvre"


def test_a_url_on_loopback_is_refused_unless_the_source_is_internal(
    import_source: ImportSource, tool_server: ScriptableToolServer
) -> None:
    # Given an https source on loopback, not internal
    entry = {"source": f"https://127.0.0.1:{tool_server.port}/specs/weather.json"}
    # When it is imported
    with pytest.raises(ConfigError) as error:
        import_source(entry)
    # Then it is refused before any connection
    assert "127.0.0.1 is a loopback address" in str(error.value)
    assert tool_server.requests == []


def test_a_plain_http_url_needs_the_source_to_be_internal(import_source: ImportSource) -> None:
    # Given an http:// source that is not internal
    # When the configuration is read
    with pytest.raises(ConfigError) as error:
        import_source({"source": "http://specs.example.com/weather.json"})
    # Then the error names the source and the rule
    assert "only an internal source may be fetched over plain http" in str(error.value)


def test_a_redirect_to_another_origin_while_fetching_is_refused(
    import_source: ImportSource, tool_server: ScriptableToolServer, attacker_server: ScriptableToolServer
) -> None:
    # Given a document URL that redirects to another server
    tool_server.on("/specs/weather.json", Redirect(f"{attacker_server.url}/weather.json"))
    # When it is imported
    with pytest.raises(ConfigError) as error:
        import_source({"source": f"{tool_server.url}/specs/weather.json", "internal": True})
    # Then the import fails and the other server was never asked
    assert "refused a redirect to another origin" in str(error.value)
    assert attacker_server.requests == []


def test_a_document_url_that_answers_404_is_a_config_error(
    import_source: ImportSource, tool_server: ScriptableToolServer
) -> None:
    # Given a URL that answers 404
    tool_server.on("/specs/", Status(404, "not found"))
    url = f"{tool_server.url}/specs/gone.json"
    # When it is imported
    with pytest.raises(ConfigError) as error:
        import_source({"source": url, "internal": True})
    # Then the error names the URL and the status
    assert str(error.value) == f"openapi {url}: the server answered HTTP 404"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"swagger": "2.0", "paths": {}}', "Swagger 2.0 documents are not supported; convert it to OpenAPI 3"),
        ("openapi: 3.1.0\npaths: [1, 2]\n", "'paths' must be a mapping"),
        ("openapi: 3.1.0\npaths:\n  /a: {get: [\n", "not valid JSON or YAML at line 4"),
        ("- just\n- a list\n", "the document must be a mapping"),
    ],
)
def test_a_file_that_is_not_an_openapi_3_document_is_a_config_error(
    import_source: ImportSource, tmp_path: Path, text: str, reason: str
) -> None:
    # Given a file in the config directory that is not an OpenAPI 3 document
    (tmp_path / "api.yaml").write_text(text, encoding="utf-8")
    # When it is imported
    with pytest.raises(ConfigError) as error:
        import_source({"source": "api.yaml", "baseUrl": "https://api.example.com"}, config_dir=tmp_path)
    # Then the error names the file and the reason
    assert str(error.value) == f"openapi api.yaml: {reason}"


def test_a_missing_file_is_a_config_error_naming_it(import_source: ImportSource, tmp_path: Path) -> None:
    # Given a source naming a file that is not there
    # When it is imported
    with pytest.raises(ConfigError) as error:
        import_source({"source": "nope.yaml"}, config_dir=tmp_path)
    # Then the error names the file and says why
    assert str(error.value).startswith("openapi nope.yaml: cannot read ")
    assert str(error.value).endswith("No such file or directory")


def test_a_file_outside_the_config_directory_is_refused(import_source: ImportSource, tmp_path: Path) -> None:
    # Given a document one level above the config directory
    (tmp_path / "outside.yaml").write_text((FIXTURES / "weather-3.1.yaml").read_text(encoding="utf-8"))
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    # When a source reaches it with ../
    with pytest.raises(ConfigError) as error:
        import_source({"source": "../outside.yaml", "baseUrl": "https://api.example.com"}, config_dir=config_dir)
    # Then it is refused
    assert "the file is outside the config directory" in str(error.value)


@pytest.mark.parametrize(
    ("escaped", "offered"),
    [
        pytest.param("a lone \\ud83e half", "a lone \ufffd half", id="a lone surrogate"),
        pytest.param("a \\u0000 byte", "a \ufffd byte", id="a NUL"),
        pytest.param("a beetle \\ud83e\\udeb2 emoji", "a beetle \U0001fab2 emoji", id="a surrogate pair"),
    ],
)
def test_text_a_json_document_escapes_reaches_the_model_encodable(
    import_source: ImportSource, tmp_path: Path, escaped: str, offered: str
) -> None:
    # Given a JSON document whose operation summary holds an escape
    text = (
        '{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, '
        f'"paths": {{"/a": {{"get": {{"operationId": "get_a", "summary": "{escaped}"}}}}}}}}'
    )
    (tmp_path / "api.json").write_text(text, encoding="utf-8")
    # When it is imported
    registry = import_source({"source": "api.json", "baseUrl": "https://api.example.com"}, config_dir=tmp_path)
    # Then the description offered is what the escape means, with what cannot be encoded replaced
    assert specs_by_name(registry)["get_a"].description == offered
