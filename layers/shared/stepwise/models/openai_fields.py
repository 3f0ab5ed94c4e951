"""What OpenAI's chat completions request holds besides what Stepwise uses: fields it ignores, and the legacy
function-calling shape, read as today's tools.

A client written before `tools` offers `functions`, and its conversation holds an assistant `function_call`
and `function` messages; `legacy_function_messages` turns those into a tool call and its result, so the
rest of the facade knows one shape.
"""

from typing import Any

# The request fields OpenAI takes that mean nothing for an agent's run: accepted, not sent to the model,
# and named in the answer's `IGNORED_FIELDS_HEADER` when a request sets them. Audio output, predicted
# outputs, OpenAI's own web search, moderation and prompt cache and its service tiers are OpenAI features
# of one model call; the profile's model, tools and cache settings decide a run's.
IGNORED_FIELDS = (
    "user",
    "store",
    "logprobs",
    "top_logprobs",
    "service_tier",
    "modalities",
    "audio",
    "prediction",
    "web_search_options",
    "moderation",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "safety_identifier",
    "verbosity",
)
IGNORED_FIELDS_HEADER = "Stepwise-Ignored-Fields"
# The id a legacy `function_call` of an earlier assistant message gets, to be answered as a tool call.
LEGACY_CALL_ID = "call_function_{index}"


def legacy_function_messages(messages: list[Any]) -> list[Any]:
    """The conversation with legacy function calling in today's shape: an assistant `function_call` is a
    tool call (id `LEGACY_CALL_ID`), and a `function` message answers the latest call of its name."""
    converted: list[Any] = []
    latest: dict[str, str] = {}
    for index, message in enumerate(messages):
        if isinstance(message, dict) and message.get("role") == "assistant" and "function_call" in message:
            message = dict(message)
            call = message.pop("function_call")
            if call is not None:
                if message.get("tool_calls"):
                    raise ValueError(f"messages[{index}] gives both function_call and tool_calls; give one")
                call_id = LEGACY_CALL_ID.format(index=index)
                if isinstance(call, dict) and isinstance(call.get("name"), str):
                    latest[call["name"]] = call_id
                message["tool_calls"] = [{"id": call_id, "type": "function", "function": call}]
        elif isinstance(message, dict) and message.get("role") == "function":
            name = message.get("name")
            if not isinstance(name, str) or name not in latest:
                raise ValueError(
                    f"messages[{index}] is a function message for {name!r}, which no assistant function_call "
                    "before it called"
                )
            message = {**message, "role": "tool", "tool_call_id": latest[name]}
        converted.append(message)
    return converted
