"""A strict OpenAI-compatible fake: it refuses what the real provider refuses, with the provider's own body.

The rules come from the model catalog entry of the model it plays (stepwise/config/model_catalog.yaml),
which is checked against the providers' documentation: fields the model does not take, fields it takes only
one of, the name of the output cap, and the context window (a request longer than the window, estimated at
four characters a token, is refused as the provider refuses it). Refusals are the recorded error bodies of
tests/fixtures/providers/error_bodies.yaml.

    with strict_openai_server("gpt-5-mini") as server:
        ...  # a request with `temperature` is refused 400 unsupported_parameter
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from stepwise.config.model_catalog import packaged_catalog
from tests.support.openai_server import FakeOpenAIServer, ScriptedReply
from tests.support.provider_errors import recorded_error

ErrorStyle = Literal["openai", "vllm", "anthropic"]
_CHARS_PER_TOKEN = 4


def estimated_tokens(body: dict[str, Any]) -> int:
    """The request's prompt size as the fake counts it: four characters a token of messages and tools."""
    prompt = json.dumps([body.get("messages", []), body.get("tools", [])], ensure_ascii=False)
    return len(prompt) // _CHARS_PER_TOKEN


@dataclass(frozen=True)
class ProviderRules:
    """What the provider enforces for one model."""

    context_window: int
    max_output_tokens: int | None = None
    unsupported: tuple[str, ...] = ()
    exclusive: tuple[tuple[str, ...], ...] = ()
    max_tokens_field: str = "max_tokens"
    error_style: ErrorStyle = "openai"
    model: str = "fake-model"
    refused: list[str] = field(default_factory=list)

    @classmethod
    def for_model(
        cls, model_id: str, *, error_style: ErrorStyle = "openai", context_window: int | None = None
    ) -> ProviderRules:
        """The rules the catalog gives `model_id` (a smaller `context_window` makes overflow cheap to reach)."""
        facts = packaged_catalog().lookup(model_id)
        if facts is None:
            raise LookupError(f"the model catalog has no entry for {model_id}")
        return cls(
            context_window=context_window or facts.context_window or 8192,
            max_output_tokens=facts.max_output_tokens,
            unsupported=tuple(facts.rules.unsupported),
            exclusive=tuple(tuple(group) for group in facts.rules.exclusive),
            max_tokens_field=facts.rules.max_tokens_field,
            error_style=error_style,
            model=model_id,
        )

    def refusal(self, body: Any) -> ScriptedReply | None:
        """The provider's refusal of `body`, or None when the provider would answer it."""
        if not isinstance(body, dict):
            return None
        for name in self.unsupported:
            if _sent(body, name):
                return self._refuse("unsupported_parameter", field=name)
        other_cap = "max_tokens" if self.max_tokens_field == "max_completion_tokens" else None
        if other_cap and other_cap in body:
            return self._refuse("unsupported_parameter", field=other_cap)
        for group in self.exclusive:
            if sum(1 for name in group if _sent(body, name)) > 1:
                return self._refuse("temperature_and_top_p", field="top_p")
        tokens = estimated_tokens(body)
        cap = body.get(self.max_tokens_field) or 0
        if tokens + cap > self.context_window:
            return self._refuse("context_length_exceeded", tokens=tokens, window=self.context_window, max_tokens=cap)
        return None

    def _refuse(self, kind: str, **values: Any) -> ScriptedReply:
        self.refused.append(kind)
        style = self.error_style
        if kind == "temperature_and_top_p":
            style = "anthropic"
        elif kind == "context_length_exceeded" and style == "anthropic":
            kind = "prompt_too_long"
        elif kind == "unsupported_parameter":
            style = "openai"
        recorded = recorded_error(style, kind, model=self.model, **values)
        return ScriptedReply(status=recorded["status"], body=recorded["body"])


def _sent(body: dict[str, Any], name: str) -> bool:
    return body.get(name) is not None and body.get(name) != []


def strict_openai_server(rules: ProviderRules) -> FakeOpenAIServer:
    """A fake OpenAI-compatible server on loopback that refuses what `rules` forbid (start it with `with`)."""
    return FakeOpenAIServer(validator=rules.refusal)
