"""`stepwise config check --aws`: what Bedrock answers about each configured model, read into one line per
problem with its fix. Bedrock is botocore's Stubber on a real `bedrock` client, so every request and every
answer is checked against the service model botocore ships.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from stepwise.config.bedrock_check import check_bedrock_models
from stepwise.config.model import StepwiseConfig

TODAY = date(2026, 11, 25)
NOVA = "amazon.nova-2-lite-v1:0"
PROFILE = f"us.{NOVA}"
HAIKU = "anthropic.claude-haiku-4-5-20251001-v1:0"
IN_US_EAST_1 = {"AWS_REGION": "us-east-1"}


@pytest.fixture
def bedrock() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.session.Session().client("bedrock", region_name="us-east-1")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def config_for(model_id: str) -> StepwiseConfig:
    return StepwiseConfig.model_validate(
        {"models": {"m": {"provider": "bedrock", "model_id": model_id}}, "profiles": {"default": {"model": "m"}}}
    )


def profile_answer(model_id: str, regions: list[str], status: str = "ACTIVE") -> dict[str, Any]:
    foundation = model_id.split(".", 1)[1]
    return {
        "inferenceProfileName": f"US {foundation}",
        "inferenceProfileArn": f"arn:aws:bedrock:us-east-1:123456789012:inference-profile/{model_id}",
        "inferenceProfileId": model_id,
        "models": [{"modelArn": f"arn:aws:bedrock:{region}::foundation-model/{foundation}"} for region in regions],
        "status": status,
        "type": "SYSTEM_DEFINED",
    }


def model_answer(model_id: str, *, status: str = "ACTIVE", inference: list[str] | None = None) -> dict[str, Any]:
    lifecycle: dict[str, Any] = {"status": status}
    if status == "LEGACY":
        lifecycle["endOfLifeTime"] = datetime(2027, 1, 15, tzinfo=UTC)
    return {
        "modelDetails": {
            "modelArn": f"arn:aws:bedrock:us-east-1::foundation-model/{model_id}",
            "modelId": model_id,
            "modelName": model_id,
            "providerName": model_id.split(".")[0],
            "inferenceTypesSupported": inference or ["INFERENCE_PROFILE"],
            "modelLifecycle": lifecycle,
        }
    }


def availability(model_id: str, **overrides: Any) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "modelId": model_id,
        "agreementAvailability": {"status": "AVAILABLE"},
        "authorizationStatus": "AUTHORIZED",
        "entitlementAvailability": "AVAILABLE",
        "regionAvailability": "AVAILABLE",
    }
    return answer | overrides


def expect_profile_and_model(stubber: Stubber, model: dict[str, Any], available: dict[str, Any]) -> None:
    stubber.add_response(
        "get_inference_profile", profile_answer(PROFILE, ["us-east-1"]), {"inferenceProfileIdentifier": PROFILE}
    )
    stubber.add_response("get_foundation_model", model, {"modelIdentifier": NOVA})
    stubber.add_response("get_foundation_model_availability", available, {"modelId": NOVA})


def lines(model_id: str, client: Any) -> list[str]:
    problems = check_bedrock_models(config_for(model_id), lambda _: client, today=TODAY, environ=IN_US_EAST_1)
    return [problem.line() for problem in problems]


def test_an_active_profile_of_an_available_model_has_no_problem(bedrock: tuple[Any, Stubber]) -> None:
    # Given a US profile, ACTIVE, routing to an ACTIVE model the account may invoke
    client, stubber = bedrock
    stubber.add_response(
        "get_inference_profile",
        profile_answer(PROFILE, ["us-east-1", "us-east-2", "us-west-2"]),
        {"inferenceProfileIdentifier": PROFILE},
    )
    stubber.add_response("get_foundation_model", model_answer(NOVA), {"modelIdentifier": NOVA})
    stubber.add_response("get_foundation_model_availability", availability(NOVA), {"modelId": NOVA})
    # When the configuration is checked / Then nothing is wrong
    assert lines(PROFILE, client) == []


def test_a_model_past_its_end_of_life_is_named_without_asking_bedrock(bedrock: tuple[Any, Stubber]) -> None:
    # Given the model id the template once defaulted to, past its end of life
    client, _ = bedrock
    # When the configuration is checked
    found = lines("anthropic.claude-3-5-haiku-20241022-v1:0", client)
    # Then one line says so and how to fix it
    assert found == [
        "model m (anthropic.claude-3-5-haiku-20241022-v1:0): reached its end of life on Bedrock on 2026-06-19; "
        "fix: configure a current model (stepwise/config/model_catalog.yaml lists them)"
    ]


def test_a_bare_id_of_a_model_served_only_through_a_profile_is_told_the_profile_id(
    bedrock: tuple[Any, Stubber],
) -> None:
    # Given a model id without a geography, for a model Bedrock serves only through profiles
    client, stubber = bedrock
    stubber.add_response("get_foundation_model", model_answer(NOVA), {"modelIdentifier": NOVA})
    stubber.add_response("get_foundation_model_availability", availability(NOVA), {"modelId": NOVA})
    # When the configuration is checked / Then the fix names the profile id to use
    (line,) = lines(NOVA, client)
    assert "served only through an inference profile" in line and f"us.{NOVA}" in line


def test_a_legacy_model_is_named_with_its_end_of_life(bedrock: tuple[Any, Stubber]) -> None:
    # Given a profile routing to a LEGACY model
    client, stubber = bedrock
    expect_profile_and_model(stubber, model_answer(NOVA, status="LEGACY"), availability(NOVA))
    # When the configuration is checked / Then the line says when calls start failing
    (line,) = lines(PROFILE, client)
    assert "LEGACY, calls fail from 2027-01-15" in line


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"authorizationStatus": "NOT_AUTHORIZED"}, "use-case form"),
        ({"entitlementAvailability": "NOT_AVAILABLE"}, "aws-marketplace:Subscribe"),
        ({"agreementAvailability": {"status": "PENDING"}}, "still pending"),
    ],
    ids=["use-case-form", "marketplace", "pending"],
)
def test_an_account_that_may_not_invoke_the_model_yet_is_told_what_to_do(
    bedrock: tuple[Any, Stubber], overrides: dict[str, Any], expected: str
) -> None:
    # Given an ACTIVE model the account has not been set up for
    client, stubber = bedrock
    expect_profile_and_model(stubber, model_answer(NOVA), availability(NOVA, **overrides))
    # When the configuration is checked / Then one line names the missing step
    (line,) = lines(PROFILE, client)
    assert expected in line


def test_a_profile_bedrock_does_not_know_is_named(bedrock: tuple[Any, Stubber]) -> None:
    # Given a profile id with a typo
    client, stubber = bedrock
    stubber.add_client_error(
        "get_inference_profile",
        service_error_code="ResourceNotFoundException",
        service_message="The specified inference profile could not be found.",
        http_status_code=404,
    )
    # When the configuration is checked / Then the line says so and how to list the real ones
    (line,) = lines(PROFILE, client)
    assert "no such inference profile" in line and "list-inference-profiles" in line


def test_access_denied_names_the_resource_the_caller_lacks(bedrock: tuple[Any, Stubber]) -> None:
    # Given a caller without permission on the profile
    client, stubber = bedrock
    arn = f"arn:aws:bedrock:us-east-1:123456789012:inference-profile/{PROFILE}"
    stubber.add_client_error(
        "get_inference_profile",
        service_error_code="AccessDeniedException",
        service_message=f"User: arn:aws:iam::123456789012:user/dev is not authorized to perform: "
        f"bedrock:GetInferenceProfile on resource: {arn} because no identity-based policy allows it",
        http_status_code=403,
    )
    # When the configuration is checked / Then the fix names that resource
    (line,) = lines(PROFILE, client)
    assert "access denied" in line and f"allow the caller bedrock:GetInferenceProfile on {arn}" in line


def test_a_missing_marketplace_agreement_names_the_one_admin_call_with_its_offer(bedrock: tuple[Any, Stubber]) -> None:
    # Given a third-party model the account has no Marketplace agreement for, whose public offer Bedrock lists
    client, stubber = bedrock
    profile = f"us.{HAIKU}"
    stubber.add_response(
        "get_inference_profile", profile_answer(profile, ["us-east-1"]), {"inferenceProfileIdentifier": profile}
    )
    stubber.add_response("get_foundation_model", model_answer(HAIKU), {"modelIdentifier": HAIKU})
    stubber.add_response(
        "get_foundation_model_availability",
        availability(HAIKU, agreementAvailability={"status": "NOT_AVAILABLE"}),
        {"modelId": HAIKU},
    )
    terms: dict[str, Any] = {"usageBasedPricingTerm": {"rateCard": []}, "legalTerm": {}, "supportTerm": {}}
    offer = {"offerId": "offer-1", "offerToken": "token-abc", "termDetails": terms}
    stubber.add_response(
        "list_foundation_model_agreement_offers",
        {"modelId": HAIKU, "offers": [offer]},
        {"modelId": HAIKU, "offerType": "PUBLIC"},
    )
    # When the configuration is checked
    (line,) = lines(profile, client)
    # Then the fix is the one call that starts the agreement, with the offer's token
    assert (
        f"aws bedrock create-foundation-model-agreement --region us-east-1 --model-id {HAIKU} --offer-token token-abc"
        in line
    )


def test_a_geographic_profile_asked_from_outside_its_geography_names_the_region() -> None:
    # Given the US profile, checked in eu-west-1 (Bedrock would only say the identifier is invalid)
    client = boto3.session.Session().client("bedrock", region_name="eu-west-1")
    with Stubber(client):
        # When the configuration is checked (nothing is asked of Bedrock)
        found = check_bedrock_models(config_for(PROFILE), lambda _: client, today=TODAY, environ={})
    # Then the line names the Region as the cause and the profile to use
    (problem,) = found
    assert "no us. inference profile in eu-west-1" in problem.line() and f"global.{NOVA}" in problem.line()
