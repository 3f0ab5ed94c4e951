"""The text of completion APIs that answer with text alone, no message: the legacy completion endpoints and the
model-family bodies of Bedrock's InvokeModel.

Read: OpenAI's completions (``choices[0].text``), Anthropic's Text Completions and Claude v2 on Bedrock
(``completion``), Amazon Titan Text (``results[0].outputText``), Meta Llama on Bedrock (``generation``), Mistral on
Bedrock (``outputs[0].text``), Cohere's Generate API and Command on Bedrock (``generations[0].text``), AI21
Jurassic (``completions[0].data.text``), Aleph Alpha's complete API (``completions[0].completion``), Hugging Face
TGI (``generated_text``), IBM watsonx.ai (``results[0].generated_text``), Cloudflare Workers AI
(``result.response``) and Replicate (``output``, a list of the pieces the model wrote), as each provider documents
its response body.
"""

from __future__ import annotations

from typing import Any

# (the key holding a list, the path inside its first item) per API whose text sits in the first of several.
_FIRST_OF: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("choices", ("text",)),
    ("results", ("outputText",)),
    ("results", ("generated_text",)),
    ("outputs", ("text",)),
    ("generations", ("text",)),
    ("completions", ("data", "text")),
    ("completions", ("completion",)),
)
# Keys whose value is the whole text.
_WHOLE = ("completion", "generation", "generated_text")


def envelope_text(response: dict[str, Any]) -> str | None:
    """The text of a text-only completion body, or None when the body is not one of those read."""
    for key in _WHOLE:
        if isinstance(response.get(key), str):
            return str(response[key])
    result = response.get("result")
    if isinstance(result, dict) and isinstance(result.get("response"), str):
        return str(result["response"])
    pieces = response.get("output")
    if isinstance(pieces, list) and pieces and all(isinstance(piece, str) for piece in pieces):
        return "".join(pieces)
    for key, path in _FIRST_OF:
        items = response.get(key)
        value: Any = items[0] if isinstance(items, list) and items else None
        for step in path:
            value = value.get(step) if isinstance(value, dict) else None
        if isinstance(value, str):
            return value
    return None
