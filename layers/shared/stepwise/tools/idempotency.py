"""Idempotency of tool calls: the key every attempt of one call carries, and what a tool's calls may change.

The key is derived from the call's place in its run (run id, iteration, call id), so a step retried by
Step Functions or resumed after a crash sends the very key its first attempt sent, and no two calls
share one. It is a UUID (version 5, name-based): the form receivers that check keys (Stripe, Adyen,
PayPal's request ids) all accept.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from stepwise.config.tool_call_rules import EffectRule

# Fixed for good: changing it would give a resumed call another key than its first attempt had.
_KEY_NAMESPACE = uuid.UUID("6f0d5c1e-6a38-4c56-9a55-2b7d1f3c8e41")


def idempotency_key(run_id: str, iteration: int, call_id: str) -> str:
    """The idempotency key of the call `call_id` of `iteration` of `run_id`; the same for every attempt."""
    return str(uuid.uuid5(_KEY_NAMESPACE, f"{run_id}\n{iteration}\n{call_id}"))


@dataclass(frozen=True)
class CallEffects:
    """What a tool's calls may do outside: change something (`side_effects`), and whether the receiver
    does a repeated key's work only once (`key_honoured`), so a call cut short may be sent again."""

    side_effects: bool = False
    key_honoured: bool = False

    @classmethod
    def of(cls, rule: EffectRule, *, side_effects: bool | None = None) -> CallEffects:
        """The effects a tool source's configuration gives its calls; `side_effects` when known otherwise
        (an HTTP call's method), else the source's own setting, else none."""
        changes = side_effects if side_effects is not None else bool(rule.side_effects)
        return cls(side_effects=changes, key_honoured=rule.idempotency_key.honoured)


NO_EFFECTS = CallEffects()
