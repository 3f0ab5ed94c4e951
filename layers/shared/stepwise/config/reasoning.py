"""A profile's `reasoning:` setting: thinking turned on, and how much of it, whatever the provider.

Each provider takes thinking its own way (Claude a token budget or an effort, Nova 2 and OpenAI an effort,
Qwen3 a switch and a budget, DeepSeek a switch and an effort); the model catalog says which way a model
takes it (`ModelFacts.reasoning.control`) and `stepwise.llm.reasoning` writes the request fields. A
profile gives what it wants in one vocabulary; what a model cannot take is refused here, naming the field.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from stepwise.config.model_catalog import ModelFacts
from stepwise.models.messages import ReasoningControl, ReasoningEffort, ReasoningPassBack, ReasoningRequest

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


def reasoning_problem(setting: ReasoningSetting, facts: ModelFacts | None, max_tokens: int | None) -> str | None:
    """Why a model cannot take this setting (a sentence for the error), or None when it can."""
    if facts is None or facts.reasoning is None:
        return (
            "the model catalog does not say how this model takes reasoning: add a model_catalog entry for it "
            "with reasoning.control (see docs/configuration.md)"
        )
    control = facts.reasoning.control
    if not setting.enabled:
        return "this model always reasons: thinking cannot be turned off" if control in _ALWAYS_ON else None
    if control in _EFFORT_ONLY and setting.effort is None:
        return f"this model ({control}) takes an effort (low, medium or high), not budget_tokens alone"
    budget = setting.budget(control)
    if control == "anthropic_budget" and budget is not None and budget < MIN_ANTHROPIC_BUDGET:
        return f"budget_tokens must be at least {MIN_ANTHROPIC_BUDGET} for this model"
    if budget is not None and max_tokens is not None and max_tokens <= budget:
        return f"max_tokens ({max_tokens}) must be larger than the thinking budget ({budget}): it holds both"
    return None


def resolve_reasoning(
    setting: ReasoningSetting | None, facts: ModelFacts | None, max_tokens: int | None
) -> tuple[ReasoningRequest | None, int | None, ReasoningPassBack]:
    """The reasoning of a request, its `max_tokens` with room for the thinking, and how reasoning goes back.

    Reasoning goes back wherever the catalog says so, asked for or not: DeepSeek thinks by default.
    """
    known = facts.reasoning if facts is not None else None
    pass_back: ReasoningPassBack = known.pass_back if known is not None else "none"
    if setting is None or known is None:
        return None, max_tokens, pass_back
    budget = setting.budget(known.control)
    if budget is not None and max_tokens is None and setting.enabled:
        most = facts.max_output_tokens if facts is not None else None
        max_tokens = budget + ANSWER_ROOM_TOKENS if most is None else min(budget + ANSWER_ROOM_TOKENS, most)
    dropped = list(facts.rules.unsupported_when_reasoning) if facts is not None and setting.enabled else []
    request = ReasoningRequest(
        control=known.control,
        enabled=setting.enabled,
        effort=setting.effort,
        budget_tokens=budget,
        drop_sampling=dropped,
    )
    return request, max_tokens, pass_back


def thinking_budget(setting: ReasoningSetting | None, facts: ModelFacts | None) -> int | None:
    """The tokens a profile's thinking may take out of the output budget; None when it sets none."""
    if setting is None or facts is None or facts.reasoning is None:
        return None
    return setting.budget(facts.reasoning.control)
