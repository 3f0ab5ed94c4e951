"""Which Regions a geographic inference profile may be called from, to name the Region when it is called
from outside its geography.

A geographic profile (`us.`, `eu.`, ...) exists only in the Regions of its geography: called from elsewhere,
Bedrock answers "The provided model identifier is invalid", which does not say that the Region is the cause.
The lists are template.yaml's destination lists (docs/deployment.md, "Where the destination lists come
from"): a source Region of a geography is one of its destinations. `global.` profiles and in-Region ids
have no geography.
"""

from __future__ import annotations

GEOGRAPHY_REGIONS: dict[str, tuple[str, ...]] = {
    "us": ("us-east-1", "us-east-2", "us-west-1", "us-west-2", "ca-central-1", "ca-west-1"),
    "eu": (
        "eu-central-1",
        "eu-central-2",
        "eu-north-1",
        "eu-south-1",
        "eu-south-2",
        "eu-west-1",
        "eu-west-2",
        "eu-west-3",
        "il-central-1",
    ),
    "apac": (
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-northeast-3",
        "ap-south-1",
        "ap-south-2",
        "ap-southeast-1",
        "ap-southeast-2",
        "ap-southeast-3",
        "ap-southeast-4",
    ),
    "jp": ("ap-northeast-1", "ap-northeast-3"),
    "au": ("ap-southeast-2", "ap-southeast-4", "ap-southeast-6"),
    "ca": ("ca-central-1", "ca-west-1"),
    "us-gov": ("us-gov-east-1", "us-gov-west-1"),
}


def geography_of(model_id: str) -> str | None:
    """The geography prefix of a geographic profile id (`us` of `us.amazon.nova-2-lite-v1:0`), else None."""
    prefix = model_id.split(".", 1)[0].lower() if "." in model_id else ""
    return prefix if prefix in GEOGRAPHY_REGIONS else None


def outside_geography(model_id: str, region: str | None) -> str | None:
    """When `model_id` is a geographic profile called from a Region outside its geography, the sentence that
    says so and what to use instead; None otherwise (or when the Region is not known)."""
    geography = geography_of(model_id)
    if geography is None or region is None or region in GEOGRAPHY_REGIONS[geography]:
        return None
    model = model_id.split(".", 1)[1]
    return (
        f"the {geography}. profile exists only in its geography ({', '.join(GEOGRAPHY_REGIONS[geography])}) and "
        f"is called from {region}: deploy in one of those Regions, or use the global profile global.{model} "
        "or the profile of this Region's geography, if the model's card lists one"
    )
