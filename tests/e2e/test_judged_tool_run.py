"""A run whose model calls a spread of Stripe and GitHub operations sends only requests their descriptions allow:
path parameters (one spanning segments), query arrays and objects (Stripe's deepObject), a form body and a
JSON body. (None of the four real descriptions has a header parameter a tool sends; header styles are
checked in tests/unit/tools/test_parameter_styles.py.)

Each API's stand-in judges every request against the real description with openapi-core
(tests/support/openapi_judge.py, which says what it judges by the APIs' conventions instead) and answers
400 to anything the description does not allow; the run goes through the local engine as a user's would.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import scripted_model
from tests.support.openapi_judge import OpenApiJudge
from tests.support.tool_server import Judged, ScriptableToolServer

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "openapi" / "real"
CALLS = [
    {
        "name": "GetCustomers",
        "arguments": {"created": {"gte": 1_600_000_000}, "expand": ["data.default_source"], "limit": 2},
    },
    {"name": "PostCustomers", "arguments": {"body": {"email": "ada@example.com", "metadata": {"plan": "pro"}}}},
    {
        "name": "security-advisories_list-global-advisories",
        "arguments": {"cwes": ["79"], "is_withdrawn": False, "per_page": 3},
    },
    {
        "name": "repos_get-content",
        "arguments": {"owner": "octo", "repo": "hello", "path": "src/app/main.py", "ref": "main"},
    },
    {
        "name": "issues_create",
        "arguments": {"owner": "octo", "repo": "hello", "body": {"title": "Advisory CWE-79", "labels": ["security"]}},
    },
]
# The operations the profile offers, by their operationIds.
CALLS_OF = {
    "stripe": ["GetCustomers", "PostCustomers"],
    "github": ["security-advisories/list-global-advisories", "repos/get-content", "issues/create"],
}


@pytest.fixture
def judged_servers(tmp_path: Path) -> Iterator[dict[str, tuple[ScriptableToolServer, list[list[str]]]]]:
    """Stripe's and GitHub's descriptions unpacked into the config folder, each with a judged stand-in."""
    servers: dict[str, tuple[ScriptableToolServer, list[list[str]]]] = {}
    for name in ("stripe-2020-03-02", "github-api-23.0.2"):
        text = gzip.decompress((REAL / f"{name}.json.gz").read_bytes())
        (tmp_path / f"{name}.json").write_bytes(text)
        verdicts: list[list[str]] = []
        holder: list[OpenApiJudge] = []

        def judge(request: Any, holder: list[OpenApiJudge] = holder, verdicts: list[list[str]] = verdicts) -> list[str]:
            verdicts.append(holder[0].problems(request))
            return verdicts[-1]

        server = ScriptableToolServer(default=Judged(judge)).start()
        holder.append(OpenApiJudge(json.loads(text), server.url))
        servers[name] = (server, verdicts)
    yield servers
    for server, _ in servers.values():
        server.stop()


def test_a_model_calling_stripe_and_github_sends_only_requests_their_descriptions_allow(
    tmp_path: Path,
    local_run: Callable[..., Any],
    judged_servers: dict[str, tuple[ScriptableToolServer, list[list[str]]]],
) -> None:
    # Given a profile with a few Stripe and GitHub operations, and a model that calls four of them at once,
    # then files an issue
    def source(name: str, key: dict[str, Any], operations: list[str]) -> dict[str, Any]:
        url = judged_servers[name][0].url
        include = {"operations": operations}
        return {"source": f"{name}.json", "baseUrl": url, "internal": True, "apiKey": key, "include": include}

    stripe = source("stripe-2020-03-02", {"in": "bearer", "value": "sk_test_run_key_0001"}, CALLS_OF["stripe"])
    github = source("github-api-23.0.2", {"in": "bearer", "value": "ghp_run_token_0001"}, CALLS_OF["github"])
    turns = ({"tool_calls": CALLS[:4]}, {"tool_calls": CALLS[4:]}, {"content": "All five answered."})
    model = scripted_model(*turns, native_tools=True)
    config = {
        "models": {"m": model},
        "tools": {"openapi": [stripe, github]},
        "profiles": {"default": {"model": "m", "strategy": "function_calling"}},
    }
    (tmp_path / "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    environment, _ = local_run(tmp_path)

    # When the question is asked
    meta, _ = environment.ask("Who are our newest customers, and which advisories touch our code?")

    # Then every request was allowed by its API's description, and the run ended with the model's answer
    verdicts = [verdict for _, recorded in judged_servers.values() for verdict in recorded]
    assert len(verdicts) == len(CALLS)
    assert verdicts == [[]] * len(CALLS)
    observations = [m for m in environment.runtime.store.list_messages(meta.run_id) if m.role == "tool"]
    assert [m.content.startswith("Error") for m in observations] == [False] * len(CALLS)
    assert (meta.status, meta.answer) == ("SUCCEEDED", "All five answered.")
