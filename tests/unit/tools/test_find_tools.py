"""`find_tools`: a keyword search over the tools of real APIs, deterministic, and its observation.

The tools are Stripe's API of 2020-03-02 and Shopify's Admin API as Stepwise imports them (documents in
tests/fixtures/openapi/real, sources in its README).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from stepwise.config.tool_sources import parse_tools_config
from stepwise.models.messages import ToolCall
from stepwise.tools import ToolInvoker, ToolRegistry, build_tool_registry
from stepwise.tools.find_tools import FindTools, ToolIndex, words

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "openapi" / "real"


def imported(directory: Path, packed: str) -> ToolRegistry:
    """The tools of one fixture document (none is called: the base URL is never reached)."""
    name = packed.removesuffix(".gz")
    (directory / name).write_bytes(gzip.decompress((REAL / packed).read_bytes()))
    entry = {"source": name, "baseUrl": "http://127.0.0.1:9", "internal": True}
    return build_tool_registry(parse_tools_config({"openapi": [entry]}), config_dir=directory)


@pytest.fixture(scope="module")
def stripe(tmp_path_factory: pytest.TempPathFactory) -> ToolIndex:
    return ToolIndex(imported(tmp_path_factory.mktemp("stripe"), "stripe-2020-03-02.json.gz").specs())


@pytest.fixture(scope="module")
def shopify(tmp_path_factory: pytest.TempPathFactory) -> ToolIndex:
    return ToolIndex(imported(tmp_path_factory.mktemp("shopify"), "shopify-admin.json.gz").specs())


def names(index: ToolIndex, query: str, limit: int = 5) -> list[str]:
    return [spec.name for spec in index.search(query, limit)]


def test_words_split_names_at_case_changes_and_underscores_and_drop_markup() -> None:
    # Given a Stripe name, a Shopify name and a Stripe description with HTML
    # When they are split into words
    # Then names become their words, inflections gone, and tags and URLs are no words
    assert words("PostCustomersCustomerTaxIds") == ["post", "customer", "customer", "tax", "id"]
    assert words("get_inventory_levels") == ["get", "inventory", "level"]
    assert words("<p>Retrieves the <code>Dispute</code> (https://stripe.com/docs)</p>") == ["retriev", "disput"]


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("create a customer", "PostCustomers"),
        ("create payment intent", "PostPaymentIntents"),
        ("list invoices", "GetInvoices"),
        ("delete a product", "DeleteProductsId"),
    ],
)
def test_the_tool_a_task_needs_comes_first_among_stripes_351(stripe: ToolIndex, query: str, first: str) -> None:
    # Given Stripe's tools
    # When the model searches for a task
    # Then the tool for it is the first found
    assert names(stripe, query)[0] == first


def test_refunds_of_a_charge_are_found_together(stripe: ToolIndex) -> None:
    # Given Stripe's tools
    # When the model searches for refunding a charge
    found = names(stripe, "refund a charge")
    # Then the charge-refund tools are all found
    assert {"PostChargesChargeRefunds", "PostChargesChargeRefund", "GetChargesChargeRefunds"} <= set(found)


def test_current_operations_come_before_their_deprecated_versions(shopify: ToolIndex) -> None:
    # Given Shopify's 1,473 tools, most of them deprecated versions of current ones
    # When the model searches for a customer's orders and for creating a customer
    # Then the current operations come first
    assert names(shopify, "orders of a customer")[0] == "get_customers_param_customer_id_orders"
    assert names(shopify, "create customer")[0] == "create_customers"


def test_the_same_search_finds_the_same_tools_in_the_same_order(shopify: ToolIndex, stripe: ToolIndex) -> None:
    # Given two indexes of the same tools
    again = ToolIndex(stripe.specs)
    # When the same queries are searched in each
    # Then the results are identical
    for query in ("create customer", "refund", "subscription schedule cancel", "tax id"):
        assert names(stripe, query, 10) == names(again, query, 10)


def test_a_search_returns_at_most_the_limit_and_nothing_for_unknown_words(stripe: ToolIndex) -> None:
    # Given Stripe's tools
    # When searching with a limit, and with words no tool has
    # Then at most the limit is returned, and nothing for the unknown words
    assert len(names(stripe, "customer", 3)) == 3
    assert names(stripe, "zebra xylophone") == []


def test_the_observation_lists_each_found_tool_with_its_purpose(stripe: ToolIndex) -> None:
    # Given find_tools over Stripe's tools, 2 results per search
    registry = ToolRegistry([FindTools(stripe, 2)])
    # When the model calls it
    observation = ToolInvoker(registry).invoke(
        ToolCall(id="c1", name="find_tools", arguments={"query": "create payment intent"})
    )
    # Then it lists the tools by name with the first sentence of their description, markup removed
    assert observation.ok
    assert observation.content.splitlines() == [
        "Found 2 tools; you can call them from now on:",
        "- PostPaymentIntents: Creates a PaymentIntent object.",
        "- GetPaymentIntentsIntent: Retrieves the details of a PaymentIntent that has previously been created.",
    ]


def test_a_search_without_words_is_answered_with_what_to_send(stripe: ToolIndex) -> None:
    # Given find_tools over Stripe's tools
    registry = ToolRegistry([FindTools(stripe, 5)])
    # When the model calls it with a blank query, and with none
    blank = ToolInvoker(registry).invoke(ToolCall(id="c1", name="find_tools", arguments={"query": "  "}))
    missing = ToolInvoker(registry).invoke(ToolCall(id="c2", name="find_tools", arguments={}))
    # Then each observation says what is missing, and the run goes on
    assert (blank.ok, blank.content) == (False, "Error: give a non-empty query: keywords of what you want to do")
    assert (missing.ok, "query" in missing.content) == (False, True)
