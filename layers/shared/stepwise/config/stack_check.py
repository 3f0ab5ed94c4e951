"""``stepwise config check --aws --stack NAME``: check the deployment, not only the caller.

`config check --aws` alone asks Bedrock, as the caller, about the configuration's model ids in the caller's
Region. A deployed stack calls the model id of its `BedrockModelId` parameter, in its own Region, as the
LLMCall function's role. With `--stack` the check reads those from CloudFormation (DescribeStacks, and
DescribeStackResource for the role), asks Bedrock in the stack's Region (`stepwise.config.bedrock_check`),
asks IAM whether the role may call `bedrock:InvokeModel` on the profile and on each foundation model it routes
to (SimulatePrincipalPolicy, with the `bedrock:InferenceProfileArn` the template's conditions read), and asks
Lambda whether the account's concurrency fits the load (GetAccountSettings). `--region` and `--model-id`
check a deployment to be (or one made without this template) the same way, without the role.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any, Literal

from stepwise.config.bedrock_check import BedrockProblem
from stepwise.config.model import StepwiseConfig
from stepwise.config.model_catalog import INFERENCE_PROFILE_PREFIXES

# A boto3 client of `service` in `region`.
AwsClientFor = Callable[[str, str], Any]

LLM_CALL_ROLE = "LLMCallFunctionRole"
"""The logical id SAM gives the LLMCall function's role."""
INVOKE_ACTION = "bedrock:InvokeModel"
"""The action the Converse calls of the functions need (the template grants no other Bedrock action)."""


@dataclass(frozen=True)
class DeployedStack:
    """What a stack deploys that the check needs: its Region, the model id it calls and who calls it."""

    name: str
    region: str
    partition: str
    account: str
    model_id: str
    llm_role_arn: str | None
    workflow_type: str = "STANDARD"


@dataclass(frozen=True)
class Finding:
    """A problem (runs will fail) or a warning (they may, under load), with its fix."""

    level: Literal["problem", "warning"]
    text: str
    fix: str

    def line(self) -> str:
        """The finding as one line for the terminal."""
        return f"{self.text}; fix: {self.fix}"


def read_stack(cloudformation: Any, name: str) -> DeployedStack:
    """The stack `name` as deployed: its Region, account and partition (from its id), the `BedrockModelId` it
    was deployed with, and the ARN of the LLMCall function's role (None when the stack has none)."""
    from botocore.exceptions import ClientError

    stack = cloudformation.describe_stacks(StackName=name)["Stacks"][0]
    # arn:<partition>:cloudformation:<region>:<account>:stack/<name>/<id>
    _, partition, _, region, account, _ = str(stack["StackId"]).split(":", 5)
    parameters = {entry["ParameterKey"]: entry.get("ParameterValue", "") for entry in stack.get("Parameters", [])}
    try:
        detail = cloudformation.describe_stack_resource(StackName=name, LogicalResourceId=LLM_CALL_ROLE)
        role_name = str(detail["StackResourceDetail"]["PhysicalResourceId"])
        role_arn: str | None = f"arn:{partition}:iam::{account}:role/{role_name}"
    except ClientError:
        role_arn = None
    return DeployedStack(
        name=name,
        region=region,
        partition=partition,
        account=account,
        model_id=parameters.get("BedrockModelId", ""),
        llm_role_arn=role_arn,
        workflow_type=parameters.get("WorkflowType", "STANDARD"),
    )


def invoked_resources(model_id: str, region: str, account: str, partition: str, destinations: list[str]) -> list[str]:
    """The ARNs a call of `model_id` from `region` is authorized on: an in-Region model itself; a profile, and
    its foundation model in each destination Region (and Region-less for a `global.` profile)."""
    if not model_id.lower().startswith(INFERENCE_PROFILE_PREFIXES):
        return [f"arn:{partition}:bedrock:{region}::foundation-model/{model_id}"]
    model = model_id.split(".", 1)[1]
    profile = f"arn:{partition}:bedrock:{region}:{account}:inference-profile/{model_id}"
    regions = list(dict.fromkeys([region, *destinations]))
    models = [f"arn:{partition}:bedrock:{destination}::foundation-model/{model}" for destination in regions]
    if model_id.lower().startswith("global."):
        models.append(f"arn:{partition}:bedrock:::foundation-model/{model}")
    return [profile, *models]


