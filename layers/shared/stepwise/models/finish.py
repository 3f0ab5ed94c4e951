"""The finish reasons a step acts on, as providers send them (the completion keeps the provider's own word)."""

# A reply cut at the output cap: OpenAI-compatible `length`, Bedrock Converse `max_tokens`.
TRUNCATED_FINISH_REASONS = frozenset({"length", "max_tokens"})
# Converse's word for a tool call or reply the model wrote wrong.
MALFORMED_FINISH_REASONS = frozenset({"malformed_tool_use", "malformed_model_output"})
# What a provider's 200 with no choice at all (`choices: []`) is read as.
EMPTY_REPLY = "empty"
