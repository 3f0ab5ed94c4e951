"""parse_intent: reading the classification out of what models really write."""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from stepwise.config.intent import Category
from stepwise.intent import parse_intent

ROUTE: dict[str, Any] = {"use_for": "intent-route", "options": ["Finance", "E-commerce", "Law", "Others"]}
CACHE: dict[str, Any] = {"use_for": "disable-cache", "options": ["Time-sensitive", "Non-time-sensitive"]}


def test_clean_json_lines_give_one_option_per_category(route_and_cache: list[Category]) -> None:
    # Given the answer format the prompt asks for, one JSON object per category
    answer = (
        '{"use_for": "intent-route", "result": "Finance"}\n{"use_for": "disable-cache", "result": "Non-time-sensitive"}'
    )
    # When it is parsed
    values = parse_intent(answer, route_and_cache)
    # Then both categories are read
    assert values == {"intent-route": "Finance", "disable-cache": "Non-time-sensitive"}


def test_json_inside_a_code_fence_with_prose_around_is_read() -> None:
    # Given a chatty answer with the JSON in a ```json fence
    answer = 'Sure, here it is:\n```json\n{"use_for": "intent-route", "result": "Law"}\n```\nHope it helps.'
    # When it is parsed
    values = parse_intent(answer, [ROUTE])
    # Then the fenced object is used
    assert values == {"intent-route": "Law"}


def test_a_json_array_of_objects_is_read() -> None:
    # Given both answers in a single JSON array, one with camelCase keys
    answer = (
        '[{"use_for": "intent-route", "result": "E-commerce"}, {"useFor": "disable-cache", "result": "Time-sensitive"}]'
    )
    # When it is parsed
    values = parse_intent(answer, [ROUTE, CACHE])
    # Then each element is read
    assert values == {"intent-route": "E-commerce", "disable-cache": "Time-sensitive"}


def test_single_quoted_objects_are_read() -> None:
    # Given Python-style single quotes instead of JSON double quotes
    answer = "{'use_for': 'intent-route', 'result': 'Law'}"
    # When it is parsed
    values = parse_intent(answer, [ROUTE])
    # Then the answer is still read
    assert values == {"intent-route": "Law"}


def test_inline_backticks_and_a_use_for_keyed_object_are_read() -> None:
    # Given an object keyed by use_for, wrapped in inline backticks, with a trailing comma
    answer = '`{"intent-route": "Others", "disable-cache": "Time-sensitive",}`'
    # When it is parsed
    values = parse_intent(answer, [ROUTE, CACHE])
    # Then each key is taken as a category
    assert values == {"intent-route": "Others", "disable-cache": "Time-sensitive"}


def test_prose_without_json_is_searched_for_options() -> None:
    # Given an answer in plain prose
    answer = "This question is about Finance, and the answer is Non-time-sensitive."
    # When it is parsed
    values = parse_intent(answer, [ROUTE, CACHE])
    # Then the options named as whole words are found, the longer option winning over the one inside it
    assert values == {"intent-route": "Finance", "disable-cache": "Non-time-sensitive"}


def test_prose_naming_two_options_of_a_category_gives_no_answer_for_it() -> None:
    # Given prose that hesitates between two options
    answer = "It could be Finance or Law."
    # When it is parsed
    values = parse_intent(answer, [ROUTE])
    # Then the category is left unanswered rather than guessed
    assert values == {}


def test_a_bare_option_word_is_read() -> None:
    # Given the bare option word the Higress prompt asks for
    answer = "E-commerce"
    # When it is parsed
    values = parse_intent(answer, [ROUTE])
    # Then it is the answer
    assert values == {"intent-route": "E-commerce"}


def test_an_invented_option_is_rejected() -> None:
    # Given a well-formed answer whose result is not one of the options
    answer = '{"use_for": "intent-route", "result": "Travel"}'
    # When it is parsed
    values = parse_intent(answer, [ROUTE])
    # Then nothing is recognised
    assert values == {}


def test_an_option_in_other_case_maps_to_the_configured_spelling() -> None:
    # Given keys and values in other case
    answer = '{"USE_FOR": "Intent-Route", "Result": "finance"}'
    # When it is parsed
    values = parse_intent(answer, [ROUTE])
    # Then the option comes back as configured
    assert values == {"intent-route": "Finance"}


def test_unknown_use_for_values_are_ignored() -> None:
    # Given one answer for a configured category and one for a category nobody asked about
    answer = '{"use_for": "mood", "result": "Happy"}\n{"use_for": "intent-route", "result": "Law"}'
    # When it is parsed
    values = parse_intent(answer, [ROUTE])
    # Then only the configured category is reported
    assert values == {"intent-route": "Law"}


def test_reasoning_in_think_tags_is_not_searched() -> None:
    # Given a reasoning model that weighs two options before answering
    answer = "<think>Finance? Maybe Law. Or Others.</think>\nLaw"
    # When it is parsed
    values = parse_intent(answer, [ROUTE])
    # Then only the final answer counts
    assert values == {"intent-route": "Law"}


def test_an_option_next_to_chinese_text_is_found() -> None:
    # Given options in Chinese, the language of the Higress examples, inside an unspaced sentence
    categories = [{"use_for": "intent_category", "options": ["金融", "电商", "法律"]}]
    # When a sentence naming one of them is parsed
    values = parse_intent("这个问题属于金融类别", categories)
    # Then the option is found although no spaces separate the words
    assert values == {"intent_category": "金融"}


def test_nothing_recognised_gives_an_empty_result() -> None:
    # Given an answer that names no option, like the Higress plugin's NotFound
    answer = "NotFound"
    # When it is parsed
    values = parse_intent(answer, [ROUTE, CACHE])
    # Then the result is empty
    assert values == {}


json_answers = st.lists(
    st.fixed_dictionaries(
        {"use_for": st.sampled_from(["intent-route", "disable-cache", "other", ""]), "result": st.text(max_size=20)}
    ),
    max_size=3,
).map(lambda objects: "\n".join(json.dumps(item) for item in objects))
noise = st.text(alphabet=st.sampled_from(list("{}[]'\"`:,\n ab-_Fin<>/think```json")), max_size=80)


# 100 examples in the suite; `make fuzz` runs the property with its own count (500)
@settings(max_examples=int(os.environ.get("STEPWISE_FUZZ_EXAMPLES", "100")), deadline=None)
@given(text=st.one_of(st.text(max_size=300), json_answers, noise, st.tuples(noise, json_answers).map("".join)))
def test_parse_intent_never_raises_and_only_returns_configured_options(text: str) -> None:
    # Given any text a model might send back
    # When it is parsed
    values = parse_intent(text, [ROUTE, CACHE])
    # Then it returns, and every value is an option of its category
    allowed = {ROUTE["use_for"]: ROUTE["options"], CACHE["use_for"]: CACHE["options"]}
    assert all(option in allowed[use_for] for use_for, option in values.items())