def profile_destinations(bedrock: Any, model_id: str) -> list[str]:
    """The Regions an inference profile routes to (GetInferenceProfile); empty when Bedrock cannot say (the
    Bedrock check reports why)."""
    from botocore.exceptions import BotoCoreError, ClientError

    if not model_id.lower().startswith(INFERENCE_PROFILE_PREFIXES):
        return []
    try:
        profile = bedrock.get_inference_profile(inferenceProfileIdentifier=model_id)
    except (ClientError, BotoCoreError):
        return []
    # arn:<partition>:bedrock:<region>::foundation-model/<id>
    regions = [str(entry.get("modelArn", "")).split(":")[3] for entry in profile.get("models", [])]
    return [region for region in dict.fromkeys(regions) if region]


def role_findings(iam: Any, stack: DeployedStack, destinations: list[str]) -> Iterator[Finding]:
    """A problem per resource the LLMCall role may not call `bedrock:InvokeModel` on, as IAM's policy
    simulator evaluates the role's policies (with the profile as `bedrock:InferenceProfileArn`); a warning
    instead when the role cannot be found or simulated."""
    from botocore.exceptions import ClientError

    if stack.llm_role_arn is None:
        yield Finding(
            "warning",
            f"stack {stack.name} has no {LLM_CALL_ROLE}, so its role's grants were not checked",
            "check the stack name, or the role of the function that calls the model, by hand",
        )
        return
    resources = invoked_resources(stack.model_id, stack.region, stack.account, stack.partition, destinations)
    profile_arn = resources[0] if ":inference-profile/" in resources[0] else None
    key = {"ContextKeyName": "bedrock:InferenceProfileArn", "ContextKeyType": "string"}
    context = [key | {"ContextKeyValues": [profile_arn]}] if profile_arn else []
    for resource in resources:
        try:
            answer = iam.simulate_principal_policy(
                PolicySourceArn=stack.llm_role_arn,
                ActionNames=[INVOKE_ACTION],
                ResourceArns=[resource],
                ContextEntries=context,
            )
        except ClientError as exc:
            yield Finding(
                "warning",
                f"IAM did not simulate the LLMCall role's policies ({exc}), so its grants were not checked",
                f"run the check as a caller allowed iam:SimulatePrincipalPolicy on {stack.llm_role_arn}",
            )
            return
        for result in answer.get("EvaluationResults", []):
            if result.get("EvalDecision") != "allowed":
                yield Finding(
                    "problem",
                    f"the LLMCall role {stack.llm_role_arn} may not call {result.get('EvalActionName')} on "
                    f"{resource} ({result.get('EvalDecision')})",
                    f"grant {INVOKE_ACTION} on {resource}: deploy with BedrockModelId={stack.model_id} (the template "
                    "derives the grants from it, and config/stepwise.yaml reads it), or add the grant to the role",
                )


def express_findings(config: StepwiseConfig, workflow_type: str) -> list[Finding]:
    """On an Express stack, a warning per profile whose deadline Express cuts (`RunLimits.for_workflow`)."""
    from stepwise.models.run import EXPRESS_RUN_SECONDS

    if workflow_type != "EXPRESS":
        return []
    return [
        Finding(
            "warning",
            f"profile {name} allows max_execution_seconds {profile.limits.max_execution_seconds}, but on this Express "
            f"stack its runs end their loop at {EXPRESS_RUN_SECONDS} s (Express stops an execution at 300 s)",
            "deploy with WorkflowType=STANDARD for longer runs, or lower the profile's limit to say what happens",
        )
        for name, profile in config.profiles.items()
        if profile.limits.max_execution_seconds > EXPRESS_RUN_SECONDS
    ]


def concurrency_finding(
    lambda_client: Any, *, region: str, max_parallel_calls: int, runs: int, waiting: int
) -> Finding | None:
    """A warning when the account's unreserved Lambda concurrency in `region` is below what `runs` runs in
    flight with `max_parallel_calls` parallel tool calls, and `waiting` requests waiting on their runs, need
    (and when Lambda does not say)."""
    from botocore.exceptions import ClientError

    try:
        limit = lambda_client.get_account_settings()["AccountLimit"]
    except ClientError as exc:
        return Finding(
            "warning",
            f"Lambda did not give the account's concurrency in {region} ({exc}), so it was not compared with the load",
            "run the check as a caller allowed lambda:GetAccountSettings",
        )
    available = int(limit.get("UnreservedConcurrentExecutions", limit.get("ConcurrentExecutions", 0)))
    needed = runs * (1 + max_parallel_calls) + waiting
    if available >= needed:
        return None
    return Finding(
        "warning",
        f"the account's unreserved Lambda concurrency in {region} is {available}, below the {needed} that {runs} "
        f"runs in flight with max_parallel_calls {max_parallel_calls} and {waiting} waiting requests need "
        "(past it, calls are throttled and retried, and a steady load fails)",
        "ask for more in Service Quotas (AWS Lambda, Concurrent executions), or lower the load or max_parallel_calls",
    )


