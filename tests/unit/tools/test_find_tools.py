"""`find_tools`: a keyword search over the tools of real APIs, deterministic, and its observation; the
full schemas of tools offered reduced, on request.

The tools are Stripe's API of 2020-03-02 and Shopify's Admin API as Stepwise imports them (documents in
tests/fixtures/openapi/real, sources in its README). Recall over the queries people ask is measured in
test_tool_search_recall.py.
"""

from __future__ import annotations

import pytest

from stepwise.models.messages import ToolCall
from stepwise.tools import ToolInvoker, ToolRegistry
from stepwise.tools.find_tools import FindTools, ToolIndex, full_schema_line, words
from stepwise.tools.search_words import implied_verb, stem
from tests.support.tool_search_queries import imported_registry


@pytest.fixture(scope="module")
def stripe_tools(tmp_path_factory: pytest.TempPathFactory) -> ToolRegistry:
    """Stripe's 355 tools; its four Issuing card tools offered reduced."""
    return imported_registry(tmp_path_factory.mktemp("stripe"), "stripe-2020-03-02.json")


@pytest.fixture(scope="module")
def stripe(stripe_tools: ToolRegistry) -> ToolIndex:
    return ToolIndex(stripe_tools.specs(full=True))


@pytest.fixture(scope="module")
def shopify(tmp_path_factory: pytest.TempPathFactory) -> ToolIndex:
    return ToolIndex(imported_registry(tmp_path_factory.mktemp("shopify"), "shopify-admin.json").specs())


def finder(registry: ToolRegistry, index: ToolIndex, *, searching: bool = True) -> ToolInvoker:
    """An invoker of find_tools over ``index``, knowing the full schemas of ``registry``'s reduced tools."""
    return ToolInvoker(ToolRegistry([FindTools(index, 5, searching=searching, full_specs=registry.full_specs())]))


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


def test_among_tools_that_match_alike_the_one_that_does_the_operation_comes_first(stripe: ToolIndex) -> None:
    # Given Stripe's tools, where updating a PaymentIntent and confirming one share every word but the verb
    # When the model asks to confirm a payment
    # Then the confirm comes first
    assert names(stripe, "confirm a payment")[0] == "PostPaymentIntentsIntentConfirm"


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("refund an order", "create_orders_param_order_id_refunds"),
        ("recent activity in the store", "get_events"),
    ],
)
def test_the_operation_asked_for_comes_before_its_neighbours(shopify: ToolIndex, query: str, first: str) -> None:
    # Given Shopify's tools, where each thing has a list, a get of one, a count and a create
    # When the model asks for a create it implies and for many things
    # Then the create, and the list, come before the get of one
    assert names(shopify, query)[0] == first


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


def test_a_versions_copy_of_an_operation_comes_after_the_other_operations(shopify: ToolIndex) -> None:
    # Given Shopify's tools, each operation published once per API version with the same description
    # When the model asks for refunding an order (six versions of listing refunds match it best)
    found = shopify.search("refund an order", 5)
    # Then the five found are five operations, the one that creates a refund among them
    assert len({tuple(words(spec.description.removeprefix("(deprecated) "))) for spec in found}) == 5
    assert "create_orders_param_order_id_refunds" in [spec.name for spec in found]


def test_a_noun_used_as_the_verb_of_a_request_asks_to_create_one() -> None:
    # Given requests that start with a noun used as a verb, with a verb of its own, and a question of which
    # When the operation they imply is asked for
    # Then the first asks to create, the second says its own verb, the third asks for a list
    assert implied_verb("comment on an issue") == stem("create")
    assert implied_verb("delete a comment") is None
    assert implied_verb("which themes does the store have") == stem("list")


def test_how_many_is_a_count_irregular_past_forms_are_their_verb_and_dm_is_spelt_out() -> None:
    # Given a question of how many, an irregular past form and an abbreviation
    # When they are reduced to search words
    # Then how many is a count, paid is pay, and DM is spelt out
    assert words("how many products") == ["count", "product"]
    assert words("paid") == words("pay")
    assert words("DM") == words("direct message")


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
        "- PostPaymentIntentsIntent: Updates properties on a PaymentIntent object without confirming.",
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


def test_the_full_schema_of_a_reduced_tool_is_offered_on_request(stripe_tools: ToolRegistry, stripe: ToolIndex) -> None:
    # Given find_tools over Stripe's tools, four of them offered reduced
    spec = FindTools(stripe, 5, full_specs=stripe_tools.full_specs()).spec
    assert "PostIssuingCards" in spec.description
    assert set(spec.parameters["properties"]) == {"query", "tool"}
    # When the model asks for the full schema of one of them
    observation = finder(stripe_tools, stripe).invoke(
        ToolCall(id="c1", name="find_tools", arguments={"tool": "PostIssuingCards"})
    )
    # Then the observation says it is offered from the next step on (steps.tool_offer reads this line back)
    assert (observation.ok, observation.content) == (True, full_schema_line("PostIssuingCards"))


def test_asking_the_full_schema_of_a_whole_tool_offers_it_as_found(
    stripe_tools: ToolRegistry, stripe: ToolIndex
) -> None:
    # Given find_tools over Stripe's tools
    # When the model asks for the full schema of a tool offered whole, and of a tool that does not exist
    whole = finder(stripe_tools, stripe).invoke(
        ToolCall(id="c1", name="find_tools", arguments={"tool": "PostCustomers"})
    )
    unknown = finder(stripe_tools, stripe).invoke(ToolCall(id="c2", name="find_tools", arguments={"tool": "Nope"}))
    # Then the whole one is listed as found (its schema is the one offered), the unknown one named as an error
    assert whole.content.splitlines() == [
        "PostCustomers is offered with its whole schema already; you can call it from now on:",
        "- PostCustomers: Creates a new customer object.",
    ]
    assert (unknown.ok, "no tool is named 'Nope'" in unknown.content) == (False, True)
    assert "PostIssuingCards" in unknown.content


def test_a_profile_whose_tools_all_fit_gets_a_find_tools_for_full_schemas_only(
    stripe_tools: ToolRegistry, stripe: ToolIndex
) -> None:
    # Given find_tools of a profile that does not search but has reduced tools
    spec = FindTools(stripe, 5, searching=False, full_specs=stripe_tools.full_specs()).spec
    # When the model searches anyway
    searched = finder(stripe_tools, stripe, searching=False).invoke(
        ToolCall(id="c1", name="find_tools", arguments={"query": "customer"})
    )
    # Then the spec offers only the full schemas, and the search is answered with what to send
    assert spec.parameters["required"] == ["tool"]
    assert "Search" not in spec.description
    assert (searched.ok, "the required argument 'tool' of this tool is missing" in searched.content) == (False, True)
