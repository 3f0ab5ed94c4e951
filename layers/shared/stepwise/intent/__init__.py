"""Intent classification with the semantics of the Higress `ai-intent` plugin, and routing to profiles."""

from stepwise.intent.classifier import IntentClassifier, IntentResult, IntentSource
from stepwise.intent.keywords import KeywordMatcher
from stepwise.intent.parsing import parse_intent
from stepwise.intent.prompt import DEFAULT_PROMPT, render_prompt
from stepwise.intent.question import extract_question
from stepwise.intent.routing import check_routes, route_profile

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
