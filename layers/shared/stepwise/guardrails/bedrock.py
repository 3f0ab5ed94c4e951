"""Amazon Bedrock Guardrails through the bedrock-runtime `ApplyGuardrail` API, whatever model the run uses.

Bedrock decides: `action` says whether it intervened; a policy entry whose action is `BLOCKED` blocks the
text, and then `outputs` hold the guardrail's own blocked message; otherwise (`ANONYMIZED` entries) the
`outputs` are the text with its values masked, used as Bedrock returns them. What the trace keeps of the
`assessments` is which policies acted and how (`topic:<name>`, `content:<type>`, `pii:<type>`,
`regex:<name>`, `word`), never the `match` values they carry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from stepwise.config.guardrails import BedrockGuardrailRef

Source = Literal["INPUT", "OUTPUT"]
ClientFor = Callable[[str | None], Any]
"""A bedrock-runtime client for a Region (None: the profile's or the caller's)."""


@dataclass(frozen=True)
class BedrockVerdict:
    """What one ApplyGuardrail call said: whether it intervened or blocked, the text to go on with (None
    when Bedrock gave none), which policies acted, and the error when Bedrock could not be asked."""

    intervened: bool
    blocked: bool
    text: str | None
    policies: list[str] = field(default_factory=list)
    error: str | None = None


def _acted(assessment: dict[str, Any]) -> list[tuple[str, str]]:
    """(policy, action) of every entry of one assessment whose action is not NONE; no matched values."""
    entries: list[tuple[str, str]] = []
    for topic in assessment.get("topicPolicy", {}).get("topics", []):
        entries.append((f"topic:{topic.get('name')}", topic.get("action", "")))
    for content in assessment.get("contentPolicy", {}).get("filters", []):
        entries.append((f"content:{content.get('type')}", content.get("action", "")))
    words = assessment.get("wordPolicy", {})
    for word in [*words.get("customWords", []), *words.get("managedWordLists", [])]:
        entries.append(("word", word.get("action", "")))
    sensitive = assessment.get("sensitiveInformationPolicy", {})
    for entity in sensitive.get("piiEntities", []):
        entries.append((f"pii:{entity.get('type')}", entity.get("action", "")))
    for regex in sensitive.get("regexes", []):
        entries.append((f"regex:{regex.get('name')}", regex.get("action", "")))
    for grounding in assessment.get("contextualGroundingPolicy", {}).get("filters", []):
        entries.append((f"grounding:{grounding.get('type')}", grounding.get("action", "")))
    return [(policy, action) for policy, action in entries if action and action != "NONE"]


def apply_guardrail(client: Any, guardrail: BedrockGuardrailRef, source: Source, text: str) -> BedrockVerdict:
    """Ask the guardrail about `text` as `source`; an error (throttled, unreachable, denied) comes back as a
    verdict with `error` set, for the caller to decide on (it blocks in enforce mode)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        response = client.apply_guardrail(
            guardrailIdentifier=guardrail.id,
            guardrailVersion=guardrail.version,
            source=source,
            content=[{"text": {"text": text}}],
        )
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "ClientError")
        return BedrockVerdict(intervened=False, blocked=False, text=None, error=f"ApplyGuardrail failed: {code}")
    except BotoCoreError as exc:
        return BedrockVerdict(
            intervened=False, blocked=False, text=None, error=f"ApplyGuardrail failed: {type(exc).__name__}"
        )
    if response.get("action") != "GUARDRAIL_INTERVENED":
        return BedrockVerdict(intervened=False, blocked=False, text=None)
    acted = [entry for assessment in response.get("assessments", []) for entry in _acted(assessment)]
    outputs = [output.get("text", "") for output in response.get("outputs", [])]
    blocked = any(action == "BLOCKED" for _, action in acted) or not acted
    policies = sorted({f"{policy}={action.lower()}" for policy, action in acted})
    return BedrockVerdict(intervened=True, blocked=blocked, text="".join(outputs) or None, policies=policies)


def bedrock_client(region: str | None) -> Any:
    """A bedrock-runtime client in `region` (else the caller's), with the SDK's standard retries."""
    import os

    import boto3
    from botocore.config import Config

    from stepwise.config.aws_region import caller_region

    config = Config(connect_timeout=5, read_timeout=15, retries={"mode": "standard", "total_max_attempts": 3})
    chosen = region or caller_region(os.environ)
    return boto3.session.Session().client("bedrock-runtime", region_name=chosen, config=config)
