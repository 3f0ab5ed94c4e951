"""The AWS Region: one resolver for the Bedrock model's client, `config check --aws`, the commands' check
before a run, and the settings of the service's own clients.

A Bedrock model's Region is, in order: the model's `region:`, its profile's `region:`, `AWS_REGION`,
`AWS_DEFAULT_REGION`, then the `region` the caller's AWS configuration gives (what the SDK's session reads:
the file's profile named by `AWS_PROFILE`, or its default). boto3 alone reads neither `AWS_REGION` (which
Lambda sets, and which many tools use) nor anything when the file names no Region, and then fails every
call with `NoRegionError`; resolved here, a caller without any Region is told in one line how to set one,
before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping

from stepwise.errors import ConfigError

REGION_VARIABLES = ("AWS_REGION", "AWS_DEFAULT_REGION")
HOW_TO_SET_A_REGION = (
    "set AWS_REGION (e.g. export AWS_REGION=us-east-1), run `aws configure set region <region>`, or give the "
    "model (or its profile) a `region:` in the configuration"
)

# Where the SDK's chain finds credentials, as a fix names them (`config check --aws` and `--stack`).
WAYS_TO_GIVE_CREDENTIALS = "AWS_PROFILE, `aws sso login`, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"


class NoRegion(ConfigError):
    """No source names an AWS Region; the message says which model and how to set one."""


def environment_region(environ: Mapping[str, str]) -> str | None:
    """`AWS_REGION`, else `AWS_DEFAULT_REGION` (a blank value counts as unset); None when neither is set."""
    for name in REGION_VARIABLES:
        value = environ.get(name, "").strip()
        if value:
            return value
    return None


def configured_region() -> str | None:
    """The Region of the caller's AWS configuration file, as the SDK's own session reads it (the profile
    `AWS_PROFILE` names, or the default one); None when it gives none or cannot be read."""
    import boto3  # deferred: only a Bedrock model needs it
    from botocore.exceptions import BotoCoreError

    try:
        region = boto3.session.Session().region_name
    except BotoCoreError:  # AWS_PROFILE names a profile the file does not have: the credentials check says so
        return None
    return region or None


def caller_region(environ: Mapping[str, str]) -> str | None:
    """The caller's own Region: the environment's, else their AWS configuration's; None when neither has one."""
    return environment_region(environ) or configured_region()


def bedrock_region(model: str, *configured: str | None, environ: Mapping[str, str]) -> str:
    """The Region Bedrock model `model` is called in: the first of `configured` that is set (the model's
    `region:`, then its profile's), else the caller's. `NoRegion`, naming the model and the fix, when none is."""
    for region in configured:
        if region:
            return region
    region = caller_region(environ)
    if region is None:
        raise NoRegion(f"model '{model}' is Bedrock and no AWS Region is set: {HOW_TO_SET_A_REGION}")
    return region
