"""A fake Bedrock Runtime on 127.0.0.1 answering `Converse`, for runs that go through a real boto3 client.

    with FakeBedrockServer() as server:
        server.enqueue(converse_reply([{"text": "Hello"}]))
        ...  # AWS_ENDPOINT_URL_BEDROCK_RUNTIME=server.endpoint_url
        assert server.requests[0].body["messages"][0]["role"] == "user"

Replies are checked against the `ConverseResponse` shape of botocore's `bedrock-runtime` service model before
they are served (blobs given as bytes, sent base64-encoded as the REST-JSON protocol does), so a test cannot
script a reply Bedrock would never send. The fake is strict about the rule of Claude's extended thinking that
matters to an agent: with `thinking` on, an assistant turn that used tools must come back starting with the
thinking blocks the model signed, unchanged, or the call is refused with a `ValidationException` worded as
Bedrock words it.
"""

from __future__ import annotations

import base64
import json
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import unquote

import botocore.session
from botocore.validate import ParamValidator

_MODEL = botocore.session.get_session().get_service_model("bedrock-runtime")
_RESPONSE_SHAPE = _MODEL.shape_for("ConverseResponse")
MISSING_THINKING = (
    "messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When "
    "`thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the "
    "lastmost set of `tool_use` and `tool_result` blocks)."
)
ALTERED_THINKING = "messages.{index}.content.0: Invalid `signature` in `thinking` block"


@dataclass(frozen=True)
class ConverseCall:
    """A Converse request the server received: the model id of its path and its JSON body."""

    model_id: str
    body: dict[str, Any]


def converse_reply(
    content: list[dict[str, Any]], *, stop_reason: str = "end_turn", usage: tuple[int, int] = (120, 60)
) -> dict[str, Any]:
    """A `ConverseResponse` as boto3 returns it (blobs as bytes)."""
    input_tokens, output_tokens = usage
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop_reason,
        "usage": {
            "inputTokens": input_tokens,
            "outputTokens": output_tokens,
            "totalTokens": input_tokens + output_tokens,
        },
        "metrics": {"latencyMs": 850},
    }


class FakeBedrockServer:
    """A ThreadingHTTPServer on a free loopback port, serving enqueued Converse replies in order."""

    def __init__(self) -> None:
        """Bind to a free port; requests are served once `start` (or `with`) runs."""
        self._lock = threading.Lock()
        self._replies: deque[dict[str, Any]] = deque()
        self._requests: list[ConverseCall] = []
        # The thinking blocks this server signed, by signature, with the text they sealed.
        self._signed: dict[str, str] = {}
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.01,), daemon=True)

    @property
    def endpoint_url(self) -> str:
        """The URL to give a `bedrock-runtime` client as its endpoint."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[ConverseCall]:
        """The Converse requests received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def enqueue(self, reply: dict[str, Any]) -> None:
        """Queue one reply, after checking it against botocore's `ConverseResponse` shape."""
        report = ParamValidator().validate(reply, _RESPONSE_SHAPE)
        if report.has_errors():
            raise ValueError(f"not a ConverseResponse: {report.generate_report()}")
        with self._lock:
            for block in reply["output"]["message"]["content"]:
                text = block.get("reasoningContent", {}).get("reasoningText")
                if text and text.get("signature"):
                    self._signed[text["signature"]] = text["text"]
            self._replies.append(reply)

    def start(self) -> FakeBedrockServer:
        """Start serving in the background."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> FakeBedrockServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()

    def answer(self, call: ConverseCall) -> tuple[int, dict[str, Any], str | None]:
        """Record a request and pick its answer: (status, body, error type)."""
        with self._lock:
            self._requests.append(call)
            refusal = self._thinking_refusal(call.body)
            if refusal is not None:
                return 400, {"message": refusal}, "ValidationException"
            if not self._replies:
                return 500, {"message": "no reply was enqueued"}, "InternalServerException"
            return 200, _wire(self._replies.popleft()), None

    def _thinking_refusal(self, body: dict[str, Any]) -> str | None:
        """Claude's rule: with thinking on, the last assistant turn that used tools opens with its signed thinking."""
        if "thinking" not in body.get("additionalModelRequestFields", {}):
            return None
        messages = body.get("messages", [])
        for index in range(len(messages) - 1, -1, -1):
            message = messages[index]
            if message["role"] != "assistant":
                continue
            if not any("toolUse" in block for block in message["content"]):
                return None
            first = message["content"][0].get("reasoningContent", {})
            sealed = first.get("reasoningText")
            if "redactedContent" in first:
                return None
            if sealed is None:
                return MISSING_THINKING.format(index=index)
            if self._signed.get(sealed.get("signature", "")) != sealed.get("text"):
                return ALTERED_THINKING.format(index=index)
            return None
        return None


def _wire(value: Any) -> Any:
    """A reply as the REST-JSON protocol sends it: bytes base64-encoded."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {key: _wire(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_wire(item) for item in value]
    return value


def _handler_for(server: FakeBedrockServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            parts = self.path.split("/")
            if len(parts) != 4 or parts[1] != "model" or parts[3] != "converse":
                self._send(404, {"message": f"no route {self.path}"}, "UnknownOperationException")
                return
            call = ConverseCall(model_id=unquote(parts[2]), body=json.loads(raw or b"{}"))
            self._send(*server.answer(call))

        def _send(self, status: int, body: dict[str, Any], error_type: str | None) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            if error_type:
                self.send_header("x-amzn-ErrorType", error_type)
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler
