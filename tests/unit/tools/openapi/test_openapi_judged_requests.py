"""Every request a tool sends to a real API's stand-in is one that API's own description allows.

The stand-in of each real description (tests/fixtures/openapi/real) hands every request it receives to
an independent judge, ``openapi-core`` from PyPI (tests/support/openapi_judge.py), and answers 400 with
the judge's reasons when the description does not allow it; a tool call then fails and so does its test.
The operations are picked to cover every parameter style the four descriptions use: Stripe's
``deepObject`` query parameters (a plain object, an ``anyOf`` and an array), ``form`` scalars and
form-encoded bodies; GitHub's and Discord's exploded ``form`` arrays, ``oneOf`` parameters, JSON bodies and
GitHub's multi-segment path; Shopify's bracketed parameter names. openapi-core cannot read Stripe's
``deepObject`` ``anyOf`` and array parameters (``created``, ``expand``): the judge checks those by
Stripe's documented convention instead (``created[gt]=…``, ``expand[0]=…``), and it reads GitHub's
``readOnly`` integer path parameters (``alert_number``) as plain integers; see the judge's docstring.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepwise.config.tool_sources import parse_tools_config
from stepwise.tools import ToolInvoker, build_tool_registry
from tests.support.openapi_judge import OpenApiJudge
from tests.support.tool_server import Judged, ScriptableToolServer
from tests.unit.tools.config_builders import call

REAL = Path(__file__).resolve().parents[3] / "fixtures" / "openapi" / "real"

# The credential each API's description asks for, as a deployer would configure it.
CREDENTIALS: dict[str, dict[str, Any]] = {
    "stripe-2020-03-02": {"in": "bearer", "value": "sk_test_judged_key_0001"},
    "discord-v10": {"in": "header", "name": "Authorization", "value": "Bot judged-token-0001"},
    "github-api-23.0.2": {"in": "bearer", "value": "ghp_judged_token_0001"},
    "shopify-admin": {"in": "header", "name": "X-Shopify-Access-Token", "value": "shpat_judged_0001"},
}

# (description, tool, arguments): a spread of operations covering every parameter style present.
CALLS: list[tuple[str, str, dict[str, Any]]] = [
    # Stripe: deepObject anyOf (created) and array (expand), form integer and string
    (
        "stripe-2020-03-02",
        "GetCustomers",
        {
            "created": {"gt": 1_600_000_000, "lte": 1_700_000_000},
            "expand": ["data.default_source", "data.tax"],
            "limit": 3,
            "email": "ada@example.com",
        },
    ),
    ("stripe-2020-03-02", "GetCustomers", {"created": 1_600_000_000}),
    # Stripe: a tool offered with a reduced schema (27 KB in full), its optional nested fields checked and sent
    (
        "stripe-2020-03-02",
        "PostIssuingCards",
        {
            "body": {
                "currency": "usd",
                "type": "virtual",
                "cardholder": "ich_1",
                "spending_controls": {"allowed_categories": ["ac_refrigeration_repair", "aquariums"]},
            }
        },
    ),
    # Stripe: deepObject plain object (relationship) beside an array
    ("stripe-2020-03-02", "GetAccountPeople", {"relationship": {"owner": True, "director": False}, "expand": ["x"]}),
    # Stripe: simple path parameter, a value with characters that need encoding
    ("stripe-2020-03-02", "GetCustomersCustomer", {"customer": "cus_a/b c", "expand": ["sources"]}),
    # Stripe: form booleans and numbers
    ("stripe-2020-03-02", "GetBitcoinReceivers", {"active": True, "filled": False, "limit": 10}),
    # Stripe: a form number, and a deepObject array of objects (invoice items) beside an anyOf one
    (
        "stripe-2020-03-02",
        "GetInvoicesUpcoming",
        {
            "customer": "cus_1",
            "subscription_tax_percent": 8.5,
            "invoice_items": [{"amount": 500, "currency": "eur", "description": "setup"}],
            "subscription_cancel_at": 1_700_000_000,
        },
    ),
    # Stripe: a form-encoded body with nested objects and arrays
    (
        "stripe-2020-03-02",
        "PostCustomers",
        {"body": {"email": "ada@example.com", "metadata": {"order": "6735"}, "expand": ["default_source"]}},
    ),
    # GitHub: form scalars, a oneOf (cwes, as an array) and an enum reference
    (
        "github-api-23.0.2",
        "security-advisories_list-global-advisories",
        {"cwes": ["79", "284"], "ecosystem": "pip", "is_withdrawn": False, "per_page": 5, "severity": "high"},
    ),
    # GitHub: an exploded form array beside path parameters
    (
        "github-api-23.0.2",
        "agent-tasks_list-tasks-for-repo",
        {"owner": "octo", "repo": "hello", "creator_id": [1, 2], "per_page": 10},
    ),
    # GitHub: a oneOf path parameter, and a multi-segment path
    ("github-api-23.0.2", "actions_get-workflow", {"owner": "octo", "repo": "hello", "workflow_id": "ci.yml"}),
    ("github-api-23.0.2", "repos_get-content", {"owner": "octo", "repo": "hello", "path": "docs/a b.md", "ref": "v1"}),
    # GitHub: an integer path parameter
    ("github-api-23.0.2", "code-scanning_get-alert", {"owner": "octo", "repo": "hello", "alert_number": 42}),
    # GitHub: a JSON body
    (
        "github-api-23.0.2",
        "issues_create",
        {"owner": "octo", "repo": "hello", "body": {"title": "Bug", "labels": ["bug"], "assignees": ["ada"]}},
    ),
    # Discord: an exploded array of snowflakes, booleans and integers
    (
        "discord-v10",
        "guild_search",
        {"guild_id": "81384788765712384", "author_id": ["1", "2"], "mention_everyone": True, "limit": 5},
    ),
    # Discord: a oneOf query parameter (an array of snowflakes) and a referenced one
    ("discord-v10", "get_entitlements", {"application_id": "1", "sku_ids": ["10", "11"], "user_id": "12"}),
    # Discord: an integer path parameter and a JSON body
    ("discord-v10", "get_answer_voters", {"channel_id": "1", "message_id": "2", "answer_id": 3, "limit": 10}),
    ("discord-v10", "create_webhook", {"channel_id": "1", "body": {"name": "Deploys"}}),
    # Shopify: parameters without a schema, and names in brackets
    ("shopify-admin", "deprecated_202001_get_reports", {"ids": "1,2", "limit": 5}),
    (
        "shopify-admin",
        "deprecated_202001_update_recurring_application_charges_param_rec",
        {"recurring_application_charge_id": "455696195", "recurring_application_charge_capped_amount": 200},
    ),
    (
        "shopify-admin",
        "deprecated_202001_update_customers_param_customer_id_addresses_s",
        {"customer_id": "207119551", "address_ids": 1053317335, "operation": "destroy"},
    ),
]


class JudgedApi:
    """A real description's tools pointed at a stand-in that answers 400 to any request it does not allow."""

    def __init__(self, name: str, directory: Path) -> None:
        document_text = gzip.decompress((REAL / f"{name}.json.gz").read_bytes())
        (directory / f"{name}.json").write_bytes(document_text)
        self.server = ScriptableToolServer(default=Judged(lambda request: self.judge.problems(request))).start()
        self.judge = OpenApiJudge(json.loads(document_text), self.server.url)
        operations = sorted({tool for api, tool, _ in CALLS if api == name})
        source = {
            "source": f"{name}.json",
            "baseUrl": self.server.url,
            "internal": True,
            "apiKey": CREDENTIALS[name],
            "include": {"operations": operations},
        }
        self.registry = build_tool_registry(parse_tools_config({"openapi": [source]}), config_dir=directory)

    def close(self) -> None:
        self.registry.close()
        self.server.stop()


