"""An OpenAI-compatible model on 127.0.0.1 with a context window it enforces, as the provider does.

    with WindowedModelServer(window=10_000, responder=reply) as model:
        ...  # point an `openai` model at model.base_url
        assert model.largest_prompt <= 10_000

Each `POST /v1/chat/completions` is counted with the server's own tokenizer stand-in (not Stepwise's
estimate): `prompt + max_tokens` over the window is refused with HTTP 400 and the error body OpenAI
sends (`code: context_length_exceeded`; the two wordings, with and without `max_tokens`, as recorded in
chathub-dev/chathub#126 and mckaywrigley/chatbot-ui#102). Anything else is answered by `responder`,
which gets the request body and returns a `chat.completion` body; the server puts its own count in
`usage.prompt_tokens` (unless `report_usage` is off, as some local servers do), and with `prompt_cache`
the cached part in `usage.prompt_tokens_details
.cached_tokens` as OpenAI's automatic caching reports it (the prefix shared with the conversation's
previous request, from 1,024 tokens on, in steps of 128).

With `listed_model`, the server also answers `GET /v1/models` as vLLM does, that model's entry stating
the window as `max_model_len`; any other GET is a 404, as a server without such a listing answers. With
`listing_gate`, the listing is answered once the gate is set (or after `LISTING_HOLD_SECONDS`): a slow listing.

With `flavor="llama.cpp"` it is llama.cpp's server (tools/server): a prompt of `window` tokens or more is
refused (`max_tokens` is not counted, the reply stops at the window instead) with its error body
(`exceed_context_size_error`, the message stating both counts, the `n_prompt_tokens` and `n_ctx` fields);
`GET /v1/models` lists the model as llama.cpp does (`owned_by: llamacpp`, only the trained size `n_ctx_train`,
here 131,072, in `meta`), and with `props` `GET /props` states a slot's window (`default_generation_settings
.n_ctx`).

Kept small, to be folded into the provider fakes of `tests/support` once they enforce windows.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal

from tests.support.loopback_http import LoopbackHttpServer
from tests.support.openai_server import CHAT_COMPLETIONS_PATH

Responder = Callable[[dict[str, Any]], dict[str, Any]]
Tokenizer = Callable[[str], int]

# OpenAI's chat format: about 3 tokens around each message, 3 more priming the reply.
_PER_MESSAGE = 3
_PER_REQUEST = 3
_CACHE_MINIMUM = 1024
_CACHE_STEP = 128
# The longest a gated listing waits for its gate: well within the client's timeout for a listing.
LISTING_HOLD_SECONDS = 0.5


def english_tokens(text: str) -> int:
    """About what an English BPE vocabulary counts: one token per 4 bytes of UTF-8."""
    return math.ceil(len(text.encode("utf-8")) / 4)


def dense_tokens(text: str) -> int:
    """A vocabulary that splits this text finely (CJK text on an older tokenizer): one per 2 bytes."""
    return math.ceil(len(text.encode("utf-8")) / 2)


def _message_text(message: dict[str, Any]) -> str:
    calls = message.get("tool_calls") or []
    return (message.get("content") or "") + json.dumps(calls) + (message.get("tool_call_id") or "")


@dataclass(frozen=True)
class Exchange:
    """One request the server received: its body, its prompt tokens as counted, whether it fitted, and the
    part of its prompt the prompt cache served."""

    body: dict[str, Any]
    prompt_tokens: int
    refused: bool
    cached_tokens: int = 0


def conversation_key(body: dict[str, Any]) -> str:
    """Which conversation a request belongs to: its first user message."""
    return next((m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user"), "")


class WindowedModelServer(LoopbackHttpServer):
    """A loopback OpenAI-compatible server (free port on 127.0.0.1) with a context window; a context manager."""

    def __init__(
        self,
        *,
        window: int,
        responder: Responder,
        tokenizer: Tokenizer = english_tokens,
        prompt_cache: bool = False,
        report_usage: bool = True,
        listed_model: str | None = None,
        flavor: Literal["openai", "llama.cpp"] = "openai",
        props: bool = False,
        listing_gate: threading.Event | None = None,
    ) -> None:
        self.window = window
        self.listed_model = listed_model
        self.flavor = flavor
        self.props = props
        self.listing_gate = listing_gate
        self.listings = 0
        self._report_usage = report_usage
        self._responder = responder
        self._tokenizer = tokenizer
        self._prompt_cache = prompt_cache
        self._lock = threading.Lock()
        self._exchanges: list[Exchange] = []
        self._last_by_conversation: dict[str, list[int]] = {}
        super().__init__(_handler_for(self))

    @property
    def base_url(self) -> str:
        """The URL to configure as an OpenAI `base_url`, ending in `/v1`."""
        return f"{self.origin}/v1"

    @property
    def exchanges(self) -> list[Exchange]:
        """Every request received so far, oldest first."""
        with self._lock:
            return list(self._exchanges)

    @property
    def largest_prompt(self) -> int:
        """The most prompt tokens any request carried (refused ones included)."""
        return max((exchange.prompt_tokens for exchange in self.exchanges), default=0)

    def hold_listing(self) -> None:
        """Count a listing asked for, and hold it until the gate (if any) is set."""
        with self._lock:
            self.listings += 1
        if self.listing_gate is not None:
            self.listing_gate.wait(LISTING_HOLD_SECONDS)

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        """The request's prompt tokens as this server counts them."""
        return sum(self._message_tokens(body)) + self._tools_tokens(body) + _PER_REQUEST

    def _message_tokens(self, body: dict[str, Any]) -> list[int]:
        return [self._tokenizer(_message_text(message)) + _PER_MESSAGE for message in body.get("messages", [])]

    def _tools_tokens(self, body: dict[str, Any]) -> int:
        return self._tokenizer(json.dumps(body["tools"])) if body.get("tools") else 0

    def _cached_tokens(self, body: dict[str, Any]) -> int:
        """The prefix this request shares with its conversation's previous one, as OpenAI's cache counts it."""
        key = conversation_key(body)
        messages = [hash(json.dumps(message, sort_keys=True)) for message in body.get("messages", [])]
        counts = self._message_tokens(body)
        with self._lock:
            previous = self._last_by_conversation.get(key, [])
            self._last_by_conversation[key] = messages
        shared = 0
        for mine, theirs, tokens in zip(messages, previous, counts, strict=False):
            if mine != theirs:
                break
            shared += tokens
        shared += self._tools_tokens(body) if shared else 0
        return 0 if shared < _CACHE_MINIMUM else shared // _CACHE_STEP * _CACHE_STEP

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and body the server sends for `body`."""
        prompt = self.prompt_tokens(body)
        completion = body.get("max_tokens") or body.get("max_completion_tokens") or 0
        llama_cpp = self.flavor == "llama.cpp"
        refused = prompt >= self.window if llama_cpp else prompt + completion > self.window
        cached = self._cached_tokens(body) if self._prompt_cache and not refused else 0
        with self._lock:
            self._exchanges.append(Exchange(body, prompt, refused, cached))
        if refused:
            return 400, _llama_cpp_overflow(self.window, prompt) if llama_cpp else _overflow_body(
                self.window, prompt, completion
            )
        reply = self._responder(body)
        if not self._report_usage:
            # some local servers send no usage at all
            return 200, {key: value for key, value in reply.items() if key != "usage"}
        usage = dict(reply.get("usage") or {})
        usage["prompt_tokens"] = prompt
        usage["total_tokens"] = prompt + int(usage.get("completion_tokens") or 0)
        if self._prompt_cache:
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        return 200, reply | {"usage": usage}


def _overflow_body(window: int, prompt: int, completion: int) -> dict[str, Any]:
    if completion:
        message = (
            f"This model's maximum context length is {window} tokens. However, you requested {prompt + completion} "
            f"tokens ({prompt} in the messages, {completion} in the completion). Please reduce the length of the "
            "messages or completion."
        )
    else:
        message = (
            f"This model's maximum context length is {window} tokens. However, your messages resulted in {prompt} "
            "tokens. Please reduce the length of the messages."
        )
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


def _llama_cpp_overflow(window: int, prompt: int) -> dict[str, Any]:
    message = f"request ({prompt} tokens) exceeds the available context size ({window} tokens), try increasing it"
    return {
        "error": {
            "code": 400,
            "message": message,
            "type": "exceed_context_size_error",
            "n_prompt_tokens": prompt,
            "n_ctx": window,
        }
    }


def _listing(server: WindowedModelServer, path: str) -> dict[str, Any] | None:
    """What the server answers a GET of `path` with (None: a 404)."""
    if server.flavor == "llama.cpp":
        if path.split("?")[0] == "/props" and server.props:
            settings = {"id": 0, "id_task": -1, "n_ctx": server.window, "speculative": False, "is_processing": False}
            return {"default_generation_settings": settings, "total_slots": 1, "model_path": "windowed-model.gguf"}
        if path == "/v1/models":
            meta = {"vocab_type": 2, "n_vocab": 128256, "n_ctx_train": 131072, "n_embd": 4096}
            entry = {"id": "windowed-model", "object": "model", "created": 0, "owned_by": "llamacpp", "meta": meta}
            return {"object": "list", "data": [entry]}
        return None
    if path != "/v1/models" or server.listed_model is None:
        return None
    entry = {"id": server.listed_model, "object": "model", "owned_by": "vllm", "max_model_len": server.window}
    return {"object": "list", "data": [entry]}


def _handler_for(server: WindowedModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            listing = _listing(server, self.path)
            if listing is None:
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            server.hold_listing()
            self._send(200, listing)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path != CHAT_COMPLETIONS_PATH:
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                self._send(*server.answer(json.loads(raw)))
            except (BrokenPipeError, ConnectionResetError):
                # the client went away meanwhile (a `stepwise serve` killed mid-call): nothing to answer
                return

        def _send(self, status: int, body: dict[str, Any]) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


def is_summary_request(body: dict[str, Any]) -> bool:
    """True for Stepwise's summarizer calls: no tools, and its system prompt (either language)."""
    system = next((m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "system"), "")
    return not body.get("tools") and ("working notes" in system or "工作笔记" in system)


