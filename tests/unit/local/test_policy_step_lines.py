"""`stepwise run`'s live trace shows the tool policy's verdict on a call with the decision."""

from __future__ import annotations

from stepwise.local.trace_printer import describe_step
from stepwise.models.policy import PolicyVerdict
from stepwise.models.step_record import StepRecord


def test_a_policy_step_is_one_line_naming_the_tool_and_the_verdict() -> None:
    # Given the policy step of a refused transfer
    verdict = PolicyVerdict(effect="forbid", policies=["company-accounts-only"], mode="enforce")
    step = StepRecord(
        iteration=2,
        kind="policy",
        n=0,
        action="transfer",
        note="refused by policy `company-accounts-only`",
        policy=verdict,
    )
    # When it is described
    lines = describe_step(step)
    # Then one line names the tool and what the policy did
    assert lines == ["[2] policy    transfer: refused by policy `company-accounts-only`"]
