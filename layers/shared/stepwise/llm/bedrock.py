"""A chat model on Amazon Bedrock, called through the Converse API of a `bedrock-runtime` client."""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError
from pydantic import BaseModel, ValidationError

from stepwise.config.llm import BedrockModelConfig
from stepwise.config.model_catalog import ModelFacts
from stepwise.errors import ContextWindowExceeded, LLMPermanentError, LLMTransientError
from stepwise.inputs.validation_problems import describe_problems
from stepwise.llm.prompt_cache import with_cache_points
from stepwise.llm.provider_errors import bedrock_error
from stepwise.llm.reasoning import (
    allowed_tool_choice,
    converse_reasoning_blocks,
    shape_converse_params,
)
from stepwise.llm.reply_repair import RawToolCall, repaired_completion
from stepwise.llm.request_shaping import configured_temperature
from stepwise.models.messages import ChatMessage, ChatRequest, Completion, ImageInput, ToolSpec
from stepwise.protocols.content_blocks import blocks_text, is_server_tool_use, server_tool_names
from stepwise.protocols.reasoning_fields import reasoning_from_blocks
from stepwise.protocols.usage_fields import converse_usage

# Converse's stop reason when the conversation filled the model's window while it wrote.
CONTEXT_WINDOW_STOP = "model_context_window_exceeded"

# Converse rejects blank text blocks; a tool that printed nothing still needs a result block.
_EMPTY_TOOL_RESULT = "(no output)"


class _WireMessage(BaseModel):
    # Blocks are read one by one (`_text` and `_tool_use`): one the SDK would not know is skipped, not a failure.
    content: list[Any]


class _WireOutput(BaseModel):
    message: _WireMessage


class _WireConverseResponse(BaseModel):
    output: _WireOutput
    stopReason: Any = None
    # Read by `converse_usage`, which marks counts it cannot trust instead of failing the reply.
    usage: Any = None


class BedrockConverseChatModel:
    """Calls `converse` once per `complete`; the client is a boto3 `bedrock-runtime` client.

    Thinking is asked for and reasoning sent back as `stepwise.llm.reasoning` says; `reasoningContent`
    blocks of a reply are its reasoning, never its text; `citationsContent` text is; a `toolUse` the provider
    ran itself (`type: server_tool_use`, its result in the same message) is recorded, not a call to make.

    Throttling, service-side failures and connection or read timeouts raise `LLMTransientError`; other
    service errors (validation, access denied, unknown model, ...) raise `LLMPermanentError`.

    When no tools are offered (or `tool_choice` is "none", which Converse lacks), earlier tool calls
    and results are sent as text: Converse refuses `toolUse`/`toolResult` blocks without a
    `toolConfig`. `response_schema` is not sent; Converse has no JSON mode.
    """

    def __init__(
        self,
        config: BedrockModelConfig,
        *,
        client: Any,
        facts: ModelFacts | None = None,
        client_with_timeout: Callable[[float], Any] | None = None,
    ) -> None:
        """Use `client`, a boto3 `bedrock-runtime` client (the factory builds one with the timeouts).

        `facts` (the model catalog's entry) say whether and where the prompt is cached. botocore has no
        per-call timeout: `client_with_timeout(seconds)` gives a client reading for at most that long, used
        when the run's deadline is nearer than the model's timeout.
        """
        self._config = config
        self._client = client
        self._facts = facts
        self._client_with_timeout = client_with_timeout

    def complete(self, request: ChatRequest) -> Completion:
        """Send one Converse request and return the normalised completion."""
        model_id = self._config.model_id
        try:
            response = self._client_for(request).converse(**self._params(request))
        except ClientError as exc:
            raise _client_error(model_id, exc, self._client) from exc
        except (BotoConnectionError, HTTPClientError) as exc:
            raise LLMTransientError(f"model {model_id}: Bedrock unreachable ({type(exc).__name__})") from exc
        except BotoCoreError as exc:
            raise LLMPermanentError(f"model {model_id}: request not sent ({type(exc).__name__})") from exc
        try:
            wire = _WireConverseResponse.model_validate(response)
        except ValidationError as exc:
            problems = describe_problems(exc, limit=3, top_level="body")
            raise LLMTransientError(f"model {model_id}: not a Converse response ({problems})") from None
        if wire.stopReason == CONTEXT_WINDOW_STOP:
            raise ContextWindowExceeded(
                f"model {model_id}: the conversation filled the context window ({CONTEXT_WINDOW_STOP})"
            )
        blocks = [block for block in wire.output.message.content if isinstance(block, dict)]
        uses = [block["toolUse"] for block in blocks if isinstance(block.get("toolUse"), dict)]
        return repaired_completion(
            blocks_text(blocks),
            [_tool_use(use) for use in uses if not is_server_tool_use(use)],
            usage=converse_usage(wire.usage),
            model=model_id,
            finish_reason=wire.stopReason if isinstance(wire.stopReason, str) else None,
            reasoning=reasoning_from_blocks(blocks),
            server_tools=server_tool_names(blocks),
        )

    def _client_for(self, request: ChatRequest) -> Any:
        limit = request.timeout_seconds
        if limit is None or self._client_with_timeout is None or limit >= self._config.timeout_seconds:
            return self._client
        # Whole seconds, so the clients built for a run's last calls are few and reused.
        return self._client_with_timeout(max(1.0, float(math.ceil(limit))))

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        config = self._config
        use_tools = bool(request.tools) and request.tool_choice != "none"
        params: dict[str, Any] = {
            "modelId": config.model_id,
            "messages": _converse_messages(request.messages, use_tools=use_tools),
        }
        system = [{"text": m.content} for m in request.messages if m.role == "system" and m.content]
        if system:
            params["system"] = system
        inference: dict[str, Any] = {}
        max_tokens = request.max_tokens if request.max_tokens is not None else config.max_tokens
        if max_tokens is not None:
            inference["maxTokens"] = max_tokens
        temperature = (
            request.temperature
            if request.temperature is not None
            else configured_temperature(config.temperature, self._facts)
        )
        if temperature is not None:
            inference["temperature"] = temperature
        if request.stop and config.capabilities.stop_sequences:
            inference["stopSequences"] = list(request.stop)
        # Converse takes topP; penalties, logit_bias, seed and reasoning_effort have no Converse field.
        if request.sampling.top_p is not None:
            inference["topP"] = request.sampling.top_p
        if inference:
            params["inferenceConfig"] = inference
        if use_tools:
            tool_config: dict[str, Any] = {"tools": [_tool_spec(tool) for tool in request.tools]}
            tool_choice = allowed_tool_choice(request)
            if tool_choice is not None:
                tool_config["toolChoice"] = _tool_choice(tool_choice)
            params["toolConfig"] = tool_config
        shape_converse_params(params, request)
        cache = self._facts.prompt_cache if self._facts is not None else None
        if cache is not None and cache.style == "explicit":
            params = with_cache_points(params, cache)
        return params


