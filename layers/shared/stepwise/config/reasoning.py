"""A profile's `reasoning:` setting: thinking turned on, and how much of it, whatever the provider.

Each provider takes thinking its own way (Claude a token budget or an effort, Nova 2 and OpenAI an effort,
Qwen3 a switch and a budget, DeepSeek a switch and an effort); the model catalog says which way a model
takes it (`ModelFacts.reasoning.control`) and `stepwise.llm.reasoning` writes the request fields. A
profile gives what it wants in one vocabulary; what a model cannot take is refused here, naming the field.

A model the catalog does not describe is asked the way its provider kind usually takes it
(`ASSUMED_CONTROLS`), with one warning a process naming the fields sent (`warn_assumed_reasoning`): a
self-hosted model that thinks is not refused for being unknown, and a server that takes thinking another
way gets a `model_catalog` entry.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, model_validator

from stepwise.models.messages import ReasoningControl, ReasoningEffort, ReasoningPassBack, ReasoningRequest

if TYPE_CHECKING:
    # the catalog (its models, its file) loads with the first model looked up, not with the settings' schema
    from stepwise.config.model_catalog import ModelFacts, ReasoningFacts

# Claude's smallest thinking budget (Anthropic's extended-thinking documentation).
MIN_ANTHROPIC_BUDGET = 1024
# A budget for the models that take one, when a profile gives only an effort (Stepwise's own scale).
EFFORT_BUDGETS: dict[str, int] = {"low": 1024, "medium": 4096, "high": 16384}
# The controls whose request field is an effort, and those whose field is a budget.
_EFFORT_ONLY: frozenset[ReasoningControl] = frozenset({"nova", "openai_effort", "anthropic_adaptive"})
_BUDGET_TAKING: frozenset[ReasoningControl] = frozenset({"anthropic_budget", "qwen_enable_thinking"})
# Room left for the answer when a profile sets a thinking budget but no max_tokens (which holds both).
ANSWER_ROOM_TOKENS = 4096
# Models that always think: thinking cannot be turned off by a request.
_ALWAYS_ON: frozenset[ReasoningControl] = frozenset({"openai_effort"})
# How a model the catalog does not describe is told to think, by its provider kind: OpenAI's
# `reasoning_effort` on an OpenAI-compatible endpoint (the field OpenAI, vLLM, Ollama, OpenRouter and
# LM Studio read), Claude's thinking budget on Bedrock (the family of most of its thinking models).
ASSUMED_CONTROLS: dict[str, ReasoningControl] = {"openai": "openai_effort", "bedrock": "anthropic_budget"}
_SENT_FIELDS: dict[ReasoningControl, str] = {
    "openai_effort": "reasoning_effort (OpenAI's field)",
    "anthropic_budget": "thinking: {type: enabled, budget_tokens} in additionalModelRequestFields (Claude's)",
}
# The configuration is read by every handler and command; its warning is said once a process per model.
_logger = logging.getLogger("stepwise")
_WARNED: set[str] = set()
_WARNED_LOCK = threading.Lock()


class ReasoningSetting(BaseModel):
    """`reasoning: {effort: low|medium|high, budget_tokens: N}`, or `{enabled: false}` to turn thinking off.

    `budget_tokens` counts inside the output: a request's `max_tokens` holds the thinking and the answer.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    enabled: bool = True
    effort: ReasoningEffort | None = None
    budget_tokens: int | None = Field(default=None, ge=1, le=1_000_000)

    @model_validator(mode="after")
    def _says_how_much(self) -> ReasoningSetting:
        if self.enabled and self.effort is None and self.budget_tokens is None:
            raise ValueError("give effort (low, medium or high), budget_tokens, or both; or enabled: false")
        return self

    def budget(self, control: ReasoningControl) -> int | None:
        """The thinking budget in tokens: the one given, else, for a model that takes a budget, the effort's."""
        if not self.enabled:
            return None
        if self.budget_tokens is not None:
            return self.budget_tokens
        if control in _BUDGET_TAKING and self.effort is not None:
            return EFFORT_BUDGETS[self.effort]
        return None


def reasoning_facts(facts: ModelFacts | None, provider: str) -> ReasoningFacts | None:
    """How a model takes reasoning: as its catalog entry says, else as its provider kind usually takes it
    (`ASSUMED_CONTROLS`); None for a provider that takes none (the scripted model)."""
    if facts is not None and facts.reasoning is not None:
        return facts.reasoning
    control = ASSUMED_CONTROLS.get(provider)
    if control is None:
        return None
    from stepwise.config.model_catalog import ReasoningFacts

    return ReasoningFacts(control=control)


def _assumed(facts: ModelFacts | None) -> bool:
    return facts is None or facts.reasoning is None


