"""Every configuration value that cannot be used is one line naming the field, never a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.unit.config.test_config_check import check, write

SCRIPTED = {"provider": "scripted", "scenarios": [{"turns": [{"content": "hi"}]}]}


def with_api(url: str, **api: Any) -> dict[str, Any]:
    tool = {"toolName": "t", "description": "d", "method": "GET", "path": "/x", "parameter": {"type": "object"}}
    return {
        "models": {"m": SCRIPTED},
        "tools": {"apis": [{"url": url, "internal": True, "tools": [tool], **api}]},
        "profiles": {"default": {"model": "m"}},
    }


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        pytest.param(
            with_api("http://0177.0.0.1:18960"),
            "tools.apis.0.url: Value error, url 'http://0177.0.0.1:18960' cannot be used: Invalid IPv4 address",
            id="an IPv4 address httpx refuses",
        ),
        pytest.param(
            {
                "models": {"m": {"provider": "openai", "base_url": "http://010.0.0.1:80/v1", "model": "x"}},
                "profiles": {"default": {"model": "m"}},
            },
            "models.m.openai.base_url: Value error, base_url 'http://010.0.0.1:80/v1' cannot be used",
            id="a model URL httpx refuses",
        ),
        pytest.param(
            with_api("https://api.example.com", tools=[{"toolName": "t", "path": "/x\r\nHost: evil.example"}]),
            "tools.apis.0.tools.0: Value error, tool t: path holds a carriage return (CR); no control character "
            "can be sent in a request",
            id="CRLF in a tool's path",
        ),
        pytest.param(
            with_api("https://api.example.com", apiKey={"in": "header", "name": "X-Key", "value": "k\nX-Evil: 1"}),
            "tools.apis.0.apiKey.value: Value error, apiKey.value holds a line feed (LF)",
            id="a line feed in an API's key",
        ),
        pytest.param(
            with_api("https://api.example.com", apiKey={"in": "header", "name": "X-Key\r", "value": "k"}),
            "tools.apis.0.apiKey.name: Value error, apiKey.name 'X-Key\\r' is not a valid HTTP header name",
            id="a carriage return in a key's header name",
        ),
        pytest.param(
            {
                "models": {
                    "m": {
                        "provider": "openai",
                        "base_url": "https://llm.example.com/v1",
                        "model": "x",
                        "headers": {"X-Team": "a\x07b"},
                    }
                },
                "profiles": {"default": {"model": "m"}},
            },
            "models.m.openai.headers: Value error, headers: the value of X-Team holds the control character U+0007",
            id="a control character in a model's header",
        ),
        pytest.param(
            {
                "models": {
                    "m": {
                        "provider": "openai",
                        "base_url": "https://llm.example.com/v1",
                        "model": "x",
                        "api_key": "sk-abc\r\n",
                    }
                },
                "profiles": {"default": {"model": "m"}},
            },
            "models.m.openai.api_key: Value error, api_key holds a carriage return (CR)",
            id="CRLF in a model's key",
        ),
    ],
)
def test_an_unusable_value_is_one_line_naming_its_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: dict[str, Any], expected: str
) -> None:
    # When a configuration holding the value is checked
    code, _ = check(write(tmp_path, config))

    # Then it fails with one line that names the field and the reason (and never repeats a key)
    error = capsys.readouterr().err
    assert code == 1
    assert error.count("\n") == 1
    assert expected in error
    assert "Traceback" not in error
    assert "X-Evil" not in error and "sk-abc" not in error


def test_a_file_nested_ten_thousand_deep_is_a_config_error_naming_the_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("models: " + "[" * 10_000 + "]" * 10_000 + "\n", encoding="utf-8")

    code, _ = check(path)

    assert code == 1
    assert (
        capsys.readouterr().err == f"stepwise config check: {path}: nested too deeply to read; the limit is 64 levels\n"
    )


def test_a_file_whose_yaml_aliases_expand_past_the_limit_is_a_config_error_naming_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a configuration of a few hundred bytes whose nested aliases stand for over a million values
    path = tmp_path / "bomb.yaml"
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * 10)}]" for level in range(1, 6)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    # When it is checked
    code, _ = check(path)

    # Then it fails with one line naming the file and its YAML aliases
    assert code == 1
    assert capsys.readouterr().err == (
        f"stepwise config check: {path}: the YAML aliases of the file expand it to more than 1000000 values "
        "(the limit against alias bombs)\n"
    )


def test_a_file_nested_past_the_limit_but_readable_names_its_depth(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"models": ' + "[" * 100 + "]" * 100 + "}", encoding="utf-8")

    code, _ = check(path)

    assert code == 1
    assert (
        capsys.readouterr().err == f"stepwise config check: {path}: the file nests 101 levels deep; the limit is 64\n"
    )


def test_a_file_that_is_not_utf8_is_a_config_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"models: {m: caf\xe9}\n")

    code, _ = check(path)

    assert code == 1
    assert capsys.readouterr().err == f"stepwise config check: {path}: not UTF-8 text (byte 15)\n"


def test_a_lone_surrogate_in_a_description_is_replaced_and_a_note_says_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a tool description whose escape decodes to a lone surrogate
    path = tmp_path / "stepwise.json"
    config = with_api("http://127.0.0.1:1")
    text = write(tmp_path, config).read_text(encoding="utf-8").replace("description: d", 'description: "d\\ud800"')
    path.write_text(text, encoding="utf-8")

    # When it is checked
    code, out = check(path)

    # Then it is valid, the description shows U+FFFD, and a note names the field
    assert code == 0, capsys.readouterr().err
    assert "d\ufffd" in out
    assert "note: tools.apis.0.tools.0.description: [1 character that cannot be encoded" in out
