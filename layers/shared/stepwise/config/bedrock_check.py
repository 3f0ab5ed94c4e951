"""``stepwise config check --aws``: ask Bedrock, as the caller, whether each configured model can be invoked.

Per Bedrock model of the configuration: the inference profile exists and is ACTIVE (GetInferenceProfile), the
foundation model exists, is ACTIVE rather than LEGACY, and is served on demand or only through a profile
(GetFoundationModel), and the account may invoke it (GetFoundationModelAvailability: the AWS Marketplace
agreement and Anthropic's use-case form; ListFoundationModelAgreementOffers gives the offer the one admin call
that starts a missing agreement needs). A geographic profile asked about from outside its geography is named
with the Region. Each problem is one line naming the model and the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from stepwise.config.aws_region import HOW_TO_SET_A_REGION, WAYS_TO_GIVE_CREDENTIALS, NoRegion, bedrock_region
from stepwise.config.llm import BedrockModelConfig
from stepwise.config.model import StepwiseConfig
from stepwise.config.model_catalog import INFERENCE_PROFILE_PREFIXES, normalise_model_id
from stepwise.config.profile_geography import geography_of, outside_geography

# boto3 `bedrock` (control plane) client for a Region.
BedrockClientFor = Callable[[str], Any]


@dataclass(frozen=True)
class BedrockProblem:
    """Something that stops a configured Bedrock model from answering, and how to fix it."""

    model: str
    model_id: str
    problem: str
    fix: str

    def line(self) -> str:
        """The problem as one line for the terminal."""
        return f"model {self.model} ({self.model_id}): {self.problem}; fix: {self.fix}"


def _is_profile(model_id: str) -> bool:
    lowered = model_id.lower()
    return (
        lowered.startswith(INFERENCE_PROFILE_PREFIXES)
        or ":inference-profile/" in lowered
        or (":application-inference-profile/" in lowered)
    )


def _error_code(exc: Exception) -> str:
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code", type(exc).__name__))


def client_region(client: Any) -> str | None:
    """The Region a boto3 client sends its requests to (None for a client that does not say)."""
    region = getattr(getattr(client, "meta", None), "region_name", None)
    return str(region) if region else None


def _error_message(exc: Exception) -> str:
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Message", exc))


def bedrock_regions(config: StepwiseConfig, environ: Mapping[str, str]) -> dict[str, list[str]]:
    """The Regions each Bedrock model of the configuration is called in: its own `region:`, else those of
    the profiles that use it, else the caller's (`stepwise.config.aws_region`). `NoRegion`, one line naming
    every model left without one and the fix, when a model has none."""
    regions: dict[str, list[str]] = {}
    missing: list[str] = []
    for name, model in config.models.items():
        if not isinstance(model, BedrockModelConfig):
            continue
        users = [
            profile.region
            for profile in config.profiles.values()
            if name in (profile.model, profile.context.summary_model)
        ]
        settings = [model.region] if model.region else list(dict.fromkeys(users)) or [None]
        try:
            regions[name] = list(dict.fromkeys(bedrock_region(name, setting, environ=environ) for setting in settings))
        except NoRegion:
            missing.append(f"'{name}'")
    if missing:
        raise NoRegion(f"no AWS Region for the Bedrock model {', '.join(missing)}: {HOW_TO_SET_A_REGION}")
    return regions


def check_bedrock_models(
    config: StepwiseConfig, client_for: BedrockClientFor, *, today: date, environ: Mapping[str, str]
) -> list[BedrockProblem]:
    """The problems of every Bedrock model the configuration names, asked of Bedrock in each Region it is
    called in; empty when all can answer. `NoRegion` before any request when a model has no Region."""
    problems: list[BedrockProblem] = []
    for name, regions in bedrock_regions(config, environ).items():
        model = config.models[name]
        assert isinstance(model, BedrockModelConfig)
        for region in regions:
            problems.extend(_model_problems(name, model, config, client_for(region), today))
    return problems


def _model_problems(
    name: str, model: BedrockModelConfig, config: StepwiseConfig, client: Any, today: date
) -> Iterator[BedrockProblem]:
    from botocore.exceptions import BotoCoreError, ClientError

    model_id = model.model_id

    def problem(text: str, fix: str) -> BedrockProblem:
        return BedrockProblem(name, model_id, text, fix)

    facts = config.model_facts(name)
    if facts is not None and facts.lifecycle.end_of_life is not None and facts.lifecycle.end_of_life <= today:
        yield problem(
            f"reached its end of life on Bedrock on {facts.lifecycle.end_of_life.isoformat()}",
            "configure a current model (stepwise/config/model_catalog.yaml lists them)",
        )
        return
    region = client_region(client)
    outside = outside_geography(model_id, region)
    if outside is not None:
        yield problem(f"no {geography_of(model_id)}. inference profile in {region}", outside)
        return
    try:
        if _is_profile(model_id):
            foundation_ids = yield from _profile_models(model_id, client, problem)
        else:
            foundation_ids = [model_id]
        for foundation_id in foundation_ids:
            yield from _foundation_model_problems(foundation_id, model_id, client, problem)
    except ClientError as exc:
        yield _access_problem(exc, model_id, problem)
    except BotoCoreError as exc:
        yield problem(
            f"Bedrock cannot be asked ({exc})", f"configure AWS credentials ({WAYS_TO_GIVE_CREDENTIALS}) and a Region"
        )


def _profile_models(
    model_id: str, client: Any, problem: Callable[[str, str], BedrockProblem]
) -> Generator[BedrockProblem, None, list[str]]:
    """Problems of the inference profile; returns the foundation model ids it routes to (generator return)."""
    from botocore.exceptions import ClientError

    try:
        profile = client.get_inference_profile(inferenceProfileIdentifier=model_id)
    except ClientError as exc:
        if _error_code(exc) in ("ResourceNotFoundException", "ValidationException"):
            yield problem(
                f"no such inference profile in {client_region(client) or 'this Region'}",
                "check the id and the Region: aws bedrock list-inference-profiles lists the profiles you can use",
            )
            return []
        raise
    if profile.get("status") != "ACTIVE":
        yield problem(f"the inference profile is {profile.get('status')}", "use an ACTIVE profile")
    model_ids = {str(entry.get("modelArn", "")).rsplit("/", 1)[-1] for entry in profile.get("models", [])}
    return sorted(identifier for identifier in model_ids if identifier)


def _foundation_model_problems(
    foundation_id: str, model_id: str, client: Any, problem: Callable[[str, str], BedrockProblem]
) -> Iterator[BedrockProblem]:
    from botocore.exceptions import ClientError

    try:
        details = client.get_foundation_model(modelIdentifier=foundation_id)["modelDetails"]
    except ClientError as exc:
        if _error_code(exc) in ("ResourceNotFoundException", "ValidationException"):
            yield problem(
                f"Bedrock has no model {foundation_id} in this Region (ended, or never offered here)",
                "configure a current model (stepwise/config/model_catalog.yaml lists them)",
            )
            return
        raise
    lifecycle = details.get("modelLifecycle", {})
    if lifecycle.get("status") == "LEGACY":
        ends = lifecycle.get("endOfLifeTime")
        when = f", calls fail from {ends:%Y-%m-%d}" if hasattr(ends, "strftime") else ""
        yield problem(f"{foundation_id} is LEGACY{when}", "move to a current model before its end of life")
    inference_types = details.get("inferenceTypesSupported", [])
    if not _is_profile(model_id) and "ON_DEMAND" not in inference_types and "INFERENCE_PROFILE" in inference_types:
        yield problem(
            "this model is served only through an inference profile",
            f"use its profile id, e.g. us.{normalise_model_id(model_id)} or global.{normalise_model_id(model_id)}",
        )
    yield from _availability_problems(foundation_id, client, problem)


def _availability_problems(
    foundation_id: str, client: Any, problem: Callable[[str, str], BedrockProblem]
) -> Iterator[BedrockProblem]:
    availability = client.get_foundation_model_availability(modelId=foundation_id)
    if availability.get("regionAvailability") == "NOT_AVAILABLE":
        yield problem(
            f"{foundation_id} is not offered in this Region", "deploy in a Region that offers it, or use a profile"
        )
    if availability.get("authorizationStatus") == "NOT_AUTHORIZED":
        yield problem(
            "the account has not submitted Anthropic's use-case form",
            "submit it once in the Bedrock console (Model catalog, any Anthropic model), then wait a few minutes",
        )
    agreement = (availability.get("agreementAvailability") or {}).get("status")
    if availability.get("entitlementAvailability") == "NOT_AVAILABLE" or agreement in ("NOT_AVAILABLE", "ERROR"):
        yield problem(
            "the account has no AWS Marketplace agreement for this model (the deployed functions may not "
            "aws-marketplace:Subscribe, so their calls fail once Bedrock checks it)",
            _agreement_call(foundation_id, client),
        )
    elif agreement == "PENDING":
        yield problem("the AWS Marketplace agreement is still pending", "wait a few minutes and check again")


def _agreement_call(foundation_id: str, client: Any) -> str:
    """The one admin call that starts the model's Marketplace agreement, with its public offer's token when
    the caller may list the offers."""
    from botocore.exceptions import BotoCoreError, ClientError

    token = "<offerToken of: aws bedrock list-foundation-model-agreement-offers --model-id " + foundation_id + ">"
    try:
        offers = client.list_foundation_model_agreement_offers(modelId=foundation_id, offerType="PUBLIC")["offers"]
        token = str(offers[0]["offerToken"]) if offers else token
    except (ClientError, BotoCoreError):
        pass
    region = client_region(client)
    where = f" --region {region}" if region else ""
    return (
        f"one admin call starts it: aws bedrock create-foundation-model-agreement{where} "
        f"--model-id {foundation_id} --offer-token {token} (or a first call of the model by a role allowed "
        "aws-marketplace:Subscribe and aws-marketplace:ViewSubscriptions); then wait a few minutes"
    )


def _access_problem(exc: Exception, model_id: str, problem: Callable[[str, str], BedrockProblem]) -> BedrockProblem:
    code, message = _error_code(exc), _error_message(exc)
    if code == "AccessDeniedException":
        resource = message.split("on resource: ", 1)[1].split(" ", 1)[0] if "on resource: " in message else model_id
        action = message.split("to perform: ", 1)[1].split(" ", 1)[0] if "to perform: " in message else None
        missing = f"{action} on {resource}" if action else f"the Bedrock read actions on {resource}"
        return problem(
            f"access denied: {message}",
            f"allow the caller {missing} (this check needs bedrock:GetInferenceProfile, bedrock:GetFoundationModel, "
            "bedrock:GetFoundationModelAvailability and bedrock:ListFoundationModelAgreementOffers)",
        )
    return problem(f"Bedrock answered {code}: {message}", "see the message; docs/deployment.md lists the set-up steps")


def caller_bedrock_client(region: str) -> Any:
    """A `bedrock` client of the caller's own identity (the SDK's chain) in `region`, for the check."""
    import boto3

    return boto3.session.Session().client("bedrock", region_name=region)
