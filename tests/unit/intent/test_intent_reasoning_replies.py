"""Intent replies of reasoning models, and Chinese options as models write them."""

from __future__ import annotations

import json

from stepwise.config.intent import Category
from stepwise.intent.parsing import parse_intent

ROUTE = [Category.model_validate({"use_for": "intent-route", "options": ["Finance", "E-commerce", "Law", "Others"]})]
SCENE = [Category.model_validate({"use_for": "场景", "options": ["售前咨询", "售后服务", "投诉建议"]})]


def test_options_weighed_in_the_reasoning_are_never_the_answer() -> None:
    # Given a reply whose template opened the think block, naming the options it rejected before the answer
    reply = "Law? E-commerce? The user asks about stocks.</think>\n\nFinance"
    # When it is read / Then only the answer counts
    assert parse_intent(reply, ROUTE) == {"intent-route": "Finance"}


def test_a_provider_envelopes_reasoning_field_is_never_the_answer() -> None:
    # Given a whole DeepSeek response whose reasoning_content names another option
    body = {"choices": [{"message": {"content": "Finance", "reasoning_content": "Not Law, not E-commerce."}}]}
    # When it is read / Then the content is the answer
    assert parse_intent(json.dumps(body), ROUTE) == {"intent-route": "Finance"}


def test_an_answer_line_wins_over_the_explanation_after_it() -> None:
    # Given an answer, then a reason naming (and ruling out) other options
    reply = "分类结果\uff1a售后服务\n原因\uff1a用户要退货\uff0c不是售前咨询或投诉建议。"
    # When it is read / Then the answer line is taken
    assert parse_intent(reply, SCENE) == {"场景": "售后服务"}


def test_an_option_named_only_to_be_ruled_out_does_not_hide_the_answer() -> None:
    # Given a sentence that gives the option and rules out another
    assert parse_intent("这是一个售后服务类问题\uff0c不是投诉建议。", SCENE) == {"场景": "售后服务"}


def test_a_shortened_chinese_option_names_the_one_option_holding_it() -> None:
    # Given a JSON answer with the option shortened ("售后" for "售后服务") / When it is read
    reply = '{"use_for": "场景", "result": "售后"}'
    # Then it is that option
    assert parse_intent(reply, SCENE) == {"场景": "售后服务"}


def test_a_shortening_shared_by_two_options_names_none() -> None:
    # Given options that share a part, and an answer that is only that part
    repairs = [Category.model_validate({"use_for": "售后", "options": ["售后退货", "售后维修"]})]
    # When it is read / Then nothing is guessed
    assert parse_intent('{"use_for": "售后", "result": "售后"}', repairs) == {}
