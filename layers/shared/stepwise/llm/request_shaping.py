"""A request shaped by the model's parameter rules before it leaves, so the provider does not refuse it.

Providers refuse whole requests for one field they do not take (Claude 4.5 and later: `temperature` and
`top_p` together; OpenAI's reasoning models: any sampling field; every model: an output cap above its
largest output). The catalog says which rules a model has (`stepwise/config/model_catalog.yaml`); this
module drops or cuts what breaks them and says what it did, for the step's trace.
"""

from __future__ import annotations

from stepwise.config.model_catalog import ModelFacts, SamplingField
from stepwise.models.messages import ChatRequest


def _is_set(request: ChatRequest, field: SamplingField) -> bool:
    if field == "temperature":
        return request.temperature is not None
    if field == "stop":
        return bool(request.stop)
    return getattr(request.sampling, field, None) is not None


def _without(request: ChatRequest, field: SamplingField) -> ChatRequest:
    if field == "temperature":
        return request.model_copy(update={"temperature": None})
    if field == "stop":
        return request.model_copy(update={"stop": []})
    if field in type(request.sampling).model_fields:
        return request.model_copy(update={"sampling": request.sampling.model_copy(update={field: None})})
    return request


def shaped_request(
    request: ChatRequest, facts: ModelFacts | None, *, reasoning: bool = False
) -> tuple[ChatRequest, list[str]]:
    """`request` without the fields the model refuses, its output cap cut to the model's largest output,
    and a note per change ("top_p dropped: ..."); unchanged for a model the catalog does not know.

    `reasoning` is true when the call turns the model's reasoning (extended thinking) on.
    """
    if facts is None:
        return request, []
    notes: list[str] = []
    refused: list[SamplingField] = list(facts.rules.unsupported)
    if reasoning:
        refused += facts.rules.unsupported_when_reasoning
    for field in dict.fromkeys(refused):
        if _is_set(request, field):
            request = _without(request, field)
            notes.append(f"{field} dropped: {facts.name} does not take it")
    for group in facts.rules.exclusive:
        sent = [field for field in group if _is_set(request, field)]
        for field in sent[1:]:
            request = _without(request, field)
            notes.append(f"{field} dropped: {facts.name} takes only one of {', '.join(group)}")
    cap = facts.max_output_tokens
    if cap is not None and request.max_tokens is not None and request.max_tokens > cap:
        notes.append(f"max_tokens cut from {request.max_tokens} to {cap}, the largest output of {facts.name}")
        request = request.model_copy(update={"max_tokens": cap})
    return request, notes


def configured_temperature(configured: float | None, facts: ModelFacts | None) -> float | None:
    """A model entry's own `temperature`, the fallback of a request that sets none: None where the model
    refuses the field outright, so a dropped temperature does not come back from the configuration."""
    if facts is not None and "temperature" in facts.rules.unsupported:
        return None
    return configured
