"""What the profile's tool policy decided for one tool call (`stepwise.governance.tool_policy`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

PolicyMode = Literal["enforce", "log_only"]
PolicyEffect = Literal["permit", "approval", "forbid"]


class PolicyVerdict(BaseModel, defer_build=True):
    """The policy's decision on one call, as Parse stored it with the calls it decided."""

    effect: PolicyEffect = Field(
        description="`permit`: the call runs; `approval`: a matching permit is annotated "
        '`@approval("required")`, so the call waits for a person; `forbid`: a `forbid` matched, no `permit` '
        "did (Cedar's default deny), or the policy could not be evaluated on the call's arguments."
    )
    policies: list[str] = Field(
        default_factory=list,
        description="The determining policies: their `@id` annotation, or Cedar's own id (`policy0`...) without one.",
    )
    mode: PolicyMode = Field(description="`log_only`: the verdict is recorded and the call runs as if permitted.")
    reason: str | None = Field(default=None, description="Why, when no policy determined it or one failed.")

    @property
    def refuses(self) -> bool:
        """The call is not sent: forbidden under an enforced policy."""
        return self.effect == "forbid" and self.mode == "enforce"

    @property
    def waits(self) -> bool:
        """The call waits for a person's approval before it is sent."""
        return self.effect == "approval" and self.mode == "enforce"

    @property
    def noted(self) -> bool:
        """Worth a `policy` step of the trace: anything but a plain permit."""
        return self.effect != "permit"

    def by_whom(self) -> str:
        """Who decided, as the model and the trace read it: the determining policies, and why when none did."""
        named = ", ".join(f"`{name}`" for name in self.policies)
        who = f"by policy {named}" if named else "by the tool policy"
        return f"{who} ({self.reason})" if self.reason else who