def _tool_use(block: dict[str, Any]) -> RawToolCall:
    """A `toolUse` block as sent: missing, repeated or oversized ids and names are repaired afterwards, and an
    input that is not an object is kept for the parser to report."""
    identifier, name, arguments = block.get("toolUseId"), block.get("name"), block.get("input")
    if arguments is None:
        arguments = {}
    elif not isinstance(arguments, dict):
        arguments = {"_raw": json.dumps(arguments, ensure_ascii=False, default=str)}
    return RawToolCall(
        id=identifier if isinstance(identifier, str) else None,
        name=name if isinstance(name, str) else "",
        arguments=arguments,
    )


def _tool_spec(tool: ToolSpec) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": tool.name, "inputSchema": {"json": tool.parameters}}
    # Converse refuses an empty description; leaving it out is allowed.
    if tool.description:
        spec["description"] = tool.description
    return {"toolSpec": spec}


def _tool_choice(choice: str) -> dict[str, Any]:
    if choice == "auto":
        return {"auto": {}}
    if choice == "required":
        return {"any": {}}
    return {"tool": {"name": choice}}


def _converse_messages(messages: list[ChatMessage], *, use_tools: bool) -> list[dict[str, Any]]:
    """Canonical messages as Converse wants them: user/assistant only, alternating, no blank text.

    System messages travel separately; tool results are user content; consecutive messages of one
    role are merged into one message with several blocks.
    """
    converse: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message, use_tools=use_tools)
        if not blocks:
            continue
        if converse and converse[-1]["role"] == role:
            converse[-1]["content"].extend(blocks)
        else:
            converse.append({"role": role, "content": blocks})
    return converse


def _blocks(message: ChatMessage, *, use_tools: bool) -> list[dict[str, Any]]:
    if message.role == "tool":
        result = message.content or _EMPTY_TOOL_RESULT
        if use_tools:
            return [{"toolResult": {"toolUseId": message.tool_call_id, "content": [{"text": result}]}}]
        return [{"text": f"Result of tool call {message.tool_call_id}:\n{result}"}]
    # Claude wants a tool-use turn back with its signed thinking first, exactly as it wrote it, whether the
    # thinking was asked for or the model's default (a request that no longer thinks has it ignored).
    signed = use_tools and message.tool_calls
    blocks: list[dict[str, Any]] = converse_reasoning_blocks(message) if signed else []
    if message.content:
        blocks.append({"text": message.content})
    for image in message.images:
        blocks.append(_image_block(image))
    for call in message.tool_calls:
        if use_tools:
            blocks.append({"toolUse": {"toolUseId": call.id, "name": call.name, "input": call.arguments}})
        else:
            arguments = json.dumps(call.arguments, ensure_ascii=False)
            blocks.append({"text": f"Called tool {call.name} (call {call.id}) with {arguments}"})
    return blocks


def _image_block(image: ImageInput) -> dict[str, Any]:
    """A Converse image block: the format and the raw bytes (boto3 encodes them). The API refuses an image
    given by URL for a Bedrock model before the run starts, so only bytes arrive here."""
    if image.data is None or image.media_type is None:
        raise LLMPermanentError("Bedrock Converse takes an image's bytes, not a URL")
    return {
        "image": {"format": image.media_type.removeprefix("image/"), "source": {"bytes": base64.b64decode(image.data)}}
    }


def _client_error(model_id: str, exc: ClientError, client: Any) -> LLMTransientError | LLMPermanentError:
    # the client's Region: an invalid-id refusal of a geographic profile names it as the cause
    region = getattr(getattr(client, "meta", None), "region_name", None)
    error = exc.response.get("Error", {})
    code = str(error.get("Code", "Unknown"))
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))
    return bedrock_error(model_id, status, code, str(error.get("Message") or ""), region=region)
