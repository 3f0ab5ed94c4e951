"""The Bedrock grants template.yaml derives from one model id, rendered for the three kinds of id.

AWS documents what each needs (Bedrock user guide, "Prerequisites for inference profiles", "Geographic
cross-Region inference", "Global cross-Region inference"): an in-Region model id its foundation model in
the Region; a geographic profile the profile, and its foundation model in the source Region and in every
destination Region of the geography; a global profile the profile, the foundation model in the source Region
and the Region-less foundation model. Every function that calls a model gets exactly these.
"""

from __future__ import annotations

from typing import Any

import pytest

from stepwise.local.template import SamTemplate
from tests.conftest import PROJECT_ROOT
from tests.support.cfn_render import ACCOUNT, Rendering, statements

MODEL_CALLERS = {"LLMCallFunction", "CompactFunction", "FormatFunction", "ApiFunction", "StreamFunction"}
HAIKU = "anthropic.claude-haiku-4-5-20251001-v1:0"
NOVA = "amazon.nova-2-lite-v1:0"
US_DESTINATIONS = ["us-east-1", "us-east-2", "us-west-1", "us-west-2", "ca-central-1", "ca-west-1"]
# Each geographic prefix: a Region the stack may be deployed in, and the union over models of the destination
# Regions its profiles route to (docs/deployment.md names the AWS pages checked and what they left open).
GEOGRAPHIES = {
    "us": ("us-east-2", US_DESTINATIONS),
    "eu": (
        "eu-west-1",
        [
            "eu-central-1",
            "eu-central-2",
            "eu-north-1",
            "eu-south-1",
            "eu-south-2",
            "eu-west-1",
            "eu-west-2",
            "eu-west-3",
            "il-central-1",
        ],
    ),
    "apac": (
        "ap-south-1",
        [
            "ap-northeast-1",
            "ap-northeast-2",
            "ap-northeast-3",
            "ap-south-1",
            "ap-south-2",
            "ap-southeast-1",
            "ap-southeast-2",
            "ap-southeast-3",
            "ap-southeast-4",
        ],
    ),
    "jp": ("ap-northeast-1", ["ap-northeast-1", "ap-northeast-3"]),
    "au": ("ap-southeast-2", ["ap-southeast-2", "ap-southeast-4", "ap-southeast-6"]),
    "ca": ("ca-central-1", ["ca-central-1", "ca-west-1"]),
    "us-gov": ("us-gov-west-1", ["us-gov-east-1", "us-gov-west-1"]),
}


@pytest.fixture(scope="module")
def template() -> SamTemplate:
    return SamTemplate.load(PROJECT_ROOT / "template.yaml")


def bedrock_grants(template: SamTemplate, model_id: str, region: str, **more: str) -> list[dict[str, Any]]:
    rendering = Rendering(template, {"BedrockModelId": model_id, **more}, region=region)
    policy = rendering.resource("BedrockInvokePolicy")["Properties"]["PolicyDocument"]
    return statements(policy)


def granted_arns(grants: list[dict[str, Any]]) -> set[str]:
    resources: set[str] = set()
    for statement in grants:
        assert statement["Action"] == ["bedrock:InvokeModel"]
        found = statement["Resource"]
        resources.update(found if isinstance(found, list) else [found])
    return resources


def test_a_global_profile_is_granted_the_profile_the_source_model_and_the_regionless_model(
    template: SamTemplate,
) -> None:
    # Given a global cross-Region inference profile id, deployed in eu-west-1
    # When the template's Bedrock policy is rendered
    grants = bedrock_grants(template, f"global.{HAIKU}", "eu-west-1")
    # Then it grants exactly the three ARNs AWS documents for a global profile
    assert granted_arns(grants) == {
        f"arn:aws:bedrock:eu-west-1:{ACCOUNT}:inference-profile/global.{HAIKU}",
        f"arn:aws:bedrock:eu-west-1::foundation-model/{HAIKU}",
        f"arn:aws:bedrock:::foundation-model/{HAIKU}",
    }


def test_a_us_profile_is_granted_the_profile_and_its_model_in_every_us_destination(template: SamTemplate) -> None:
    # Given a US geographic profile id, deployed in us-east-2
    # When the template's Bedrock policy is rendered
    grants = bedrock_grants(template, f"us.{NOVA}", "us-east-2")
    # Then it grants the profile and the foundation model in the US destination Regions, nothing else
    assert granted_arns(grants) == {
        f"arn:aws:bedrock:us-east-2:{ACCOUNT}:inference-profile/us.{NOVA}",
        *(f"arn:aws:bedrock:{region}::foundation-model/{NOVA}" for region in US_DESTINATIONS),
    }


