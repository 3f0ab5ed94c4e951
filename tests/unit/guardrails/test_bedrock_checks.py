"""Bedrock guardrails through ApplyGuardrail, on a bedrock-runtime client stubbed at the wire (botocore's
Stubber validates every request and response against the service's real model)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import botocore.session
import pytest
from botocore.stub import Stubber

from stepwise.config.guardrails import Guardrails
from stepwise.guardrails import check_text

GUARDRAIL = {"bedrock": {"id": "gr1a2b3c", "version": "1"}}


@pytest.fixture
def bedrock() -> Iterator[tuple[Any, Stubber]]:
    client = botocore.session.get_session().create_client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s"
    )
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def intervened(text: str, assessment: dict[str, Any]) -> dict[str, Any]:
    return {
        "usage": {
            "topicPolicyUnits": 1,
            "contentPolicyUnits": 1,
            "wordPolicyUnits": 1,
            "sensitiveInformationPolicyUnits": 1,
            "sensitiveInformationPolicyFreeUnits": 0,
            "contextualGroundingPolicyUnits": 0,
        },
        "action": "GUARDRAIL_INTERVENED",
        "outputs": [{"text": text}],
        "assessments": [assessment],
    }


def request(source: str, text: str) -> dict[str, Any]:
    return {
        "guardrailIdentifier": "gr1a2b3c",
        "guardrailVersion": "1",
        "source": source,
        "content": [{"text": {"text": text}}],
    }


def test_a_blocking_bedrock_guardrail_on_the_output_blocks_with_its_own_message(
    bedrock: tuple[Any, Stubber],
) -> None:
    # Given an output rule naming a guardrail that blocks a denied topic
    client, stubber = bedrock
    topic = {"topicPolicy": {"topics": [{"name": "investment", "type": "DENY", "action": "BLOCKED"}]}}
    stubber.add_response(
        "apply_guardrail", intervened("We cannot advise on that.", topic), request("OUTPUT", "Buy ACME stock.")
    )
    guardrails = Guardrails.model_validate({"output": [GUARDRAIL]})
    # When the answer is checked
    checked = check_text("Buy ACME stock.", guardrails, "output", bedrock=lambda region: client)
    # Then it is blocked, Bedrock's message stands in, and the trace names the policy, not the text
    assert checked.blocked
    assert checked.replacement == "We cannot advise on that."
    assert [(item.rule, item.action, item.detail) for item in checked.interventions] == [
        ("bedrock:gr1a2b3c:1", "blocked", "topic:investment=blocked")
    ]


def test_a_masking_bedrock_guardrail_gives_the_masked_text_and_keeps_no_matched_value(
    bedrock: tuple[Any, Stubber],
) -> None:
    # Given a guardrail that anonymizes an email in a tool result (source INPUT)
    client, stubber = bedrock
    pii = {
        "sensitiveInformationPolicy": {
            "piiEntities": [{"match": "jo@example.com", "type": "EMAIL", "action": "ANONYMIZED"}],
            "regexes": [],
        }
    }
    stubber.add_response(
        "apply_guardrail", intervened("write to {EMAIL}", pii), request("INPUT", "write to jo@example.com")
    )
    guardrails = Guardrails.model_validate({"tool_results": [GUARDRAIL]})
    # When the tool result is checked
    checked = check_text("write to jo@example.com", guardrails, "tool_results", bedrock=lambda region: client)
    # Then the masked text goes on and the intervention says which policy acted
    assert not checked.blocked
    assert checked.text == "write to {EMAIL}"
    assert [(item.action, item.detail) for item in checked.interventions] == [("masked", "pii:EMAIL=anonymized")]
    assert "jo@example.com" not in repr(checked.interventions)


def test_a_guardrail_that_cannot_be_asked_blocks_in_enforce_mode(bedrock: tuple[Any, Stubber]) -> None:
    # Given a guardrail the caller may not apply
    client, stubber = bedrock
    stubber.add_client_error("apply_guardrail", service_error_code="AccessDeniedException", http_status_code=403)
    guardrails = Guardrails.model_validate({"input": [GUARDRAIL]})
    # When the input is checked
    checked = check_text("hello", guardrails, "input", bedrock=lambda region: client)
    # Then it is blocked (fail closed), saying why
    assert checked.blocked
    assert checked.interventions[0].detail == "ApplyGuardrail failed: AccessDeniedException"


def test_log_only_records_every_rule_and_changes_nothing(bedrock: tuple[Any, Stubber]) -> None:
    # Given a redacting pii rule, then a deny rule, in log_only mode
    client, _ = bedrock
    guardrails = Guardrails.model_validate(
        {"mode": "log_only", "input": [{"pii": ["card"]}, {"deny": ["(?i)password"]}]}
    )
    # When a text both would act on is checked
    checked = check_text("my password is 4111111111111111", guardrails, "input", bedrock=lambda region: client)
    # Then both rules are recorded, and the text goes on as it was, not blocked
    assert [(item.rule, item.action) for item in checked.interventions] == [
        ("pii:card", "redacted"),
        ("deny", "blocked"),
    ]
    assert checked.text == "my password is 4111111111111111"
    assert not checked.blocked


@pytest.mark.parametrize("text", ["", " \n\t"], ids=["empty", "blank"])
def test_a_text_with_nothing_to_check_is_not_sent_and_the_rule_is_named_as_skipped(
    bedrock: tuple[Any, Stubber], text: str
) -> None:
    # Given an output rule naming a guardrail (no answer stubbed: a request would fail, and so block)
    client, _ = bedrock
    guardrails = Guardrails.model_validate({"output": [GUARDRAIL]})
    # When an empty or blank answer is checked
    checked = check_text(text, guardrails, "output", bedrock=lambda region: client)
    # Then nothing is blocked or changed, and the rule is recorded as not asked
    assert (checked.blocked, checked.text, checked.interventions, checked.skipped) == (
        False,
        text,
        [],
        ["bedrock:gr1a2b3c:1"],
    )
