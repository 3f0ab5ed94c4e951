"""GitHub's REST description (13 MB, 1,223 operations) imports whole, within a memory bound, and its tools
send the requests GitHub documents.

The document is the one in ``@octokit/openapi`` 23.0.2 (tests/fixtures/openapi/real/README.md). It is
imported once for the module, with Python's allocations traced, and once more for each filter test.
"""

from __future__ import annotations

import json
import tracemalloc
from dataclasses import dataclass

import pytest

from stepwise.tools import ToolInvoker, ToolRegistry
from tests.support.tool_server import ScriptableToolServer
from tests.unit.tools.config_builders import call
from tests.unit.tools.openapi.conftest import ImportReal, parameters_of, sent_by

DOCUMENT = "github-api-23.0.2.json"
MB = 1024 * 1024
# Two names that are the same once cut to 64 characters; the later one is renamed.
LONG_DEFINITION = "orgs/custom-properties-for-repos-create-or-update-organization-definition"
LONG_DEFINITIONS = "orgs/custom-properties-for-repos-create-or-update-organization-definitions"
CUT_NAME = "orgs_custom-properties-for-repos-create-or-update-organization-d"


@dataclass(frozen=True)
class TracedImport:
    """The registry, the most memory Python held at once while importing, and what the tools keep."""

    registry: ToolRegistry
    peak_bytes: int
    kept_bytes: int


@pytest.fixture(scope="module")
def github(import_real: ImportReal) -> TracedImport:
    tracing_already = tracemalloc.is_tracing()
    if not tracing_already:
        tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        registry = import_real(DOCUMENT)
        after, peak = tracemalloc.get_traced_memory()
    finally:
        if not tracing_already:
            tracemalloc.stop()
    return TracedImport(registry, peak_bytes=peak - before, kept_bytes=after - before)


def test_every_operation_is_a_tool_but_the_two_whose_body_no_tool_can_send(github: TracedImport) -> None:
    # Then 1,221 of the 1,223 operations are tools; the raw-text and binary uploads are left out, saying why
    registry = github.registry
    assert len(registry) == 1221
    skipped = [note for note in registry.notes if ": skipped " in note]
    assert [note.split(": ", 2)[1:] for note in skipped] == [
        [
            "skipped operation markdown/render-raw",
            "the request body is text/plain, text/x-markdown; only JSON, form-urlencoded and multipart form "
            "fields can be sent",
        ],
        [
            "skipped operation repos/upload-release-asset",
            "the request body is application/octet-stream; only JSON, form-urlencoded and multipart form "
            "fields can be sent",
        ],
    ]


def test_tool_names_are_unique_and_fit_in_64_characters(github: TracedImport) -> None:
    # Then no two tools share a name, the two cut to the same 64 characters told apart and noted
    names = github.registry.names()
    assert len(set(names)) == len(names)
    assert max(len(name) for name in names) == 64
    renamed = [note for note in github.registry.notes if ": renamed " in note]
    assert renamed == [
        f"openapi {DOCUMENT}: renamed operation {LONG_DEFINITION}: tool name {CUT_NAME} is also the name of "
        f"operation {LONG_DEFINITIONS}; named orgs_custom-properties-for-repos-create-or-update-organization_2"
    ]


def test_the_import_stays_within_its_memory_and_schema_size_bounds(github: TracedImport) -> None:
    # Then importing held at most 150 MB at once (the 13 MB text and its parsed tree), the tools keep less
    # than 24 MB, and the schemas offered to the model total under 2 MB, none over 32 KB
    assert github.peak_bytes < 150 * MB
    assert github.kept_bytes < 24 * MB
    sizes = [len(json.dumps(spec.parameters)) for spec in github.registry.specs()]
    assert sum(sizes) < 2 * MB
    assert max(sizes) < 32 * 1024


