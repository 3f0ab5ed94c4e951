"""Which operation a find_tools query asks for and a tool does (`stepwise.tools.search_operations`), and the
words of API vocabulary that phrases and inflections stand for (`stepwise.tools.search_words`)."""

from __future__ import annotations

import pytest

from stepwise.tools.search_operations import LIST, asks_for_many, query_verbs, tool_verbs
from stepwise.tools.search_words import SYNONYMS, stem, words


def verbs_of(query: str) -> frozenset[str]:
    return query_verbs(query, words(query))


def test_a_tool_does_what_the_first_word_of_its_summary_and_of_its_name_say() -> None:
    # Given a tool named by its method and summarised by a verb, and one whose summary says it gives a list
    # When their operations are read
    posted = tool_verbs(words("Confirm a PaymentIntent"), words("PostPaymentIntentsIntentConfirm"))
    listed = tool_verbs(words("Retrieves a list of themes"), words("get_themes"))
    # Then the first is a confirm and a create (a POST), the second a get and a list
    assert {stem("confirm"), stem("create")} <= posted
    assert {stem("get"), LIST} <= listed


def test_a_query_asks_for_its_first_verb_and_the_one_it_implies() -> None:
    # Given a request naming its verb, one implying a create, and a passive "get"
    # When their operations are read
    # Then the first is its verb with its synonyms, the second a create, the third no retrieval
    assert {stem("edit"), stem("update")} <= verbs_of("edit a message")
    assert stem("create") in verbs_of("refund an order")
    assert stem("get") not in verbs_of("get notified when an order is created")


@pytest.mark.parametrize(
    ("query", "many"),
    [
        ("show the branches of a repo", True),
        ("recent commits of a repository", True),
        ("which themes does the store have", True),
        ("delete old messages", False),
        ("get a customer", False),
        ("what is my balance", False),
    ],
)
def test_a_query_asks_for_many_things_when_it_names_them_in_the_plural_and_changes_none(query: str, many: bool) -> None:
    # Given a request
    # When it is read
    # Then it asks for many things only when it lists or names a plural it does not change
    assert asks_for_many(query, verbs_of(query)) is many


def test_phrases_and_inflections_become_the_words_apis_use() -> None:
    # Given phrases people say for what APIs name in one word, and an -ied past form
    # When they are reduced to search words
    # Then they meet the APIs' words
    assert words("turn off a gift card") == [stem("disable"), "gift", "card"]
    assert words("give a customer their money back") == [stem("give"), "customer", stem("refund")]
    assert words("who is the bot logged in as") == ["who", "bot", stem("authenticated")]
    assert words("notified") == words("notifies") == words("notify")
    assert stem("delete") in SYNONYMS[stem("kick")]
    assert stem("webhook") in SYNONYMS[stem("notify")]
    assert stem("notify") not in SYNONYMS.get(stem("webhook"), ())