def reasoning_problem(
    setting: ReasoningSetting, facts: ModelFacts | None, max_tokens: int | None, *, provider: str
) -> str | None:
    """Why a model cannot take this setting (a sentence for the error), or None when it can."""
    known = reasoning_facts(facts, provider)
    if known is None:
        return f"a {provider} model takes no reasoning setting"
    control = known.control
    if not setting.enabled:
        # turning off is only refused where the catalog says the model always thinks
        return (
            "this model always reasons: thinking cannot be turned off"
            if control in _ALWAYS_ON and not _assumed(facts)
            else None
        )
    if control in _EFFORT_ONLY and setting.effort is None:
        if _assumed(facts):
            return (
                f"the model catalog does not describe this model, so its thinking is asked through "
                f"{_SENT_FIELDS[control]}, which takes an effort (low, medium or high), not budget_tokens alone: "
                "give an effort, or add a model_catalog entry with reasoning.control (see docs/configuration.md)"
            )
        return f"this model ({control}) takes an effort (low, medium or high), not budget_tokens alone"
    budget = setting.budget(control)
    if control == "anthropic_budget" and budget is not None and budget < MIN_ANTHROPIC_BUDGET:
        return f"budget_tokens must be at least {MIN_ANTHROPIC_BUDGET} for this model"
    if budget is not None and max_tokens is not None and max_tokens <= budget:
        return f"max_tokens ({max_tokens}) must be larger than the thinking budget ({budget}): it holds both"
    return None


def warn_assumed_reasoning(model: str, model_id: str, facts: ModelFacts | None, provider: str) -> None:
    """One warning a process for each model thinking is asked of in the way its provider kind assumes (a model
    the catalog does not describe): which fields are sent, and how to say otherwise."""
    known = reasoning_facts(facts, provider)
    if not _assumed(facts) or known is None:
        return
    with _WARNED_LOCK:
        if model in _WARNED:
            return
        _WARNED.add(model)
    _logger.warning(
        f"model '{model}' ({model_id}) is not in the model catalog: a profile's reasoning is sent to it as "
        f"{_SENT_FIELDS[known.control]}, as {provider} models usually take it (enabled: false sends nothing); "
        "if it takes thinking another way, add a model_catalog entry with reasoning.control (docs/configuration.md)"
    )


def resolve_reasoning(
    setting: ReasoningSetting | None, facts: ModelFacts | None, max_tokens: int | None, *, provider: str
) -> tuple[ReasoningRequest | None, int | None, ReasoningPassBack]:
    """The reasoning of a request, its `max_tokens` with room for the thinking, and how reasoning goes back.

    Reasoning goes back wherever the catalog says so, asked for or not: DeepSeek thinks by default. A model
    the catalog does not describe is asked the way its provider kind assumes (`reasoning_facts`). Without a
    setting, a model the catalog says thinks by default gets its rules for thinking (`default_thinking`).
    """
    known = reasoning_facts(facts, provider)
    pass_back: ReasoningPassBack = known.pass_back if known is not None else "none"
    if known is None:
        return None, max_tokens, pass_back
    if setting is None:
        return (*default_thinking(facts, max_tokens), pass_back)
    budget = setting.budget(known.control)
    if budget is not None and max_tokens is None and setting.enabled:
        max_tokens = _at_most_output(budget + ANSWER_ROOM_TOKENS, facts)
    dropped = list(facts.rules.unsupported_when_reasoning) if facts is not None and setting.enabled else []
    request = ReasoningRequest(
        control=known.control,
        enabled=setting.enabled,
        effort=setting.effort,
        budget_tokens=budget,
        drop_sampling=dropped,
        default_on=known.by_default,
    )
    return request, max_tokens, pass_back


def default_thinking(facts: ModelFacts | None, max_tokens: int | None) -> tuple[ReasoningRequest | None, int | None]:
    """The thinking of a call no profile asked to think: none, unless the catalog says the model thinks by
    default. Then nothing is sent to ask for it, the sampling fields it refuses while thinking are dropped,
    and its output cap holds the thinking and the answer: the thinking room of its default effort
    (`EFFORT_BUDGETS`, medium when none is documented) on top of the cap asked for, which is the answer's
    room (`ANSWER_ROOM_TOKENS` when none is), never past the model's largest output.
    """
    known = facts.reasoning if facts is not None else None
    if facts is None or known is None or not known.by_default:
        return None, max_tokens
    effort = known.default_effort or "medium"
    answer = max_tokens if max_tokens is not None else ANSWER_ROOM_TOKENS
    request = ReasoningRequest(
        control=known.control,
        effort=known.default_effort,
        drop_sampling=list(facts.rules.unsupported_when_reasoning),
        asked=False,
        default_on=True,
    )
    return request, _at_most_output(answer + EFFORT_BUDGETS[effort], facts)


def _at_most_output(tokens: int, facts: ModelFacts | None) -> int:
    most = facts.max_output_tokens if facts is not None else None
    return tokens if most is None else min(tokens, most)
