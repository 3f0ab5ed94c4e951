"""Provider payloads read defensively: response dicts to a `Completion`, tool dicts to `ToolSpec`.

Shapes read: OpenAI ``chat.completion`` (and a bare assistant message), OpenAI Responses API responses (an
``output`` list of items), Bedrock Converse responses, Anthropic messages, Gemini's generateContent and Interactions
responses (see `gemini_replies`), Mistral's Conversations API (see `mistral_conversations`), DashScope's and
Ollama's native responses (chat and generate), Meta's Llama API (``completion_message``), Cloudflare Workers AI's
calls (``result.tool_calls``), Cohere's chat (v1 and v2), the text-only bodies of legacy completion APIs and
Bedrock's InvokeModel (see `text_envelopes`), their reasoning kept apart from the text (see `reasoning_fields`);
tools in OpenAI, Anthropic, Bedrock or our own shape. Nothing here raises on a malformed payload: a response gives a
`ParseError`, an unreadable tool is skipped.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from stepwise.models.decision import ParseError
from stepwise.models.finish import FILTERED_FINISH_REASONS
from stepwise.models.messages import Completion, ReasoningBlock, ToolSpec
from stepwise.protocols.arguments import decode_arguments
from stepwise.protocols.content_blocks import blocks_text, is_server_tool_use, server_tool_names
from stepwise.protocols.gemini_replies import completion_from_gemini, completion_from_interaction, is_interaction
from stepwise.protocols.mistral_conversations import completion_from_conversation, is_conversation
from stepwise.protocols.reasoning_fields import reasoning_from_blocks, reasoning_from_message
from stepwise.protocols.reply_parts import RawCall, build_completion, part_texts
from stepwise.protocols.text_envelopes import envelope_text


def completion_from_response(response: dict[str, Any], call_id_prefix: str = "call") -> Completion | ParseError:
    """A provider response dict as a `Completion` keeping the provider's word for why the reply ended, or a
    `ParseError` saying why it cannot be read."""
    read = _read(response, call_id_prefix)
    if isinstance(read, Completion) and read.finish_reason is None:
        return read.model_copy(update={"finish_reason": stop_reason(response)})
    return read


def _read(response: dict[str, Any], call_id_prefix: str) -> Completion | ParseError:
    if "choices" in response:
        choices = response["choices"]
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, dict) else None
        if not isinstance(message, dict):
            legacy = envelope_text(response)
            if legacy is not None:
                return Completion(content=legacy)
            if isinstance(first, dict) and _is_filtered(first.get("finish_reason")):
                # A choice the provider's filter withheld before any message (Azure OpenAI's): an empty reply.
                return Completion(content="")
            return ParseError(message="The response has no choices[0].message.")
        return _from_openai_message(message, call_id_prefix)
    if is_interaction(response):
        return completion_from_interaction(response, call_id_prefix)
    if is_conversation(response):
        return completion_from_conversation(response, call_id_prefix)
    if isinstance(response.get("output"), list):
        # OpenAI's Responses API items, or Replicate's pieces of text
        pieces = envelope_text(response)
        return (
            Completion(content=pieces)
            if pieces is not None
            else _from_response_items(response["output"], call_id_prefix)
        )
    if "output" in response:
        return _from_output(response["output"], call_id_prefix)
    if isinstance(response.get("candidates"), list) or isinstance(response.get("promptFeedback"), dict):
        return completion_from_gemini(response, call_id_prefix)
    if isinstance(response.get("completion_message"), dict):
        # Meta's Llama API (and Llama Stack's inference API): {"completion_message": {"content", "tool_calls",
        # "stop_reason"}, "metrics"}
        return _from_openai_message(response["completion_message"], call_id_prefix)
    if isinstance(response.get("message"), dict):
        # Ollama's own API: {"model", "message": {"role", "content", "thinking", "tool_calls"}, "done"}
        return _from_openai_message(response["message"], call_id_prefix)
    if isinstance(response.get("response"), str) and "done" in response:
        # Ollama's generate API: {"model", "response", "thinking", "done"}
        return Completion(content=response["response"], reasoning=reasoning_from_message(response))
    if isinstance(response.get("content"), list):
        return _from_blocks(response["content"], call_id_prefix)
    if isinstance(response.get("text"), str) and "content" not in response:
        # Cohere's chat API v1: {"text", "tool_calls": [{"name", "parameters"}], "finish_reason"}
        return _from_openai_message({**response, "content": response["text"]}, call_id_prefix)
    if isinstance(response.get("content"), str | None) and ("content" in response or "tool_calls" in response):
        return _from_openai_message(response, call_id_prefix)
    result = response.get("result")
    if isinstance(result, dict) and isinstance(result.get("tool_calls"), list):
        # Cloudflare Workers AI: {"result": {"response", "tool_calls": [{"name", "arguments"}]}, "success"}
        message = {"content": result.get("response"), "tool_calls": result["tool_calls"]}
        return _from_openai_message(message, call_id_prefix)
    text = envelope_text(response)
    if text is not None:
        return Completion(content=text)
    error = _provider_error(response)
    if error is not None:
        return ParseError(message=f"The provider answered with an error, not a reply: {error}")
    return ParseError(message="The response is not in a known provider format.")


def _provider_error(response: dict[str, Any]) -> str | None:
    """The message of an error body sent where a reply was expected (``error.message``, Google's and OpenAI's
    shape, or ``error`` as text), at most 300 characters; None for any other body."""
    error = response.get("error")
    message = error.get("message") if isinstance(error, dict) else error
    return message.strip()[:300] if isinstance(message, str) and message.strip() else None


def _is_filtered(reason: Any) -> bool:
    """True for a finish reason that says the provider's filter withheld the reply."""
    return isinstance(reason, str) and reason in FILTERED_FINISH_REASONS