def page_text(page: int, size: int) -> str:
    """A page of `size` characters whose first line is a fact a summary should keep."""
    fact = f"Page {page}: the depot on aisle {page} holds {page * 7} parcels.\n"
    words = ("lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", str(page))
    body = " ".join(words[(page + index) % len(words)] for index in range(size // 5))
    return (fact + body)[:size]


class PageReader:
    """A model that reads pages 1 to `pages` with `fetch_page`, one per reply, then answers.

    It counts the replies it gave each conversation (a refused request gets none), so a summary in place
    of earlier pages does not lose its place. Summarizer calls get `summary(body)`.
    """

    def __init__(self, pages: int, *, summary: Callable[[dict[str, Any]], str] | None = None) -> None:
        self.pages = pages
        self._summary = summary or (lambda body: "Facts:\n- the pages read so far hold parcels\nOpen:\n- read the rest")
        self._replies: dict[str, int] = {}
        self._lock = threading.Lock()
        self.summaries = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        if is_summary_request(body):
            with self._lock:
                self.summaries += 1
            return _completion(content=self._summary(body), completion_tokens=60)
        key = conversation_key(body)
        with self._lock:
            turn = self._replies.get(key, 0)
            self._replies[key] = turn + 1
        if turn < self.pages and body.get("tools"):
            page = turn + 1
            call = {
                "id": f"call_page_{page}",
                "type": "function",
                "function": {"name": "fetch_page", "arguments": json.dumps({"page": page})},
            }
            return _completion(tool_calls=[call], completion_tokens=20)
        return _completion(content=f"I read {min(turn, self.pages)} pages.", completion_tokens=10)


def _completion(
    *, content: str | None = None, tool_calls: list[dict[str, Any]] | None = None, completion_tokens: int
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-windowed",
        "object": "chat.completion",
        "created": 0,
        "model": "windowed-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"completion_tokens": completion_tokens},
    }
