"""Schemathesis against a live `stepwise serve`, from the OpenAPI document the server itself publishes.

Every operation is sent generated requests, valid ones and invalid ones; every response must be a
non-5xx status the document lists, with the content type and body it describes, and an invalid
request must be refused. The run is deterministic and bounded for CI: `STEPWISE_FUZZ_EXAMPLES`
examples per operation and mode (25 by default; `make fuzz` sends 500).

Schemathesis' own pytest parametrisation needs pytest internals that pytest 9 no longer has, so each
operation is a plain parametrised test drawing cases from the operation's Hypothesis strategy.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import schemathesis
import yaml
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from stepwise.local.server import LocalApi
from stepwise.steps.api import ROUTES

EXAMPLES_PER_OPERATION = int(os.environ.get("STEPWISE_FUZZ_EXAMPLES", "25"))
API_KEY = "fuzzer"
REQUEST_TIMEOUT_SECONDS = 30
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
]

_TOOL_CALL = json.dumps({"action": "calculator", "action_input": {"expression": "6*7"}})
_ANSWER = json.dumps({"action": "Final Answer", "action_input": "42."})
CONFIG = {
    "models": {
        "m": {
            "provider": "scripted",
            "scenarios": [{"turns": [{"content": f"```json\n{_TOOL_CALL}\n```"}, {"content": f"```json\n{_ANSWER}\n```"}]}],
        }
    },
    "tools": {"builtin": ["calculator"]},
    "profiles": {"default": {"model": "m", "strategy": "react", "protocol": "react_json"}},
    "api": {"sync_timeout_seconds": 5},
}


@pytest.fixture(scope="module")
def served_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalApi]:
    """`stepwise serve` on a free loopback port, with a scripted model that calls the calculator."""
    config_dir: Path = tmp_path_factory.mktemp("fuzz")
    (config_dir / "stepwise.yaml").write_text(yaml.safe_dump(CONFIG), encoding="utf-8")
    with LocalApi(config_dir=config_dir, retry_interval_scale=0.0) as served:
        yield served


@pytest.fixture(scope="module")
def api_schema(served_api: LocalApi) -> schemathesis.BaseSchema:
    """The OpenAPI document the server publishes, loaded by schemathesis."""
    return schemathesis.openapi.from_url(f"{served_api.url}/v1/openapi.json", headers={"x-api-key": API_KEY})


@pytest.fixture(scope="module")
def http_session() -> Iterator[requests.Session]:
    """One connection pool for the whole run."""
    with requests.Session() as session:
        yield session


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=str)
@pytest.mark.parametrize(("method", "path"), ROUTES, ids=[f"{method} {path}" for method, path in ROUTES])
def test_every_response_is_documented_and_none_is_a_server_error(
    api_schema: schemathesis.BaseSchema,
    served_api: LocalApi,
    http_session: requests.Session,
    method: str,
    path: str,
    mode: GenerationMode,
) -> None:
    # Given the operation as the served document describes it
    operation = api_schema[path][method]

    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(mode, headers={"x-api-key": API_KEY}))
    def send(case: schemathesis.Case) -> None:
        # When a generated request is sent / Then its response is documented, and never a 5xx
        response = case.call_and_validate(
            base_url=served_api.url, session=http_session, checks=CHECKS, timeout=REQUEST_TIMEOUT_SECONDS
        )
        with open("/tmp/fz/statuses.txt", "a") as f:
            f.write(f"{method} {path} {mode} {response.status_code} {response.content[:150]!r}\n")

    send()