# Where each provider says why its reply ended, as a path of keys: OpenAI-compatible chat and DashScope,
# Anthropic, Bedrock Converse, Cohere, Ollama, and the Responses API's reason for an incomplete response.
_STOP_PATHS: tuple[tuple[str | int, ...], ...] = (
    ("choices", 0, "finish_reason"),
    ("output", "choices", 0, "finish_reason"),
    ("completion_message", "stop_reason"),
    ("stop_reason",),
    ("stopReason",),
    ("finish_reason",),
    ("done_reason",),
    ("incomplete_details", "reason"),
)


def stop_reason(response: dict[str, Any]) -> str | None:
    """The provider's own word for why its reply ended, or None; a Responses API response that failed or was
    cut is its status."""
    for path in _STOP_PATHS:
        value: Any = response
        for step in path:
            if isinstance(step, int):
                value = value[step] if isinstance(value, list) and len(value) > step else None
            else:
                value = value.get(step) if isinstance(value, dict) else None
        if isinstance(value, str) and value:
            return value
    status = response.get("status")
    return status if status in ("failed", "incomplete", "cancelled") else None


# Responses API items of calls the caller runs (a function, a custom tool, or a computer, shell or patch the caller
# drives); every other ``*_call`` item is a tool the provider ran itself (OpenAI's web and file search, code
# interpreter, image generation, MCP; xAI's X search): its result is in the response, nothing to call.
_CALLER_RUN_ITEMS = frozenset(
    {"function_call", "custom_tool_call", "computer_call", "local_shell_call", "shell_call", "apply_patch_call"}
)


def _from_response_items(items: list[Any], call_id_prefix: str) -> Completion | ParseError:
    """The OpenAI Responses API's ``output`` items: ``message`` (its text parts, else its refusal), ``function_call``
    and ``custom_tool_call`` (calls to make, named by their ``call_id``), ``reasoning`` (its summary and text)
    and the items of tools OpenAI ran itself (recorded, not called). Messages apart are paragraphs apart."""
    texts: list[str] = []
    calls: list[RawCall] = []
    thoughts: list[ReasoningBlock] = []
    server_tools: list[str] = []
    for item in [item for item in items if isinstance(item, dict)]:
        kind = item.get("type")
        call_id = item.get("call_id") or item.get("id")
        if kind == "message":
            texts.append(openai_text(item.get("content")) or openai_refusal(item) or "")
        elif kind == "function_call":
            calls.append((call_id, item.get("name"), item.get("arguments")))
        elif kind == "custom_tool_call":
            calls.append((call_id, item.get("name"), custom_arguments(item.get("input"))))
        elif kind == "reasoning":
            thought = "\n\n".join(part_texts(item.get("summary")) + part_texts(item.get("content")))
            thoughts.extend([ReasoningBlock(text=thought)] if thought else [])
        elif isinstance(kind, str) and kind.endswith("_call") and kind not in _CALLER_RUN_ITEMS:
            server_tools.append(kind.removesuffix("_call"))
    completion = build_completion("\n\n".join(text for text in texts if text), calls, call_id_prefix, thoughts)
    if isinstance(completion, Completion):
        return completion.model_copy(update={"server_tools": server_tools})
    return completion