@pytest.fixture(scope="module")
def judged_apis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, JudgedApi]]:
    """Each description loaded once for the module, with its judged stand-in."""
    directory = tmp_path_factory.mktemp("judged-openapi")
    apis = {name: JudgedApi(name, directory) for name in CREDENTIALS}
    yield apis
    for api in apis.values():
        api.close()


@pytest.mark.parametrize(("api", "tool", "arguments"), CALLS, ids=[f"{api}:{tool}" for api, tool, _ in CALLS])
def test_the_request_a_tool_sends_is_allowed_by_the_apis_description(
    judged_apis: dict[str, JudgedApi], api: str, tool: str, arguments: dict[str, Any]
) -> None:
    # Given the tool of a real API, its stand-in judging every request against the description
    judged = judged_apis[api]
    before = len(judged.server.requests)
    # When the model calls it
    observation = ToolInvoker(judged.registry).invoke(call(tool, **arguments))
    # Then exactly one request was sent, and the judge allowed it
    assert len(judged.server.requests) == before + 1
    assert observation.ok, observation.content


def test_stripe_reads_arrays_and_ranges_in_its_bracket_convention(judged_apis: dict[str, JudgedApi]) -> None:
    # Given Stripe's list-customers tool
    judged = judged_apis["stripe-2020-03-02"]
    # When the model expands two fields and filters by a creation range
    arguments = {"expand": ["data.default_source", "data.tax"], "created": {"gt": 5}}
    assert ToolInvoker(judged.registry).invoke(call("GetCustomers", **arguments)).ok
    # Then each expanded field has its index, and the range its operator, in brackets
    sent = judged.server.requests[-1]
    assert sent.raw_query == "expand%5B0%5D=data.default_source&expand%5B1%5D=data.tax&created%5Bgt%5D=5"


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ("expand=data.default_source&expand=data.tax", "expand: sent 2 times as a bare key"),
        ("limit=three", "limit"),
        ("created%5Bgt%5D=soon", "created: {'gt': 'soon'} is not valid"),
        ("colour=blue", "query parameter 'colour' is not declared"),
    ],
)
def test_the_judge_refuses_what_the_description_does_not_allow(
    judged_apis: dict[str, JudgedApi], query: str, problem: str
) -> None:
    # Given Stripe's stand-in
    judged = judged_apis["stripe-2020-03-02"]
    # When a request the description does not allow reaches it
    headers = {"Authorization": "Bearer sk_test_judged_key_0001"}
    response = httpx.get(f"{judged.server.url}/v1/customers?{query}", headers=headers)
    # Then it is refused, naming the problem
    assert response.status_code == 400
    assert any(problem in reason for reason in response.json()["problems"]), response.json()
