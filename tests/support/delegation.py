"""A two-profile configuration that delegates: `lead` asks the `researcher` agent, then answers with what it
said. Both models are scripted, with fixed token counts per turn, so a parent's usage can be checked exactly."""

from __future__ import annotations

import json
from typing import Any

QUESTION = "How tall is the Eiffel Tower?"
CHILD_ANSWER = "The Eiffel Tower is 330 metres tall."
PARENT_ANSWER = f"According to the researcher: {CHILD_ANSWER}"
# tokens each scripted turn reports (input, output)
LEAD_TURN_TOKENS = (10, 5)
RESEARCHER_TURN_TOKENS = (100, 50)


def _turn(action: str, action_input: Any, tokens: tuple[int, int], latency_ms: int = 0) -> dict[str, Any]:
    block = json.dumps({"action": action, "action_input": action_input})
    return {
        "content": f"Thought: next step.\n```json\n{block}\n```",
        "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1]},
        "latency_ms": latency_ms,
    }


# A question with this word makes the lead ask the researcher slowly: the researcher then takes
# `slow_latency_ms` to answer, so a test can act while the child runs.
SLOW = "slowly"


def _lead_turns(question: str) -> list[dict[str, Any]]:
    return [
        _turn("researcher", {"question": question}, LEAD_TURN_TOKENS),
        _turn("Final Answer", PARENT_ANSWER, LEAD_TURN_TOKENS),
    ]


def delegating_config(*, slow_latency_ms: int = 3000, **sections: Any) -> dict[str, Any]:
    """`lead` (the default profile) delegates to `researcher`, which answers at once, or after
    `slow_latency_ms` when the run's question says `slowly`."""
    lead = {
        "provider": "scripted",
        "scenarios": [{"match": SLOW, "turns": _lead_turns(f"{QUESTION} ({SLOW})")}, {"turns": _lead_turns(QUESTION)}],
    }
    scholar = {
        "provider": "scripted",
        "scenarios": [
            {"match": SLOW, "turns": [_turn("Final Answer", CHILD_ANSWER, RESEARCHER_TURN_TOKENS, slow_latency_ms)]},
            {"turns": [_turn("Final Answer", CHILD_ANSWER, RESEARCHER_TURN_TOKENS)]},
        ],
    }
    react = {"strategy": "react", "protocol": "react_json"}
    return {
        "models": {"lead": lead, "scholar": scholar},
        "profiles": {
            "lead": {"model": "lead", **react, "agents": ["researcher"], "limits": {"max_execution_seconds": 300}},
            "researcher": {"model": "scholar", **react, "description": "Finds facts and cites them."},
        },
        "default_profile": "lead",
        **sections,
    }