def _from_output(output: Any, call_id_prefix: str) -> Completion | ParseError:
    """An ``output`` envelope: Bedrock Converse (``output.message``) or DashScope's native API
    (``output.choices[0].message`` with the ``message`` result format, ``output.text`` with ``text``).
    """
    if not isinstance(output, dict):
        return ParseError(message="The response output is not an object.")
    message = output.get("message")
    if isinstance(message, dict):
        return _from_blocks(message.get("content"), call_id_prefix)
    choices = output.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    if isinstance(first, dict) and isinstance(first.get("message"), dict):
        return _from_openai_message(first["message"], call_id_prefix)
    if isinstance(output.get("text"), str):
        return Completion(content=output["text"], reasoning=reasoning_from_message(output))
    return ParseError(message="The response has no output.message, output.choices or output.text.")


def _from_openai_message(message: dict[str, Any], call_id_prefix: str) -> Completion | ParseError:
    """An OpenAI assistant message: content (text or parts), tool_calls, or a legacy function_call."""
    # Cohere's v2 chat writes what it means to do with its calls as a tool_plan beside them.
    content = (
        openai_text(message.get("content"))
        or openai_refusal(message)
        or openai_transcript(message)
        or _tool_plan(message)
    )
    calls: list[RawCall] = []
    raw_calls = message.get("tool_calls")
    # An entry that is not an object names nothing to call: skipped, as the OpenAI SDK would keep it unread.
    for raw in [raw for raw in raw_calls if isinstance(raw, dict)] if isinstance(raw_calls, list) else []:
        custom = custom_call(raw)
        if custom is not None:
            calls.append((raw.get("id"), *custom))
            continue
        function = raw.get("function", raw)
        function = function if isinstance(function, dict) else {}
        # Cohere's v1 chat names the arguments "parameters"; Llama Stack names the call "tool_name" and its id
        # "call_id"
        arguments = function.get("arguments", function.get("parameters"))
        calls.append((raw.get("id", raw.get("call_id")), function.get("name", raw.get("tool_name")), arguments))
    legacy = message.get("function_call")
    if isinstance(legacy, dict):
        calls.append((None, legacy.get("name"), legacy.get("arguments")))
    completion = build_completion(content, calls, call_id_prefix, reasoning_from_message(message))
    executed = message.get("executed_tools")
    if isinstance(completion, Completion) and isinstance(executed, list):
        # Groq's compound systems list the tools they ran themselves (search, code, visits) beside the answer.
        ran = [str(tool.get("type") or tool.get("name") or "unnamed") for tool in executed if isinstance(tool, dict)]
        return completion.model_copy(update={"server_tools": ran})
    return completion


def _tool_plan(message: dict[str, Any]) -> str:
    plan = message.get("tool_plan")
    return plan if isinstance(plan, str) and message.get("tool_calls") else ""


def custom_call(call: dict[str, Any]) -> tuple[Any, dict[str, Any]] | None:
    """The name and arguments of an OpenAI custom tool call (``type: custom``, ``custom: {name, input}``,
    gpt-5's free-form tools), or None for any other call. Its input is a string: a JSON object written there
    is the arguments, any other text is ``{"input": text}``."""
    custom = call.get("custom")
    if call.get("type") != "custom" or not isinstance(custom, dict):
        return None
    return custom.get("name"), custom_arguments(custom.get("input"))


