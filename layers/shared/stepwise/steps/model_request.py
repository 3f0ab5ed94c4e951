"""What one model call of a run's loop is made of: its profile, options, offered tools and output cap, and
how its request is built from a history. LLMCall builds the request it sends; Compact builds the same one to
know how large it is before and after a summary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from stepwise.config.context import ContextLimits
from stepwise.config.reasoning import ReasoningSetting, resolve_reasoning
from stepwise.models.messages import ChatMessage, ChatRequest, ReasoningPassBack, ReasoningRequest, ToolSpec
from stepwise.models.run import RunOptions, StoredMessage
from stepwise.models.state import RunContext, StatePayload
from stepwise.steps.agent import AgentRun, RunAgent, agent_for
from stepwise.steps.learned_window import run_limits
from stepwise.steps.runtime import StepRuntime
from stepwise.store.history import Conversation

if TYPE_CHECKING:
    from stepwise.config.model import AgentProfile

_T = TypeVar("_T")


def request_history(history: list[StoredMessage], max_parallel_calls: int) -> list[ChatMessage]:
    """The stored conversation as the protocol gets it, with a result for every tool call.

    Calls beyond `max_parallel_calls` were dropped by Parse and never run; providers refuse a tool
    call without a result, so each gets one saying it was not run.
    """
    # Per iteration: servers that omit call ids get positional ones, repeated from one reply to the next.
    answered = {(message.iteration, message.tool_call_id) for message in history if message.role == "tool"}
    rendered: list[ChatMessage] = []
    unanswered: list[ChatMessage] = []
    for message in history:
        if message.role != "tool":
            rendered.extend(unanswered)
            unanswered = []
        rendered.append(ChatMessage.model_validate(message.model_dump(exclude={"iteration", "slot"})))
        if message.role == "assistant":
            unanswered = [
                ChatMessage(
                    role="tool",
                    content=f"Not run: at most {max_parallel_calls} tool calls are run per reply. "
                    "Call it again if you still need it.",
                    tool_call_id=call.id,
                    name=call.name,
                )
                for call in message.tool_calls
                if (message.iteration, call.id) not in answered
            ]
    rendered.extend(unanswered)
    return rendered


def effective_tool_choice(tool_choice: str | None, history: list[StoredMessage]) -> str | None:
    """The tool_choice of this call: a forcing one (`required` or a tool name) holds until the run's
    first tool call, then `auto`, so a forced model can still give its answer instead of looping to the
    iteration limit.
    """
    forcing = tool_choice is not None and tool_choice not in ("auto", "none")
    if forcing and any(message.iteration > 0 and message.tool_calls for message in history):
        return "auto"
    return tool_choice


def _first_set(*values: _T | None) -> _T | None:
    return next((value for value in values if value is not None), None)


def _at_most(asked: int | None, largest: int | None) -> int | None:
    return asked if asked is None or largest is None else min(asked, largest)


# OpenAI's efforts on the profile's scale: `none` is `enabled: false`, those past `high` are `high`.
_ASKED_EFFORTS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}


def reasoning_setting(profile: AgentProfile, options: RunOptions) -> ReasoningSetting | None:
    """The profile's thinking, with the effort a request asked for (`reasoning_effort`) over the profile's."""
    asked = options.sampling.reasoning_effort
    if profile.reasoning is None or asked is None:
        return profile.reasoning
    if asked == "none":
        return profile.reasoning.model_copy(update={"enabled": False, "effort": None, "budget_tokens": None})
    return profile.reasoning.model_copy(update={"effort": _ASKED_EFFORTS.get(asked, "medium"), "enabled": True})


@dataclass(frozen=True)
class ModelTurn:
    """One model call of the loop, up to its history: who is asked, with which tools and options."""

    agent: RunAgent
    options: RunOptions
    tools: list[ToolSpec]
    tool_choice: str | None
    final_round: bool
    limits: ContextLimits
    # The output cap asked for, with room for the thinking when the profile thinks (`resolve_reasoning`)
    asked_max_tokens: int | None
    # The thinking as the model's catalog entry says to ask for it, and how the model wants it back
    reasoning: ReasoningRequest | None = None
    reasoning_pass_back: ReasoningPassBack = "none"
    # The model entry's temperature, so the model's parameter rules see it as they see the profile's
    model_temperature: float | None = None

    @property
    def thinking(self) -> bool:
        """True when this call asks the model to think (the provider's rules for thinking then apply)."""
        return self.reasoning is not None and self.reasoning.enabled

    def build(self, history: list[ChatMessage], max_tokens: int | None, *, turns_before: int = 0) -> ChatRequest:
        """The request for `history`, as the profile's protocol renders it, with the client's options."""
        profile = self.agent.profile
        options = self.options
        request = self.agent.protocol.build_request(
            system_prompt=profile.system_prompt,
            history=history,
            tools=self.tools,
            final_round=self.final_round,
            tool_choice=self.tool_choice,
            parallel_tool_calls=_first_set(options.parallel_tool_calls, profile.parallel_tool_calls),
            max_tokens=max_tokens,
            temperature=_first_set(options.temperature, profile.temperature, self.model_temperature),
            language=profile.language,
        )
        # The protocol's own stop sequences (ReAct's "Observation:") stay; the client's are added.
        stop = list(dict.fromkeys(request.stop + options.stop))
        sampling = options.sampling
        if self.reasoning is not None:
            # Folded into the reasoning request, which sends it in the model's own field.
            sampling = sampling.model_copy(update={"reasoning_effort": None})
        return request.model_copy(
            update={
                "sampling": sampling,
                "stop": stop,
                "turns_before": turns_before,
                "reasoning": self.reasoning,
                "reasoning_pass_back": self.reasoning_pass_back,
            }
        )


def model_turn(payload: StatePayload, run: RunContext, conversation: Conversation, runtime: StepRuntime) -> ModelTurn:
    """The model call of `payload`'s iteration, from the run's profile and the options its request set.

    The output cap asked for is the request's, else the profile's or the model's entry's (with room for the
    profile's thinking: `resolve_reasoning`), never above the model's largest output; LLMCall lowers it to
    what the window leaves. Nothing asked, nothing is sent (but a thinking model's room): the provider then
    bounds the reply by what its window leaves, which is safer than a cap from the catalog when a server
    runs the model with a shorter window (vLLM's `--max-model-len`) than the catalog says.
    """
    stored_options = RunOptions.model_validate_json(conversation.options) if conversation.options else None
    agent = agent_for(AgentRun(run.profile, stored_options), runtime)
    profile = agent.profile
    options = stored_options or RunOptions()
    history = conversation.messages
    tool_choice = effective_tool_choice(options.tool_choice or profile.tool_choice, history)
    limits = run_limits(runtime, run)
    model_config = runtime.config.models[profile.model]
    model_max_tokens = getattr(model_config, "max_tokens", None)
    reasoning, asked_max_tokens, pass_back = resolve_reasoning(
        reasoning_setting(profile, options),
        runtime.config.model_facts(profile.model),
        _first_set(options.max_tokens, profile.max_tokens, model_max_tokens),
        provider=model_config.provider,
    )
    return ModelTurn(
        agent=agent,
        options=options,
        # Past the profile's tool-search threshold: find_tools and the tools the run found, not all of them.
        tools=agent.offered_tools(history, tool_choice),
        tool_choice=tool_choice,
        final_round=payload.final_round,
        limits=limits,
        asked_max_tokens=_at_most(asked_max_tokens, limits.max_output),
        reasoning=reasoning,
        reasoning_pass_back=pass_back,
        model_temperature=getattr(model_config, "temperature", None),
    )