DEPLOYED_MODEL = "BedrockModelId"
"""The name the deployed model id is reported under (the template parameter that sets it)."""


@dataclass(frozen=True)
class DeploymentReport:
    """What the deployment check found, in the Region it asked in."""

    region: str
    model_id: str | None
    bedrock: list[BedrockProblem]
    findings: list[Finding]

    @property
    def failed(self) -> bool:
        """True when runs of the deployment will fail (a problem, not only a warning)."""
        return bool(self.bedrock) or any(finding.level == "problem" for finding in self.findings)


def check_deployment(
    path: Path,
    clients: AwsClientFor,
    *,
    today: date,
    environ: Mapping[str, str],
    stack_name: str | None = None,
    region: str | None = None,
    model_id: str | None = None,
    runs: int = 10,
    waiting: int = 0,
) -> DeploymentReport:
    """Check the deployment: the stack's (or the given) model id and every Bedrock model of the configuration,
    asked in the stack's (or the given) Region; with a stack, its LLMCall role's grants; and the account's
    Lambda concurrency for `runs` runs in flight and `waiting` waiting requests. `NoRegion` when no Region
    is given, found or set."""
    from stepwise.config.aws_region import HOW_TO_SET_A_REGION, NoRegion, caller_region
    from stepwise.config.bedrock_check import check_bedrock_models
    from stepwise.config.llm import BedrockModelConfig
    from stepwise.config.loading import read_config_file

    stack: DeployedStack | None = None
    if stack_name is not None:
        where = region or caller_region(environ)
        if where is None:
            raise NoRegion(f"no AWS Region to find the stack {stack_name} in: {HOW_TO_SET_A_REGION}, or give --region")
        stack = read_stack(clients("cloudformation", where), stack_name)
        region, model_id = stack.region, model_id or stack.model_id or None
    region = region or caller_region(environ)
    if region is None:
        raise NoRegion(f"no AWS Region to check the deployment in: {HOW_TO_SET_A_REGION}, or give --region")
    # the configuration as the deployed functions read it: their Region, and the model id the stack sets
    deployed_environ = {**environ, "AWS_REGION": region, "AWS_DEFAULT_REGION": region}
    if model_id:
        deployed_environ["BEDROCK_MODEL_ID"] = model_id
    config = read_config_file(path, environ=deployed_environ).config
    models = dict(config.models)
    if model_id:
        models = {
            name: model
            for name, model in models.items()
            if not (isinstance(model, BedrockModelConfig) and model.model_id == model_id and model.region is None)
        }
        models[DEPLOYED_MODEL] = BedrockModelConfig(provider="bedrock", model_id=model_id)
    checked = config.model_copy(update={"models": models})
    bedrock = check_bedrock_models(
        checked, lambda where: clients("bedrock", where), today=today, environ=deployed_environ
    )
    findings = express_findings(config, stack.workflow_type) if stack is not None else []
    if stack is not None:
        # every model id the functions call in the stack's Region: a configuration that names its own id
        # instead of reading BedrockModelId calls a model the template did not grant
        called = [model_id] if model_id else []
        called += [
            model.model_id
            for model in models.values()
            if isinstance(model, BedrockModelConfig) and model.region in (None, region)
        ]
        for identifier in dict.fromkeys(called):
            if identifier.startswith("arn:"):
                continue  # an application inference profile: Bedrock's check above covers it
            destinations = profile_destinations(clients("bedrock", region), identifier)
            deployed = replace(stack, model_id=identifier)
            findings.extend(role_findings(clients("iam", region), deployed, destinations))
    parallel = max((profile.limits.max_parallel_calls for profile in config.profiles.values()), default=1)
    concurrency = concurrency_finding(
        clients("lambda", region), region=region, max_parallel_calls=parallel, runs=runs, waiting=waiting
    )
    findings.extend([concurrency] if concurrency is not None else [])
    return DeploymentReport(region=region, model_id=model_id, bedrock=bedrock, findings=findings)


def session_clients() -> AwsClientFor:
    """Clients of the caller's own identity (the SDK's chain), one per service and Region."""
    import boto3

    session = boto3.session.Session()
    made: dict[tuple[str, str], Any] = {}

    def client(service: str, region: str) -> Any:
        if (service, region) not in made:
            made[(service, region)] = session.client(service, region_name=region)  # type: ignore[call-overload]
        return made[(service, region)]

    return client
