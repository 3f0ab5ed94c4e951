"""A profile's `guardrails:` section: what is checked at the run's input, each tool result and its output.

Each point takes a list of rules, applied in order to the text the previous one left:

- `{pii: [card, email, ...], action: redact | block}`: local detectors (`stepwise.guardrails.detectors`);
- `{deny: [regular expressions], action: block}`: patterns compiled here for RE2 (linear time), so a bad one,
  or one RE2 cannot run, is a config error;
- `{bedrock: {id, version}}`: an Amazon Bedrock guardrail through `ApplyGuardrail`, which decides itself.

`mode: log_only` records what would have been done and changes nothing. Applying the rules is
`stepwise.guardrails`; this module only says what a valid section is.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator

from stepwise.patterns.linear import LinearPattern, PatternError, check_pattern, compiled

PiiKind = Literal["email", "phone", "card", "iban", "aws_key"]
GuardrailPoint = Literal["input", "tool_results", "output"]

# The longest deny pattern accepted: longer ones are rarely meant and costlier to search with.
MAX_DENY_PATTERN_CHARS = 500

DEFAULT_BLOCK_MESSAGE = "Sorry, I can't help with that request."
DEFAULT_TOOL_NOTICE = "[the tool's result was withheld by a guardrail]"


class PiiRule(BaseModel):
    """Find personal data of the listed kinds; replace each value by `[kind]` or block the text."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    pii: list[PiiKind] = Field(min_length=1)
    action: Literal["redact", "block"] = "redact"

    @property
    def name(self) -> str:
        """How the trace names this rule: `pii:card,email` (never a value it found)."""
        return "pii:" + ",".join(self.pii)


class DenyRule(BaseModel):
    """Block a text in which any of the patterns is found (searched with RE2, in time linear in the text)."""

    model_config = ConfigDict(extra="forbid", defer_build=True, arbitrary_types_allowed=True)

    deny: list[str] = Field(min_length=1)
    action: Literal["block"] = "block"
    label: str | None = Field(default=None, min_length=1, max_length=64)

    @field_validator("deny")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for index, pattern in enumerate(patterns):
            if len(pattern) > MAX_DENY_PATTERN_CHARS:
                raise ValueError(f"pattern {index}: longer than {MAX_DENY_PATTERN_CHARS} characters")
            try:
                check_pattern(pattern)
            except PatternError as exc:
                raise ValueError(f"pattern {index}: {exc.reason}") from None
        return patterns

    @property
    def name(self) -> str:
        """How the trace names this rule: its label, else `deny`."""
        return f"deny:{self.label}" if self.label else "deny"

    def compiled(self) -> list[LinearPattern]:
        """The patterns, compiled (kept per process, so this is cheap after the first call)."""
        return [compiled(pattern) for pattern in self.deny]


class BedrockGuardrailRef(BaseModel):
    """Which Amazon Bedrock guardrail, in which version (and Region, else the profile's or the caller's)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    id: str = Field(pattern=r"^(([a-z0-9]+)|(arn:aws(-[^:]+)?:bedrock:[a-z0-9-]{1,20}:[0-9]{12}:guardrail/[a-z0-9]+))$")
    version: str = Field(default="DRAFT", pattern=r"^(([1-9][0-9]{0,7})|(DRAFT))$")
    region: str | None = Field(default=None, min_length=1)


class BedrockRule(BaseModel):
    """Ask an Amazon Bedrock guardrail (`ApplyGuardrail`); its own action, masks and blocked message decide."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    bedrock: BedrockGuardrailRef

    @property
    def name(self) -> str:
        """How the trace names this rule: `bedrock:<id>:<version>`."""
        return f"bedrock:{self.bedrock.id}:{self.bedrock.version}"


def _rule_kind(value: Any) -> str | None:
    if isinstance(value, dict):
        return next((key for key in ("pii", "deny", "bedrock") if key in value), None)
    if isinstance(value, PiiRule | DenyRule | BedrockRule):
        return {PiiRule: "pii", DenyRule: "deny", BedrockRule: "bedrock"}[type(value)]
    return None


GuardrailRule = Annotated[
    Annotated[PiiRule, Tag("pii")] | Annotated[DenyRule, Tag("deny")] | Annotated[BedrockRule, Tag("bedrock")],
    Discriminator(
        _rule_kind,
        custom_error_type="guardrail_rule",
        custom_error_message="a rule is one of {pii: [...]}, {deny: [...]} or {bedrock: {id, version}}",
    ),
]


class Guardrails(BaseModel):
    """A profile's `guardrails:`: the rules of each point, and whether they act (`enforce`) or only record."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    mode: Literal["enforce", "log_only"] = "enforce"
    input: list[GuardrailRule] = Field(default_factory=list)
    tool_results: list[GuardrailRule] = Field(default_factory=list)
    output: list[GuardrailRule] = Field(default_factory=list)
    # What the caller gets when the input or the answer is blocked, and the model when a tool result is.
    message: str = Field(default=DEFAULT_BLOCK_MESSAGE, min_length=1, max_length=2000)
    tool_notice: str = Field(default=DEFAULT_TOOL_NOTICE, min_length=1, max_length=2000)

    def rules(self, point: GuardrailPoint) -> list[PiiRule | DenyRule | BedrockRule]:
        """The rules of `point`, in order."""
        rules: list[PiiRule | DenyRule | BedrockRule] = getattr(self, point)
        return rules

    def bedrock_guardrails(self) -> list[BedrockGuardrailRef]:
        """Every Bedrock guardrail any point names (the template must grant `bedrock:ApplyGuardrail` on each)."""
        return [
            rule.bedrock
            for point in ("input", "tool_results", "output")
            for rule in self.rules(point)
            if isinstance(rule, BedrockRule)
        ]
