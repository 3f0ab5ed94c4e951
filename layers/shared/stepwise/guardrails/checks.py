"""Applying a point's rules to one text: what goes on, whether it is blocked, and what each rule did.

Rules run in order, each on the text the earlier ones left (so a Bedrock guardrail after a `pii` rule sees
`[card]`, not the number); the first block ends the checks. In `log_only` mode every rule still runs on
the original text and says what it would have done, and the text goes on unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from stepwise.config.guardrails import BedrockRule, DenyRule, GuardrailPoint, Guardrails, PiiRule
from stepwise.guardrails.bedrock import ClientFor, Source, apply_guardrail
from stepwise.guardrails.detectors import redact_pii

Action = Literal["redacted", "blocked", "masked"]

# What Bedrock calls each point's text.
_SOURCE: dict[GuardrailPoint, Source] = {"input": "INPUT", "tool_results": "INPUT", "output": "OUTPUT"}


@dataclass(frozen=True)
class Intervention:
    """One rule that acted: its name, what it did and a detail without any value it found (`card=2`)."""

    rule: str
    action: Action
    detail: str | None = None


@dataclass
class Checked:
    """The outcome of a point's rules on one text: the text to go on with (the original in log_only mode,
    or when blocked), whether it is blocked, and the interventions, in the order the rules ran."""

    text: str
    blocked: bool = False
    interventions: list[Intervention] = field(default_factory=list)
    # the text a blocking Bedrock guardrail gave in its place (its blocked message), if any
    replacement: str | None = None
    # the Bedrock rules not asked because the text had nothing to check (empty or blank), by name
    skipped: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Some rule acted."""
        return bool(self.interventions)


def check_text(
    text: str, guardrails: Guardrails, point: GuardrailPoint, *, bedrock: ClientFor | None = None
) -> Checked:
    """Run `point`'s rules of `guardrails` on `text`; `bedrock` gives the client of a Bedrock rule's Region."""
    enforce = guardrails.mode == "enforce"
    current = text
    checked = Checked(text=text)
    for rule in guardrails.rules(point):
        if isinstance(rule, PiiRule):
            redacted, counts = redact_pii(current, rule.pii)
            if not counts:
                continue
            detail = ",".join(f"{kind}={count}" for kind, count in counts.items())
            if rule.action == "block":
                checked.interventions.append(Intervention(rule.name, "blocked", detail))
                checked.blocked = True
            else:
                checked.interventions.append(Intervention(rule.name, "redacted", detail))
                current = redacted if enforce else current
        elif isinstance(rule, DenyRule):
            hits = [index for index, pattern in enumerate(rule.compiled()) if pattern.search(current)]
            if not hits:
                continue
            detail = "pattern " + ",".join(str(index) for index in hits)
            checked.interventions.append(Intervention(rule.name, "blocked", detail))
            checked.blocked = True
        elif isinstance(rule, BedrockRule):
            client = bedrock(rule.bedrock.region) if bedrock is not None else None
            if not current.strip():
                # nothing a policy could act on; the service is reported to refuse an empty text block (botocore's
                # model sets no minimum), and a refused request would block this text as an unreachable guardrail
                checked.skipped.append(rule.name)
            elif client is None:
                checked.interventions.append(Intervention(rule.name, "blocked", "no Bedrock client"))
                checked.blocked = True
            else:
                verdict = apply_guardrail(client, rule.bedrock, _SOURCE[point], current)
                if verdict.error is not None:
                    # fail closed: a guardrail that could not be asked lets nothing through
                    checked.interventions.append(Intervention(rule.name, "blocked", verdict.error))
                    checked.blocked = True
                elif verdict.blocked:
                    checked.interventions.append(Intervention(rule.name, "blocked", ";".join(verdict.policies)))
                    checked.blocked = True
                    checked.replacement = verdict.text
                elif verdict.intervened:
                    checked.interventions.append(Intervention(rule.name, "masked", ";".join(verdict.policies)))
                    if enforce and verdict.text is not None:
                        current = verdict.text
        if checked.blocked and enforce:
            break
    if enforce:
        checked.text = current
    else:
        checked.blocked = False
        checked.replacement = None
    return checked
