"""The finish reasons a step acts on, as providers send them (the completion keeps the provider's own word)."""

# A reply cut at the output cap: OpenAI-compatible `length`, Bedrock Converse and Anthropic `max_tokens`, Gemini's
# `MAX_TOKENS`, and the Responses API's `max_output_tokens` (the reason of an incomplete response).
TRUNCATED_FINISH_REASONS = frozenset({"length", "max_tokens", "MAX_TOKENS", "max_output_tokens"})
# Converse's words for a tool call or reply the model wrote wrong, and Gemini's for a call it could not read.
MALFORMED_FINISH_REASONS = frozenset({"malformed_tool_use", "malformed_model_output", "MALFORMED_FUNCTION_CALL"})
# What a provider's 200 with no choice at all (`choices: []`) is read as.
EMPTY_REPLY = "empty"
# A reply the provider's own guardrail or content filter stopped: Bedrock Converse `guardrail_intervened` (a
# guardrail's blocked message is the text) and `content_filtered`, OpenAI-compatible `content_filter`, and
# Anthropic's `refusal` (Claude 4's streaming classifiers; the text before it is a fragment), which gateways
# that speak the OpenAI wire pass through as the finish reason; Gemini's finish and prompt block reasons for its
# filters. The run ends there with stop reason `guardrail`.
FILTERED_FINISH_REASONS = frozenset(
    {"guardrail_intervened", "content_filtered", "content_filter", "refusal"}
    | {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT"}
)
# The one whose text is the guardrail's own message, given as the answer; the others' text is what was stopped.
GUARDRAIL_MESSAGE_FINISH_REASON = "guardrail_intervened"
# The answer of a filtered reply without a message of the provider's.
FILTERED_NOTICE = "[the reply was withheld by the model provider's content filter]"
# Anthropic's word for a turn it paused in its own loop of server tools (web search, code execution): the reply is
# not finished, and the model is asked to go on.
PAUSED_FINISH_REASONS = frozenset({"pause_turn"})