def custom_arguments(raw: Any) -> dict[str, Any]:
    """A custom tool's input (a string) as arguments: a JSON object written there, else ``{"input": text}``."""
    text = raw if isinstance(raw, str) else ""
    decoded = decode_arguments(text) if text.strip().startswith("{") else None
    return decoded if isinstance(decoded, dict) else {"input": text}


def openai_text(content: Any) -> str:
    """OpenAI message content as text: a string, or the text of a list of parts (``{"type": "text", "text":
    ...}``, ``output_text`` ones, bare strings) or of one part alone (Meta's Llama API); a part with a null
    text, a refusal, an image or thinking part adds nothing, and anything else (null included) is no text."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return _part_text(content)
    if not isinstance(content, list):
        return ""
    return "".join(_part_text(part) for part in content)


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict) or part.get("type", "text") not in ("text", "output_text"):
        return ""
    text = part.get("text")
    return text if isinstance(text, str) else ""


def openai_refusal(message: dict[str, Any]) -> str | None:
    """An OpenAI message's refusal: its `refusal` field, or the text of its refusal parts; None without one."""
    if isinstance(message.get("refusal"), str) and message["refusal"]:
        return str(message["refusal"])
    content = message.get("content")
    parts = content if isinstance(content, list) else []
    refusals = [
        part["refusal"]
        for part in parts
        if isinstance(part, dict) and part.get("type") == "refusal" and isinstance(part.get("refusal"), str)
    ]
    return "".join(refusals) or None


def openai_transcript(message: dict[str, Any]) -> str:
    """The transcript of an OpenAI message's spoken reply (``audio.transcript``, the audio modality's text), or
    "" without one."""
    audio = message.get("audio")
    transcript = audio.get("transcript") if isinstance(audio, dict) else None
    return transcript if isinstance(transcript, str) else ""


def _from_blocks(blocks: Any, call_id_prefix: str) -> Completion | ParseError:
    """Content blocks of Bedrock Converse (``text`` / ``citationsContent`` / ``toolUse``) or Anthropic
    (``text`` / ``tool_use``); their reasoning blocks (``reasoningContent``, ``thinking``) are kept apart, and
    tools the provider ran itself (``server_tool_use``) are not calls to make."""
    if not isinstance(blocks, list):
        return ParseError(message="The response message has no content blocks.")
    calls: list[RawCall] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        tool_use = block.get("toolUse")
        if isinstance(tool_use, dict) and not is_server_tool_use(tool_use):
            calls.append((tool_use.get("toolUseId"), tool_use.get("name"), tool_use.get("input")))
        elif block.get("type") == "tool_use":
            calls.append((block.get("id"), block.get("name"), block.get("input")))
    completion = build_completion(blocks_text(blocks), calls, call_id_prefix, reasoning_from_blocks(blocks))
    if isinstance(completion, Completion):
        return completion.model_copy(update={"server_tools": server_tool_names(blocks)})
    return completion


def tool_specs_from(tools: list[ToolSpec] | list[dict[str, Any]] | None) -> list[ToolSpec] | None:
    """Tools given as `ToolSpec` or as OpenAI, Anthropic, Bedrock or plain dicts; unreadable ones skipped."""
    if tools is None:
        return None
    specs: list[ToolSpec] = []
    for tool in tools:
        spec = tool if isinstance(tool, ToolSpec) else _tool_spec(tool)
        if spec is not None:
            specs.append(spec)
    return specs


def _tool_spec(tool: Any) -> ToolSpec | None:
    """One tool dict in any of the known shapes, or None."""
    if not isinstance(tool, dict):
        return None
    for wrapper in ("function", "toolSpec"):
        if isinstance(tool.get(wrapper), dict):
            tool = tool[wrapper]
    schema = tool.get("parameters", tool.get("input_schema", tool.get("inputSchema")))
    if isinstance(schema, dict) and isinstance(schema.get("json"), dict):
        schema = schema["json"]
    fields: dict[str, Any] = {"name": tool.get("name"), "description": tool.get("description") or ""}
    if isinstance(schema, dict):
        fields["parameters"] = schema
    try:
        return ToolSpec.model_validate(fields)
    except ValidationError:
        return None
