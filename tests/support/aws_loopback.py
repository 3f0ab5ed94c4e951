"""A loopback stand-in for Bedrock Runtime (Converse) and SSM Parameter Store, strict where the real ones are.

boto3 reaches it through the SDK's own service endpoint variables (`AWS_ENDPOINT_URL_BEDROCK_RUNTIME`,
`AWS_ENDPOINT_URL_SSM`), so the code under test builds its clients exactly as it does against AWS, signs
with whatever identity the SDK's chain finds, and the server records each request's SigV4 `Authorization`
header: a test reads the key id and the credential scope's region from it.

Converse requests are checked as Bedrock checks them: the request shape against botocore's own service
model (bedrock-runtime), a bare model id whose model is only served through an inference profile refused
with Bedrock's message, `temperature` and `topP` together refused for models whose catalog rules forbid
it, a prompt longer than the catalog's context window refused "Input is too long", and, with Claude's
thinking on (asked for, or the model's default as the catalog says), a `temperature` refused and a
tool-result turn whose assistant turn does not open with the thinking block the model signed, unchanged,
refused as Bedrock words it. Replies and errors are scripted; errors are the recorded
ones of tests/fixtures/providers/error_bodies.yaml.

    with AwsLoopback() as aws:
        aws.enqueue_converse(converse_reply(text="Hello"))
        ...  # AWS_ENDPOINT_URL_BEDROCK_RUNTIME=aws.url
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import unquote

from stepwise.config.model_catalog import ModelFacts, normalise_model_id, packaged_catalog
from tests.support.loopback_http import LoopbackHttpServer
from tests.support.provider_errors import recorded_error

_CONVERSE_PATH = re.compile(r"^/model/(?P<model>[^/]+)/converse$")
_CREDENTIAL = re.compile(r"Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request")
_CHARS_PER_TOKEN = 4
# Models Bedrock serves only through an inference profile (their model cards list no in-Region id).
_PROFILE_ONLY_PREFIXES = (
    "amazon.nova-2",
    "anthropic.claude-haiku-4-5",
    "anthropic.claude-haiku-5",
    "anthropic.claude-sonnet-4",
)


@dataclass(frozen=True)
class SignedRequest:
    """A request the loopback received: its path, target, JSON body, and the SigV4 identity it was signed with."""

    path: str
    target: str | None
    body: Any
    access_key_id: str | None
    region: str | None
    service: str | None


@dataclass(frozen=True)
class AwsReply:
    """A scripted answer: a JSON body, or an error (`code` in `x-amzn-ErrorType`, message in the body)."""

    status: int = 200
    body: dict[str, Any] = field(default_factory=dict)
    code: str | None = None
    delay_seconds: float = 0.0


def converse_reply(
    text: str = "",
    tool_uses: list[dict[str, Any]] | None = None,
    stop_reason: str | None = None,
    usage: tuple[int, int] = (20, 8),
    cache: tuple[int, int] = (0, 0),
    reasoning: list[dict[str, Any]] | None = None,
) -> AwsReply:
    """A Converse response: `reasoningContent` blocks first (`{"reasoningText": {"text", "signature"}}` or
    `{"redactedContent": <base64 text, as the wire carries a blob>}`), text and `toolUse` blocks (`{"name",
    "input", "toolUseId"?}`), usage (input, output) and cache (read, write) token counts."""
    content: list[dict[str, Any]] = [{"reasoningContent": block} for block in reasoning or []]
    content += [{"text": text}] if text else []
    for index, use in enumerate(tool_uses or []):
        block = {"toolUseId": use.get("toolUseId", f"tooluse_{index}"), "name": use["name"], "input": use["input"]}
        content.append({"toolUse": block})
    input_tokens, output_tokens = usage
    read, write = cache
    return AwsReply(
        body={
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": stop_reason or ("tool_use" if tool_uses else "end_turn"),
            "usage": {
                "inputTokens": input_tokens,
                "outputTokens": output_tokens,
                "totalTokens": input_tokens + output_tokens + read + write,
                "cacheReadInputTokens": read,
                "cacheWriteInputTokens": write,
            },
            "metrics": {"latencyMs": 120},
        }
    )


def bedrock_error(name: str, **values: Any) -> AwsReply:
    """The recorded Bedrock error `name` (tests/fixtures/providers/error_bodies.yaml) as a reply."""
    recorded = recorded_error("bedrock", name, **values)
    return AwsReply(status=recorded["status"], body={"message": recorded["message"]}, code=recorded["code"])


class AwsLoopback(LoopbackHttpServer):
    """A loopback server (free port on 127.0.0.1) answering Converse and SSM GetParameter; a context manager."""

    def __init__(self, *, context_window: int | None = None, count_usage: bool = False) -> None:
        """`context_window` (tokens, at four characters a token) replaces the catalog's, so overflow is cheap.

        With `count_usage`, a reply's usage is counted from the request as Bedrock bills it: each `cachePoint`
        closes a prefix (tools, then system, then messages); a prefix seen before is read from the cache, a new
        one at least the model's minimum long is written to it, the rest is plain input.
        """
        self._count_usage = count_usage
        self._cached_prefixes: set[str] = set()
        self._lock = threading.Lock()
        self._converse: deque[AwsReply] = deque()
        self._default = converse_reply(text="ok")
        self._parameters: dict[str, str] = {}
        self._requests: list[SignedRequest] = []
        # The thinking blocks the scripted replies signed: signature -> the text it seals.
        self._signed: dict[str, str] = {}
        self._context_window = context_window
        super().__init__(_handler_for(self))

    @property
    def url(self) -> str:
        """The endpoint URL for `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` / `AWS_ENDPOINT_URL_SSM`."""
        return self.origin

    @property
    def requests(self) -> list[SignedRequest]:
        """The requests received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def enqueue_converse(self, *replies: AwsReply) -> None:
        """Queue Converse replies, served in order; then the default."""
        with self._lock:
            self._converse.extend(replies)
            for reply in replies:
                for block in reply.body.get("output", {}).get("message", {}).get("content", []):
                    sealed = block.get("reasoningContent", {}).get("reasoningText", {})
                    if sealed.get("signature"):
                        self._signed[sealed["signature"]] = sealed.get("text", "")

    def default_converse(self, reply: AwsReply) -> None:
        """The Converse reply served when the queue is empty."""
        with self._lock:
            self._default = reply

    def put_parameter(self, name: str, value: str) -> None:
        """A SecureString parameter GetParameter answers (decrypted)."""
        with self._lock:
            self._parameters[name] = value

    def _answer(self, path: str, target: str | None, body: Any, authorization: str) -> AwsReply:
        signed = _CREDENTIAL.search(authorization or "")
        request = SignedRequest(
            path=path,
            target=target,
            body=body,
            access_key_id=signed["key"] if signed else None,
            region=signed["region"] if signed else None,
            service=signed["service"] if signed else None,
        )
        with self._lock:
            self._requests.append(request)
        if target == "AmazonSSM.GetParameter":
            return self._parameter(body)
        converse = _CONVERSE_PATH.match(path)
        if converse is None:
            return AwsReply(status=404, body={"message": f"no route {path}"}, code="UnknownOperationException")
        model_id = unquote(converse["model"])
        refusal = self._refusal(model_id, body)
        if refusal is not None:
            return refusal
        with self._lock:
            reply = self._converse.popleft() if self._converse else self._default
        if self._count_usage and reply.status == 200:
            reply = self._counted(model_id, body, reply)
        return reply

    def _counted(self, model_id: str, body: dict[str, Any], reply: AwsReply) -> AwsReply:
        """`reply` with its usage counted from the request, prompt-cache reads and writes included."""
        facts = packaged_catalog().lookup(model_id)
        minimum = facts.prompt_cache.min_tokens if facts is not None and facts.prompt_cache is not None else 0
        blocks = [*body.get("toolConfig", {}).get("tools", []), *body.get("system", [])]
        blocks += [block for message in body.get("messages", []) for block in message["content"]]
        prefix, closed = "", []
        for block in blocks:
            if "cachePoint" in block:
                if len(prefix) // _CHARS_PER_TOKEN >= minimum:
                    closed.append(prefix)
                continue
            prefix += json.dumps(block, sort_keys=True)
        total = len(prefix) // _CHARS_PER_TOKEN
        with self._lock:
            hits = [candidate for candidate in closed if candidate in self._cached_prefixes]
            self._cached_prefixes.update(closed)
        read = len(hits[-1]) // _CHARS_PER_TOKEN if hits else 0
        write = len(closed[-1]) // _CHARS_PER_TOKEN - read if closed and closed[-1] not in hits else 0
        output = max(1, len(json.dumps(reply.body.get("output", {}))) // _CHARS_PER_TOKEN)
        usage = {
            "inputTokens": total - read - write,
            "outputTokens": output,
            "totalTokens": total + output,
            "cacheReadInputTokens": read,
            "cacheWriteInputTokens": write,
        }
        return AwsReply(status=reply.status, body={**reply.body, "usage": usage}, delay_seconds=reply.delay_seconds)

    def _parameter(self, body: Any) -> AwsReply:
        name = body.get("Name") if isinstance(body, dict) else None
        with self._lock:
            value = self._parameters.get(str(name))
        if value is None:
            return AwsReply(status=400, body={"message": f"Parameter {name} not found."}, code="ParameterNotFound")
        return AwsReply(body={"Parameter": {"Name": name, "Type": "SecureString", "Value": value, "Version": 1}})

    def _refusal(self, model_id: str, body: Any) -> AwsReply | None:
        """Bedrock's refusal of a Converse request, or None when Bedrock would answer it."""
        problems = _shape_problems(body)
        if problems:
            return AwsReply(status=400, body={"message": problems}, code="ValidationException")
        if model_id.startswith(_PROFILE_ONLY_PREFIXES):
            return bedrock_error("on_demand_not_supported", model=model_id)
        facts = packaged_catalog().lookup(model_id)
        inference = body.get("inferenceConfig", {})
        exclusive = facts is not None and ["temperature", "top_p"] in facts.rules.exclusive
        if exclusive and "temperature" in inference and "topP" in inference:
            return bedrock_error("temperature_and_top_p")
        thinking = self._thinking_refusal(body, thinks_by_default=_thinks_by_default(facts))
        if thinking is not None:
            return AwsReply(status=400, body={"message": thinking}, code="ValidationException")
        window = self._context_window or (facts.context_window if facts else None)
        prompt = json.dumps([body.get("system", []), body.get("messages", []), body.get("toolConfig", {})])
        if window is not None and len(prompt) // _CHARS_PER_TOKEN > window:
            return bedrock_error("input_too_long")
        return None

    def _thinking_refusal(self, body: Any, *, thinks_by_default: bool) -> str | None:
        """Claude's rules while thinking: no temperature but 1, and the last assistant turn that used tools
        opens with its signed thinking.

        Anthropic's extended-thinking documentation: with tool use, the thinking block of the turn that made
        the call must be passed back, unmodified, with the tool result; sampling fields are not compatible
        with thinking.
        """
        asked = body.get("additionalModelRequestFields", {}).get("thinking")
        thinking = thinks_by_default if asked is None else asked.get("type") != "disabled"
        if not thinking:
            return None
        if body.get("inferenceConfig", {}).get("temperature", 1) != 1:
            return "`temperature` may only be set to 1 when thinking is enabled."
        messages = body.get("messages", [])
        turns = [index for index, message in enumerate(messages) if message["role"] == "assistant"]
        if not turns or not any("toolUse" in block for block in messages[turns[-1]]["content"]):
            return None
        index = turns[-1]
        first = messages[index]["content"][0].get("reasoningContent", {})
        if "redactedContent" in first:
            return None
        sealed = first.get("reasoningText")
        if sealed is None:
            return (
                f"messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. "
                "When `thinking` is enabled, a final `assistant` message must start with a thinking block "
                "(preceeding the lastmost set of `tool_use` and `tool_result` blocks)."
            )
        with self._lock:
            intact = self._signed.get(sealed.get("signature", "")) == sealed.get("text")
        return None if intact else f"messages.{index}.content.0: Invalid `signature` in `thinking` block"


def _thinks_by_default(facts: ModelFacts | None) -> bool:
    return facts is not None and facts.reasoning is not None and facts.reasoning.by_default


def _shape_problems(body: Any) -> str | None:
    """What botocore's bedrock-runtime service model says is wrong with a Converse request body, if anything."""
    import botocore.session
    from botocore.validate import ParamValidator

    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    shape = model.operation_model("Converse").input_shape
    assert shape is not None
    params = dict(body) if isinstance(body, dict) else {}
    params["modelId"] = "checked-from-the-path"
    report = ParamValidator().validate(params, shape)
    return report.generate_report() if report.has_errors() else None


def _handler_for(server: AwsLoopback) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                body = None
            reply = server._answer(
                self.path, self.headers.get("X-Amz-Target"), body, self.headers.get("Authorization", "")
            )
            if reply.delay_seconds and server._stopping.wait(reply.delay_seconds):
                return
            payload = json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                if reply.code:
                    self.send_header(
                        "x-amzn-ErrorType", f"{reply.code}:http://internal.amazon.com/coral/com.amazon.bedrock/"
                    )
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                return

    return Handler


def model_id_of(path: str) -> str:
    """The model id a Converse path names (normalised as the catalog matches it)."""
    match = _CONVERSE_PATH.match(path)
    return normalise_model_id(unquote(match["model"])) if match else ""
