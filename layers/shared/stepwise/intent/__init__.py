"""Intent classification with the semantics of the Higress `ai-intent` plugin, and routing to profiles.

The names below are imported on first use: the API imports `question` and `routing` for every run,
while the classifier (and through it the model clients, httpx and PyYAML) is needed only when the
configuration has an `intent:` section.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stepwise.intent.classifier import IntentClassifier, IntentResult, IntentSource
    from stepwise.intent.keywords import KeywordMatcher
    from stepwise.intent.parsing import parse_intent
    from stepwise.intent.prompt import DEFAULT_PROMPT, render_prompt
    from stepwise.intent.question import extract_question
    from stepwise.intent.routing import check_routes, route_profile

_MODULE_OF = {
    "IntentClassifier": "classifier",
    "IntentResult": "classifier",
    "IntentSource": "classifier",
    "KeywordMatcher": "keywords",
    "parse_intent": "parsing",
    "DEFAULT_PROMPT": "prompt",
    "render_prompt": "prompt",
    "extract_question": "question",
    "check_routes": "routing",
    "route_profile": "routing",
}

__all__ = [
    "DEFAULT_PROMPT",
    "IntentClassifier",
    "IntentResult",
    "IntentSource",
    "KeywordMatcher",
    "check_routes",
    "extract_question",
    "parse_intent",
    "render_prompt",
    "route_profile",
]


def __getattr__(name: str) -> Any:
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_MODULE_OF[name]}"), name)
