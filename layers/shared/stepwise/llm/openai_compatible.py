"""A chat model behind any OpenAI-compatible `/chat/completions` endpoint, called with httpx."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from stepwise.config.llm import OpenAIModelConfig
from stepwise.config.model_catalog import ModelFacts
from stepwise.config.redaction import Redactor
from stepwise.errors import LLMPermanentError, LLMTransientError
from stepwise.inputs.json_limits import load_json
from stepwise.llm.openai_replies import NotACompletion, read_chat_completion
from stepwise.llm.prompt_cache import cache_control_messages
from stepwise.llm.provider_errors import StatedNumbers, openai_error, retry_after_seconds
from stepwise.llm.reasoning import allowed_tool_choice, openai_assistant_reasoning, shape_openai_payload
from stepwise.llm.request_shaping import configured_temperature
from stepwise.models.messages import ChatMessage, ChatRequest, Completion, ReasoningPassBack, ToolSpec

_NAMED_TOOL_CHOICES = ("auto", "required", "none")
_MAX_PROVIDER_MESSAGE = 300


class OpenAICompatibleChatModel:
    """Calls `POST {base_url}/chat/completions` once per `complete`, without retrying.

    Retries belong to the state machine (it retries `LLMTransientError` with backoff), so a failure
    is classified and raised at once: 429, 5xx, timeouts, connection errors and a 200 whose body is
    not a completion are transient; any other non-2xx status is permanent. Error messages name the
    model, the status and the provider's message, never the API key or the prompt.
    """

    def __init__(
        self, config: OpenAIModelConfig, *, http_client: httpx.Client | None = None, facts: ModelFacts | None = None
    ) -> None:
        """Use `http_client` when given (the caller closes it), else open a client owned by this model.

        `facts` (the model catalog's entry) name the output cap's field and how the prompt is cached.
        """
        self._config = config
        # The key's own redactor: it may be a literal that no resolver has seen (a short one included).
        self._redactor = Redactor([config.api_key] if config.api_key else [])
        self._facts = facts
        self._owns_client = http_client is None
        self._client = http_client if http_client is not None else httpx.Client()
        self._url = f"{config.base_url}/chat/completions"

    def close(self) -> None:
        """Close the HTTP client if this model opened it."""
        if self._owns_client:
            self._client.close()

    def complete(self, request: ChatRequest) -> Completion:
        """Send one chat completion request and return the normalised completion."""
        try:
            response = self._client.post(
                self._url,
                json=self._payload(request),
                headers=self._headers(),
                timeout=self._timeout(request),
            )
        except httpx.TimeoutException as exc:
            raise LLMTransientError(
                f"model {self._config.model}: no response within {self._timeout(request):g}s ({type(exc).__name__})"
            ) from exc
        except httpx.RequestError as exc:
            raise LLMTransientError(
                f"model {self._config.model}: request failed ({type(exc).__name__}): {self._scrub(str(exc))}"
            ) from exc
        if not response.is_success:
            raise self._status_error(response)
        return self._parse(response)

    def listed_window(self) -> int | None:
        """The context window the server lists for this model (vLLM, LM Studio, Ollama), or None."""
        from stepwise.llm.model_listing import listed_window

        return listed_window(self._client, self._config.base_url, self._config.model, self._headers())

    def _timeout(self, request: ChatRequest) -> float:
        if request.timeout_seconds is None:
            return self._config.timeout_seconds
        return min(self._config.timeout_seconds, request.timeout_seconds)

    def _headers(self) -> dict[str, str]:
        headers = {}
        if self._config.api_key:
            headers["Authorization"] = f"Bearer {self._config.api_key}"
        # Explicit headers win, so a provider that wants its key elsewhere (e.g. `api-key`) can have it.
        headers.update(self._config.headers)
        return headers

    def _payload(self, request: ChatRequest) -> dict[str, Any]:
        config = self._config
        messages = [_wire_message(message, request.reasoning_pass_back) for message in request.messages]
        facts = self._facts
        if facts is not None and facts.prompt_cache is not None and facts.prompt_cache.style == "explicit":
            messages = cache_control_messages(messages, facts.prompt_cache)
        payload: dict[str, Any] = {"model": config.model, "messages": messages}
        # OpenAI rejects tool_choice and parallel_tool_calls when no tools are offered.
        if request.tools:
            payload["tools"] = [_wire_tool(tool, strict=config.capabilities.strict_tools) for tool in request.tools]
            tool_choice = allowed_tool_choice(request)
            if tool_choice is not None:
                payload["tool_choice"] = _wire_tool_choice(tool_choice)
            if request.parallel_tool_calls is not None:
                payload["parallel_tool_calls"] = request.parallel_tool_calls
        if request.stop and config.capabilities.stop_sequences:
            payload["stop"] = list(request.stop)
        max_tokens = request.max_tokens if request.max_tokens is not None else config.max_tokens
        if max_tokens is not None:
            payload[facts.rules.max_tokens_field if facts is not None else "max_tokens"] = max_tokens
        temperature = (
            request.temperature
            if request.temperature is not None
            else configured_temperature(config.temperature, self._facts)
        )
        if temperature is not None:
            payload["temperature"] = temperature
        payload |= request.sampling.model_dump(exclude_none=True)
        if request.response_schema is not None and config.capabilities.json_mode:
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": request.response_schema, "strict": False},
            }
        shape_openai_payload(payload, request)
        return payload

    def _status_error(self, response: httpx.Response) -> LLMTransientError | LLMPermanentError:
        message, code, stated = _provider_message(response)
        # Scrubbed before it is shortened, so a key cut in half cannot slip through.
        provider_message = self._scrub(message)[:_MAX_PROVIDER_MESSAGE].strip()
        wait = retry_after_seconds(response.headers, now=time.time())
        return openai_error(
            self._config.model, response.status_code, code, provider_message, retry_after=wait, stated=stated
        )

    def _parse(self, response: httpx.Response) -> Completion:
        try:
            # Python's JSON decoder, unlike pydantic's, accepts the lone surrogates some models write
            # (`"\\ud800"`); they are replaced when the reply is repaired.
            body = json.loads(response.content)
        except ValueError:
            raise LLMTransientError(
                f"model {self._config.model}: HTTP 200 but not a chat completion (body: not JSON)"
            ) from None
        try:
            return read_chat_completion(body, model=self._config.model)
        except NotACompletion as exc:
            raise LLMTransientError(f"model {self._config.model}: HTTP 200 but not a chat completion ({exc})") from None

    def _scrub(self, text: str) -> str:
        """Remove the API key from text a provider or library wrote, in case it echoes it."""
        return self._redactor.redact(text)


def _wire_message(message: ChatMessage, pass_back: ReasoningPassBack) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.images:
        # OpenAI's content parts: the text, then each image as an image_url part
        parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
        for image in message.images:
            image_url: dict[str, str] = {"url": image.as_url}
            if image.detail is not None:
                image_url["detail"] = image.detail
            parts.append({"type": "image_url", "image_url": image_url})
        wire["content"] = parts
    if message.name:
        wire["name"] = message.name
    if message.tool_calls:
        # OpenAI's own shape for an assistant turn that only calls tools is a null content.
        wire["content"] = message.content or None
        wire["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in message.tool_calls
        ]
        wire |= openai_assistant_reasoning(message, pass_back)
    return wire


def _wire_tool(tool: ToolSpec, *, strict: bool) -> dict[str, Any]:
    """A tool as OpenAI's ``tools`` entry; with ``strict``, in strict mode where its schema has a strict form."""
    function: dict[str, Any] = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    if strict:
        from stepwise.tools.strict_schema import strict_form

        strict_parameters = strict_form(tool.parameters)
        if strict_parameters is not None:
            function.update(parameters=strict_parameters, strict=True)
    return {"type": "function", "function": function}


def _wire_tool_choice(choice: str) -> str | dict[str, Any]:
    if choice in _NAMED_TOOL_CHOICES:
        return choice
    return {"type": "function", "function": {"name": choice}}


def _provider_message(response: httpx.Response) -> tuple[str, str | None, StatedNumbers]:
    """The error text a provider put in its response (`error.message`, `error`, `message` or `detail`), its
    error code (`error.code`, else `error.type`: the first that is a string) and the window and prompt size its
    error states as fields (llama.cpp's `n_ctx` and `n_prompt_tokens`), which the text may not state. A body
    that is a list of one error (Gemini's OpenAI-compatible endpoint) is that error."""
    try:
        body = load_json(response.content, what="the provider's error body")
    except ValueError:
        return response.text.strip(), None, (None, None)
    if isinstance(body, list) and len(body) == 1:
        body = body[0]
    candidate: Any = body
    code: str | None = None
    stated: StatedNumbers = (None, None)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            code = next((named for named in (error.get("code"), error.get("type")) if isinstance(named, str)), None)
            stated = (_count(error.get("n_ctx")), _count(error.get("n_prompt_tokens")))
        if isinstance(error, dict) and error.get("message"):
            candidate = error["message"]
        elif error:
            candidate = error
        elif body.get("message"):
            candidate = body["message"]
        elif body.get("detail"):
            candidate = body["detail"]
    text = candidate if isinstance(candidate, str) else json.dumps(candidate)
    return text.strip(), code, stated


def _count(value: Any) -> int | None:
    """A count of tokens a body states as a field: a positive integer (not a bool, a float or text)."""
    return value if type(value) is int and value > 0 else None