@pytest.mark.parametrize("prefix", sorted(GEOGRAPHIES))
def test_each_geographic_profile_is_granted_its_model_in_exactly_its_geographys_destinations(
    template: SamTemplate, prefix: str
) -> None:
    # Given a geographic profile id of that prefix, deployed in one of its geography's Regions
    region, destinations = GEOGRAPHIES[prefix]
    partition = "aws-us-gov" if prefix == "us-gov" else "aws"
    # When the template's Bedrock policy is rendered
    grants = bedrock_grants(template, f"{prefix}.{HAIKU}", region)
    # Then it grants the profile and the foundation model in each destination Region, nothing else
    assert granted_arns(grants) == {
        f"arn:{partition}:bedrock:{region}:{ACCOUNT}:inference-profile/{prefix}.{HAIKU}",
        *(f"arn:{partition}:bedrock:{destination}::foundation-model/{HAIKU}" for destination in destinations),
    }


def test_the_profiles_foundation_models_are_granted_only_through_the_profile(template: SamTemplate) -> None:
    # Given a US geographic profile id
    grants = bedrock_grants(template, f"us.{NOVA}", "us-east-1")
    # When the statements on foundation models are read
    model_statements = [s for s in grants if ":foundation-model/" in str(s["Resource"])]
    # Then each holds only for requests made through the profile
    profile_arn = f"arn:aws:bedrock:us-east-1:{ACCOUNT}:inference-profile/us.{NOVA}"
    assert model_statements
    assert all(s["Condition"] == {"ArnLike": {"bedrock:InferenceProfileArn": [profile_arn]}} for s in model_statements)


def test_an_in_region_model_id_is_granted_that_model_in_the_stacks_region_only(template: SamTemplate) -> None:
    # Given a plain model id, deployed in eu-central-1
    # When the template's Bedrock policy is rendered
    grants = bedrock_grants(template, "amazon.nova-pro-v1:0", "eu-central-1")
    # Then it grants that foundation model in that Region, with no profile
    assert granted_arns(grants) == {"arn:aws:bedrock:eu-central-1::foundation-model/amazon.nova-pro-v1:0"}


def test_an_application_profile_is_granted_with_the_model_it_copies(template: SamTemplate) -> None:
    # Given an application inference profile copying a US profile
    application = f"arn:aws:bedrock:us-east-1:{ACCOUNT}:application-inference-profile/a1b2c3d4e5f6"
    grants = bedrock_grants(template, f"us.{NOVA}", "us-east-1", BedrockApplicationProfileArn=application)
    # When the grants are read / Then the application profile is granted besides what the US profile needs
    assert application in granted_arns(grants)
    assert f"arn:aws:bedrock:us-west-2::foundation-model/{NOVA}" in granted_arns(grants)


def test_every_function_that_calls_a_model_has_the_bedrock_policy_and_no_other_does(template: SamTemplate) -> None:
    # Given the template's functions, the intent classifier's (Api, Stream) included
    rendering = Rendering(template)
    functions = {
        name: rendering.value(resource["Properties"].get("Policies", []))
        for name, resource in template.document["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
    }
    # When their policies are read
    with_bedrock = {name for name, policies in functions.items() if "<BedrockInvokePolicy>" in policies}
    # Then exactly the model-calling functions get the Bedrock policy, and none grants Bedrock inline
    assert with_bedrock == MODEL_CALLERS
    assert all("bedrock:" not in str(policies).replace("<BedrockInvokePolicy>", "") for policies in functions.values())


def test_the_default_model_is_a_current_model_through_an_inference_profile(template: SamTemplate) -> None:
    # Given the template's default model id
    default = template.document["Parameters"]["BedrockModelId"]["Default"]
    # When the model catalog is asked about it
    from stepwise.config.model_catalog import packaged_catalog

    facts = packaged_catalog().lookup(default)
    # Then it is a cross-Region profile of a model with no end-of-life date
    assert default.split(".")[0] in ("us", "eu", "apac", "global")
    assert facts is not None and facts.lifecycle.end_of_life is None