def test_repos_get_puts_owner_and_repo_in_the_path(github: TracedImport, real_api_server: ScriptableToolServer) -> None:
    # Given the tool of operation repos/get, whose arguments are the owner and the repository
    assert parameters_of(github.registry, "repos_get")["required"] == ["owner", "repo"]
    # When the model calls it
    observation, sent = sent_by(real_api_server, github.registry, "repos_get", owner="octocat", repo="Hello-World")
    # Then GET /repos/{owner}/{repo} went out with their values in the path, and nothing else
    assert observation.ok
    assert (sent.method, sent.path, sent.raw_query, sent.body) == ("GET", "/repos/octocat/Hello-World", "", b"")


def test_issues_list_for_repo_sends_its_filters_in_the_query(
    github: TracedImport, real_api_server: ScriptableToolServer
) -> None:
    # When the model lists a repository's closed bug issues, five a page
    arguments = {"owner": "octocat", "repo": "Hello-World", "state": "closed", "labels": "bug", "per_page": 5}
    observation, sent = sent_by(real_api_server, github.registry, "issues_list-for-repo", **arguments)
    # Then the filters went in the query of GET /repos/{owner}/{repo}/issues
    assert observation.ok
    assert (sent.method, sent.path) == ("GET", "/repos/octocat/Hello-World/issues")
    assert sent.query == {"state": ["closed"], "labels": ["bug"], "per_page": ["5"]}


def test_issues_create_sends_the_issue_as_a_json_body(
    github: TracedImport, real_api_server: ScriptableToolServer
) -> None:
    # When the model opens an issue
    issue = {"title": "Found a bug", "body": "It crashes.", "labels": ["bug"]}
    observation, sent = sent_by(
        real_api_server, github.registry, "issues_create", owner="octocat", repo="Hello-World", body=issue
    )
    # Then the issue went as the JSON body of POST /repos/{owner}/{repo}/issues
    assert observation.ok
    assert (sent.method, sent.path) == ("POST", "/repos/octocat/Hello-World/issues")
    assert sent.headers["content-type"] == "application/json"
    assert sent.json() == issue


def test_a_file_path_goes_into_the_contents_path_with_its_slashes(
    github: TracedImport, real_api_server: ScriptableToolServer
) -> None:
    # When the model reads a file in a folder (the path parameter GitHub marks x-multi-segment, as its own
    # hypermedia writes it: contents_url ends in /contents/{+path})
    observation, sent = sent_by(
        real_api_server, github.registry, "repos_get-content", owner="octocat", repo="Hello-World", path="docs/a b.md"
    )
    # Then the folders are path segments, each one escaped, not one %2F-encoded segment
    assert observation.ok
    assert sent.path == "/repos/octocat/Hello-World/contents/docs/a%20b.md"


def test_a_file_path_cannot_climb_out_of_the_contents_path(
    github: TracedImport, real_api_server: ScriptableToolServer
) -> None:
    # When the model names a path with dot segments that would resolve to another endpoint
    before = len(real_api_server.requests)
    observation = ToolInvoker(github.registry).invoke(
        call("repos_get-content", owner="octocat", repo="Hello-World", path="docs/../../../user")
    )
    # Then the call is refused naming the parameter and the reason, and nothing is sent
    assert observation.error == "invalid arguments: path parameter path must not contain '.' or '..' segments"
    assert len(real_api_server.requests) == before


def test_include_by_tag_offers_only_that_tags_operations(import_real: ImportReal) -> None:
    # When only the operations tagged issues are imported
    registry = import_real(DOCUMENT, include={"tags": ["issues"]})
    # Then the 58 issue tools are offered, and no other
    assert len(registry) == 58
    assert all(name.startswith("issues_") for name in registry.names())


def test_excluding_one_of_two_clashing_operations_leaves_the_other_its_name(import_real: ImportReal) -> None:
    # When one of the two operations whose names clash once cut is excluded
    registry = import_real(DOCUMENT, exclude={"operations": [LONG_DEFINITIONS]})
    # Then the other keeps the cut name, nothing is renamed, and every other operation is still a tool
    assert CUT_NAME in registry.names()
    assert not [note for note in registry.notes if ": renamed " in note]
    assert len(registry) == 1220
